"""Protobuf bodies of the review kinds (kubectl sends them as protobuf): the fields of
k8s.io/api/authorization/v1's and authentication/v1's generated.proto that a review's
metadata and spec carry (status is the server's to fill)."""

from __future__ import annotations

from typing import Any

from taintplane.apiserver.protobuf import MAGIC, ProtobufError
from taintplane.apiserver.protowire import LEN, WireError, fields, scalar

__all__ = ["decode_review"]

_OBJECT_META = {1: "name", 2: "generateName", 3: "namespace"}
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
_ACCESS_REVIEW_USER = {3: "user", 6: "uid"}


def _text(value: int | bytes) -> str:
    return str(scalar("string", LEN, value))


def _strings(data: bytes, names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire_type, value in fields(data):
        if number in names and wire_type == LEN:
            out[names[number]] = _text(value)
    return out


def _repeated(data: bytes, number: int) -> list[str]:
    return [_text(v) for n, w, v in fields(data) if n == number and w == LEN]


def _message(data: bytes, number: int) -> bytes | None:
    found = None
    for field, wire_type, value in fields(data):
        if field == number and wire_type == LEN and isinstance(value, bytes):
            found = value
    return found


def _extra(data: bytes) -> dict[str, list[str]]:
    """``map<string, ExtraValue>``: entries {1 key, 2 ExtraValue{1 items}}."""
    extra: dict[str, list[str]] = {}
    for number, wire_type, entry in fields(data):
        if number == 5 and wire_type == LEN and isinstance(entry, bytes):
            key = _strings(entry, {1: "key"}).get("key", "")
            extra[key] = _repeated(_message(entry, 2) or b"", 1)
    return extra


def _access_spec(data: bytes, subject: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    resource = _message(data, 1)
    other = _message(data, 2)
    if resource is not None:
        spec["resourceAttributes"] = _strings(resource, _RESOURCE_ATTRIBUTES)
    if other is not None:
        spec["nonResourceAttributes"] = _strings(other, _NON_RESOURCE_ATTRIBUTES)
    if subject:
        spec.update(_strings(data, _ACCESS_REVIEW_USER))
        groups = _repeated(data, 4)
        if groups:
            spec["groups"] = groups
        extra = _extra(data)
        if extra:
            spec["extra"] = extra
    return spec


def _spec(kind: str, data: bytes) -> dict[str, Any]:
    if kind == "SelfSubjectRulesReview":
        return _strings(data, {1: "namespace"})
    if kind == "TokenReview":
        spec = _strings(data, {1: "token"})
        audiences = _repeated(data, 2)
        if audiences:
            spec["audiences"] = audiences
        return spec
    return _access_spec(data, subject=kind != "SelfSubjectAccessReview")


def decode_review(body: bytes, kind: str, api_version: str) -> dict[str, Any]:
    """The review as its JSON form would be (``metadata`` and ``spec``)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the protobuf body does not start with the k8s\\x00 prefix")
    review: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        raw = _message(body[len(MAGIC) :], 2) or b""
        metadata = _message(raw, 1)
        if metadata is not None:
            review["metadata"] = _strings(metadata, _OBJECT_META)
        if kind != "SelfSubjectReview":  # its field 2 is status: it has no spec
            review["spec"] = _spec(kind, _message(raw, 2) or b"")
    except WireError as error:
        raise ProtobufError(str(error)) from error
    return review
