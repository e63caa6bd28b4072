"""Field ownership invariants, checked on arbitrary objects and changes (Hypothesis).

``record_update`` skips parsing the entries of managers a write does not touch; these
properties pin that shortcut to the plain definition: a manager loses exactly the owned
fields at or under what the write changed, and keeps the rest.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.apiserver import fieldmanager
from taintplane.apiserver.fieldmanager import FieldPath

_NAMES = st.sampled_from(["a", "b", "c", "image", "name", "conditions", "labels"])
_SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", ""]), st.booleans())

_values: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda inner: st.dictionaries(_NAMES, inner, max_size=3),
    max_leaves=8,
)
_objects = st.fixed_dictionaries(
    {"spec": st.dictionaries(_NAMES, _values, max_size=3)},
    optional={"status": st.dictionaries(_NAMES, _values, max_size=3)},
)


def _owned_paths(obj: dict[str, Any]) -> set[FieldPath]:
    return set(fieldmanager.fields_of(obj))


def _under(path: FieldPath, prefixes: set[FieldPath]) -> bool:
    return any(path[:depth] in prefixes for depth in range(1, len(path) + 1))


@settings(max_examples=300, deadline=None)
@given(first=_objects, second=_objects, third=_objects)
def test_an_update_takes_exactly_the_changed_fields_from_other_managers(
    first: dict[str, Any], second: dict[str, Any], third: dict[str, Any]
) -> None:
    created: dict[str, Any] = {"metadata": {}, **first}
    fieldmanager.record_update(created, None, "creator", "v1", "t0")
    updated: dict[str, Any] = {"metadata": dict(created["metadata"]), **second}
    fieldmanager.record_update(updated, created, "updater", "v1", "t1")
    last: dict[str, Any] = {"metadata": dict(updated["metadata"]), **third}
    fieldmanager.record_update(last, updated, "third", "v1", "t2")

    after, before = fieldmanager._changed_parts(last, updated, False)
    new_part, old_part = fieldmanager._changed_subtrees(last, updated)
    # The maps, structs and non-atomic lists the write created are its own too, as ".";
    # those it removed are disowned (structured-merge-diff's Compare: Added, Removed).
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    changed |= fieldmanager._created_nodes(new_part, old_part, False)
    removed = fieldmanager._created_nodes(old_part, new_part, False)
    touched = changed | removed | {p for p in before if p not in after}
    entries = {e["manager"]: e for e in updated["metadata"].get("managedFields", [])}
    kept = {e["manager"]: e for e in last["metadata"].get("managedFields", [])}
    for manager in ("creator", "updater"):
        had = fieldmanager._owned(entries[manager]) if manager in entries else set()
        expected = {p for p in had if not _under(p, touched)}
        has = fieldmanager._owned(kept[manager]) if manager in kept else set()
        assert has == expected
        if manager in kept and has == had:
            assert kept[manager] == entries[manager]  # an untouched entry is left as it was
    assert (fieldmanager._owned(kept["third"]) if "third" in kept else set()) == changed


def test_a_status_condition_leaves_the_creators_spec_entry_alone() -> None:
    created: dict[str, Any] = {"metadata": {}, "spec": {"nodeName": "n1"}, "status": {}}
    fieldmanager.record_update(created, None, "creator", "v1", "t0", skip_status=True)
    patched: dict[str, Any] = {
        "metadata": dict(created["metadata"]),
        "spec": {"nodeName": "n1"},
        "status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]},
    }
    fieldmanager.record_update(
        patched, created, "evictor", "v1", "t1", subresource="status", skip_status=True
    )
    entries = {e["manager"]: e for e in patched["metadata"]["managedFields"]}
    assert entries["creator"]["fieldsV1"] == {"f:spec": {"f:nodeName": {}}}
    assert entries["evictor"]["subresource"] == "status"
    # The conditions list the write created is its own as ".", beside the element (upstream's
    # Compare adds every path absent before, lists with a merge key included).
    assert entries["evictor"]["fieldsV1"] == {
        "f:status": {
            "f:conditions": {
                ".": {},
                'k:{"type":"DisruptionTarget"}': {".": {}, "f:status": {}, "f:type": {}},
            }
        }
    }
