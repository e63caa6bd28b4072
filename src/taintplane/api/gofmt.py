"""Render values the way Kubernetes' Go code prints them in messages.

Field errors print a rejected string with ``%q`` and, since Kubernetes 1.34, a rejected struct
as compact JSON with Go's field names (validation runs on internal types, which have no JSON
tags). A faithful rendering needs Go's quoting and JSON escaping rather than Python's.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GoStruct", "go_json", "go_quote"]

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
class GoStruct:
    """A Go struct value: ordered (GoFieldName, value) pairs; ``None`` is a nil pointer."""

    fields: Sequence[tuple[str, object]]

    def to_json(self) -> str:
        return go_json(dict(self.fields))


# encoding/json escapes these even inside strings, to keep JSON safe to embed in HTML.
_GO_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def go_json(value: object) -> str:
    """``json.Marshal``: compact, non-ASCII kept, HTML-sensitive characters escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _GO_JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text
