"""What a patch can have changed: the shape of its body, for the type check's baseline skip.

The type check skips the parts of a patched object that are ``==`` to the stored one (they
were checked when written), so that a small patch costs little on a large object. Python's
``==`` takes ``1`` and ``1.0`` for ``True`` and ``1``, though, while kube-apiserver decodes the
whole patched object into the Go types: a patch that sets ``enableServiceLinks: 1`` where
``true`` is stored must fail as ``0`` does. Only what the patch names can hold a value of a new
JSON type (every other part is the stored object's, decoded from the same bytes), so the
patch's shape tells the check where it must also compare the JSON exactly:

* ``None``: no shape, skip every equal part (writes the server makes itself);
* ``EXACT``: compare every equal part exactly (a patch that replaces the whole object);
* a dict: the keys the patch names, each with its own shape (a nested dict where the patch
  has a map there, else ``EXACT``); keys it does not name keep the plain skip.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["EXACT", "Shape", "json_patch_shape", "merge_patch_shape"]

#: Compare the whole part exactly.
EXACT: Final = True
Shape = dict[str, Any] | bool | None

#: Strategic merge patch directives that name the list they change after their slash.
_LIST_DIRECTIVES = ("$setElementOrder/", "$deleteFromPrimitiveList/")


def merge_patch_shape(patch: object) -> Shape:
    """The shape of a merge, strategic merge or apply patch body. Strategic directives
    (``$patch``, ``$retainKeys``) only remove or keep what is stored; those that reorder or
    delete from a list name that list, which is then compared exactly."""
    if not isinstance(patch, dict):
        return EXACT if patch is not None else None
    shape: dict[str, Any] = {}
    for key, value in patch.items():
        if not isinstance(key, str):
            continue
        if key.startswith("$"):
            for prefix in _LIST_DIRECTIVES:
                if key.startswith(prefix):
                    shape[key[len(prefix) :]] = EXACT
            continue
        if shape.get(key) is EXACT:
            continue  # a list directive named it first
        shape[key] = merge_patch_shape(value) if isinstance(value, dict) else EXACT
    return shape


def json_patch_shape(operations: object) -> Shape:
    """The shape of a JSON patch (RFC 6902): every ``path`` an operation writes, as nested
    keys. A path into a list (an index, ``-``) ends at the list's key in effect, since the
    check compares a list as a whole; the root path replaces the whole object."""
    if not isinstance(operations, list):
        return EXACT
    shape: dict[str, Any] = {}
    for op in operations:
        path = op.get("path") if isinstance(op, dict) else None
        if not isinstance(path, str):
            return EXACT  # refused by the patch itself; stay on the safe side
        if op.get("op") == "test":
            continue
        if not path.startswith("/"):
            return EXACT  # the root ("") replaces everything; anything else is refused
        node: dict[str, Any] = shape
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]
        for i, token in enumerate(tokens):
            last = i == len(tokens) - 1
            current = node.get(token)
            if current is EXACT:
                break
            if last:
                node[token] = EXACT
                break
            if not isinstance(current, dict):
                current = node[token] = {}
            node = current
    return shape
