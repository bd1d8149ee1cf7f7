"""Small HTML building blocks for the report: escaping, tables, embedded figures.

Contract: pure string builders; every value passes through `esc`; figures are embedded
as data: URIs (PNG) or inline SVG, so the page needs nothing but itself.
"""
from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

import pandas as pd

from ccarena import units

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;
 max-width:1150px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:0.2em} h2{border-bottom:1px solid #ccc;margin-top:1.8em}
table{border-collapse:collapse;font-size:0.85em;margin:0.6em 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
td{white-space:nowrap} td.w{white-space:normal;word-break:break-word}
th{background:#f3f3f3} td.l,th.l{text-align:left}
.fig{display:inline-block;margin:0.4em;vertical-align:top;text-align:center}
.fig img,.fig svg{max-width:100%;height:auto;border:1px solid #eee}
.cap{font-size:0.8em;color:#555;max-width:560px}
.bad{color:#b00020;font-weight:600} .ok{color:#1b7d2b} .muted{color:#777}
pre{background:#f7f7f7;padding:0.6em;overflow:auto;font-size:0.8em;max-height:30em}
nav a{margin-right:1em} .wide{overflow-x:auto;max-width:100%}
"""


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def fmt_num(v, digits: int = 4) -> str:
    return esc(units.format_number(v, digits))


def fmt_metric(metric: str, v, digits: int = 4) -> str:
    """A value in the metric's display unit (Mbit/s, ms, ...), without the unit."""
    return esc(units.format_metric(metric, v, digits))


def table(df: pd.DataFrame, left: tuple = (), raw_html: tuple = (), max_rows: int = 500) -> str:
    """An HTML table of a DataFrame; columns in `left` are left-aligned text and columns
    in `raw_html` are trusted HTML fragments built by this module."""
    if df is None or len(df) == 0:
        return '<p class="muted">(none)</p>'
    cols = list(df.columns)
    head = "".join(f'<th class="{"l" if c in left else ""}">{esc(c)}</th>' for c in cols)
    body = []
    for row in df.head(max_rows).itertuples(index=False):
        cells = []
        for c, v in zip(cols, row):
            if c in raw_html:
                cells.append(f'<td class="l">{v}</td>')
            elif c in left or not isinstance(v, (int, float)) or isinstance(v, bool):
                cells.append(f'<td class="l">{esc(v)}</td>')
            else:
                cells.append(f"<td>{fmt_num(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="muted">{len(df) - max_rows} more rows not shown</p>'
            if len(df) > max_rows else "")
    return (f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{more}")


def figure(path: Path, caption: str) -> str:
    """Embed a PNG as base64 data URI, or an SVG inline."""
    path = Path(path)
    if path.suffix == ".svg":
        svg = path.read_text()
        svg = svg[svg.find("<svg"):]  # drop the XML prolog and doctype
        body = f'<div role="img" aria-label="{esc(caption)}">{svg}</div>'
    else:
        b64 = base64.b64encode(path.read_bytes()).decode("ascii")
        body = f'<img alt="{esc(caption)}" src="data:image/png;base64,{b64}">'
    return f'<div class="fig">{body}<div class="cap">{esc(caption)}</div></div>'


def kv_table(d: dict) -> str:
    rows = []
    for k, v in d.items():
        cell = esc(v)
        if isinstance(v, (dict, list)):
            flat = json.dumps(v, sort_keys=True, default=str)
            cell = esc(flat)
            if len(flat) > 200:  # long structures fold away, complete, behind their start
                cell = (f"<details><summary>{esc(flat[:120])} …</summary><pre>"
                        f"{esc(json.dumps(v, indent=1, sort_keys=True, default=str))}"
                        "</pre></details>")
        rows.append(f'<tr><th class="l">{esc(k)}</th><td class="l w">{cell}</td></tr>')
    return f"<table>{''.join(rows)}</table>" if rows else '<p class="muted">(none)</p>'


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head>"
            f"<body>{body}</body></html>\n")
