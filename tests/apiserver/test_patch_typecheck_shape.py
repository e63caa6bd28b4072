"""A patch's type check skips the parts of the patched object equal to the stored one, except
where the patch names them: there ``1`` is no ``true`` and ``30.0`` no ``30``, though Python's
``==`` says so, because kube-apiserver decodes the whole patched object into the Go types. A
patch that sets such a value is refused exactly as one that sets a different value of the same
wrong type (merge, strategic, JSON patch and apply; the main resource and status)."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver import typecheck
from taintplane.apiserver.json_patch import apply_json_patch
from taintplane.apiserver.patch import PatchError, apply_merge_patch, apply_strategic_merge_patch
from taintplane.apiserver.patch_shape import EXACT, json_patch_shape, merge_patch_shape

SCHEMA = "io.k8s.api.apps.v1.ReplicaSet"


def stored() -> dict[str, Any]:
    """A ReplicaSet as stored (a fixed point of the check), with integers and booleans that
    ``1.0``, ``True`` and ``0`` equal in Python."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "generation": 1,
            "labels": {"app": "web"},
            "finalizers": ["a", "b"],
        },
        "spec": {
            "replicas": 1,
            "minReadySeconds": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "pause",
                            "stdin": True,
                            "resources": {"requests": {"cpu": "100m"}},
                            "ports": [{"containerPort": 80}],
                        }
                    ],
                    "enableServiceLinks": True,
                    "hostNetwork": False,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {"runAsUser": 1, "runAsNonRoot": True},
                },
            },
        },
        "status": {"replicas": 1, "observedGeneration": 1},
    }
    typecheck.check_object(obj, SCHEMA, drop_unknown=True)
    return obj


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*prefix, i))
    return found


def twins(value: Any) -> list[Any]:
    """Values Python's ``==`` takes for ``value`` that are other JSON."""
    if isinstance(value, int):  # bool too
        return [float(value), int(value), bool(value)] if value in (0, 1) else [float(value)]
    return [value]


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-1, max_value=2),
    st.sampled_from([1.0, 0.0, 0.5, 30.0]),
    st.sampled_from(["", "x", "100m"]),
    st.sampled_from([{}, [], {"bogus": 1}, [{"name": "c"}], {"$patch": "replace"}]).map(
        copy.deepcopy
    ),
)


@st.composite
def merge_patches(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """A patch naming a few of ``base``'s paths (or new ones) with values of any type, often
    a twin of the stored value; lists are replaced whole, as a merge patch can only do."""
    patch: dict[str, Any] = {}
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(paths(base)[1:]))
        cut = next((i for i, step in enumerate(where) if isinstance(step, int)), len(where))
        where = where[:cut] if cut else where[:1]
        current: Any = base
        for step in where:
            current = current[step]
        if isinstance(current, list):
            value: Any = copy.deepcopy(current)
            if value and draw(st.booleans()):
                inner = draw(st.sampled_from(paths(value)[1:]))
                parent: Any = value
                for step in inner[:-1]:
                    parent = parent[step]
                parent[inner[-1]] = draw(st.sampled_from(twins(parent[inner[-1]])) | JSON_VALUES)
        elif isinstance(current, dict):
            value = draw(st.just(copy.deepcopy(current)) | JSON_VALUES)
        else:
            value = draw(st.sampled_from(twins(current)) | JSON_VALUES)
        node = patch
        for step in where[:-1]:
            node = node.setdefault(step, {}) if isinstance(node.get(step, {}), dict) else node
        node[where[-1]] = value
    if draw(st.booleans()):
        spec = patch.setdefault("spec", {})
        if isinstance(spec, dict):
            spec["$setElementOrder/finalizers" if draw(st.booleans()) else "$retainKeys"] = [
                "replicas",
                "template",
            ]
    return patch


def outcome(obj: dict[str, Any], base: dict[str, Any], **how: Any) -> Any:
    try:
        report = typecheck.check_object(obj, SCHEMA, base, drop_unknown=True, **how)
    except typecheck.TypeCheckError as error:
        return ("error", error.message)
    return ("ok", obj, report.unknown, report.problems)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_patch_shape_finds_what_the_exact_check_finds(data: st.DataObject) -> None:
    base = stored()
    patch = data.draw(merge_patches(base))
    strategic = data.draw(st.booleans())
    try:
        if strategic:
            patched = apply_strategic_merge_patch(base, patch)
        else:
            patched = apply_merge_patch(base, patch)
    except PatchError:
        return
    if not isinstance(patched, dict):
        return
    masked = outcome(copy.deepcopy(patched), base, touched=merge_patch_shape(patch))
    assert masked == outcome(copy.deepcopy(patched), base, exact_baseline=True)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_json_patch_shape_finds_what_the_exact_check_finds(data: st.DataObject) -> None:
    base = stored()
    operations = []
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        where = data.draw(st.sampled_from(paths(base)[1:]))
        current: Any = base
        for step in where:
            current = current[step]
        value = data.draw(st.sampled_from(twins(current)) | JSON_VALUES)
        path = "/" + "/".join(str(step).replace("~", "~0").replace("/", "~1") for step in where)
        operations.append({"op": "replace", "path": path, "value": value})
    try:
        patched = apply_json_patch(base, operations)
    except Exception:  # a patch that does not apply is no case here
        return
    masked = outcome(copy.deepcopy(patched), base, touched=json_patch_shape(operations))
    assert masked == outcome(copy.deepcopy(patched), base, exact_baseline=True)


def test_shapes() -> None:
    assert merge_patch_shape({"spec": {"a": 1, "$setElementOrder/b": [], "c": {"d": []}}}) == {
        "spec": {"a": EXACT, "b": EXACT, "c": {"d": EXACT}}
    }
    assert json_patch_shape(
        [
            {"op": "replace", "path": "/spec/containers/0/image", "value": "x"},
            {"op": "test", "path": "/metadata", "value": {}},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "x"},
        ]
    ) == {"spec": {"containers": {"0": {"image": EXACT}}}, "metadata": {"labels": {"a/b": EXACT}}}
    assert json_patch_shape([{"op": "replace", "path": "", "value": {}}]) is EXACT


# ---- through the server ---------------------------------------------------------------------

POD = "/api/v1/namespaces/default/pods/typed"
TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        pod = {
            "metadata": {"name": "typed"},
            "spec": {
                "containers": [{"name": "c", "image": "pause"}],
                "enableServiceLinks": True,
                "terminationGracePeriodSeconds": 30,
            },
        }
        client.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()
        client.patch(
            f"{POD}/status",
            json={"status": {"observedGeneration": 1}},
            headers={"content-type": TYPES["merge"]},
        ).raise_for_status()
        yield client


def _patch(api: httpx.Client, kind: str, field: str, value: Any, subresource: str = "") -> Any:
    section, name = field.split(".")
    body: Any = {section: {name: value}}
    if kind == "json":
        body = [{"op": "replace", "path": f"/{section}/{name}", "value": value}]
    before = api.get(POD).json()["metadata"]["resourceVersion"]
    response = api.patch(
        POD + (f"/{subresource}" if subresource else ""),
        content=httpx.Request("X", "/", json=body).content,
        headers={"content-type": TYPES[kind]},
    )
    assert response.status_code == 422, response.text
    assert api.get(POD).json()["metadata"]["resourceVersion"] == before  # nothing written
    message: str = response.json()["message"]
    return message


@pytest.mark.parametrize("subresource", ["", "status"])
@pytest.mark.parametrize("kind", ["merge", "strategic", "json"])
def test_a_bool_sent_as_the_stored_number_is_refused_as_another_number(api, kind, subresource):
    same = _patch(api, kind, "spec.enableServiceLinks", 1, subresource)
    other = _patch(api, kind, "spec.enableServiceLinks", 0, subresource)
    detail = (
        "json: cannot unmarshal number into Go struct field PodSpec.spec.enableServiceLinks "
        "of type bool"
    )
    if kind == "strategic":
        assert same == (
            ' "" is invalid: patch: Invalid value: "map[spec:map[enableServiceLinks:1]]": ' + detail
        )
    else:
        assert same.startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\"')
        assert same.endswith(f'}}": {detail}')
        assert '\\"enableServiceLinks\\":1' in same
    assert same == other.replace("enableServiceLinks:0", "enableServiceLinks:1").replace(
        '\\"enableServiceLinks\\":0', '\\"enableServiceLinks\\":1'
    )


@pytest.mark.parametrize("kind", ["merge", "strategic", "json"])
def test_an_integer_sent_as_the_stored_float_is_refused_as_another_float(api, kind):
    same = _patch(api, kind, "spec.terminationGracePeriodSeconds", 30.0)
    other = _patch(api, kind, "spec.terminationGracePeriodSeconds", 31.0)
    detail = (
        "json: cannot unmarshal number 30.0 into Go struct field "
        "PodSpec.spec.terminationGracePeriodSeconds of type int64"
    )
    if kind == "strategic":
        assert same == (
            ' "" is invalid: patch: Invalid value: '
            f'"map[spec:map[terminationGracePeriodSeconds:30]]": {detail}'
        )
    else:
        assert same.endswith(f'}}": {detail}')
    assert same == (
        other.replace("number 31.0", "number 30.0")
        .replace("terminationGracePeriodSeconds:31]", "terminationGracePeriodSeconds:30]")
        .replace('Seconds\\":31.0', 'Seconds\\":30.0')
    )


@pytest.mark.parametrize("kind", ["merge", "strategic", "json"])
def test_a_status_integer_sent_as_the_stored_float_or_bool(api, kind):
    as_float = _patch(api, kind, "status.observedGeneration", 1.0, "status")
    assert as_float.endswith(
        "json: cannot unmarshal number 1.0 into Go struct field "
        "PodStatus.status.observedGeneration of type int64"
    )
    as_bool = _patch(api, kind, "status.observedGeneration", True, "status")
    assert as_bool == _patch(api, kind, "status.observedGeneration", False, "status").replace(
        "observedGeneration:false", "observedGeneration:true"
    ).replace('\\"observedGeneration\\":false', '\\"observedGeneration\\":true')


@pytest.mark.parametrize("value", [1, 0])
def test_an_apply_of_the_stored_bool_as_a_number_is_refused(api, value):
    config = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typed"},
        "spec": {"enableServiceLinks": value},
    }
    response = api.patch(
        f"{POD}?fieldManager=typed&force=true",
        json=config,
        headers={"content-type": "application/apply-patch+yaml"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into '
        "Go struct field PodSpec.spec.enableServiceLinks of type bool"
    )


def test_kubectl_patch_of_the_stored_bool_as_a_number_is_refused(api, kubectl):
    done = kubectl.run("patch", "pod", "typed", "-p", '{"spec":{"enableServiceLinks":1}}')
    assert done.returncode == 1
    assert done.stderr == (
        'The request is invalid: patch: Invalid value: "map[spec:map[enableServiceLinks:1]]": '
        "json: cannot unmarshal number into Go struct field PodSpec.spec.enableServiceLinks "
        "of type bool\n"
    )
