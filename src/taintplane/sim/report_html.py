"""The ``simulate --report FILE.html`` page: one self-contained file (inline CSS and SVG, no
script, nothing fetched), so it opens anywhere and can be attached to a ticket.

Two charts over the simulated time (pods by state; nodes Ready and tainted), the scenario's
steps marked on both, then the steps, what happened how often, and the timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from taintplane.api.duration import format_duration
from taintplane.sim.simulate import Sample, SimulationReport, shown_timeline

__all__ = ["TIMELINE_ROWS", "render_html"]

#: Rows of the timeline shown on the page (the JSON output has all of them).
TIMELINE_ROWS = 2000
_WIDTH, _HEIGHT, _LEFT, _BOTTOM, _TOP, _RIGHT = 900, 240, 56, 28, 12, 16

_POD_SERIES = (
    ("running", "Running", "#2e7d32"),
    ("pending", "Pending", "#ef6c00"),
    ("terminating", "Terminating", "#c62828"),
    ("finished", "Finished", "#757575"),
)
_NODE_SERIES = (
    ("nodes_ready", "Ready", "#1565c0"),
    ("nodes_no_execute", "NoExecute-tainted", "#c62828"),
    ("nodes_no_schedule", "NoSchedule-tainted", "#ef6c00"),
)

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#212121}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:left;
border-bottom:1px solid #e0e0e0}th{background:#fafafa}
.legend span{margin-right:16px;font-size:13px}.swatch{display:inline-block;width:12px;
height:12px;margin-right:4px;vertical-align:middle}
svg text{font-size:11px;fill:#424242}.note{color:#616161;font-size:13px}
"""


def _chart(
    report: SimulationReport, title: str, series: Sequence[tuple[str, str, str]], css_id: str
) -> str:
    samples = report.samples
    span = max(report.offset(report.end), 1e-9)
    peak: int = max([1, *(int(getattr(s, attr)) for s in samples for attr, _, _ in series)])
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(sample: Sample) -> float:
        return float(_LEFT + inner_w * report.offset(sample.at) / span)

    def y(value: float) -> float:
        return _TOP + inner_h * (1 - value / peak)

    parts = [
        f'<svg id="{css_id}" role="img" aria-label="{escape(title)}" width="{_WIDTH}" '
        f'height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}">',
        f'<line x1="{_LEFT}" y1="{y(0):.1f}" x2="{_WIDTH - _RIGHT}" y2="{y(0):.1f}" '
        'stroke="#9e9e9e"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{y(0):.1f}" stroke="#9e9e9e"/>',
        f'<text x="{_LEFT - 6}" y="{y(peak) + 4:.1f}" text-anchor="end">{peak}</text>',
        f'<text x="{_LEFT - 6}" y="{y(0) + 4:.1f}" text-anchor="end">0</text>',
    ]
    for quarter in range(5):  # time ticks at 0, ¼, ½, ¾ and the end
        left = _LEFT + inner_w * quarter / 4
        anchor = ("start", "middle", "middle", "middle", "end")[quarter]
        parts.append(
            f'<text x="{left:.1f}" y="{_HEIGHT - 8}" text-anchor="{anchor}">'
            f"+{escape(format_duration(round(span * quarter / 4)))}</text>"
        )
    for number, (at, _) in enumerate(report.steps, 1):
        left = _LEFT + inner_w * report.offset(at) / span
        parts.append(
            f'<line class="step" x1="{left:.1f}" y1="{_TOP}" x2="{left:.1f}" y2="{y(0):.1f}" '
            'stroke="#9575cd" stroke-dasharray="4 3"/>'
            f'<text x="{left + 3:.1f}" y="{_TOP + 10}">{number}</text>'
        )
    for attr, label, colour in series:
        points = " ".join(f"{x(s):.1f},{y(getattr(s, attr)):.1f}" for s in samples)
        parts.append(
            f'<polyline class="series" data-series="{attr}" fill="none" stroke="{colour}" '
            f'stroke-width="2" points="{points}"><title>{escape(label)}</title></polyline>'
        )
    parts.append("</svg>")
    legend = "".join(
        f'<span><i class="swatch" style="background:{colour}"></i>{escape(label)}</span>'
        for _, label, colour in series
    )
    return f'<h2>{escape(title)}</h2><div class="legend">{legend}</div>{"".join(parts)}'


def _rows(cells: Sequence[Sequence[str]]) -> str:
    return "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in cells
    )


def render_html(report: SimulationReport) -> str:
    def offset(moment: datetime) -> str:
        return "+" + format_duration(report.offset(moment))

    steps = [
        (str(number), offset(at), step.summary) for number, (at, step) in enumerate(report.steps, 1)
    ]
    counts = [(event, str(count)) for event, count in report.counts().items()]
    shown, routine, more = shown_timeline(report.timeline, TIMELINE_ROWS)
    timeline = [(offset(h.at), h.event, h.object, h.detail) for h in shown]
    notes = []
    if routine:
        notes.append(
            f"{routine} routine pod happenings (created, scheduled, running, succeeded) are "
            "left out"
        )
    if more:
        notes.append(f"{more} more after these are left out")
    note = (
        f'<p class="note">Showing {len(shown)} of {len(report.timeline)} happenings: '
        + "; ".join(notes)
        + ". <code>-o json</code> has every one.</p>"
        if notes
        else ""
    )
    title = f"taintplane simulate: {report.name}"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="note">{report.nodes} nodes, simulated from '
        f"{escape(report.start.strftime('%Y-%m-%dT%H:%M:%SZ'))} for "
        f"{escape(format_duration(report.offset(report.end)))} of virtual time.</p>"
        + _chart(report, "Pods", _POD_SERIES, "pods-chart")
        + _chart(report, "Nodes", _NODE_SERIES, "nodes-chart")
        + '<h2>Steps</h2><table id="steps"><tr><th>#</th><th>at</th><th>step</th></tr>'
        + _rows(steps)
        + '</table><h2>What happened</h2><table id="counts"><tr><th>event</th><th>times</th></tr>'
        + _rows(counts)
        + '</table><h2>Timeline</h2><table id="timeline"><tr><th>time</th><th>event</th>'
        "<th>object</th><th>detail</th></tr>"
        + _rows(timeline)
        + "</table>"
        + note
        + "</body></html>\n"
    )
