"""RFC 6902 JSON patch as kube-apiserver applies it (handlers/patch.go, applyJSPatch).

Upstream decodes the patch twice: strictly into ``[]jsonPatchOp`` (fieldValidation Strict or
Warn, a 400 ``error decoding patch: …`` when a type is wrong), then with
gopkg.in/evanphx/json-patch.v4, whose semantics this module keeps, quirks included:

* a path's first segment is ignored (``a/b`` is the root's ``b``) and ``""`` names no
  container, except for ``replace`` and ``test``, where it is the whole document;
* ``replace`` of a missing key of an object sets it, ``copy`` of one copies ``null``;
* ``test`` of a missing key or a ``null`` passes when the value is missing or ``null``;
* negative array indices count from the end;
* ``copy`` operations may grow the document by at most 3 MiB (the apiserver's
  JSONPatchMaxCopyBytes).

The library's error texts are kept on ``JSONPatchApplyError`` although kube-apiserver does
not send them: it answers every failed application with the same generic 422.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from taintplane.api.decoding import json_type
from taintplane.api.gofmt import go_quote
from taintplane.apiserver.codec import clone
from taintplane.apiserver.patch import PatchError

__all__ = [
    "MAX_OPERATIONS",
    "JSONPatchApplyError",
    "JSONPatchTooLarge",
    "PatchedNotAnObject",
    "apply_json_patch",
]

#: handlers/patch.go's maxJSONPatchOperations.
MAX_OPERATIONS = 10000
#: genericapiserver's JSONPatchMaxCopyBytes (3 MiB), armed as AccumulatedCopySizeLimit.
MAX_COPY_BYTES = 3 * 1024 * 1024

_MISSING = "missing value"
_INVALID_INDEX = "invalid index referenced"
_ATOI = re.compile(r"[+-]?[0-9]+")
_ABSENT: Any = object()


class JSONPatchApplyError(PatchError):
    """The patch decoded but does not apply: kube-apiserver's generic 422."""


class JSONPatchTooLarge(PatchError):
    """More operations than kube-apiserver takes: a 413."""


class PatchedNotAnObject(PatchError):
    """The patched document is not an object (a ``replace`` of ``""`` with an array): the
    patched object does not decode, a 422 naming the patched JSON."""

    def __init__(self, message: str, patched: Any) -> None:
        super().__init__(message)
        self.patched_json = orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode()


class _Failure(Exception):
    """A library error, worded as the library wraps it."""


def apply_json_patch(
    original: dict[str, Any], operations: object, *, consume_original: bool = False
) -> dict[str, Any]:
    """``operations`` applied to ``original``. ``consume_original``: the caller hands
    ``original`` over (a private copy), so it is patched without being copied first; the
    patch itself is never modified."""
    ops = _decode(operations)
    if len(ops) > MAX_OPERATIONS:
        raise JSONPatchTooLarge(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_OPERATIONS}, got {len(ops)}"
        )
    document = _Document(original if consume_original else clone(original))
    for op in ops:
        try:
            document.apply(op if isinstance(op, dict) else {})
        except _Failure as failure:
            raise JSONPatchApplyError(str(failure)) from failure
    if not isinstance(document.root, dict):
        raise PatchedNotAnObject(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{json_type(document.root)} into Go value of type struct {{ APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }',
            document.root,
        )
    return document.root


def _decode(operations: object) -> list[Any]:
    """kjson.UnmarshalStrict into ``[]jsonPatchOp``: the first value of a wrong type is the
    error; ``null`` is an empty patch."""
    if operations is None:
        return []
    if not isinstance(operations, list):
        raise _decode_error(operations, "[]handlers.jsonPatchOp")
    for op in operations:
        if op is None:
            continue
        if not isinstance(op, dict):
            raise _decode_error(op, "handlers.jsonPatchOp")
        for key, value in op.items():
            if key in ("op", "path", "from") and value is not None and not isinstance(value, str):
                raise PatchError(
                    f"error decoding patch: json: cannot unmarshal {json_type(value)} into Go "
                    f"struct field jsonPatchOp.{key} of type string"
                )
    return operations


def _decode_error(value: object, go_type: str) -> PatchError:
    return PatchError(
        f"error decoding patch: json: cannot unmarshal {json_type(value)} into Go value of "
        f"type {go_type}"
    )


class _Document:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.copied_bytes = 0

    def apply(self, op: dict[str, Any]) -> None:
        kind = op.get("op")
        if kind == "add":
            self._add(op)
        elif kind == "remove":
            self._remove(op)
        elif kind == "replace":
            self._replace(op)
        elif kind == "move":
            self._move(op)
        elif kind == "test":
            self._test(op)
        elif kind == "copy":
            self._copy(op)
        else:
            raise _Failure(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")

    def _add(self, op: dict[str, Any]) -> None:
        path = _path(op)
        if path is None:
            raise _Failure(f"add operation failed to decode path: {_MISSING}")
        found = self._find(path)
        if found is None:
            raise _Failure(
                f'add operation does not apply: doc is missing path: "{path}": {_MISSING}'
            )
        try:
            _add(*found, op.get("value"))
        except _Failure as failure:
            raise _Failure(f"error in add for path: '{path}': {failure}") from failure

    def _remove(self, op: dict[str, Any]) -> None:
        path = _path(op)
        if path is None:
            raise _Failure(f"remove operation failed to decode path: {_MISSING}")
        found = self._find(path)
        if found is None:
            raise _Failure(
                f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}'
            )
        try:
            _remove(*found)
        except _Failure as failure:
            raise _Failure(f"error in remove for path: '{path}': {failure}") from failure

    def _replace(self, op: dict[str, Any]) -> None:
        path = _path(op)
        if path is None:
            raise _Failure(
                f"replace operation failed to decode path: operation missing path field: {_MISSING}"
            )
        if path == "":
            value = op.get("value")
            if not isinstance(value, dict | list):
                # json-patch v4.13 wraps a nil error here, hence Go's %!w(<nil>).
                raise _Failure("replace operation value must be object or array: %!w(<nil>)")
            self.root = clone(value)
            return
        found = self._find(path)
        if found is None:
            raise _Failure(
                f"replace operation does not apply: doc is missing path: {path}: {_MISSING}"
            )
        container, key = found
        try:
            _get(container, key)
        except _Failure as failure:
            raise _Failure(
                f"replace operation does not apply: doc is missing key: {path}: {_MISSING}"
            ) from failure
        _set(container, key, clone(op.get("value")))

    def _move(self, op: dict[str, Any]) -> None:
        source = _from(op)
        if source is None:
            raise _Failure(
                f"move operation failed to decode from: operation, missing from field: {_MISSING}"
            )
        found = self._find(source)
        if found is None:
            raise _Failure(
                f"move operation does not apply: doc is missing from path: {source}: {_MISSING}"
            )
        container, key = found
        try:
            value = _get(container, key)
            _remove(container, key)
        except _Failure as failure:
            # The library names the last segment here, not the path.
            raise _Failure(f"error in move for path: '{key}': {failure}") from failure
        path = _path(op)
        if path is None:
            raise _Failure(
                f"move operation failed to decode path: operation missing path field: {_MISSING}"
            )
        destination = self._find(path)
        if destination is None:
            raise _Failure(
                "move operation does not apply: doc is missing destination path: "
                f"{path}: {_MISSING}"
            )
        try:
            _add(*destination, value)
        except _Failure as failure:
            raise _Failure(f"error in move for path: '{path}': {failure}") from failure

    def _test(self, op: dict[str, Any]) -> None:
        path = _path(op)
        if path is None:
            raise _Failure(
                f"test operation failed to decode path: operation missing path field: {_MISSING}"
            )
        expected = op.get("value", _ABSENT)
        if path == "":
            if expected is _ABSENT or not _equal(self.root, expected):
                raise _Failure(f"testing value {path} failed: test failed")
            return
        found = self._find(path)
        if found is None:
            raise _Failure(f"test operation does not apply: is missing path: {path}: {_MISSING}")
        try:
            actual = _get(*found)
        except _Failure as failure:
            raise _Failure(f"error in test for path: '{path}': {failure}") from failure
        if actual is None:
            passed = expected is _ABSENT or expected is None
        else:
            passed = expected is not _ABSENT and _equal(actual, expected)
        if not passed:
            raise _Failure(f"testing value {path} failed: test failed")

    def _copy(self, op: dict[str, Any]) -> None:
        source = _from(op)
        if source is None:
            raise _Failure(
                f"copy operation failed to decode from: operation, missing from field: {_MISSING}"
            )
        found = self._find(source)
        if found is None:
            raise _Failure(
                f"copy operation does not apply: doc is missing from path: {source}: {_MISSING}"
            )
        try:
            value = _get(*found)
        except _Failure as failure:
            raise _Failure(f"error in copy for from: '{source}': {failure}") from failure
        path = _path(op)
        if path is None:
            raise _Failure(f"copy operation failed to decode path: {_MISSING}")
        destination = self._find(path)
        if destination is None:
            raise _Failure(
                "copy operation does not apply: doc is missing destination path: "
                f"{path}: {_MISSING}"
            )
        if value is not None:
            self.copied_bytes += len(orjson.dumps(value))
        if self.copied_bytes > MAX_COPY_BYTES:
            raise _Failure(
                "Unable to complete the copy, the accumulated size increase of copy is "
                f"{self.copied_bytes}, exceeding the limit {MAX_COPY_BYTES}"
            )
        try:
            _add(*destination, clone(value))
        except _Failure as failure:
            raise _Failure(f"error while adding value during copy: {failure}") from failure

    def _find(self, path: str) -> tuple[dict[str, Any] | list[Any], str] | None:
        """The container that ``path``'s last segment names a member of (findObject)."""
        segments = path.split("/")
        if len(segments) < 2:
            return None
        node = self.root
        for segment in segments[1:-1]:
            try:
                node = _get(node, _unescape(segment))
            except _Failure:
                return None
            if not isinstance(node, dict | list):
                return None
        return node, _unescape(segments[-1])


def _path(op: dict[str, Any]) -> str | None:
    path = op.get("path")
    return path if isinstance(path, str) else None


def _from(op: dict[str, Any]) -> str | None:
    source = op.get("from")
    return source if isinstance(source, str) else None


def _unescape(segment: str) -> str:
    return segment.replace("~1", "/").replace("~0", "~")


def _atoi(key: str) -> int:
    """strconv.Atoi, with its errors."""
    if not _ATOI.fullmatch(key):
        raise _Failure(f"strconv.Atoi: parsing {go_quote(key)}: invalid syntax")
    index = int(key)
    if not -(2**63) <= index < 2**63:
        raise _Failure(f"strconv.Atoi: parsing {go_quote(key)}: value out of range")
    return index


def _invalid_index(index: int) -> _Failure:
    return _Failure(f"Unable to access invalid index: {index}: {_INVALID_INDEX}")


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    index = _atoi(key)
    if index < 0:
        if index < -len(container):
            raise _invalid_index(index)
        index += len(container)
    if index >= len(container):
        raise _invalid_index(index)
    return container[index]


def _set(container: Any, key: str, value: Any) -> None:
    """Only after ``_get`` found ``key``."""
    if isinstance(container, dict):
        container[key] = value
        return
    index = _atoi(key)
    container[index + len(container) if index < 0 else index] = value


def _add(container: Any, key: str, value: Any) -> None:
    value = clone(value)
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    try:
        index = _atoi(key)
    except _Failure as failure:
        raise _Failure(f"value was not a proper array index: '{key}': {failure}") from failure
    size = len(container) + 1
    if index >= size or index < -size:
        raise _invalid_index(index)
    container.insert(index + size if index < 0 else index, value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _Failure(f"Unable to remove nonexistent key: {key}: {_MISSING}")
        del container[key]
        return
    index = _atoi(key)
    if index >= len(container) or index < -len(container):
        raise _invalid_index(index)
    del container[index]


def _equal(actual: Any, expected: Any) -> bool:
    """lazyNode.equal: objects by keys, arrays by elements, scalars by their JSON text (so
    ``2`` is not ``2.0`` and ``1`` is not ``true``)."""
    if isinstance(actual, dict):
        return (
            isinstance(expected, dict)
            and len(actual) == len(expected)
            and all(k in expected and _equal(v, expected[k]) for k, v in actual.items())
        )
    if isinstance(actual, list):
        return (
            isinstance(expected, list)
            and len(actual) == len(expected)
            and all(_equal(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, dict | list):
        return False
    return _stored_text(actual) == orjson.dumps(expected)


def _stored_text(value: Any) -> bytes:
    """A scalar of the stored object as Go encodes it: a whole float64 has no fraction (the
    patch's own values keep the text they were sent with)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value)).encode()
    return orjson.dumps(value)
