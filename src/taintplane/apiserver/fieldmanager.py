"""Field ownership for server-side apply: ``metadata.managedFields`` and apply conflicts.

Every write records which manager set which fields, in Kubernetes' FieldsV1 form
(``{"f:spec": {"f:taints": {}}}``). An update (PUT, or a non-apply PATCH) takes ownership of
the fields whose values it changed; nobody else loses a field it did not change. An apply of
configuration C by manager M:

* conflicts where another manager owns a field C sets to a different value (unless forced,
  in which case M takes it over);
* removes from the object the fields M applied before but C no longer names (and nobody
  else owns);
* merges C into the object (maps by key, lists with a merge key by element, other lists and
  scalars replaced) and records exactly C's fields as M's. Fields C sets to the values they
  already have stay with their other managers too: they become co-owned, and a forced apply
  takes from the others only what it changes (structured-merge-diff's Updater.Apply).

A write's record starts from the live object's entries, or from the entries the request
itself sets (``managed_fields_base``, upstream's decodeLiveOrNew): a client may replace them,
or clear them with ``[]`` or ``[{}]``; entries that do not decode leave the live ones.
Entries are stored in upstream's order: Apply before Update, then by time, manager, API
version and subresource.

Lists with a patch merge key are associative (elements ``k:{"name":"c"}``), ``finalizers``
is a set (``v:"x"``), every other list is atomic (owned as a whole), as in the served kinds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import orjson

from taintplane.api.gofmt import go_json
from taintplane.apiserver.body_limits import check_depth
from taintplane.apiserver.patch import MERGE_KEYS, MERGE_PRIMITIVE_LISTS
from taintplane.apiserver.typecheck import schemas

__all__ = [
    "Conflict",
    "FieldPath",
    "apply_conflicts",
    "conflict_message",
    "conflicts_left_by_last_applied",
    "fields_of",
    "managed_fields_base",
    "prune",
    "record_apply",
    "record_update",
    "render_path",
    "sync_last_applied",
    "to_fields_v1",
]

FieldPath = tuple[str, ...]
#: Fields the system sets; nobody owns them.
_SYSTEM_METADATA = {
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
}


@dataclass(frozen=True)
class Conflict:
    manager: str
    api_version: str
    path: FieldPath


def _element_key(field: str, item: Any) -> str | None:
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(item, dict) or key not in item:
        return None
    # MERGE_KEYS' names are plain ASCII: only the value can need escaping.
    return 'k:{"' + key + '":' + _json(item[key]) + "}"


def _json(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))``, without the encoder for the values
    keys and set elements almost always are (names, numbers): a plain ASCII string and an
    int render as json.dumps renders them (it escapes quotes, backslashes and anything
    outside space to tilde, which such a string does not have)."""
    kind = type(value)
    if kind is str:
        text: str = value
        if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
            return '"' + text + '"'
    elif kind is int:
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def fields_of(obj: Mapping[str, Any], *, skip_status: bool = False) -> dict[FieldPath, Any]:
    """Every owned leaf of ``obj`` with its value."""
    leaves: dict[FieldPath, Any] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (skip_status and key == "status"):
            continue
        if key == "metadata" and isinstance(value, Mapping):
            value = {
                k: v
                for k, v in value.items()
                if k not in _SYSTEM_METADATA and k not in ("name", "namespace")
            }
            if not value:
                continue  # naming the object is not owning a field
        _walk(("f:" + key,), key, value, leaves)
    return leaves


def _walk(path: FieldPath, field: str, value: Any, leaves: dict[FieldPath, Any]) -> None:
    # ``dict``, not ``Mapping``: objects are decoded JSON, and the ABC check is a measurable
    # share of every write (these walks visit every field).
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _walk((*path, "f:" + key), key, item, leaves)
        return
    if isinstance(value, list) and value and field in MERGE_KEYS:
        keys = [_element_key(field, item) for item in value]
        if all(keys):
            for element, item in zip(keys, value, strict=True):
                assert element is not None
                leaves[(*path, element, ".")] = None
                for key, inner in item.items():
                    _walk((*path, element, "f:" + key), key, inner, leaves)
            return
    if isinstance(value, list) and field in MERGE_PRIMITIVE_LISTS:
        for item in value:
            leaves[(*path, "v:" + _json(item))] = item
        return
    leaves[path] = value


def _changed_parts(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, skip_status: bool
) -> tuple[dict[FieldPath, Any], dict[FieldPath, Any]]:
    """Leaves of ``new`` and ``old`` under the top-level and metadata fields that differ."""
    if old is None:
        return fields_of(new, skip_status=skip_status), {}
    new_part, old_part = _changed_subtrees(new, old)
    return fields_of(new_part, skip_status=skip_status), fields_of(
        old_part, skip_status=skip_status
    )


def _changed_subtrees(
    new: Mapping[str, Any], old: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The top-level and metadata fields of ``new`` and ``old`` that differ (equal parts own
    nothing new, so a small change costs little on a large object)."""
    new_part: dict[str, Any] = {}
    old_part: dict[str, Any] = {}
    for key in set(new) | set(old):
        if key == "metadata":
            new_meta, old_meta = new.get(key) or {}, old.get(key) or {}
            changed = {
                k for k in set(new_meta) | set(old_meta) if new_meta.get(k) != old_meta.get(k)
            }
            new_part["metadata"] = {k: v for k, v in new_meta.items() if k in changed}
            old_part["metadata"] = {k: v for k, v in old_meta.items() if k in changed}
        elif new.get(key) != old.get(key):
            if key in new and key in old:
                new_part[key], old_part[key] = _narrowed(new[key], old[key], key)
            elif key in new:
                new_part[key] = new[key]
            else:
                old_part[key] = old[key]
    return new_part, old_part


def _narrowed(new: Any, old: Any, field: str = "") -> tuple[Any, Any]:
    """Two values cut to what differs: non-empty maps to the keys whose values differ, the
    items of associative lists to those that differ (each cut in turn, its key kept). A
    node's heartbeat changes four timestamps of a status of ~100 owned fields. Equal parts
    have equal leaves and create nothing, so the leaves that differ and the nodes created
    are those of the full values. A cut that would leave a side empty is not made (an empty
    map or list is a leaf of its own to the walks)."""
    if isinstance(new, list) and isinstance(old, list) and new and old and field in MERGE_KEYS:
        return _narrowed_items(field, new, old)
    if not (isinstance(new, dict) and isinstance(old, dict) and new and old):
        return new, old
    new_part, old_part = _differing(new, old, keep="")
    if not new_part or not old_part:
        return new, old
    return new_part, old_part


def _differing(
    new: dict[str, Any], old: dict[str, Any], keep: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keys of two maps whose values differ, narrowed, and ``keep`` (a merge key)."""
    new_part: dict[str, Any] = {}
    old_part: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            new_part[key] = value
        elif key == keep:
            new_part[key], old_part[key] = value, old[key]
        elif value != old[key]:
            new_part[key], old_part[key] = _narrowed(value, old[key], key)
    for key, value in old.items():
        if key not in new:
            old_part[key] = value
    return new_part, old_part


def _narrowed_items(field: str, new: list[Any], old: list[Any]) -> tuple[Any, Any]:
    """Associative lists cut to the items that differ (by key); as they are, unless every
    item of both has a key of its own (the walks then treat them otherwise)."""
    new_keys = [_element_key(field, item) for item in new]
    old_keys = [_element_key(field, item) for item in old]
    if (
        not all(new_keys)
        or not all(old_keys)
        or len(set(new_keys)) != len(new)
        or len(set(old_keys)) != len(old)
    ):
        return new, old
    merge_key = MERGE_KEYS[field]
    before = dict(zip(old_keys, old, strict=True))
    after = dict(zip(new_keys, new, strict=True))
    new_part: list[Any] = []
    old_part: list[Any] = []
    for element, item in after.items():
        was = before.get(element)
        if was is None:
            new_part.append(item)
        elif item != was:
            item_part, was_part = _differing(item, was, keep=merge_key)
            new_part.append(item_part)
            old_part.append(was_part)
    old_part.extend(item for element, item in before.items() if element not in after)
    if not new_part or not old_part:
        return new, old
    return new_part, old_part


def _created_nodes(
    new: Mapping[str, Any], old: Mapping[str, Any], skip_status: bool
) -> set[FieldPath]:
    """The ``.`` paths of the maps, structs and non-atomic lists in ``new`` that ``old`` does
    not have: structured-merge-diff's Compare adds the path of every value absent on the
    left, and a node with children so owned renders as ``{".": {}, "f:a": {}}``. Leaves and
    atomic lists own their path already; associative list items their ``.`` too."""
    created: set[FieldPath] = set()
    for key, value in new.items():
        if key in ("apiVersion", "kind") or (skip_status and key == "status"):
            continue
        old_value = old.get(key)
        if key == "metadata" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in _SYSTEM_METADATA}
        _created_walk(("f:" + key,), key, value, old_value, key in old, created)
    return created


def _created_walk(
    path: FieldPath, field: str, value: Any, old: Any, present: bool, out: set[FieldPath]
) -> None:
    if isinstance(value, dict) and value:
        if not present:
            out.add((*path, "."))
        before = old if isinstance(old, dict) else {}
        for key, item in value.items():
            _created_walk((*path, "f:" + key), key, item, before.get(key), key in before, out)
        return
    if isinstance(value, list) and value and field in MERGE_KEYS:
        keys = [_element_key(field, item) for item in value]
        if all(keys):
            if not present:
                out.add((*path, "."))
            had = old if present and isinstance(old, list) else []
            before = {_element_key(field, item): item for item in had}
            for element, item in zip(keys, value, strict=True):
                assert element is not None
                was = before.get(element)
                had_item: Mapping[str, Any] = was if isinstance(was, dict) else {}
                for key, inner in item.items():
                    inner_path = (*path, element, "f:" + key)
                    _created_walk(inner_path, key, inner, had_item.get(key), key in had_item, out)
            return
    if isinstance(value, list) and value and field in MERGE_PRIMITIVE_LISTS and not present:
        out.add((*path, "."))


def _empty_object(new: Mapping[str, Any]) -> dict[str, Any]:
    """What a create is compared with, as upstream's fieldmanager does: the kind's empty
    object, which has metadata, spec and status (Go structs, never omitted) and, in spec,
    the fields encoded even when empty (the schema's required ones, such as a pod's
    containers: null)."""
    api_version = str(new.get("apiVersion", ""))
    required = _required_in_spec(api_version, str(new.get("kind")))
    return {"metadata": {}, "spec": dict.fromkeys(required), "status": {}}


@cache
def _required_in_spec(api_version: str, kind_name: str) -> tuple[str, ...]:
    group_version = api_version if "/" in api_version else "/" + api_version
    known = schemas()
    kind = known["schemas"].get(known["kinds"].get(f"{group_version}/{kind_name}", ""), {})
    spec: dict[str, Any] = kind.get("properties", {}).get("spec") or {}
    ref = next((str(p["$ref"]) for p in [spec, *spec.get("allOf", [])] if "$ref" in p), "")
    return tuple(known["schemas"].get(ref.rsplit("/", 1)[-1], {}).get("required", []))


def _created_fields(new: Mapping[str, Any], skip_status: bool) -> set[FieldPath]:
    """What a create changes: ``_compare(new, None, ...)``'s first set (every owned leaf of
    ``new``, and the ``.`` of every node the kind's empty object does not have), in one
    walk of the object instead of a walk for the leaves and one for the nodes."""
    empty = _empty_object(new)
    out: set[FieldPath] = set()
    for key, value in new.items():
        if key in ("apiVersion", "kind") or (skip_status and key == "status"):
            continue
        path = ("f:" + key,)
        if key == "metadata" and isinstance(value, Mapping):
            # Metadata owns fewer leaves than nodes it may create (name and namespace):
            # the two walks, as _compare does them, on what is small anyway.
            owned = {
                k: v
                for k, v in value.items()
                if k not in _SYSTEM_METADATA and k not in ("name", "namespace")
            }
            if owned:
                leaves: dict[FieldPath, Any] = {}
                _walk(path, key, owned, leaves)
                out.update(leaves)
            created = {k: v for k, v in value.items() if k not in _SYSTEM_METADATA}
            _created_walk(path, key, created, empty.get(key), key in empty, out)
            continue
        _leaves_and_created(path, key, value, empty.get(key), key in empty, out)
    return out


def _leaves_and_created(
    path: FieldPath, field: str, value: Any, old: Any, present: bool, out: set[FieldPath]
) -> None:
    """``_walk``'s leaves and ``_created_walk``'s nodes of ``value`` at once (their
    branches are the same but for the ``.`` of a node ``old`` lacks)."""
    if isinstance(value, dict) and value:
        if not present:
            out.add((*path, "."))
        before = old if isinstance(old, dict) else {}
        for key, item in value.items():
            _leaves_and_created((*path, "f:" + key), key, item, before.get(key), key in before, out)
        return
    if isinstance(value, list) and value and field in MERGE_KEYS:
        keys = [_element_key(field, item) for item in value]
        if all(keys):
            if not present:
                out.add((*path, "."))
            before_items = (
                {_element_key(field, item): item for item in old or []} if present else {}
            )
            for element, item in zip(keys, value, strict=True):
                assert element is not None
                out.add((*path, element, "."))
                was = before_items.get(element)
                had_item: Mapping[str, Any] = was if isinstance(was, dict) else {}
                for key, inner in item.items():
                    _leaves_and_created(
                        (*path, element, "f:" + key),
                        key,
                        inner,
                        had_item.get(key),
                        key in had_item,
                        out,
                    )
            return
    if isinstance(value, list) and field in MERGE_PRIMITIVE_LISTS:
        for item in value:
            out.add((*path, "v:" + _json(item)))
        if value and not present:
            out.add((*path, "."))
        return
    out.add(path)


def to_fields_v1(paths: Iterator[FieldPath] | list[FieldPath]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    return tree


def _from_fields_v1(tree: Mapping[str, Any], prefix: FieldPath = ()) -> set[FieldPath]:
    paths: set[FieldPath] = set()
    for key, child in tree.items():
        path = (*prefix, key)
        if isinstance(child, dict) and child:
            paths |= _from_fields_v1(child, path)
        else:
            paths.add(path)
    return paths


def render_path(path: FieldPath) -> str:
    """A path as Kubernetes prints it: ``.spec.containers[name="c"].image``."""
    out = ""
    for part in path:
        if part == ".":
            continue
        if part.startswith("f:"):
            out += "." + part[2:]
        elif part.startswith("k:"):
            selector = json.loads(part[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in selector.items()) + "]"
        elif part.startswith("v:"):
            out += f"[={part[2:]}]"
    return out


def _entries(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = metadata.get("managedFields")
    return [dict(e) for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []


def _owned(entry: Mapping[str, Any]) -> set[FieldPath]:
    tree = entry.get("fieldsV1")
    return _from_fields_v1(tree) if isinstance(tree, Mapping) else set()


def _store(
    entries: list[dict[str, Any]],
    manager: str,
    operation: str,
    api_version: str,
    now: str | None,
    paths: set[FieldPath],
    subresource: str,
    *,
    tree: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``entries`` with ``manager``'s entry for ``operation`` set to ``paths`` (or to the
    FieldsV1 ``tree`` of them), stamped ``now`` (``None``: the write changed nothing of its
    own, and the entry keeps the time it had)."""
    kept: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    for e in entries:
        if (
            e.get("manager") == manager
            and e.get("operation") == operation
            and e.get("subresource", "") == subresource
        ):
            previous = e
        else:
            kept.append(e)
    if paths or tree:
        entry: dict[str, Any] = {"manager": manager, "operation": operation}
        entry["apiVersion"] = api_version
        time = now if now is not None else previous.get("time")
        if time:
            entry["time"] = time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = tree if tree is not None else to_fields_v1(sorted(paths))
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    # An entry that owns nothing goes (structured-merge-diff drops managers with empty sets).
    return _in_upstream_order([e for e in kept if e.get("fieldsV1")])


def _in_upstream_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """sortEncodedManagedFields: operation (Apply first), time to the second, manager, API
    version, subresource."""

    def key(entry: Mapping[str, Any]) -> tuple[str, int, str, str, str]:
        return (
            str(entry.get("operation", "")),
            _seconds(entry.get("time")),
            str(entry.get("manager", "")),
            str(entry.get("apiVersion", "")),
            str(entry.get("subresource", "")),
        )

    return sorted(entries, key=key)


#: Entry times already read: every write sorts its object's entries by them, and the same
#: few instants recur (bounded: cleared when full).
_SECONDS: dict[str, int] = {}


def _seconds(time: Any) -> int:
    if not isinstance(time, str) or not time:
        return 0
    known = _SECONDS.get(time)
    if known is not None:
        return known
    try:
        seconds = int(datetime.fromisoformat(time).timestamp())
    except ValueError:
        seconds = 0
    if len(_SECONDS) >= 4096:
        _SECONDS.clear()
    _SECONDS[time] = seconds
    return seconds


def managed_fields_base(sent: Any, live: Any, *, from_request: bool) -> list[dict[str, Any]]:
    """The entries a write's record starts from (upstream's decodeLiveOrNew): the live ones
    for an apply or a subresource; otherwise the request's own when it sets any that decode
    (so a client can rewrite them, as kubectl's client-side-apply migration does), none when
    it resets them (``[]`` or ``[{}]``), and the live ones when it leaves them out or sends
    entries that do not decode (a client that does not know them loses nothing)."""
    live_entries = _entries({"managedFields": live})
    if not from_request or sent is None or sent == live:
        return live_entries
    if isinstance(sent, list) and (
        not sent
        or (
            len(sent) == 1
            and isinstance(sent[0], Mapping)
            and all(v is None or v == "" for v in sent[0].values())
        )
    ):
        return []
    if not isinstance(sent, list) or not all(_decodes(e) for e in sent):
        return live_entries
    return _normalized(sent)


def _decodes(entry: Any) -> bool:
    """DecodeManagedFields' checks of one entry."""
    if not isinstance(entry, Mapping):
        return False
    if entry.get("operation") not in ("Apply", "Update"):
        return False
    if not isinstance(entry.get("apiVersion"), str) or not entry["apiVersion"]:
        return False
    if entry.get("fieldsType") != "FieldsV1":
        return False
    fields = entry.get("fieldsV1")
    return fields is None or _valid_fields_v1(fields)


def _valid_fields_v1(tree: Any) -> bool:
    """Does ``tree`` parse as a structured-merge-diff field set (FieldsToSet)?"""
    if not isinstance(tree, Mapping):
        return False
    for key, child in tree.items():
        if not _valid_path_element(str(key)) or not _valid_fields_v1(child):
            return False
    return True


def _valid_path_element(key: str) -> bool:
    if key == ".":
        return True
    prefix, _, rest = key.partition(":")
    if prefix == "f":
        return True
    try:
        # orjson stops at 1024 levels in C, where json.loads would overflow Python's stack
        # on a 3 MiB key of brackets; past MAX_DEPTH the key is no path element either
        # (and stays parseable by the json.loads calls that read stored keys).
        value = orjson.loads(rest)
        check_depth(value, rest)
    except ValueError:
        return False
    if prefix == "k":
        return isinstance(value, dict) and bool(value)
    if prefix == "i":
        return isinstance(value, int) and not isinstance(value, bool)
    return prefix == "v"


def _normalized(sent: list[Any]) -> list[dict[str, Any]]:
    """The request's entries as the server encodes them again: one per manager identity
    (manager, operation, the API version of an update, subresource; the last wins), each
    field set in canonical form, empty ones dropped, in upstream's order."""
    by_identity: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for sent_entry in sent:
        operation = str(sent_entry["operation"])
        entry: dict[str, Any] = {}
        if sent_entry.get("manager"):
            entry["manager"] = str(sent_entry["manager"])
        entry["operation"] = operation
        entry["apiVersion"] = str(sent_entry["apiVersion"])
        if sent_entry.get("time"):
            entry["time"] = sent_entry["time"]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = to_fields_v1(sorted(_from_fields_v1(sent_entry.get("fieldsV1") or {})))
        if sent_entry.get("subresource"):
            entry["subresource"] = str(sent_entry["subresource"])
        identity = (
            entry.get("manager", ""),
            operation,
            entry["apiVersion"] if operation == "Update" else "",
            entry.get("subresource", ""),
        )
        by_identity[identity] = entry
    return _in_upstream_order([e for e in by_identity.values() if e["fieldsV1"]])


def _under(path: FieldPath, prefixes: set[FieldPath]) -> bool:
    """Is ``path`` one of ``prefixes`` or inside one? (One set lookup per level of the path,
    rather than a comparison with every prefix: writes change few fields of many owned.)"""
    return any(path[:depth] in prefixes for depth in range(1, len(path) + 1))


def _reaches(tree: Any, path: FieldPath) -> bool:
    """Does the FieldsV1 ``tree`` own ``path`` or anything inside it?"""
    for part in path:
        if not isinstance(tree, Mapping) or part not in tree:
            return False
        tree = tree[part]
    return True


def _disown(
    entries: list[dict[str, Any]], paths: set[FieldPath], keep: tuple[str, str, str]
) -> None:
    for entry in entries:
        if (entry.get("manager"), entry.get("operation"), entry.get("subresource", "")) == keep:
            continue
        tree = entry.get("fieldsV1")
        if not any(_reaches(tree, path) for path in paths):
            # Nothing this entry owns is touched (the usual case: a write changes a few fields
            # other managers do not own), so its tree is not parsed into paths at all.
            continue
        owned = _owned(entry)
        remaining = {p for p in owned if not _under(p, paths)}
        if remaining != owned:
            entry["fieldsV1"] = to_fields_v1(sorted(remaining))


def record_update(
    new: dict[str, Any],
    old: Mapping[str, Any] | None,
    manager: str,
    api_version: str,
    now: str,
    *,
    subresource: str = "",
    skip_status: bool = False,
) -> None:
    """Give ``manager`` the fields this write changed, in ``new["metadata"]["managedFields"]``
    (which holds the entries the write starts from: ``managed_fields_base``)."""
    metadata = new.setdefault("metadata", {})
    entries = _entries(metadata)
    skip = skip_status and subresource != "status"
    changed, removed = _compare(new, old, skip)
    key = (manager, "Update", subresource)
    restamped = _restamped(entries, key, changed, removed, api_version, now)
    if restamped is not None:
        metadata["managedFields"] = restamped
        return
    _disown(entries, changed | removed, key)
    mine = next(
        (
            _owned(e)
            for e in entries
            if (e.get("manager"), e.get("operation"), e.get("subresource", "")) == key
        ),
        set(),
    )
    # Keep what this manager owned unless the write removed it. Its entry is stamped only
    # when the write set something (managedFieldsUpdater: "if the current operation took any
    # fields").
    mine = {p for p in mine if not _under(p, removed)} | changed
    metadata["managedFields"] = _store(
        entries, manager, "Update", api_version, now if changed else None, mine, subresource
    )
    if not metadata["managedFields"]:
        del metadata["managedFields"]


def _restamped(
    entries: list[dict[str, Any]],
    key: tuple[str, str, str],
    changed: set[FieldPath],
    removed: set[FieldPath],
    api_version: str,
    now: str,
) -> list[dict[str, Any]] | None:
    """The record of a write that only changed fields its manager alone already owns (a
    heartbeat, a status report): the same entries, the manager's stamped ``now``, without
    reading its fields into paths and writing them back. None when that is not the case or
    its entry is not as :func:`to_fields_v1` writes it (then the full record makes it so)."""
    if not changed or removed:
        return None
    mine = [
        e
        for e in entries
        if (e.get("manager"), e.get("operation"), e.get("subresource", "")) == key
    ]
    if len(mine) != 1:
        return None
    tree = mine[0].get("fieldsV1")
    if not isinstance(tree, dict) or not all(_owns(tree, path) for path in changed):
        return None
    if not _canonical(tree):
        return None
    for entry in entries:
        if entry is not mine[0] and any(_reaches(entry.get("fieldsV1"), p) for p in changed):
            return None
    manager, operation, subresource = key
    return _store(entries, manager, operation, api_version, now, set(), subresource, tree=tree)


def _owns(tree: Mapping[str, Any], path: FieldPath) -> bool:
    """Does the FieldsV1 ``tree`` own ``path`` itself (a leaf of the tree)?"""
    node: Any = tree
    for part in path:
        if not isinstance(node, dict):
            return False
        node = node.get(part)
    return isinstance(node, dict) and not node


def _canonical(tree: Mapping[str, Any]) -> bool:
    """Is ``tree`` what to_fields_v1 writes for its paths: maps all the way down, the keys
    of each in sorted order?"""
    keys = list(tree)
    if keys != sorted(keys):
        return False
    return all(
        isinstance(child, dict) and (not child or _canonical(child)) for child in tree.values()
    )


def _compare(
    new: Mapping[str, Any], old: Mapping[str, Any] | None, skip_status: bool
) -> tuple[set[FieldPath], set[FieldPath]]:
    """structured-merge-diff's Compare of ``old`` (a create: the kind's empty object) with
    ``new``: the paths modified or added, and those removed."""
    if old is None:
        return _created_fields(new, skip_status), set()
    new_part, old_part = _changed_subtrees(new, old)
    after = fields_of(new_part, skip_status=skip_status)
    before = fields_of(old_part, skip_status=skip_status) if old is not None else {}
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    removed = {p for p in before if p not in after}
    # The maps and structs this write created are owned too, as "."; those it removed go.
    changed |= _created_nodes(new_part, old_part, skip_status)
    if old is not None:
        removed |= _created_nodes(old_part, new_part, skip_status)
    return changed, removed


def apply_conflicts(
    live: Mapping[str, Any], config: Mapping[str, Any], manager: str, *, skip_status: bool
) -> list[Conflict]:
    """Fields ``config`` sets to a value other than the live one that another manager owns."""
    live_fields = fields_of(live, skip_status=skip_status)
    conflicts: list[Conflict] = []
    for path, value in fields_of(config, skip_status=skip_status).items():
        if path in live_fields and live_fields[path] == value:
            continue
        for entry in _entries(live.get("metadata", {})):
            if entry.get("manager") == manager and entry.get("operation") == "Apply":
                continue
            if any(path[: len(o)] == o or o[: len(path)] == path for o in _owned(entry)):
                # printManager names an updater with its API version, an applier alone.
                updater = entry.get("operation") == "Update"
                api_version = str(entry.get("apiVersion", "")) if updater else ""
                conflicts.append(Conflict(str(entry.get("manager")), api_version, path))
    return conflicts


def conflicts_left_by_last_applied(
    live: Mapping[str, Any],
    conflicts: list[Conflict],
    manager: str,
    api_version: str,
    *,
    skip_status: bool,
) -> list[Conflict]:
    """lastAppliedManager: the first ``kubectl apply --server-side`` of an object kubectl
    applied client-side takes over, without a conflict, the fields the client-side apply
    annotation names with the values they still have (the upgrade path upstream documents).
    Only for the manager "kubectl", an annotation of the request's API version; what is
    left conflicts as before."""
    annotations = (live.get("metadata") or {}).get("annotations")
    if manager != "kubectl" or not conflicts or not isinstance(annotations, dict):
        return conflicts
    text = annotations.get(LAST_APPLIED)
    try:
        last_applied = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return conflicts
    if not isinstance(last_applied, dict) or last_applied.get("apiVersion") != api_version:
        return conflicts
    live_fields = fields_of(live, skip_status=skip_status)
    allowed = {
        path
        for path, value in fields_of(last_applied, skip_status=skip_status).items()
        if path in live_fields and live_fields[path] == value
    }
    return [conflict for conflict in conflicts if conflict.path not in allowed]


def record_apply(
    result: dict[str, Any],
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    manager: str,
    api_version: str,
    now: str,
    *,
    force: bool,
    skip_status: bool,
    merged: Mapping[str, Any] | None = None,
) -> None:
    """Record ``config``'s fields as ``manager``'s apply set. Other managers lose only what
    the apply changed or removed (the conflicts a forced apply overrides): a field applied
    with the value it has stays theirs too. The entry is recorded even when the object does
    not change (a new co-owner is a write), stamped only when it does. The changes are those
    of ``merged`` (the object before defaulting) when given."""
    metadata = result.setdefault("metadata", {})
    entries = _entries(metadata)
    key = (manager, "Apply", "")
    applied = set(fields_of(config, skip_status=skip_status))
    compared = result if merged is None else merged
    changed_object = live is None or _without_managed_fields(compared) != _without_managed_fields(
        live
    )
    if live is not None and changed_object:
        changed, removed = _compare(compared, live, skip_status)
        _disown(entries, changed | removed, key)
    metadata["managedFields"] = _store(
        entries, manager, "Apply", api_version, now if changed_object else None, applied, ""
    )
    if not metadata["managedFields"]:
        del metadata["managedFields"]


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata") or {}
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def sync_last_applied(result: dict[str, Any], config: Mapping[str, Any], manager: str) -> None:
    """lastAppliedUpdater: kubectl's server-side apply keeps the client-side apply annotation,
    where the object has one, equal to what it applied (so a later client-side apply diffs
    against it). The annotation is the configuration without it, as Go encodes unstructured
    JSON: sorted keys, then a newline."""
    annotations = (result.get("metadata") or {}).get("annotations")
    if manager != "kubectl" or not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return
    applied = _sorted_keys(config)
    config_meta = applied.get("metadata")
    if isinstance(config_meta, dict) and isinstance(config_meta.get("annotations"), dict):
        config_meta["annotations"].pop(LAST_APPLIED, None)
    annotations[LAST_APPLIED] = go_json(applied) + "\n"


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def previously_applied(live: Mapping[str, Any], manager: str) -> set[FieldPath]:
    for entry in _entries(live.get("metadata", {})):
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            return _owned(entry)
    return set()


def owned_by_others(live: Mapping[str, Any], manager: str) -> set[FieldPath]:
    owned: set[FieldPath] = set()
    for entry in _entries(live.get("metadata", {})):
        if not (entry.get("manager") == manager and entry.get("operation") == "Apply"):
            owned |= _owned(entry)
    return owned


def prune(current: dict[str, Any], manager: str, named: set[FieldPath]) -> None:
    """Remove from ``current`` what ``manager`` applied before and no longer names, unless
    another manager owns it (Updater.prune): a map, struct or list item goes only when
    nothing inside it is still applied or owned (addBackOwnedItems keeps the parents of
    owned fields), so an annotation another manager owns keeps its annotations map."""
    kept = named | owned_by_others(current, manager)
    inside_kept = {p[:depth] for p in kept for depth in range(1, len(p))}
    for path in sorted(previously_applied(current, manager) - kept, key=len, reverse=True):
        node = path[:-1] if path[-1] == "." else path
        if node not in inside_kept:
            remove_path(current, path)


def remove_path(obj: dict[str, Any], path: FieldPath) -> None:
    """Delete the field or list element at ``path`` from ``obj`` (no-op if absent)."""
    node: Any = obj
    for i, part in enumerate(path):
        last = i == len(path) - 1 or path[i + 1] == "."
        if part.startswith("f:") and isinstance(node, dict):
            if last:
                node.pop(part[2:], None)
                return
            node = node.get(part[2:])
        elif part.startswith("k:") and isinstance(node, list):
            selector = json.loads(part[2:])
            index = next(
                (
                    j
                    for j, item in enumerate(node)
                    if isinstance(item, dict) and all(item.get(k) == v for k, v in selector.items())
                ),
                None,
            )
            if index is None:
                return
            if last:
                del node[index]
                return
            node = node[index]
        elif part.startswith("v:") and isinstance(node, list):
            value = json.loads(part[2:])
            if value in node:
                node.remove(value)
            return
        else:
            return


def conflict_message(conflicts: list[Conflict]) -> str:
    """The apiserver's message for apply conflicts (one, or grouped by sorted manager)."""

    def who(conflict: Conflict) -> str:
        # Update managers are named with their API version; appliers by name alone.
        return (
            f'"{conflict.manager}" using {conflict.api_version}'
            if conflict.api_version
            else f'"{conflict.manager}"'
        )

    if len(conflicts) == 1:
        c = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {who(c)}: {render_path(c.path)}"
    grouped: dict[str, list[Conflict]] = {}
    for c in conflicts:
        grouped.setdefault(who(c), []).append(c)
    lines: list[str] = []
    for manager in sorted(grouped):
        lines.append(f"conflicts with {manager}:")
        lines += [f"- {render_path(c.path)}" for c in grouped[manager]]
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
