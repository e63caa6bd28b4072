"""JSON decoding with Go's ``encoding/json`` error texts, for places where upstream returns
``json.Unmarshal``'s error as it stands (a namespace annotation holding JSON, say).

``loads`` first checks the whole input as Go's ``checkValid`` scanner does, so the first
syntax error wins with Go's wording (``unexpected end of JSON input``, ``invalid character 'o'
in literal null (expecting 'u')``, ...); then Python decodes the (now strict) JSON.
``cannot_unmarshal`` words a value of the wrong JSON type as Go's ``UnmarshalTypeError``.
"""

from __future__ import annotations

import json
from typing import Any

from taintplane.api.decoding import json_type

__all__ = ["GoJSONError", "cannot_unmarshal", "check_valid", "json_type", "loads"]

_SPACE = b" \t\r\n"
_DIGITS = b"0123456789"
_HEX = b"0123456789abcdefABCDEF"
_ESCAPES = b'"\\/bfnrt'
_GO_ESCAPES = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}


class GoJSONError(ValueError):
    """A ``json.Unmarshal`` error; ``str()`` is Go's text."""


def _quote_char(byte: int) -> str:
    """Go's ``quoteChar``: the byte as a rune (so 0xC3 is 'Ã'), in single quotes."""
    if byte == ord("'"):
        return "'\\''"
    if byte == ord('"'):
        return "'\"'"
    char = chr(byte)
    if byte in _GO_ESCAPES:
        text = _GO_ESCAPES[byte]
    elif char == "\\":
        text = "\\\\"
    elif char.isprintable():
        text = char
    elif byte < 0x20 or byte == 0x7F:
        text = f"\\x{byte:02x}"
    else:
        text = f"\\u{byte:04x}"
    return f"'{text}'"


#: Nesting the scanner follows. Go's stops at 10000 levels; this one recurses on Python's
#: stack (as does json.loads after it), so it stops at 100 with Go's words for its own stop.
#: An annotation holding JSON nested 5000 deep was a 500 (RecursionError) before.
MAX_DEPTH = 100


class _Scanner:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.depth = 0

    def nested(self, byte: int, i: int) -> int:
        """Scan the object or array opened by ``byte`` (just before ``i``)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.invalid(byte, "exceeded max depth")
        end = self.object(i) if byte == ord("{") else self.array(i)
        self.depth -= 1
        return end

    def at(self, i: int) -> int:
        if i >= len(self.data):
            raise GoJSONError("unexpected end of JSON input")
        return self.data[i]

    @staticmethod
    def invalid(byte: int, context: str) -> GoJSONError:
        return GoJSONError(f"invalid character {_quote_char(byte)} {context}")

    def skip(self, i: int) -> int:
        while i < len(self.data) and self.data[i] in _SPACE:
            i += 1
        return i

    def value(self, i: int) -> int:
        """Scan the value at or after ``i``; the index just past it."""
        i = self.skip(i)
        byte = self.at(i)
        if byte in (ord("{"), ord("[")):
            return self.nested(byte, i + 1)
        if byte == ord('"'):
            return self.string(i + 1)
        if byte == ord("-") or byte in _DIGITS:
            return self.number(i)
        if byte in _LITERALS:
            return self.literal(i, _LITERALS[byte])
        raise self.invalid(byte, "looking for beginning of value")

    def object(self, i: int) -> int:
        i = self.skip(i)
        if self.at(i) == ord("}"):
            return i + 1
        while True:
            byte = self.at(i)
            if byte != ord('"'):
                raise self.invalid(byte, "looking for beginning of object key string")
            i = self.skip(self.string(i + 1))
            byte = self.at(i)
            if byte != ord(":"):
                raise self.invalid(byte, "after object key")
            i = self.skip(self.value(i + 1))
            byte = self.at(i)
            if byte == ord("}"):
                return i + 1
            if byte != ord(","):
                raise self.invalid(byte, "after object key:value pair")
            i = self.skip(i + 1)

    def array(self, i: int) -> int:
        i = self.skip(i)
        if self.at(i) == ord("]"):
            return i + 1
        while True:
            i = self.skip(self.value(i))
            byte = self.at(i)
            if byte == ord("]"):
                return i + 1
            if byte != ord(","):
                raise self.invalid(byte, "after array element")
            i += 1

    def string(self, i: int) -> int:
        while True:
            byte = self.at(i)
            if byte == ord('"'):
                return i + 1
            if byte == ord("\\"):
                escape = self.at(i + 1)
                if escape == ord("u"):
                    for j in range(i + 2, i + 6):
                        if self.at(j) not in _HEX:
                            raise self.invalid(self.data[j], "in \\u hexadecimal character escape")
                    i += 6
                    continue
                if escape not in _ESCAPES:
                    raise self.invalid(escape, "in string escape code")
                i += 2
                continue
            if byte < 0x20:
                raise self.invalid(byte, "in string literal")
            i += 1

    def _digits(self, i: int) -> int:
        while i < len(self.data) and self.data[i] in _DIGITS:
            i += 1
        return i

    def number(self, i: int) -> int:
        if self.data[i] == ord("-"):
            i += 1
            byte = self.at(i)
            if byte not in _DIGITS:
                raise self.invalid(byte, "in numeric literal")
        i = i + 1 if self.data[i] == ord("0") else self._digits(i)
        if i < len(self.data) and self.data[i] == ord("."):
            byte = self.at(i + 1)
            if byte not in _DIGITS:
                raise self.invalid(byte, "after decimal point in numeric literal")
            i = self._digits(i + 1)
        if i < len(self.data) and self.data[i] in b"eE":
            i += 1
            if self.at(i) in b"+-":
                i += 1
            byte = self.at(i)
            if byte not in _DIGITS:
                raise self.invalid(byte, "in exponent of numeric literal")
            i = self._digits(i)
        return i

    def literal(self, i: int, word: bytes) -> int:
        for offset in range(1, len(word)):
            byte = self.at(i + offset)
            if byte != word[offset]:
                expecting = _quote_char(word[offset])
                raise self.invalid(byte, f"in literal {word.decode()} (expecting {expecting})")
        return i + len(word)


def check_valid(data: bytes) -> None:
    """Go's ``checkValid``: raise ``GoJSONError`` at the first syntax error."""
    scanner = _Scanner(data)
    end = scanner.skip(scanner.value(0))
    if end < len(data):
        raise scanner.invalid(data[end], "after top-level value")


def loads(text: str) -> Any:
    """``json.Unmarshal`` into ``any``: Go's syntax errors, then Python's value."""
    check_valid(text.encode())
    return json.loads(text)


def cannot_unmarshal(value: Any, go_type: str) -> GoJSONError:
    return GoJSONError(f"json: cannot unmarshal {json_type(value)} into Go value of type {go_type}")
