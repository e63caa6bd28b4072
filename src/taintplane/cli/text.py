"""Plain-text tables for the commands' reports: columns three spaces apart, as kubectl's."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["columns"]


def columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header and the rows as aligned lines, without trailing spaces."""
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return ["   ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in table]
