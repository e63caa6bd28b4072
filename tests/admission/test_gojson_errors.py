"""Go's json.Unmarshal error texts: the helper, and PodTolerationRestriction's 500s for a
namespace annotation that is not a JSON list of tolerations, as upstream returns them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.admission.plugins import AdmissionOptions
from taintplane.api import gojson
from taintplane.apiserver.app import APIServer
from taintplane.clock import VirtualClock
from taintplane.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "unexpected end of JSON input"),
        ("  \n", "unexpected end of JSON input"),
        ('[{"key":', "unexpected end of JSON input"),
        ('"abc', "unexpected end of JSON input"),
        ("[1,", "unexpected end of JSON input"),
        ("-", "unexpected end of JSON input"),
        ("1.", "unexpected end of JSON input"),
        ("1e+", "unexpected end of JSON input"),
        ("tru", "unexpected end of JSON input"),
        ("notjson", "invalid character 'o' in literal null (expecting 'u')"),
        ("trUe", "invalid character 'U' in literal true (expecting 'u')"),
        ("falsy", "invalid character 'y' in literal false (expecting 'e')"),
        ("x", "invalid character 'x' looking for beginning of value"),
        ("'a'", "invalid character '\\'' looking for beginning of value"),
        ("[,]", "invalid character ',' looking for beginning of value"),
        ("[1,]", "invalid character ']' looking for beginning of value"),
        ("{a:1}", "invalid character 'a' looking for beginning of object key string"),
        ('{"a":1,}', "invalid character '}' looking for beginning of object key string"),
        ('{"a" 1}', "invalid character '1' after object key"),
        ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        ("[1 2]", "invalid character '2' after array element"),
        ("[] []", "invalid character '[' after top-level value"),
        ("01", "invalid character '1' after top-level value"),
        ("-a", "invalid character 'a' in numeric literal"),
        ("1.e5", "invalid character 'e' after decimal point in numeric literal"),
        ("1ex", "invalid character 'x' in exponent of numeric literal"),
        ('"a\tb"', "invalid character '\\t' in string literal"),
        ('"\x01"', "invalid character '\\x01' in string literal"),
        ('"\\q"', "invalid character 'q' in string escape code"),
        ('"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
        ("\u00e9", "invalid character 'Ã' looking for beginning of value"),
        ("[1]\u00a0", "invalid character 'Â' after top-level value"),
    ],
)
def test_syntax_errors_read_as_gos(text: str, message: str) -> None:
    with pytest.raises(gojson.GoJSONError) as error:
        gojson.loads(text)
    assert str(error.value) == message


def test_type_errors_read_as_gos() -> None:
    assert str(gojson.cannot_unmarshal({"a": 1}, "[]v1.Toleration")) == (
        "json: cannot unmarshal object into Go value of type []v1.Toleration"
    )
    values: list[Any] = ["s", 1, 1.5, True, [], {}]
    names = [gojson.json_type(v) for v in values]
    assert names == ["string", "number", "number", "bool", "array", "object"]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
)


@given(_json, st.sampled_from([None, 2]))
def test_valid_json_decodes_as_python_does(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    assert gojson.loads(text) == json.loads(text)


@given(st.text(max_size=12))
def test_any_text_is_accepted_exactly_when_it_is_strict_json(text: str) -> None:
    def strict(constant: str) -> Any:
        raise ValueError(constant)

    try:
        expected: Any = json.loads(text, parse_constant=strict)
    except ValueError:
        with pytest.raises(gojson.GoJSONError):
            gojson.loads(text)
        return
    assert gojson.loads(text) == expected


DEFAULTS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({DEFAULTS: '[{"key":'}, "unexpected end of JSON input"),
        ({WHITELIST: "notjson"}, "invalid character 'o' in literal null (expecting 'u')"),
        (
            {DEFAULTS: '{"key":"a"}'},
            "json: cannot unmarshal object into Go value of type []v1.Toleration",
        ),
        ({DEFAULTS: '["a"]'}, "json: cannot unmarshal string into Go value of type v1.Toleration"),
        ({DEFAULTS: "[] x"}, "invalid character 'x' after top-level value"),
    ],
)
def test_pod_toleration_restriction_returns_gos_text(
    tmp_path: Path, annotations: dict[str, str], message: str
) -> None:
    async def main() -> httpx.Response:
        store = await SqliteStore(tmp_path / "store.db").open()
        setup = AdmissionOptions(enable=("PodTolerationRestriction",)).load()
        server = APIServer(store, VirtualClock(), admission=setup)
        await server.bootstrap()
        transport = httpx.ASGITransport(app=server.app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                ns = {"metadata": {"name": "bad", "annotations": annotations}}
                assert (await http.post("/api/v1/namespaces", json=ns)).status_code == 201
                container = {"name": "c", "image": "i"}
                pod = {"metadata": {"name": "p"}, "spec": {"containers": [container]}}
                return await http.post("/api/v1/namespaces/bad/pods", json=pod)
        finally:
            await server.close()
            await store.close()

    response = asyncio.run(main())
    assert response.status_code == 500
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": 500,
    }
