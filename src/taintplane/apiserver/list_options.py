"""A list or watch request's resourceVersion options, checked as upstream's
ValidateListOptions (apimachinery/pkg/apis/meta/internalversion/validation) with the WatchList
feature on, as in v1.35; and the continue tokens of paged lists, as storage's
EncodeContinue/DecodeContinue make and read them."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import orjson

from taintplane.api.decoding import INT64_MAX, INT64_MIN, json_type
from taintplane.api.field import FieldError, Path, aggregate_message
from taintplane.api.gojson import GoJSONError, check_valid
from taintplane.apiserver.status import APIError

__all__ = [
    "EXACT",
    "NOT_OLDER_THAN",
    "ListOptions",
    "decode_continue",
    "encode_continue",
    "validate_list_options",
]

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


@dataclass(frozen=True)
class ListOptions:
    watch: bool
    resource_version: str
    resource_version_match: str
    #: None when the request did not say (a pointer in upstream's ListOptions).
    send_initial_events: bool | None
    continue_token: str


def validate_list_options(options: ListOptions) -> None:
    """422 ``ListOptions.meta.k8s.io "" is invalid: …`` for a combination upstream forbids."""
    errors = _watch_errors(options) if options.watch else _list_errors(options)
    if not errors:
        return
    causes = [{"reason": e.type.reason, "message": e.body, "field": e.field} for e in errors]
    # errors.NewInvalid with an empty name: details.name is omitempty.
    details: dict[str, Any] = {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes}
    message = f'ListOptions.meta.k8s.io "" is invalid: {aggregate_message(errors)}'
    raise APIError.make(422, "Invalid", message, details)


_MATCH = Path.root("resourceVersionMatch")
_SEND_INITIAL_EVENTS = Path.root("sendInitialEvents")


def _list_errors(options: ListOptions) -> list[FieldError]:
    match_path = _MATCH
    errors: list[FieldError] = []
    match = options.resource_version_match
    if match:
        if not options.resource_version:
            detail = "resourceVersionMatch is forbidden unless resourceVersion is provided"
            errors.append(FieldError.forbidden(match_path, detail))
        if options.continue_token:
            detail = "resourceVersionMatch is forbidden when continue is provided"
            errors.append(FieldError.forbidden(match_path, detail))
        if match not in (EXACT, NOT_OLDER_THAN):
            errors.append(FieldError.not_supported(match_path, match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and options.resource_version == "0":
            detail = 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
            errors.append(FieldError.forbidden(match_path, detail))
    if options.send_initial_events:
        detail = "sendInitialEvents is forbidden for list"
        errors.append(FieldError.forbidden(_SEND_INITIAL_EVENTS, detail))
    return errors


def _watch_errors(options: ListOptions) -> list[FieldError]:
    match_path = _MATCH
    errors: list[FieldError] = []
    match = options.resource_version_match
    if options.send_initial_events is not None and match != NOT_OLDER_THAN:
        detail = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        errors.append(FieldError.forbidden(match_path, detail))
    if match:
        if options.send_initial_events is None:
            detail = (
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
            )
            errors.append(FieldError.forbidden(match_path, detail))
        if match != NOT_OLDER_THAN:
            errors.append(FieldError.not_supported(match_path, match, [NOT_OLDER_THAN]))
        if options.continue_token:
            detail = "resourceVersionMatch is forbidden when continue is provided"
            errors.append(FieldError.forbidden(match_path, detail))
    return errors


# ---- continue tokens (storage.EncodeContinue / DecodeContinue) --------------------------------

_TOKEN_VERSION = "meta.k8s.io/v1"
_NOT_VALID = "continue key is not valid"
_BASE64URL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def encode_continue(key: str, prefix: str, revision: int) -> str:
    """The token for a list that goes on at ``key`` (inclusive) under ``prefix``, read at
    ``revision`` (-1: at the latest revision). The key is kept relative to the prefix."""
    token = {"v": _TOKEN_VERSION, "rv": revision, "start": key[len(prefix) :]}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def decode_continue(token: str, prefix: str) -> tuple[str, int]:
    """The key a continued list starts at (inclusive) and the revision it reads at, or a 400
    ``invalid continue token: …`` worded as kube-apiserver words it."""
    try:
        return _decode_continue(token, prefix)
    except _InvalidToken as error:
        raise APIError.bad_request(f"invalid continue token: {error}") from error


class _InvalidToken(ValueError):
    pass


def _decode_continue(token: str, prefix: str) -> tuple[str, int]:
    try:
        data = _go_raw_url_base64(token)
        version, revision, start = _unmarshal_token(data)
    except GoJSONError as error:
        raise _InvalidToken(f"{_NOT_VALID}: {error}") from error
    if version != _TOKEN_VERSION:
        raise _InvalidToken(
            f"{_NOT_VALID}: server does not recognize this encoded version {version}"
        )
    if revision == 0:
        detail = "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        raise _InvalidToken(f"{_NOT_VALID}: {detail}")
    if not start:
        raise _InvalidToken(f"{_NOT_VALID}: encoded start key empty (version meta.k8s.io/v1)")
    # As upstream, against path traversal: a start key that does not stay below the prefix.
    rooted = start if start.startswith("/") else "/" + start
    if _clean_rooted(rooted) != rooted:
        raise _InvalidToken(f"{_NOT_VALID}: {start}")
    return prefix + rooted[1:], revision


def _go_raw_url_base64(token: str) -> bytes:
    """``base64.RawURLEncoding.DecodeString``, failing where Go fails: at the first byte
    outside the alphabet (CR and LF are skipped), or a last quantum of a single character."""
    src = token.encode()
    at = 0
    while True:
        count = 0
        while count < 4:
            if at == len(src):
                if count == 1:
                    raise GoJSONError(f"illegal base64 data at input byte {at - count}")
                return base64.urlsafe_b64decode(_padded(src))
            byte = src[at]
            at += 1
            if byte in b"\r\n":
                continue
            if byte not in _BASE64URL:
                raise GoJSONError(f"illegal base64 data at input byte {at - 1}")
            count += 1


def _padded(src: bytes) -> bytes:
    text = src.replace(b"\r", b"").replace(b"\n", b"")
    return text + b"=" * (-len(text) % 4)


class _Number(str):
    """A JSON number's text, as Go's decoder sees it before storing it."""


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's members in document order, repeated keys and all."""


def _unmarshal_token(data: bytes) -> tuple[str, int, str]:
    """``json.Unmarshal`` into storage's ``continueToken{v string; rv int64; start string}``:
    Go's syntax error first, else its first type error; keys match case-insensitively, the
    last of a repeated key wins, and ``null`` leaves a field unset."""
    check_valid(data)
    text = data.decode(errors="replace")
    value = json.loads(text, parse_int=_Number, parse_float=_Number, object_pairs_hook=_Pairs)
    if value is None:
        return "", 0, ""
    if not isinstance(value, _Pairs):
        raise GoJSONError(
            f"json: cannot unmarshal {_json_type(value)} into Go value of type "
            "storage.continueToken"
        )
    fields: dict[str, Any] = {}
    first_error: GoJSONError | None = None
    for key, item in value:
        name = key.lower()
        if name not in ("v", "rv", "start") or item is None:
            continue
        wanted = "int64" if name == "rv" else "string"
        error = _type_error(item, wanted)
        if error is None:
            fields[name] = int(item) if name == "rv" else item
        elif first_error is None:
            first_error = GoJSONError(
                f"json: cannot unmarshal {error} into Go struct field continueToken.{name} "
                f"of type {wanted}"
            )
    if first_error is not None:
        raise first_error
    return fields.get("v", ""), fields.get("rv", 0), fields.get("start", "")


def _type_error(item: Any, wanted: str) -> str | None:
    """What Go's UnmarshalTypeError calls ``item`` when it cannot go into ``wanted``."""
    if wanted == "string":
        return None if isinstance(item, str) and not isinstance(item, _Number) else _json_type(item)
    if isinstance(item, _Number):
        try:
            number = int(item, 10)
        except ValueError:
            return f"number {item}"
        return None if INT64_MIN <= number <= INT64_MAX else f"number {item}"
    return _json_type(item)


def _json_type(value: Any) -> str:
    if isinstance(value, _Number):
        return "number"
    if isinstance(value, _Pairs):
        return "object"
    return json_type(value)


def _clean_rooted(path: str) -> str:
    """Go's ``path.Clean`` of a path that starts with ``/``."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)
