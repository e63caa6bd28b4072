"""The dashboard's chart of the last hour, drawn on the server as inline SVG (no script, nothing
fetched): pods running, pending and terminating as lines (told apart by dash as well as colour),
taint evictions as bars per five minutes, and the same figures in words for screen readers."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from taintplane.web.history import History

__all__ = ["chart"]

WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 40, 30, 10, 40
#: state, colour, stroke-dasharray
LINES = (
    ("running", "#2e7d32", ""),
    ("pending", "#ef6c00", "6 3"),
    ("terminating", "#c62828", "2 2"),
)
BARS = "#90a4ae"


def _x(index: int, count: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * index / max(count - 1, 1)


def _y(value: int, top: int) -> float:
    plot = HEIGHT - TOP - BOTTOM
    return TOP + plot - plot * value / max(top, 1)


def _polyline(values: Sequence[int], top: int, colour: str, dash: str, name: str) -> str:
    points = " ".join(f"{_x(i, len(values)):.1f},{_y(v, top):.1f}" for i, v in enumerate(values))
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<polyline class="series {name}" fill="none" stroke="{colour}" stroke-width="2"'
        f'{dashed} points="{points}"><title>{name}</title></polyline>'
    )


def chart(past: History) -> str:
    series = {"running": past.running, "pending": past.pending, "terminating": past.terminating}
    top = max([*past.running, *past.pending, *past.terminating, 1])
    evicted_top = max([n for _, n in past.evictions] + [1])
    parts = [
        f'<svg id="history" role="img" aria-labelledby="history-title history-desc"'
        f' width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}"'
        ' xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">',
        '<title id="history-title">Pods over the last hour</title>',
        f'<desc id="history-desc">{escape(_words(past))}</desc>',
    ]
    # Eviction bars, scaled to their own maximum (labelled on the right of each bar).
    plot_width = WIDTH - LEFT - RIGHT
    width = plot_width / len(past.evictions)
    for index, (since, count) in enumerate(past.evictions):
        if not count:
            continue
        height = (HEIGHT - TOP - BOTTOM) * count / evicted_top * 0.5
        x = LEFT + width * index
        parts.append(
            f'<rect class="evictions" x="{x + 2:.1f}" y="{HEIGHT - BOTTOM - height:.1f}"'
            f' width="{width - 4:.1f}" height="{height:.1f}" fill="{BARS}">'
            f"<title>{count} evicted from {since:%H:%M}</title></rect>"
            f'<text x="{x + width / 2:.1f}" y="{HEIGHT - BOTTOM - height - 2:.1f}"'
            f' text-anchor="middle" fill="#455a64">{count}</text>'
        )
    # Axes: the count scale on the left, the time every 15 minutes below.
    parts.append(
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"'
        ' stroke="#9e9e9e"/>'
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top}</text>'
        f'<text x="{LEFT - 4}" y="{HEIGHT - BOTTOM}" text-anchor="end">0</text>'
    )
    count = len(past.samples)
    for index in range(0, count, 15):
        x = _x(index, count)
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
            f"{past.samples[index]:%H:%M}</text>"
        )
    for name, colour, dash in LINES:
        parts.append(_polyline(series[name], top, colour, dash, name))
    # The legend: a sample of each line's dash, and its name in words.
    x = LEFT
    y = HEIGHT - 8
    for name, colour, dash in LINES:
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{colour}"'
            f' stroke-width="2"{dashed}/><text x="{x + 28}" y="{y}">{name}</text>'
        )
        x += 110
    parts.append(
        f'<rect x="{x}" y="{y - 9}" width="16" height="10" fill="{BARS}"/>'
        f'<text x="{x + 20}" y="{y}">taint evictions per 5 minutes</text></svg>'
    )
    return "".join(parts)


def _words(past: History) -> str:
    evicted = sum(n for _, n in past.evictions)
    return (
        f"From {past.start:%H:%M} to {past.end:%H:%M}: running {min(past.running)} to "
        f"{max(past.running)} (now {past.running[-1]}), pending {min(past.pending)} to "
        f"{max(past.pending)} (now {past.pending[-1]}), terminating up to "
        f"{max(past.terminating)} (now {past.terminating[-1]}); {evicted} taint evictions."
    )
