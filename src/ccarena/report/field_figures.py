"""The field's standard figures: throughput against delay as Pantheon draws it, the
convergence fairness transperf scores, and per-flow boxes over repetitions.

Contract as in figures.py: DataFrames in, a matplotlib Figure out (drawn into `ax=` when
given), no files read, "no data" rather than an exception.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from ccarena.analysis import valid_mask
from ccarena.metrics.series import nonempty
from ccarena.report.figbase import (_axes, _legend, _no_data, column_label, factor_axis,
                                    label_of, name_of, natural_key, rotate_long, unit_of)

__all__ = ["throughput_delay", "box_per_flow", "convergence"]


def _ellipse(x: np.ndarray, y: np.ndarray, n_sd: float = 1.0, **kw) -> Ellipse | None:
    """The n_sd standard-deviation ellipse of the points (x, y): centred on their means,
    axes along the eigenvectors of their covariance (Pantheon's per-scheme ellipse)."""
    if len(x) < 3:
        return None
    cov = np.cov(np.vstack([x, y]))
    if not np.all(np.isfinite(cov)):
        return None
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0, None)
    angle = float(np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1])))
    w, h = 2 * n_sd * np.sqrt(vals[-1]), 2 * n_sd * np.sqrt(vals[0])
    return Ellipse((float(np.mean(x)), float(np.mean(y))), w, h, angle=angle, **kw)


def throughput_delay(runs: pd.DataFrame, by: str | None = None, *,
                     delay: str = "rtt_p95_s", throughput: str = "goodput_bps",
                     title: str | None = None, ax=None, order=None) -> Figure:
    """Throughput against the 95th-percentile delay, as Pantheon draws it: one small
    point per valid run, per group of `by` (e.g. the algorithm, in `order` when given)
    its mean as a large marker and the 1-standard-deviation ellipse of its runs (with
    >= 3 runs). The delay axis is reversed, so better (higher, lower delay) is up and to
    the right."""
    fig, ax = _axes(ax, (6.5, 4.5))
    xs, _ = unit_of(delay)
    ys, _ = unit_of(throughput)
    n_inv = 0
    if not nonempty(runs) or delay not in runs or throughput not in runs:
        _no_data(ax)
    else:
        ok = valid_mask(runs)
        n_inv = int((~ok).sum())
        d = runs[ok]
        d = d[pd.to_numeric(d[delay], errors="coerce").notna()
              & pd.to_numeric(d[throughput], errors="coerce").notna()]
        groups = ([(g, d[d[by] == g]) for g in factor_axis(by, d[by].unique().tolist(),
                                                             order).levels]
                  if by and by in d else [(None, d)])
        if not len(d):
            _no_data(ax)
        for k, (g, sub) in enumerate(groups):
            colour = f"C{k % 10}"
            x = sub[delay].to_numpy(float) * xs
            y = sub[throughput].to_numpy(float) * ys
            ax.plot(x, y, ".", color=colour, alpha=0.6, ms=5)
            ax.plot([x.mean()], [y.mean()], "o", color=colour, ms=9, mec="k", mew=0.8,
                    label=None if g is None else f"{g} ({len(x)})")
            e = _ellipse(x, y, facecolor=colour, edgecolor=colour, alpha=0.18, lw=1)
            if e is not None:
                ax.add_patch(e)
        if by and by in d:
            _legend(ax, len(groups))
        if len(d):
            ax.invert_xaxis()
    ax.set_xlabel(f"{label_of(delay)}   (better →)")
    ax.set_ylabel(f"{label_of(throughput)}   (better ↑)")
    ax.grid(alpha=0.3)
    extra = f"  ({n_inv} invalid runs excluded)" if n_inv else ""
    ax.set_title((title or "throughput against delay (runs, group means, 1-sd "
                  "ellipses)") + extra, fontsize="medium")
    return fig


def box_per_flow(flows: pd.DataFrame, metric: str = "goodput_bps", by: str | None = None,
                 *, flow: str = "name", title: str | None = None, ax=None,
                 order=None) -> Figure:
    """One box per flow (`flow` column, default its name) and group of `by` (e.g. the
    cell), of a per-flow metric over the repetitions: shows whether one flow is always
    the one left behind. Valid runs' flow rows only (conn == -1 when present)."""
    scale, _ = unit_of(metric)
    fig, ax = _axes(ax, (7.5, 4.0))
    if not nonempty(flows) or metric not in flows or flow not in flows:
        _no_data(ax)
        groups, names = [], []
    else:
        d = flows[flows["conn"] == -1] if "conn" in flows else flows
        d = d[valid_mask(d)]
        groups = factor_axis(by, d[by].dropna().unique().tolist(), order).levels \
            if by and by in d else [None]
        names = sorted(d[flow].dropna().unique(), key=natural_key)
        width = 0.8 / max(len(names), 1)
        drew = False
        for j, name in enumerate(names):
            data, pos = [], []
            for i, g in enumerate(groups):
                sel = (d[flow] == name) & ((d[by] == g) if g is not None else True)
                v = pd.to_numeric(d.loc[sel, metric], errors="coerce").dropna()
                if len(v):
                    data.append(v.to_numpy(float) * scale)
                    pos.append(i + (j - (len(names) - 1) / 2) * width)
            if not data:
                continue
            drew = True
            bp = ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True,
                            showmeans=True, manage_ticks=False)
            for patch in bp["boxes"]:
                patch.set(facecolor=f"C{j % 10}", alpha=0.5)
            ax.plot([], [], "s", color=f"C{j % 10}", alpha=0.5, label=str(name))
        if not drew:
            _no_data(ax)
        ax.set_xticks(range(len(groups)), ["" if g is None else str(g) for g in groups])
        rotate_long(ax, groups)
        _legend(ax, len(names))
    ax.set_xlabel(column_label(by) if by else "")
    ax.set_ylabel(label_of(metric))
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(title or f"{name_of(metric)} per flow over repetitions"
                 + (f", per {column_label(by) or 'setting'}" if by else ""),
                 fontsize="medium")
    return fig


def convergence(windows: pd.DataFrame, *, title: str | None = None, ax=None) -> Figure:
    """Convergence fairness as transperf scores it: Jain's index per 1 s window over
    time, one line per `label` (a run; its minimum in the legend), filled dots for the
    scored windows (from t_c on), the convergence time t_c dotted and the minimum over
    the scored windows (jain_min_1s) as a dashed level.

    windows: columns t, t_end, jain, scored, t_c, and optionally label (as given by
    metrics.series.convergence_series, one frame per run concatenated)."""
    fig, ax = _axes(ax, (7, 3.8))
    if not nonempty(windows) or not {"t", "t_end", "jain"} <= set(windows.columns):
        _no_data(ax)
    else:
        groups = list(windows.groupby("label", sort=False)) if "label" in windows \
            else [(None, windows)]
        for k, (lab, w) in enumerate(groups):
            c = f"C{k % 10}"
            mid = (w["t"] + w["t_end"]) / 2
            scored = w["scored"].astype(bool) if "scored" in w else pd.Series(True,
                                                                             index=w.index)
            js = w.loc[scored, "jain"].dropna()
            low = f" (min {js.min():.3f})" if len(js) else ""
            ax.plot(mid, w["jain"], "-", color=c, lw=0.8, alpha=0.6)
            ax.plot(mid[scored], w.loc[scored, "jain"], "o", color=c, ms=4,
                    label=None if lab is None else f"{lab}{low}")
            ax.plot(mid[~scored], w.loc[~scored, "jain"], "o", mfc="none", color=c, ms=4)
            t_c = float(w["t_c"].iloc[0]) if "t_c" in w and len(w) else float("nan")
            if np.isfinite(t_c):
                ax.axvline(t_c, color=c, lw=0.8, ls=":")
            if len(js):
                ax.axhline(js.min(), color=c, lw=0.8, ls="--")
                if len(groups) == 1:
                    ax.annotate(f"min {js.min():.3f}", (mid[scored].max(), js.min()),
                                textcoords="offset points", xytext=(2, -10),
                                fontsize="x-small", color=c)
        ax.set_ylim(0, 1.05)
        if "label" in windows:
            _legend(ax, len(groups))
    ax.set_xlabel("time since t0 (s)")
    ax.set_ylabel("Jain index per 1 s window")
    ax.grid(alpha=0.3)
    ax.set_title(title or "convergence fairness: Jain per 1 s window; dotted: t_c, dashed: "
                 "min after t_c", fontsize="medium")
    return fig
