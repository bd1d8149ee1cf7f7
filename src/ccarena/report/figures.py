"""ccarena.plots: the figures of a study, drawn with matplotlib.

Contract: every public figure function takes DataFrames (and a meta dict where a run is
drawn), draws into the axes given as `ax=` (or the figure given as `fig=` for the
multi-panel ones), or into a new Figure when none is given, and returns the matplotlib
Figure. Saving is separate: `save(fig, path, fmt=None)` writes PNG, SVG or PDF. New
figures are plain `matplotlib.figure.Figure` objects, not registered with pyplot, so
nothing needs closing and no global backend is set (a notebook shows them as they are).
No function reads files or global state; empty inputs give a figure that says "no data"
rather than an exception, so a report never breaks on a missing table. Units on axes are
the readable ones (Mbit/s, ms); the data stay in SI units.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ccarena.analysis import summarize, valid_mask
from ccarena.units import format_number
from ccarena.metrics.series import (DEFAULT_INTERVAL_S, goodput_series, jain_series, nonempty, usable, with_t)
from ccarena.report.figbase import (FORMATS, _axes, _legend, _no_data, _thin, column_label,
                                    error_bars, factor_axis, label_of, name_of, natural_key,
                                    rotate_long, save, set_factor_ticks, unit_of)
from ccarena.report.field_figures import box_per_flow, convergence, throughput_delay

__all__ = ["timeseries", "run_title", "metric_vs_factor", "box", "box_per_flow", "cdf", "heatmap",
           "fairness_vs_flows", "throughput_delay", "convergence", "save", "FORMATS",
           "unit_of", "natural_key"]

# -- one run over time ------------------------------------------------------------------

def timeseries(tables: dict, meta: dict, *, interval_s: float = DEFAULT_INTERVAL_S,
               title: str | None = None, fig: Figure | None = None,
               label: str | None = None) -> Figure:
    """Panels over time for one run: cwnd, goodput, RTT (srtt and ping), queue
    occupancy at the bottleneck, and Jain's index per interval. Missing tables leave a
    panel with "no data".

    fig: draw into this figure; a figure that already holds the five panels (from an
    earlier call) gets this run drawn over them, each line named with `label` first,
    so runs of several studies can be overlaid."""
    tables = {k: usable(with_t(v, meta), k) for k, v in (tables or {}).items()}
    if fig is None:
        fig = Figure(figsize=(8, 10.5), layout="constrained")
    axes = fig.axes if len(fig.axes) == 5 else fig.subplots(5, 1, sharex=True)
    _timeseries_panels(fig, list(axes), tables, meta, interval_s, title, label)
    return fig


def _timeseries_panels(fig, axes, tables, meta, interval_s, title, label=None):
    pre = f"{label}: " if label else ""
    names = {int(f["flow"]): pre + f.get("name", f"flow{f['flow']}") + (
             f" ({f['cc']})" if f.get("cc") else "") for f in meta.get("flows") or []}
    tcp, rx = tables.get("tcpinfo"), tables.get("rx")
    warm = float(meta.get("warmup_s") or 0.0)

    ax = axes[0]
    if nonempty(tcp) and "cwnd" in tcp:
        per = tcp.groupby(["flow", "t"], sort=True)["cwnd"].sum().reset_index()
        for f, g in per.groupby("flow"):
            ax.plot(*_thin(g["t"], g["cwnd"]), lw=0.8, label=names.get(int(f), f"flow{f}"))
        _legend(ax, per["flow"].nunique())
    else:
        _no_data(ax)
    ax.set_ylabel("cwnd (segments)")

    ax = axes[1]
    if nonempty(rx):
        gs = goodput_series(rx, meta, interval_s)
        for f, g in gs.groupby("flow"):
            ax.plot(g["t"] + interval_s / 2, g["goodput_bps"] / 1e6, lw=1,
                    drawstyle="default", label=names.get(int(f), f"flow{f}"))
        tot = gs.groupby("t")["goodput_bps"].sum()
        ax.plot(tot.index + interval_s / 2, tot / 1e6, color=None if label else "k",
                lw=1.2, ls="--", label=pre + "sum")
        rate = (meta.get("bottleneck") or {}).get("rate_bps")
        if rate:
            ax.axhline(rate / 1e6, color="grey", lw=0.8, ls=":")
        _legend(ax, gs["flow"].nunique() + 1)
    else:
        _no_data(ax)
    ax.set_ylabel(f"goodput (Mbit/s)\nper {interval_s:g} s")

    ax = axes[2]
    drew = False
    if nonempty(tcp) and "srtt_us" in tcp:
        per = tcp.groupby(["flow", "t"], sort=True)["srtt_us"].mean().reset_index()
        for f, g in per.groupby("flow"):
            ax.plot(*_thin(g["t"], g["srtt_us"] / 1e3), lw=0.7)
        drew = True
    ping = tables.get("ping")
    if nonempty(ping) and "rtt_s" in ping:
        ax.plot(ping["t"], ping["rtt_s"] * 1e3, ".", ms=2, color=None if label else "k",
                label=pre + "ping")
        ax.legend(fontsize="x-small")
        drew = True
    if meta.get("base_rtt_s"):
        ax.axhline(meta["base_rtt_s"] * 1e3, color="grey", lw=0.8, ls=":")
    if not drew:
        _no_data(ax)
    ax.set_ylabel("RTT (ms)\nsrtt per flow")

    ax = axes[3]
    link = tables.get("link_stats")
    if nonempty(link) and "qlen_pkts" in link:
        d = link[link["dir"] == 0] if "dir" in link else link
        ax.plot(*_thin(d["t"], d["qlen_pkts"]), lw=0.8, color=None if label else "tab:red",
                label=label)
        buf = (meta.get("bottleneck") or {}).get("buffer_packets")
        if buf:
            ax.axhline(buf, color="grey", lw=0.8, ls=":")
    else:
        _no_data(ax, "no link statistics (kernel backend?)")
    ax.set_ylabel("queue (packets)")

    ax = axes[4]
    if len(meta.get("flows") or []) == 1:
        _no_data(ax, "one flow: Jain's index is 1 by definition")
    elif nonempty(rx):
        js = jain_series(rx, meta, interval_s)
        ax.plot(js["t"] + interval_s / 2, js["jain"], marker=".", lw=1, label=label)
        ax.set_ylim(0, 1.05)
        ax.axhline(0.9, color="grey", lw=0.8, ls=":")
    else:
        _no_data(ax)
    ax.set_ylabel("Jain index\nper interval")
    ax.set_xlabel("time since t0 (s)")
    for a in axes:
        if warm:
            a.axvspan(0, warm, color="0.92", zorder=0)
        a.grid(alpha=0.3)
    fig.suptitle(title or run_title(meta), fontsize="medium")


def run_title(meta: dict) -> str:
    """A run named by its factor values and repetition ("cc=reno, repetition 2"), not by
    its cell id; a study without a sweep by its label."""
    params = meta.get("cell_params") or {}
    setting = ", ".join(f"{column_label(k) or k}={v}" for k, v in params.items())
    rep = meta.get("rep")
    tail = f"repetition {rep}" if rep is not None else ""
    name = meta.get("label") or meta.get("run_id", "")
    return ", ".join(x for x in (setting, tail) if x) or f"run {name}"


# -- across cells and runs ----------------------------------------------------------------

def metric_vs_factor(stats: pd.DataFrame, factor: str, metric, *,
                     hue: str | None = None, title: str | None = None,
                     fig: Figure | None = None, order=None, hue_order=None) -> Figure:
    """A metric's centre (the mean, or the median of a percentile metric) against a swept
    factor with its 95 % interval (clipped at the metric's physical bounds); with a list
    of metrics, one small panel per metric (same x axis) in one figure.

    A numeric factor (delay, rate, buffer, pairs) is drawn at its true values, joined by
    lines, on a log scale when its values are geometric; a categorical one (an
    algorithm, a queue) as points with intervals and no line, in `order` (the study's
    order) when given. `hue` is the series: one colour per level (in `hue_order`).

    stats: output of analysis.cell_stats (columns factor, [hue], metric, mean, median,
    ci_low, ci_high, center).
    fig: draw the panels into this (empty) figure instead of a new one."""
    metrics = [metric] if isinstance(metric, str) else list(metric)
    ncol = min(3, len(metrics))
    nrow = -(-len(metrics) // ncol)
    if fig is None:
        fig = Figure(figsize=(6 if ncol == 1 else 4.2 * ncol, 3.8 if nrow == 1 else
                              3.1 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax, m in zip(axes.ravel(), metrics):
        _factor_panel(ax, stats, factor, m, hue, legend=(m == metrics[0]), order=order,
                      hue_order=hue_order)
        if len(metrics) > 1:
            ax.set_title(name_of(m), fontsize="small")
    for ax in axes.ravel()[len(metrics):]:
        ax.set_visible(False)
    what = name_of(metrics[0]) if len(metrics) == 1 else "results"
    fig.suptitle(title or f"{what} against {column_label(factor) or factor}"
                 + (f", per {column_label(hue)}" if hue and column_label(hue) else ""),
                 fontsize="medium")
    return fig


def _factor_panel(ax, stats, factor, metric, hue, legend=True, order=None,
                  hue_order=None):
    scale, _ = unit_of(metric)
    d = stats[stats["metric"] == metric] if nonempty(stats) else pd.DataFrame()
    if d.empty or factor not in d:
        _no_data(ax)
    else:
        axis = factor_axis(factor, d[factor].tolist(), order)
        pos = dict(zip(map(str, axis.levels), axis.x))
        if hue and hue in d:
            h_axis = factor_axis(hue, d[hue].tolist(), hue_order)
            groups = [(h, d[d[hue].astype(str) == str(h)]) for h in h_axis.levels]
        else:
            groups = [(None, d)]
        ng = len(groups)
        for k, (h, g) in enumerate(groups):
            g = g.assign(_x=g[factor].astype(str).map(pos)).dropna(subset=["_x"])
            g = g.sort_values("_x")
            y, err = error_bars(g, metric, scale)
            x = g["_x"].to_numpy(float)
            if axis.numeric:     # a true scale: the series joined by a line
                ax.errorbar(x, y, yerr=err, marker="o", ms=4, capsize=3,
                            label=None if h is None else str(h))
            else:                # categories: points with intervals, side by side
                off = (k - (ng - 1) / 2) * min(0.12, 0.6 / max(ng, 1))
                ax.errorbar(x + off, y, yerr=err, fmt="o", linestyle="none", capsize=3,
                            label=None if h is None else str(h))
        set_factor_ticks(ax, axis)
        if not axis.numeric:
            ax.set_xlim(-0.5, len(axis.levels) - 0.5)
        if hue and hue in d and legend:
            ax.legend(title=column_label(hue) or None, fontsize="x-small",
                      title_fontsize="x-small")
    ax.set_xlabel(column_label(factor) or factor)
    ax.set_ylabel(label_of(metric))
    ax.grid(alpha=0.3)


def box(runs: pd.DataFrame, by: str, metric: str, *, title: str | None = None,
        ax=None, order=None) -> Figure:
    """Distribution of a metric over repetitions, one box per value of `by` (valid runs
    only; the invalid ones are counted in the title), in `order` when given (the
    study's), else numeric factors by value and the rest in natural order."""
    scale, _ = unit_of(metric)
    fig, ax = _axes(ax, (6.5, 3.8))
    if not nonempty(runs) or metric not in runs or by not in runs:
        _no_data(ax)
        n_inv = 0
    else:
        ok = valid_mask(runs)
        n_inv = int((~ok).sum())
        d = runs[ok]
        levels = factor_axis(by, d[by].dropna().tolist(), order).levels
        data = [d.loc[d[by] == v, metric].dropna().to_numpy() * scale for v in levels]
        if any(len(x) for x in data):
            ax.boxplot(data, tick_labels=[str(v) for v in levels], showmeans=True)
            for i, x in enumerate(data, 1):  # the points themselves: n is usually small
                ax.plot(np.full(len(x), i) + np.linspace(-0.08, 0.08, len(x)), x, ".",
                        color="k", ms=3)
        else:
            _no_data(ax)
        rotate_long(ax, levels)
    ax.set_xlabel(column_label(by))
    ax.set_ylabel(label_of(metric))
    ax.grid(alpha=0.3, axis="y")
    extra = f"  ({n_inv} invalid runs excluded)" if n_inv else ""
    ax.set_title((title or f"{name_of(metric)} per {column_label(by) or 'setting'}") + extra,
                 fontsize="medium")
    return fig


def cdf(df: pd.DataFrame, value: str, *, hue: str | None = None,
        title: str | None = None, max_groups: int = 12, ax=None, order=None) -> Figure:
    """Empirical CDF of a column (e.g. RTT samples, per-flow goodput), one line per hue
    (in `order` when given)."""
    scale, _ = unit_of(value)
    fig, ax = _axes(ax, (6, 3.8))
    if not nonempty(df) or value not in df:
        _no_data(ax)
    else:
        if hue and hue in df:
            lv = factor_axis(hue, df[hue].dropna().unique().tolist(), order).levels
            groups = [(h, df[df[hue] == h]) for h in lv][:max_groups]
        else:
            groups = [(None, df)]
        for h, g in groups:
            x = np.sort(g[value].dropna().to_numpy(float)) * scale
            if x.size == 0:
                continue
            y = np.arange(1, x.size + 1) / x.size
            ax.step(*_thin(x, y), where="post", label=None if h is None else str(h))
        if hue:
            _legend(ax, len(groups))
    ax.set_xlabel(label_of(value))
    ax.set_ylabel("fraction ≤ x")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"CDF of {name_of(value)}", fontsize="medium")
    return fig


def heatmap(df: pd.DataFrame, row: str, col: str, value: str, *,
            title: str | None = None, vmin=None, vmax=None, cmap: str = "viridis",
            ax=None) -> Figure:
    """Algorithm x algorithm (or any two factors) matrix of the mean of `value`,
    each cell annotated with its mean."""
    scale, _ = unit_of(value)
    fig, ax = _axes(ax, (5.5, 4.5))
    if not nonempty(df) or not {row, col, value} <= set(df.columns):
        _no_data(ax)
    else:
        piv = df.pivot_table(index=row, columns=col, values=value, aggfunc="mean")
        piv = piv.reindex(index=factor_axis(row, list(piv.index)).levels,
                          columns=factor_axis(col, list(piv.columns)).levels) * scale
        im = ax.imshow(piv.to_numpy(float), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        ax.set_xticks(range(piv.shape[1]), [str(c) for c in piv.columns])
        ax.set_yticks(range(piv.shape[0]), [str(i) for i in piv.index])
        for (i, j), v in np.ndenumerate(piv.to_numpy(float)):
            if not np.isnan(v):
                r, g, b, _ = im.cmap(im.norm(v))  # dark text on light cells, and back
                ax.text(j, i, format_number(v, 3), ha="center", va="center",
                        fontsize="small",
                        color="k" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "w")
        fig.colorbar(im, ax=ax, label=label_of(value))
    ax.set_xlabel(column_label(col))
    ax.set_ylabel(column_label(row))
    ax.set_title(title or f"{name_of(value)}: {column_label(row)} × {column_label(col)}",
                 fontsize="medium")
    return fig


def fairness_vs_flows(runs: pd.DataFrame, n_col: str, *, value: str = "jain",
                      hue: str | None = None, title: str | None = None,
                      ax=None) -> Figure:
    """Jain's index (or another value) against the number of competing flows: mean and
    95 % CI over valid runs, with the 1/n line of one flow taking everything."""
    fig, ax = _axes(ax, (6, 3.8))
    if not nonempty(runs) or n_col not in runs or value not in runs:
        _no_data(ax)
    else:
        d = runs[valid_mask(runs)].copy()
        d["_n"] = pd.to_numeric(d[n_col], errors="coerce")
        groups = d.groupby(hue, sort=True) if hue and hue in d else [(None, d)]
        for h, g in groups:
            # the flow count as its own column: summarize's "n" counts the runs
            s = pd.DataFrame([{**summarize(x[value]), "_flows": k}
                              for k, x in g.groupby("_n")])
            if s.empty:
                continue
            y, err = error_bars(s, value, 1.0)
            ax.errorbar(s["_flows"], y, yerr=err, marker="o", capsize=3,
                        label=None if h is None else str(h))
        ns = np.sort(d["_n"].dropna().unique())
        if ns.size:
            ax.plot(ns, 1 / ns, ls=":", color="grey", label="1/n (one flow takes all)")
            set_factor_ticks(ax, factor_axis(n_col, [int(n) if float(n).is_integer()
                                                     else n for n in ns]))
        ax.legend(fontsize="x-small")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(column_label(n_col))
    ax.set_ylabel(label_of(value))
    ax.grid(alpha=0.3)
    ax.set_title(title or f"{name_of(value)} against the number of flows (mean, 95 % CI)",
                 fontsize="medium")
    return fig
