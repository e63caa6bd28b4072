"""The dashboard's page frame and tables: server-rendered HTML, one small stylesheet, no script.

Cells arrive already escaped (they may hold links or taint chips); titles are escaped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["html_page", "table", "timestamp"]

# Colours are never the only cue: each chip or badge also says its effect or status in words.
# Text on the tinted backgrounds is dark enough for WCAG AA contrast.
_STYLE = """
body{font-family:system-ui,sans-serif;margin:20px;color:#212121}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin-top:24px}h3{font-size:14px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:left;
border-bottom:1px solid #e0e0e0;vertical-align:top}th{background:#fafafa}
.summary{color:#424242}.empty,.note{color:#616161;font-size:13px}
.taint{display:inline-block;padding:0 6px;margin:1px;border-radius:8px;font-size:12px;
background:#eceff1;white-space:nowrap;border:1px solid #b0bec5}
.taint.NoExecute{background:#ffcdd2;border-color:#c62828;color:#7f0000}
.taint.NoSchedule{background:#ffe0b2;border-color:#ef6c00;color:#6d3200}
.taint.PreferNoSchedule{background:#fff9c4;border-color:#f9a825;color:#5d4a00}
.ready{white-space:nowrap;font-weight:600}.ready.True{color:#1b5e20}
.ready.False{color:#b71c1c}.ready.Unknown{color:#8a4b00}
.verdict.fits{color:#1b5e20}.verdict.rejected{color:#b71c1c}
time,td:first-child{white-space:nowrap}time{font-variant-numeric:tabular-nums}
code{font-size:12px;background:#f5f5f5;padding:0 3px}.denied{color:#b71c1c}
form label{display:block;margin:8px 0 4px}input[type=password]{width:40em;max-width:100%}
"""


def timestamp(text: str) -> str:
    """A timestamp that never wraps across lines."""
    if not text:
        return ""
    return f'<time datetime="{escape(text)}">{escape(text)}</time>'


def html_page(title: str, body: str, *, refresh: int = 0, back: str = "") -> str:
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    link = f'<p><a href="{escape(back)}">← all nodes</a></p>' if back else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        # An empty icon: otherwise every page also asks for /favicon.ico, the API's 404.
        f'<title>{escape(title)}</title><link rel="icon" href="data:,">{meta}'
        f"<style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{link}{body}</body></html>\n"
    )


def table(
    table_id: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    empty: str = "",
) -> str:
    if not rows and empty:
        return f'<p class="empty" id="{escape(table_id)}">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table id="{escape(table_id)}"><tr>{head}</tr>{body}</table>'
