"""The dashboard's page frame and tables: server-rendered HTML, one small stylesheet, no script.

Cells arrive already escaped (they may hold links or taint chips); titles are escaped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["html_page", "table"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:20px;color:#212121}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin-top:24px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:left;
border-bottom:1px solid #e0e0e0;vertical-align:top}th{background:#fafafa}
.summary{color:#424242}.empty,.note{color:#757575;font-size:13px}
.taint{display:inline-block;padding:0 6px;margin:1px;border-radius:8px;font-size:12px;
background:#eceff1}.taint.NoExecute{background:#ffcdd2}.taint.NoSchedule{background:#ffe0b2}
"""


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
