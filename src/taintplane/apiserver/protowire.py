"""The protobuf wire format, read: varints, fixed 32/64-bit words and length-delimited fields.

Only what decoding Kubernetes' proto2 messages needs: a message is walked as a sequence of
``(field number, wire type, value)`` triples, values being ints (varint, fixed64, fixed32) or
byte strings (length-delimited). Groups (wire types 3 and 4) are not used by Kubernetes and are
refused. Every malformation raises :class:`WireError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

__all__ = [
    "FIXED32",
    "FIXED64",
    "LEN",
    "VARINT",
    "WireError",
    "fields",
    "packed",
    "read_varint",
    "scalar",
]

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

_MASK64 = (1 << 64) - 1


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (at most ten bytes, 64 bits) and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result > _MASK64:
                raise WireError("varint overflows 64 bits")
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Every field of a message, in wire order."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise WireError("truncated 64-bit field")
            value = int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise WireError("truncated 32-bit field")
            value = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        elif wire_type == LEN:
            length, pos = read_varint(data, pos)
            if pos + length > end:
                raise WireError("truncated length-delimited field")
            value = data[pos : pos + length]
            pos += length
        else:
            raise WireError(f"unsupported wire type {wire_type} (field {number})")
        yield number, wire_type, value


#: scalar type -> the wire type it is written with when not packed
WIRE_TYPES = {
    "int32": VARINT,
    "int64": VARINT,
    "uint32": VARINT,
    "uint64": VARINT,
    "sint32": VARINT,
    "sint64": VARINT,
    "bool": VARINT,
    "enum": VARINT,
    "fixed64": FIXED64,
    "sfixed64": FIXED64,
    "double": FIXED64,
    "fixed32": FIXED32,
    "sfixed32": FIXED32,
    "float": FIXED32,
    "string": LEN,
    "bytes": LEN,
}


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def scalar(kind: str, wire_type: int, value: int | bytes) -> int | float | bool | str | bytes:
    """A scalar field's value as Python: ints, floats, bools, str (UTF-8) or bytes."""
    expected = WIRE_TYPES[kind]
    if wire_type != expected:
        raise WireError(f"{kind} field sent with wire type {wire_type}")
    if isinstance(value, bytes):
        if kind == "bytes":
            return value
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise WireError(f"string field is not UTF-8: {error}") from error
    if kind in ("int32", "enum"):
        return _signed(value, 32)  # negative int32s are sent sign-extended to 64 bits
    if kind in ("int64", "sfixed64"):
        return _signed(value, 64)
    if kind == "uint32":
        return value & 0xFFFFFFFF
    if kind in ("sint32", "sint64"):
        return (value >> 1) ^ -(value & 1)
    if kind == "bool":
        return value != 0
    if kind == "sfixed32":
        return _signed(value, 32)
    if kind == "double":
        return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])
    if kind == "float":
        return float(struct.unpack("<f", value.to_bytes(4, "little"))[0])
    return value  # uint64, fixed64, fixed32


def packed(kind: str, data: bytes) -> list[int | float | bool | str | bytes]:
    """The values of a packed repeated scalar field."""
    wire_type = WIRE_TYPES[kind]
    if wire_type == LEN:
        raise WireError(f"{kind} fields cannot be packed")
    values: list[int | float | bool | str | bytes] = []
    pos = 0
    width = 8 if wire_type == FIXED64 else 4
    while pos < len(data):
        if wire_type == VARINT:
            raw, pos = read_varint(data, pos)
        else:
            if pos + width > len(data):
                raise WireError("truncated packed field")
            raw = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        values.append(scalar(kind, wire_type, raw))
    return values
