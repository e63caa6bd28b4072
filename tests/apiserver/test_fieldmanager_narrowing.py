"""An update's field record compares only the parts of the two objects that differ
(issue 16: a node heartbeat changes four timestamps, and comparing its whole status was most
of the field manager's cost). The result must be exactly that of comparing the whole
objects, on any pair: maps gaining, losing and changing keys, associative lists with
items added, removed, reordered, changed, keyless or repeated, empty maps and lists."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver import fieldmanager
from taintplane.apiserver.fieldmanager import FieldPath

from .test_fieldmanager_create_walk import ELEMENTS, NAMES, OBJECTS, SCALARS, VALUES


def whole_compare(
    new: dict[str, Any], old: dict[str, Any], skip: bool
) -> tuple[set[FieldPath], set[FieldPath]]:
    """The compare before the cut went below the top level: structured-merge-diff's Compare
    of the top-level fields (and metadata fields) that differ, each whole."""
    new_part: dict[str, Any] = {}
    old_part: dict[str, Any] = {}
    for key in set(new) | set(old):
        if key == "metadata":
            new_meta, old_meta = new.get(key) or {}, old.get(key) or {}
            differ = {
                k for k in set(new_meta) | set(old_meta) if new_meta.get(k) != old_meta.get(k)
            }
            new_part[key] = {k: v for k, v in new_meta.items() if k in differ}
            old_part[key] = {k: v for k, v in old_meta.items() if k in differ}
        elif new.get(key) != old.get(key):
            if key in new:
                new_part[key] = new[key]
            if key in old:
                old_part[key] = old[key]
    after = fieldmanager.fields_of(new_part, skip_status=skip)
    before = fieldmanager.fields_of(old_part, skip_status=skip)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    removed = {p for p in before if p not in after}
    changed |= fieldmanager._created_nodes(new_part, old_part, skip)
    removed |= fieldmanager._created_nodes(old_part, new_part, skip)
    return changed, removed


def mutated(draw: st.DrawFn, value: Any, depth: int = 0, inner: int = 0) -> Any:
    """``value`` with some parts kept, some changed, dropped or added (always changed inside
    for the first ``inner`` levels)."""
    choices = ["keep", "inner", "inner", "inner", "replace"]
    choice = "inner" if depth < inner else draw(st.sampled_from(choices))
    if choice == "keep":
        return value
    if choice == "replace" or depth > 4:
        return draw(VALUES | ELEMENTS | CONDITION)
    if isinstance(value, dict):
        out = {
            key: mutated(draw, item, depth + 1, inner)
            for key, item in value.items()
            if draw(st.integers(0, 4))
        }
        for key in draw(
            st.lists(st.sampled_from(["a", "b", "conditions", "type", "x"]), max_size=2)
        ):
            out[key] = draw(VALUES | ELEMENTS)
        return out
    if (
        isinstance(value, list)
        and value
        and all(isinstance(i, dict) and "type" in i for i in value)
    ):
        # An associative list as components change it: items kept, changed around their
        # key, dropped, added; sometimes reordered.
        kept = []
        for item in value:
            if not draw(st.integers(0, 4)):
                continue  # dropped
            if draw(st.booleans()):
                rest = mutated(draw, {k: v for k, v in item.items() if k != "type"}, depth + 1)
                item = {"type": item["type"], **(rest if isinstance(rest, dict) else {})}
            kept.append(item)
        if draw(st.booleans()):
            kept.reverse()
        return kept + draw(st.lists(CONDITION.map(lambda c: {**c, "type": "New"}), max_size=1))
    if isinstance(value, list):
        items = [mutated(draw, item, depth + 1) for item in value if draw(st.integers(0, 4))]
        if draw(st.booleans()):
            items = list(reversed(items))
        return items + draw(st.lists(ELEMENTS | CONDITION | CONTAINER, max_size=2))
    return draw(VALUES | ELEMENTS)


CONDITION = st.fixed_dictionaries(
    {"type": st.sampled_from(["Ready", "DiskPressure", "X"])},
    optional={
        "status": st.sampled_from(["True", "False"]),
        "at": st.sampled_from(["0", "1"]),
        "a": VALUES,
    },
)
CONTAINER = st.fixed_dictionaries(
    {"name": st.sampled_from(["c", "d", "e"])},
    optional={"image": st.sampled_from(["i", "j"]), "ports": st.lists(ELEMENTS, max_size=2)},
)
#: Objects with associative lists of several items, as nodes and pods have.
LISTED: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "apiVersion": st.just("v1"),
        "kind": st.sampled_from(["Pod", "Node"]),
        "spec": st.fixed_dictionaries(
            {"containers": st.lists(CONTAINER, max_size=3, unique_by=lambda c: c["name"])}
        ),
        "status": st.fixed_dictionaries(
            {"conditions": st.lists(CONDITION, max_size=3, unique_by=lambda c: c["type"])},
            optional={"capacity": st.dictionaries(NAMES, SCALARS, max_size=2)},
        ),
    }
)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    listed = draw(st.booleans())
    old: dict[str, Any] = dict(draw(LISTED if listed else OBJECTS))
    new = mutated(draw, old, inner=3 if listed else 0)
    if not isinstance(new, dict):
        new = {}
    new = {**new, "apiVersion": old["apiVersion"], "kind": old["kind"]}
    # An update compares objects that passed the type check: metadata is a map.
    for obj in (new, old):
        if not isinstance(obj.get("metadata", {}), dict):
            obj["metadata"] = {}
    return new, old


@settings(max_examples=1500, deadline=None)
@given(pairs(), st.booleans())
def test_cut_compare_is_the_whole_compare(
    pair: tuple[dict[str, Any], dict[str, Any]], skip: bool
) -> None:
    new, old = pair
    assert fieldmanager._compare(new, old, skip) == whole_compare(new, old, skip)


def test_a_node_heartbeat_compares_only_its_timestamps() -> None:
    conditions = [
        {"type": t, "status": "False", "lastHeartbeatTime": "2026-01-01T00:00:00Z", "reason": r}
        for t, r in [("MemoryPressure", "A"), ("DiskPressure", "B"), ("Ready", "C")]
    ]
    old = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"cpu": "4"}, "conditions": conditions},
    }
    beat = [{**c, "lastHeartbeatTime": "2026-01-01T00:00:10Z"} for c in conditions]
    new = {**old, "status": {"capacity": {"cpu": "4"}, "conditions": beat}}
    new_part, old_part = fieldmanager._changed_subtrees(new, old)
    assert new_part["status"] == {
        "conditions": [
            {"type": c["type"], "lastHeartbeatTime": c["lastHeartbeatTime"]} for c in beat
        ]
    }
    assert old_part["status"]["conditions"][0] == {
        "type": "MemoryPressure",
        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
    }
    changed, removed = fieldmanager._compare(new, old, False)
    assert removed == set()
    assert changed == {
        ("f:status", "f:conditions", f'k:{{"type":"{t}"}}', "f:lastHeartbeatTime")
        for t in ("MemoryPressure", "DiskPressure", "Ready")
    }


MANAGERS = st.sampled_from([("kubelet", "status"), ("kubelet", ""), ("kcm", "status"), ("me", "")])


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[dict[str, Any], str, str]]:
    """Successive versions of an object, each written by a manager (to a subresource)."""
    listed = draw(st.booleans())
    version: dict[str, Any] = dict(draw(LISTED if listed else OBJECTS))
    if not isinstance(version.get("metadata", {}), dict):
        version["metadata"] = {}
    steps = [(version, *draw(MANAGERS))]
    for _ in range(draw(st.integers(1, 4))):
        version = mutated(draw, version, inner=3 if listed else 0)
        if not isinstance(version, dict):
            version = {}
        version = {**version, "apiVersion": steps[0][0]["apiVersion"], "kind": steps[0][0]["kind"]}
        if not isinstance(version.get("metadata", {}), dict):
            version["metadata"] = {}
        steps.append((version, *draw(MANAGERS)))
        if draw(st.booleans()):  # then values only, by the same manager: a heartbeat
            _, manager, subresource = steps[-1]
            steps.append((retouched(draw, version), manager, subresource))
    return steps


def retouched(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with some of its scalar leaves set to other scalars, nothing added or
    removed (maps and associative list items keep their keys)."""
    if isinstance(value, dict):
        return {
            k: v if k in ("type", "name", "kind", "apiVersion") else retouched(draw, v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [retouched(draw, item) for item in value]
    return draw(st.sampled_from([value, value, "x", 1, False]))


def recorded(
    steps: list[tuple[dict[str, Any], str, str]], monkeypatch: Any, restamp: bool
) -> list[Any]:
    """managedFields after each write of ``steps``, with or without the restamp shortcut."""
    with monkeypatch.context() as patched:
        if not restamp:
            patched.setattr(fieldmanager, "_restamped", lambda *args: None)
        out: list[Any] = []
        old: dict[str, Any] | None = None
        for i, (version, manager, subresource) in enumerate(steps):
            new = orjson.loads(orjson.dumps(version))
            if old is not None:
                new.setdefault("metadata", {})["managedFields"] = orjson.loads(
                    orjson.dumps((old.get("metadata") or {}).get("managedFields", []))
                )
            fieldmanager.record_update(
                new, old, manager, "v1", f"2026-01-01T00:00:0{i}Z", subresource=subresource
            )
            out.append(orjson.dumps(new.get("metadata", {}).get("managedFields")))
            old = new
        return out


@settings(max_examples=700, deadline=None)
@given(histories())
def test_restamping_records_what_the_full_record_does(
    steps: list[tuple[dict[str, Any], str, str]],
) -> None:
    from _pytest.monkeypatch import MonkeyPatch

    patch = MonkeyPatch()
    assert recorded(steps, patch, restamp=True) == recorded(steps, patch, restamp=False)


def test_a_heartbeat_restamps_the_kubelets_entry_only() -> None:
    status = {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "0"}]}
    first: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "status": status}
    fieldmanager.record_update(first, None, "kubelet", "v1", "t0", subresource="status")
    entry = first["metadata"]["managedFields"][0]
    beat = {"conditions": [{**status["conditions"][0], "lastHeartbeatTime": "1"}]}
    second: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"managedFields": [dict(entry)]},
        "status": beat,
    }
    assert fieldmanager._restamped(
        fieldmanager._entries(second["metadata"]),
        ("kubelet", "Update", "status"),
        {("f:status", "f:conditions", 'k:{"type":"Ready"}', "f:lastHeartbeatTime")},
        set(),
        "v1",
        "t1",
    ) == [{**entry, "time": "t1"}]
