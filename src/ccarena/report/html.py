"""The report's HTML: Jinja2 templates (report/templates/, autoescaped) and the data
they are given.

Contract: `render(name, **context) -> str` renders a template; `table_data(df, ...)`,
`kv_rows(d)` and `figure_data(path, caption)` turn DataFrames, dicts and figure files
into the plain structures the macros of blocks.html.j2 draw. Every value is escaped by
the template engine; only fragments wrapped in `Markup` (built here or by markupsafe,
which escapes what it interpolates) pass as HTML. Figures are embedded as data: URIs
(PNG) or inline SVG, so the page needs nothing but itself.
"""
from __future__ import annotations

import base64
import json
from functools import lru_cache
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from ccarena import units

__all__ = ["render", "table_data", "kv_rows", "figure_data", "fmt_num", "fmt_metric",
           "Markup", "escape"]


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The report's template environment: templates shipped in the package, autoescape
    on for every template."""
    return Environment(loader=PackageLoader("ccarena.report", "templates"), autoescape=True,
                       trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined)


def render(template: str, /, **context) -> str:
    """Render `template` of report/templates with `context`."""
    return environment().get_template(template).render(**context)


def fmt_num(v, digits: int = 4) -> str:
    """A number for people (units.format_number); escaping is the template's job."""
    return units.format_number(v, digits)


def fmt_metric(metric: str, v, digits: int = 4) -> str:
    """A value in the metric's display unit (Mbit/s, ms, ...), without the unit."""
    return units.format_metric(metric, v, digits)


def _text(v):
    return "" if v is None else v


def table_data(df: pd.DataFrame, left: tuple = (), raw_html: tuple = (),
               max_rows: int = 500, wrap: tuple = ()) -> dict:
    """A DataFrame for the `table` macro: {head: [(name, left)], rows: [[(value, left)]],
    more}. Columns in `left` are left-aligned text; columns in `raw_html` hold Markup
    fragments (right-aligned values unless also in `left`); other numbers are formatted
    with fmt_num, right-aligned. Columns in `wrap` (left-aligned text) may wrap over
    several lines, as a long sentence must."""
    if df is None or len(df) == 0:
        return {"head": [], "rows": [], "more": 0}
    cols = list(df.columns)
    rows = []
    for row in df.head(max_rows).itertuples(index=False):
        cells = []
        for c, v in zip(cols, row):
            if c in raw_html:
                cells.append((Markup(v), c in left))
            elif c in wrap:
                cells.append((_text(v), "wrap"))
            elif c in left or not isinstance(v, (int, float)) or isinstance(v, bool):
                cells.append((_text(v), True))
            else:
                cells.append((fmt_num(v), False))
        rows.append(cells)
    return {"head": [(c, c in left) for c in cols], "rows": rows,
            "more": max(len(df) - max_rows, 0)}


def kv_rows(d: dict) -> list[tuple]:
    """A dict for the `kv_table` macro: (key, shown value, full text or None). A dict or
    list is shown as flat JSON; a long one folds away behind its start, complete."""
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            flat = json.dumps(v, sort_keys=True, default=str)
            if len(flat) > 200:
                rows.append((k, flat[:120],
                             json.dumps(v, indent=1, sort_keys=True, default=str)))
            else:
                rows.append((k, flat, None))
        else:
            rows.append((k, _text(v), None))
    return rows


def figure_data(path: Path, caption: str) -> dict:
    """A figure file for the `figure` macro: an SVG inline (its XML prolog and doctype
    dropped), a PNG as base64."""
    path = Path(path)
    if path.suffix == ".svg":
        svg = path.read_text()
        return {"svg": Markup(svg[svg.find("<svg"):]), "b64": None, "caption": caption}
    return {"svg": None, "b64": base64.b64encode(path.read_bytes()).decode("ascii"),
            "caption": caption}
