"""Shared pieces of the figure modules (figures.py, field_figures.py): saving, new axes,
level order, a factor's axis (categorical or on a true numeric scale), labels in words,
"no data", thinning and legends. See figures.py for the contract."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure

from ccarena import units

MAX_POINTS = 3000  # per line: enough for the eye, keeps SVGs small
MAX_LEGEND = 10
FORMATS = ("png", "svg", "pdf")


unit_of = units.display_unit
label_of = units.metric_label
name_of = units.metric_name


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
    plain_axes(fig)
    meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(fmt)
    # a fixed salt makes the SVG's element ids, and so the file, repeatable
    with matplotlib.rc_context({"svg.hashsalt": "ccarena"}):
        fig.savefig(path, format=fmt, dpi=100, bbox_inches="tight", metadata=meta)
    return path


def plain_axes(fig: Figure) -> None:
    """Tick labels as numbers people read: no "+1.913e1" offset and no "1e-5" multiplier
    above the axis (they hide the values a reader wants to see); a log axis keeps its
    powers of ten."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            fmtr = axis.get_major_formatter()
            if isinstance(fmtr, matplotlib.ticker.ScalarFormatter):
                fmtr.set_useOffset(False)
                fmtr.set_scientific(False)


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


def column_label(col) -> str:
    """A column as an axis or legend title: a swept factor by its last part
    ("bottleneck.delay" -> "delay", "flow.bulk.cc" -> "cc"), a metric in words, other
    columns with spaces ("n_flows" -> "flows")."""
    c = str(col)
    if c == "setting" or c.startswith("_"):
        return ""
    if "." in c:
        return c.rsplit(".", 1)[-1]
    if units.display_unit(c)[1] or c in units._NAMES:
        return units.metric_name(c)
    return c.replace("_", " ")


@dataclass
class FactorAxis:
    """How a factor's levels sit on an axis: `levels` in the order to draw them; `x` their
    positions (the values themselves, in the unit the key parses to, for a numeric
    factor; 0, 1, ... for a categorical one); `log` when a numeric factor's values are
    geometric (1, 2, 4, 8 ms)."""
    levels: list
    x: list
    numeric: bool
    log: bool = False


def _level_value(factor: str, v):
    """A level as a number (in the unit its key parses to: "10ms" -> 0.01, "20p" ->
    20 packets), or None for a category (an algorithm, a queue, true/false)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float, np.number)):
        f = float(v)
        return None if math.isnan(f) else ("", f)
    from ccarena.study.keys import key_for
    k = key_for(str(factor))
    if k is not None and (k.type in ("string", "true/false") or k.type.startswith("one of")):
        return None                                   # a category by its key's type
    if k is not None:
        try:
            x = k(v)
        except (ValueError, TypeError):
            x = None
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], (int, float)):
            return (str(x[0]), float(x[1]))      # a buffer: packets or bytes
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return ("", float(x))
        if x is not None:
            return None
    try:
        num, unit = units.split_quantity(str(v))
    except ValueError:
        return None
    return (unit.lower(), num)


def factor_axis(factor: str, values, order=None) -> FactorAxis:
    """The axis of a swept factor from its values: numeric when every level reads as a
    number of one kind (delays, rates, buffers in packets, pair counts), drawn at its
    true value, on a log scale when the values are geometric; else categorical, in
    `order` (the study's order) when given, else in natural order."""
    seen = []
    for v in values:
        if not (isinstance(v, float) and math.isnan(v)) and v not in seen:
            seen.append(v)
    parsed = [_level_value(factor, v) for v in seen]
    kinds = {p[0] for p in parsed if p is not None}
    if seen and all(p is not None for p in parsed) and len(kinds) == 1:
        pairs = sorted(zip((p[1] for p in parsed), seen), key=lambda t: t[0])
        xs = [x for x, _ in pairs]
        return FactorAxis([v for _, v in pairs], xs, True, _geometric(xs))
    if order is not None:
        ordered = [v for v in order if v in seen] + [v for v in seen if v not in order]
    else:
        ordered = sorted(seen, key=natural_key)
    return FactorAxis(ordered, list(range(len(ordered))), False)


def _geometric(xs: list[float]) -> bool:
    """Values spaced more evenly on a log scale than on a linear one, over at least a
    factor 8 (1, 2, 4, 8, 16 ms; 10, 100, 1000 Mbit/s)."""
    if len(xs) < 3 or xs[0] <= 0 or xs[-1] / xs[0] < 8:
        return False
    lin, lg = np.diff(xs), np.diff(np.log(xs))

    def cv(d):
        return float(np.std(d) / np.mean(d)) if np.mean(d) > 0 else math.inf
    return cv(lg) < cv(lin)


def set_factor_ticks(ax, axis: FactorAxis, which: str = "x") -> None:
    """Ticks at the levels, labelled as the study writes them ("10ms", "reno"); a
    numeric axis keeps its true scale (log when geometric)."""
    set_scale = ax.set_xscale if which == "x" else ax.set_yscale
    set_ticks = ax.set_xticks if which == "x" else ax.set_yticks
    if axis.numeric and axis.log:
        set_scale("log")
    set_ticks(axis.x, [str(v) for v in axis.levels])
    if axis.numeric:
        (ax.xaxis if which == "x" else ax.yaxis).set_minor_locator(
            matplotlib.ticker.NullLocator())
    rotate_long(ax, axis.levels, which)


def rotate_long(ax, labels, which: str = "x") -> None:
    """Slant tick labels that would run into each other (many, or long ones such as
    "buffer=20p, cc=cubic")."""
    labels = [str(v) for v in labels]
    if which == "x" and (len(labels) > 6 or sum(map(len, labels)) > 40
                         or max(map(len, labels), default=0) > 14):
        for t in ax.get_xticklabels():
            t.set(rotation=25, ha="right", rotation_mode="anchor")


def error_bars(d, metric: str, scale: float):
    """(y, [below, above]) of a cell_stats frame for errorbar(): the centre each row
    names (the mean, or the median of a percentile metric) and its interval clipped at
    the metric's physical bounds (no loss below 0), in display units; no bar where the
    interval is undefined."""
    center = d["center"] if "center" in d else None
    y = np.where(center == "median", d["median"], d["mean"]) if center is not None \
        else d["mean"].to_numpy(float)
    y = np.asarray(y, float)
    if "ci_low" in d and "ci_high" in d:
        lo, hi = d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float)
    else:
        h = d["ci_half"].to_numpy(float) if "ci_half" in d else np.full(len(y), np.nan)
        lo, hi = y - h, y + h
    b_lo, b_hi = units.metric_bounds(metric)
    lo, hi = np.clip(lo, b_lo, b_hi), np.clip(hi, b_lo, b_hi)
    below = np.nan_to_num(np.clip(y - lo, 0, None)) * scale
    above = np.nan_to_num(np.clip(hi - y, 0, None)) * scale
    return y * scale, np.vstack([below, above])
