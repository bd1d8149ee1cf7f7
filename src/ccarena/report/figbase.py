"""Shared pieces of the figure modules (figures.py, field_figures.py): saving, new axes,
level order, "no data", thinning and legends. See figures.py for the contract."""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from ccarena import units

MAX_POINTS = 3000  # per line: enough for the eye, keeps SVGs small
MAX_LEGEND = 10
FORMATS = ("png", "svg", "pdf")


unit_of = units.display_unit
label_of = units.metric_label


def natural_key(v):
    """Sort key for factor levels: "20p" < "100p", "1ms" < "10ms", numbers by value."""
    if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
        return (0, float(v), "")
    m = re.match(r"\s*([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)", str(v))
    return (0, float(m.group(1)), str(v)) if m else (1, 0.0, str(v))


def save(fig: Figure, path, fmt: str | None = None) -> Path:
    """Write `fig` to `path` as PNG, SVG or PDF (`fmt`, else the path's suffix; no
    suffix: PNG) at 100 dpi with a tight bounding box, and return the path. SVG and PDF
    carry no creation date and SVG ids are seeded, so the same figure gives the same
    file."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "png").lower()
    if fmt not in FORMATS:
        raise ValueError(f"plot {path}: format {fmt!r} not supported (use "
                         + ", ".join(f".{f}" for f in FORMATS) + ")")
    path.parent.mkdir(parents=True, exist_ok=True)
    for ax in fig.axes:  # "+1.913e1" offsets hide the values a reader wants to see
        for axis in (ax.xaxis, ax.yaxis):
            fmtr = axis.get_major_formatter()
            if hasattr(fmtr, "set_useOffset"):
                fmtr.set_useOffset(False)
    meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
    # a fixed salt makes the SVG's element ids, and so the file, repeatable
    with matplotlib.rc_context({"svg.hashsalt": "ccarena"}):
        fig.savefig(path, format=fmt, dpi=100, bbox_inches="tight", metadata=meta)
    return path


def _axes(ax, figsize) -> tuple[Figure, object]:
    """The axes to draw into: `ax` if given, else the one axes of a new figure."""
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _no_data(ax, what="no data"):
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="grey")


def _thin(x, y):
    """Keep at most MAX_POINTS points of a line (every k-th sample)."""
    k = max(1, len(x) // MAX_POINTS)
    return np.asarray(x)[::k], np.asarray(y)[::k]


def _legend(ax, n):
    if 0 < n <= MAX_LEGEND:
        ax.legend(fontsize="x-small", ncol=2 if n > 4 else 1, loc="best")
