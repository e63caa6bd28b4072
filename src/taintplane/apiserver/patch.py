"""The four patch types of ``PATCH`` requests.

* JSON patch (RFC 6902), in ``json_patch``;
* JSON merge patch (RFC 7386): maps merge, ``null`` deletes, lists are replaced;
* strategic merge patch, Kubernetes' own: like merge patch, but lists that have a *patch
  merge key* in the Go types (``containers`` by ``name``, ``conditions`` by ``type`` …) merge
  element by element, ``finalizers`` merge as a set, every other list is replaced whole (taints
  and tolerations are such atomic lists), and the directives ``$patch``,
  ``$setElementOrder/<list>``, ``$retainKeys`` and ``$deleteFromPrimitiveList/<list>`` apply;
* apply patches are handled by server-side apply elsewhere.
"""

from __future__ import annotations

from typing import Any

import orjson

from taintplane.api.decoding import json_type
from taintplane.apiserver.codec import clone

__all__ = [
    "MERGE_KEYS",
    "PatchError",
    "apply_merge_patch",
    "apply_merge_patch_body",
    "apply_strategic_merge_patch",
    "go_value",
]

#: Lists that merge element by element, keyed by the field that identifies an element.
#: Names are list field names as they appear in the served kinds' Go types.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "readinessGates": "conditionType",
    "schedulingGates": "name",
}
#: Primitive lists that merge as sets.
MERGE_PRIMITIVE_LISTS = {"finalizers"}


class PatchError(ValueError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


#: mergepatch's errors for a directive of the wrong shape (answered 400, as
#: interpretStrategicMergePatchError does).
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"


def go_value(value: Any) -> str:
    """``value`` as Go's ``%v`` prints the decoded JSON (maps with sorted keys)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        if "e" in text:
            mantissa, exponent = text.split("e")
            sign = "-" if exponent.startswith("-") else "+"
            text = f"{mantissa.removesuffix('.0')}e{sign}{exponent.lstrip('+-').rjust(2, '0')}"
        return text.removesuffix(".0")
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


def apply_merge_patch_body(
    original: dict[str, Any], patch: object, *, consume_original: bool = False
) -> dict[str, Any]:
    """A ``PATCH`` request's merge patch, as applyJSPatch takes it: decoded strictly into a
    map first (fieldValidation Strict or Warn), then ``null`` is json-patch's
    ErrBadJSONPatch."""
    if patch is None:
        raise PatchError("Invalid JSON Patch")
    if not isinstance(patch, dict):
        raise PatchError(f"error decoding patch: {_not_a_map(patch)}")
    merged: dict[str, Any] = apply_merge_patch(original, patch, consume_original=consume_original)
    return merged


def _not_a_map(value: object) -> str:
    go_type = "map[string]interface {}"
    return f"json: cannot unmarshal {json_type(value)} into Go value of type {go_type}"


def apply_merge_patch(original: Any, patch: Any, *, consume_original: bool = False) -> Any:
    """RFC 7386 (neither argument is modified, unless ``consume_original`` hands ``original``
    over)."""
    return _merge_into(original if consume_original else clone(original), clone(patch))


def _merge_into(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_into(result.get(key), value)
    return result


def apply_strategic_merge_patch(
    original: dict[str, Any], patch: object, *, consume_original: bool = False
) -> dict[str, Any]:
    """``consume_original``: the caller hands ``original`` over (a private copy), so the result
    may share or change it instead of copying it first. A ``null`` patch changes nothing;
    any other non-object fails to decode into the patch map (strategicPatchObject)."""
    if patch is None:
        return original if consume_original else clone(original)
    if not isinstance(patch, dict):
        raise PatchError(_not_a_map(patch))
    result = _merge_map(original if consume_original else clone(original), clone(patch))
    if result is None:
        return {}
    return result


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any]) -> dict[str, Any] | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "replace":
        replaced: dict[str, Any] = _strip_directives(body)
        return replaced
    if directive is not None:
        raise PatchError(f"unknown patch type: {go_value(directive)} in map: {go_value(patch)}")
    result = dict(original) if isinstance(original, dict) else {}
    retain = body.pop("$retainKeys", None)
    if retain is not None and not isinstance(retain, list):
        raise PatchError(BAD_RETAIN_KEYS)
    orders: dict[str, list[Any]] = {}
    deletions: dict[str, list[Any]] = {}
    for key in list(body):
        if key.startswith("$setElementOrder/"):
            order = body.pop(key)
            listed = body.get(key.split("/", 1)[1], [])
            if not isinstance(order, list) or not isinstance(listed, list | None):
                raise PatchError(BAD_SET_ELEMENT_ORDER)
            orders[key.split("/", 1)[1]] = order
        elif key.startswith("$deleteFromPrimitiveList/"):
            values = body.pop(key)
            if not isinstance(values, list):
                raise PatchError(BAD_PRIMITIVE_LIST)
            deletions[key.split("/", 1)[1]] = values
    for key, value in body.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(
                result.get(key) if isinstance(result.get(key), dict) else None, value
            )
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = value
    for key, values in deletions.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    for key, order in orders.items():
        if isinstance(result.get(key), list):
            result[key] = _reorder(key, result[key], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if isinstance(k, str) and k in retain}
    return result


def _merge_list(field: str, original: object, patch: list[Any]) -> list[Any]:
    current = list(original) if isinstance(original, list) else []
    if field in MERGE_PRIMITIVE_LISTS:
        merged = list(current)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged
    key = MERGE_KEYS.get(field)
    if key is None:
        replacement: list[Any] = _strip_directives(patch)
        return replacement
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip_directives(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    merged = list(current)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"a list of {field} merges by {key}: every element must be an object")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        index = next(
            (
                i
                for i, existing in enumerate(merged)
                if isinstance(existing, dict) and existing.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del merged[index]
            continue
        if index is None:
            merged.append(_strip_directives(item))
        else:
            merged_item = _merge_map(merged[index], item)
            if merged_item is None:
                del merged[index]
            else:
                merged[index] = merged_item
    return merged


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    """``$setElementOrder``: the elements it names first, in its order; the others (the
    server's own) after them. Elements of a list merged by key are named by their key (a map
    holding it, ``[{"name": "a"}]``), others by their whole value."""
    key = MERGE_KEYS.get(field)

    def identity(item: Any) -> str:
        named = item.get(key) if key is not None and isinstance(item, dict) else item
        return orjson.dumps(named, option=orjson.OPT_SORT_KEYS).decode()

    position: dict[str, int] = {}
    for i, wanted in enumerate(order):
        position.setdefault(identity(wanted), i)
    listed = sorted(
        (i for i in items if identity(i) in position), key=lambda i: position[identity(i)]
    )
    return listed + [i for i in items if identity(i) not in position]


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not (
                k == "$patch"
                or k.startswith(("$setElementOrder/", "$retainKeys", "$deleteFromPrimitiveList/"))
            )
            and v is not None
        }
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value
