"""The limits every request is decoded under, checked before anything expands or walks it.

* Size: kube-apiserver reads at most ``MaxRequestBodyBytes`` (3 MiB) of a body and answers
  413 ``Request entity too large: limit is 3145728`` past it. :func:`limited_receive` stops
  reading there, so a larger body is never held in memory.
* Depth: Go's JSON decoder and go-yaml stop at 10000 levels; the server's own walkers (strict
  decoding, the type check, strategic merge, field management, validation) recurse on the
  Python stack, and orjson encodes at most 255 levels, so bodies nested deeper than
  :data:`MAX_DEPTH` are refused at decode time, a 400 in go-yaml's and apimachinery's words
  (``exceeded max depth of 100``). No Kubernetes object served here nests past ~20 levels.
* YAML aliases: counted as go-yaml counts them (see :mod:`bounded_yaml`).
* JSON patch operations: 10000, as handlers/patch.go (``json_patch.MAX_OPERATIONS``).
* Integer query parameters: Go's ``strconv.ParseInt`` (int64), with its errors.

Benchmarks and tests import these constants rather than repeating the numbers.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.types import Message, Receive

from taintplane.api.gofmt import go_quote
from taintplane.apiserver.status import APIError

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "DepthError",
    "check_depth",
    "limited_receive",
    "parse_int64",
    "too_large",
]

#: kube-apiserver's default MaxRequestBodyBytes.
MAX_BODY_BYTES = 3 * 1024 * 1024
#: Nesting (objects and arrays) a body may have; see the module docstring.
MAX_DEPTH = 100

INT64_MAX = 2**63 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+")


class DepthError(ValueError):
    """A value nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"exceeded max depth of {limit}")
        self.message = f"exceeded max depth of {limit}"


def too_large() -> APIError:
    """limitedReadBody's refusal."""
    return APIError.too_large(f"Request entity too large: limit is {MAX_BODY_BYTES}")


def limited_receive(receive: Receive, limit: int = MAX_BODY_BYTES) -> Receive:
    """``receive`` that refuses a request body growing past ``limit`` bytes as it arrives
    (the 413 reaches the client through the handler that was reading the body)."""
    received = 0

    async def bounded() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise too_large()
        return message

    return bounded


def check_depth(value: Any, raw: bytes | str | None = None, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`DepthError` if ``value`` nests objects and arrays deeper than ``limit``.

    ``raw``, the text ``value`` was decoded from, makes the common case free: a body with no
    more brackets than the limit cannot nest deeper (bytes.count runs at memory speed), so
    only bodies with many brackets are walked, level by level, without recursion."""
    if raw is not None:
        text = raw if isinstance(raw, bytes) else raw.encode()
        opening = text.count(b"[") + text.count(b"{")
        if opening <= limit:
            return
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise DepthError(limit)
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below.extend(child for child in children if isinstance(child, dict | list))
        level = below


def parse_int64(raw: str) -> int:
    """A query parameter as runtime.Convert_Slice_string_To_int64 reads it
    (``strconv.ParseInt(s, 10, 64)``): Python's int() would also take spaces, underscores and
    non-ASCII digits, and numbers no int64 holds, which then fail deep in the store."""
    if not _GO_INT.fullmatch(raw):
        raise APIError.bad_request(f"strconv.ParseInt: parsing {go_quote(raw)}: invalid syntax")
    value = int(raw)
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise APIError.bad_request(f"strconv.ParseInt: parsing {go_quote(raw)}: value out of range")
    return value
