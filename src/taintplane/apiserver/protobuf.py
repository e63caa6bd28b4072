"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``) as JSON dicts.

The body is ``k8s\\x00`` then a ``runtime.Unknown`` (1 typeMeta{1 apiVersion, 2 kind}, 2 raw,
3 contentEncoding, 4 contentType); ``raw`` is the object in upstream's proto2 encoding. The
result is what the same object sent as JSON would be: field names are the proto names (they
are the JSON names), Go value fields at their zero value are left out as ``omitempty`` would,
pointers and messages that were sent are kept (``"resources": {}``), structs Go embeds inline
(Probe's ProbeHandler, Volume's VolumeSource) are merged into their parent, and the types with their
own JSON form (Time, MicroTime, Duration, IntOrString, Quantity, RawExtension, FieldsV1) take
it. Field tables come from ``proto_schemas.json`` (``scripts/gen_proto_schemas.py``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any

import orjson

from taintplane.api.duration import format_duration
from taintplane.apiserver.protowire import LEN, WIRE_TYPES, WireError, fields, packed, scalar

__all__ = ["MAGIC", "ProtobufError", "decode"]

MAGIC = b"k8s\x00"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_DEPTH = 64


_ZEROS: dict[str, Any] = {"string": "", "bytes": "", "bool": False, "double": 0.0, "float": 0.0}


class ProtobufError(ValueError):
    """The body cannot be decoded; the message says why (a 400 for the client)."""


Fields = dict[str, list[Any]]


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("taintplane.apiserver").joinpath("proto_schemas.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object as the JSON dict a JSON request would carry."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s\\x00 prefix")
    try:
        return _unknown(body[len(MAGIC) :], 0)
    except WireError as error:
        raise ProtobufError(str(error)) from error
    except RecursionError as error:  # pragma: no cover - _MAX_DEPTH stops nesting first
        raise ProtobufError("protobuf body nested too deeply") from error


def _unknown(data: bytes, depth: int) -> dict[str, Any]:
    """A ``runtime.Unknown``: its typeMeta says which message ``raw`` holds."""
    api_version = kind = encoding = content_type = ""
    raw = b""
    for number, wire_type, value in fields(data):
        if wire_type != LEN or not isinstance(value, bytes):
            continue
        if number == 1:
            for sub, sub_type, sub_value in fields(value):
                if sub in (1, 2) and sub_type == LEN and isinstance(sub_value, bytes):
                    text = str(scalar("string", sub_type, sub_value))
                    api_version, kind = (text, kind) if sub == 1 else (api_version, text)
        elif number == 2:
            raw = value
        elif number == 3:
            encoding = str(scalar("string", wire_type, value))
        elif number == 4:
            content_type = str(scalar("string", wire_type, value))
    if encoding:
        raise ProtobufError(f"unsupported contentEncoding {encoding!r} in a protobuf body")
    if content_type and content_type != "application/vnd.kubernetes.protobuf":
        raise ProtobufError(f"unsupported contentType {content_type!r} in a protobuf body")
    if not kind:
        raise ProtobufError("the protobuf body does not name its kind (typeMeta.kind)")
    kinds = _schema()["kinds"]
    message = kinds.get(f"{api_version}/{kind}")
    if message is None and kind == "DeleteOptions":
        message = f"{META}.DeleteOptions"  # registered in every group version
    if message is None:
        raise ProtobufError(f"no protobuf decoding for {api_version or '<none>'}, Kind={kind}")
    return {"kind": kind, "apiVersion": api_version, **_message(raw, message, depth)}


def _message(data: bytes, name: str, depth: int) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        raise ProtobufError("protobuf body nested too deeply")
    table: dict[str, list[str]] = _schema()["messages"][name]
    out: dict[str, Any] = {}
    for number, wire_type, value in fields(data):
        entry = table.get(str(number))
        if entry is None:
            continue  # a field newer than our tables: skipped, as Go's unmarshal skips it
        json_name, kind, mode = entry[0], entry[1], entry[2]
        if mode == "m":
            if not isinstance(value, bytes):
                raise WireError(f"map field {json_name} is not length-delimited")
            key, item = _map_entry(value, entry[3], kind, depth)
            out.setdefault(json_name, {})[key] = item
        elif mode == "r":
            items = out.setdefault(json_name, [])
            if kind in WIRE_TYPES and wire_type == LEN and WIRE_TYPES[kind] != LEN:
                items.extend(packed(kind, value))  # type: ignore[arg-type]
            else:
                items.append(_value(kind, wire_type, value, depth))
        elif mode == "i":  # embedded inline in Go: its fields are ours in JSON
            out.update(_value(kind, wire_type, value, depth))
        else:
            out[json_name] = _value(kind, wire_type, value, depth)
            if mode == "v" and kind in WIRE_TYPES and not out[json_name]:
                del out[json_name]  # a Go value field at its zero value: omitempty
    return out


def _map_entry(data: bytes, key_kind: str, value_kind: str, depth: int) -> tuple[str, Any]:
    key: Any = "" if key_kind == "string" else 0
    value: Any = None
    for number, wire_type, raw in fields(data):
        if number == 1:
            key = _value(key_kind, wire_type, raw, depth)
        elif number == 2:
            value = _value(value_kind, wire_type, raw, depth)
    if value is None:  # an absent value is its type's zero value
        if value_kind in WIRE_TYPES:
            value = _ZEROS.get(value_kind, 0)
        else:
            value = _value(value_kind, LEN, b"", depth)
    return str(key), value


def _value(kind: str, wire_type: int, value: int | bytes, depth: int) -> Any:
    if kind in WIRE_TYPES:
        result = scalar(kind, wire_type, value)
        return base64.b64encode(result).decode() if isinstance(result, bytes) else result
    if wire_type != LEN or not isinstance(value, bytes):
        raise WireError(f"message field of type {kind.rsplit('.', 1)[-1]} sent as a scalar")
    special = _SPECIAL.get(kind)
    if special is not None:
        return special(_collect(value), depth)
    return _message(value, kind, depth + 1)


def _collect(data: bytes) -> Fields:
    out: Fields = {}
    for number, wire_type, value in fields(data):
        out.setdefault(str(number), []).append((wire_type, value))
    return out


def _last(found: Fields, number: int, kind: str) -> Any:
    values = found.get(str(number))
    if not values:
        return "" if WIRE_TYPES[kind] == LEN else 0
    wire_type, value = values[-1]
    return scalar(kind, wire_type, value)


def _moment(found: Fields, micro: bool) -> str | None:
    seconds, nanos = _last(found, 1, "int64"), _last(found, 2, "int32")
    if seconds == 0 and nanos == 0:
        return None  # the zero Time is null in JSON (``"creationTimestamp": null``)
    try:
        moment = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError as error:
        raise ProtobufError(f"time out of range: {seconds}s") from error
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(found: Fields, _: int) -> int | str:
    if _last(found, 1, "int64") == 1:
        return str(_last(found, 3, "string"))
    return int(_last(found, 2, "int32"))


def _raw_json(found: Fields, depth: int) -> Any:
    raw = _last(found, 1, "bytes")
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return _unknown(raw[len(MAGIC) :], depth + 1)
    try:
        # orjson: a raw object nested thousands deep stops in C (json.loads overflowed
        # Python's stack: a 500); the decoded body's depth is checked after.
        return orjson.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtobufError(f"embedded raw object is not JSON: {error}") from error


_SPECIAL: dict[str, Callable[[Fields, int], Any]] = {
    f"{META}.Time": lambda found, _: _moment(found, micro=False),
    f"{META}.MicroTime": lambda found, _: _moment(found, micro=True),
    f"{META}.Duration": lambda found, _: format_duration(_last(found, 1, "int64") / 1e9),
    f"{META}.FieldsV1": _raw_json,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda found, _: _last(found, 1, "string"),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
}
