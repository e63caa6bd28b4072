"""Query strings are encoded (in-process client) and parsed (server) once per distinct
string (issue 16): the cached forms must be exactly the uncached ones."""

from __future__ import annotations

from urllib.parse import urlencode

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import QueryParams
from starlette.requests import Request

from taintplane.apiserver.cached_request import CachedRequest, FastHeaders
from taintplane.client.transport import _query_string

PARAMS = st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=4)


@given(PARAMS)
def test_encoded_as_urlencode(params: dict[str, str]) -> None:
    assert _query_string(params) == urlencode(params).encode()
    assert _query_string(params) == urlencode(params).encode()  # the cached bytes


def scope(query: bytes) -> dict[str, object]:
    return {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": query}


@given(PARAMS.map(lambda p: urlencode(p).encode()) | st.binary(max_size=30))
def test_parsed_as_starlette_parses(query: bytes) -> None:
    expected = Request(scope(query)).query_params
    for _ in range(2):
        parsed = CachedRequest(scope(query)).query_params
        assert isinstance(parsed, QueryParams)
        assert parsed.multi_items() == expected.multi_items()
        assert str(parsed) == str(expected)


HEADER_NAMES = st.sampled_from([b"content-type", b"accept", b"x-a", b"content-length"])


@given(
    st.lists(st.tuples(HEADER_NAMES, st.binary(max_size=6)), max_size=4),
    st.sampled_from(["Content-Type", "accept", "X-A", "content-length", "missing"]),
)
def test_headers_read_as_starlette_reads_them(raw: list[tuple[bytes, bytes]], name: str) -> None:
    plain = Request({**scope(b""), "headers": raw}).headers
    fast = CachedRequest({**scope(b""), "headers": raw}).headers
    assert isinstance(fast, FastHeaders)
    assert fast.get(name) == plain.get(name)
    assert fast.get(name, "d") == plain.get(name, "d")
    assert (name in fast) == (name in plain)
