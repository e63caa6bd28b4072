"""Render values the way Go's fmt package does, for messages that must match Kubernetes.

Kubernetes builds many user-facing messages with ``%q``, ``%v`` and ``%#v``. Field errors in
particular print the rejected value with ``%q`` for strings and ``%#v`` for structs, so a
faithful rendering needs Go's quoting rules rather than Python's ``repr``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GoPointer", "GoStruct", "go_quote", "go_sharp_v"]

_SIMPLE_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _is_go_printable(char: str) -> bool:
    # Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
    if char == " ":
        return True
    return unicodedata.category(char)[0] in "LMNPS"


def go_quote(text: str) -> str:
    """``strconv.Quote``: a double-quoted Go string literal."""
    out = ['"']
    for char in text:
        if char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        elif _is_go_printable(char):
            out.append(char)
        else:
            code = ord(char)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class GoPointer:
    """A Go pointer field as ``%#v`` prints it: ``(*int64)(nil)`` or ``(*int64)(0x…)``.

    Go prints the address of a non-nil pointer, which no other program can reproduce; we print
    the pointed-to value in its place so the message still says what was rejected.
    """

    type_name: str
    target: object = None

    def render(self) -> str:
        if self.target is None:
            return f"({self.type_name})(nil)"
        return f"({self.type_name})({go_sharp_v(self.target)})"


@dataclass(frozen=True, slots=True)
class GoStruct:
    """A Go struct value, rendered as ``%#v`` does: ``core.Taint{Key:"k", Value:"v", …}``."""

    type_name: str
    fields: Sequence[tuple[str, object]]

    def render(self) -> str:
        inner = ", ".join(f"{name}:{go_sharp_v(value)}" for name, value in self.fields)
        return f"{self.type_name}{{{inner}}}"


def go_sharp_v(value: object) -> str:
    """``%#v`` for the value shapes Kubernetes messages contain."""
    if isinstance(value, GoStruct | GoPointer):
        return value.render()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "<nil>"
    return str(value)
