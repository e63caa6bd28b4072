"""Protobuf bodies of the self-subject reviews (kubectl sends them as protobuf): the fields
of k8s.io/api/authorization/v1's generated.proto that a review's spec carries."""

from __future__ import annotations

from typing import Any

from taintplane.apiserver.protobuf import MAGIC, ProtobufError
from taintplane.apiserver.protowire import LEN, WireError, fields, scalar

__all__ = ["decode_review"]

_RESOURCE_ATTRIBUTES = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


def _strings(data: bytes, names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire_type, value in fields(data):
        if number in names and wire_type == LEN:
            out[names[number]] = str(scalar("string", wire_type, value))
    return out


def _message(data: bytes, number: int) -> bytes | None:
    found = None
    for field, wire_type, value in fields(data):
        if field == number and wire_type == LEN and isinstance(value, bytes):
            found = value
    return found


def decode_review(body: bytes, kind: str) -> dict[str, Any]:
    """The review as its JSON form would be: ``{"spec": ...}``."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s\\x00 prefix")
    try:
        raw = _message(body[len(MAGIC) :], 2) or b""
        spec_bytes = _message(raw, 2) or b""
        spec: dict[str, Any] = {}
        if kind == "SelfSubjectRulesReview":
            spec = _strings(spec_bytes, {1: "namespace"})
        else:
            resource = _message(spec_bytes, 1)
            other = _message(spec_bytes, 2)
            if resource is not None:
                spec["resourceAttributes"] = _strings(resource, _RESOURCE_ATTRIBUTES)
            if other is not None:
                spec["nonResourceAttributes"] = _strings(other, _NON_RESOURCE_ATTRIBUTES)
    except WireError as error:
        raise ProtobufError(str(error)) from error
    return {"kind": kind, "apiVersion": "authorization.k8s.io/v1", "spec": spec}
