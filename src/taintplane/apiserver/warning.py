"""Warnings for the client, as kube-apiserver's ``warning.AddWarning``: anything handling a
request may add one; each distinct text goes back once, in its own ``Warning: 299 - "…"``
header (``kubectl`` prints them as ``Warning: …``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from starlette.responses import Response

__all__ = ["add", "recording", "write_headers"]

_RECORDED: ContextVar[list[str] | None] = ContextVar("warnings", default=None)


def add(text: str) -> None:
    """Record ``text`` for the request being handled (outside one, it goes nowhere)."""
    recorded = _RECORDED.get()
    if recorded is not None and text not in recorded:
        recorded.append(text)


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the warnings added while handling one request."""
    recorded: list[str] = []
    token = _RECORDED.set(recorded)
    try:
        yield recorded
    finally:
        _RECORDED.reset(token)


#: filters/warning.go: past 4 Ki runes of warning text in one response every warning is cut
#: to 256 runes, and past 4 Ki runes again the rest are dropped (a body with thousands of
#: unknown fields would otherwise get thousands of headers).
TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256


def write_headers(response: Response, recorded: list[str]) -> None:
    for text in truncated(recorded):
        response.headers.append("Warning", header_value(text))


def truncated(recorded: list[str]) -> list[str]:
    """The warnings kube-apiserver's recorder writes for these, added in this order."""
    written: list[str] = []
    total = 0
    truncating = False
    for index, text in enumerate(recorded):
        if truncating and total >= TRUNCATE_AT_TOTAL_RUNES:
            break  # every later one is dropped: the total only grows
        if truncating:
            text = text[:TRUNCATE_ITEM_RUNES]
        if total + len(text) <= TRUNCATE_AT_TOTAL_RUNES or truncating:
            total += len(text)
            written.append(text)
            continue
        # Over the limit: start truncating, and write again what was added so far, cut.
        truncating = True
        written = [earlier[:TRUNCATE_ITEM_RUNES] for earlier in recorded[: index + 1]]
        total = sum(len(item) for item in written)
    return written


def header_value(text: str) -> str:
    """net.NewWarningHeader(299, "-", text): the text quoted, '"' and '\\' escaped; control
    characters become spaces (as Go's server writes a newline in a header value) and the
    text goes out as UTF-8 bytes, as Go writes it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    printable = "".join(" " if ord(c) < 0x20 or ord(c) == 0x7F else c for c in escaped)
    return f'299 - "{printable}"'.encode().decode("latin-1")
