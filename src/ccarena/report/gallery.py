"""The report's figures: which ones a study's data support, drawn in which order, and
which are left out and why.

Contract: `figure_sections(res, tmp, max_timeseries, fmt) -> list[Section]`, each a
title, its figures (html.figure_data) and the lines saying what was left out ("Jain's
index: every run has a single flow"). `left_out(runs, metrics)` -> (metrics worth
showing, notes) is the rule the report's tables share: a metric undefined for the study
(Jain over one flow) or constant (one value in every valid run) has no figure.
Cells are named by their factor values ("cc=reno, buffer=20p"), never by their ids, and
factor levels come in the study's order (plan.json), numeric factors by value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ccarena import units
from ccarena.analysis import cell_stats, valid_mask
from ccarena.report import figures as plots
from ccarena.report.figbase import column_label, factor_axis
from ccarena.report.html import figure_data
from ccarena.store.results import ResultsDir as Results

FACTOR_METRICS = ["goodput_bps", "utilisation", "jain", "rtt_mean_s", "rtt_p99_s",
                  "loss_ratio", "retrans_ratio", "convergence_s", "fct_mean_s"]
BOX_METRICS = ["goodput_bps", "jain", "rtt_mean_s"]


@dataclass
class Section:
    title: str
    figures: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def present(runs: pd.DataFrame, metrics) -> list[str]:
    """The metrics some row has a value of."""
    return [m for m in metrics if m in runs and pd.to_numeric(runs[m], errors="coerce")
            .notna().any()]


def single_flow(runs: pd.DataFrame) -> bool:
    """Every valid run has at most one flow: Jain's index is 1 by definition there."""
    if "n_flows" not in runs or not len(runs):
        return False
    n = pd.to_numeric(runs.loc[valid_mask(runs), "n_flows"], errors="coerce").dropna()
    return bool(len(n)) and bool((n <= 1).all())


def left_out(runs: pd.DataFrame, metrics, *, constants: bool = True,
             undefined: bool = True) -> tuple[list[str], list[str]]:
    """(metrics worth a figure or a column, one line per metric left out and why), over
    the valid runs: Jain's indices when every run has a single flow; metrics no valid
    run has (said only with `undefined`); with `constants`, metrics with the same value
    in every run (nothing to compare)."""
    ok = runs[valid_mask(runs)] if len(runs) else runs
    keep, notes = [], []
    one = single_flow(runs)
    jains = [units.metric_name(m) for m in metrics if one and m.startswith("jain") and m in ok]
    if jains:       # one line for every index: they are undefined for the same reason
        notes.append(f"{', '.join(jains)}: left out, every run has a single flow (the "
                     "index of one flow is 1 by definition)")
    for m in metrics:
        name = units.metric_name(m)
        if m not in ok or (one and m.startswith("jain")):
            continue
        x = pd.to_numeric(ok[m], errors="coerce").dropna().to_numpy(float)
        if not x.size:
            if undefined:
                notes.append(f"{name}: left out, no valid run has a value")
        elif constants and len(x) > 1 and np.ptp(x) <= 1e-9 * max(np.abs(x).max(), 1e-300):
            notes.append(f"{name}: left out, {units.format_metric(m, x[0], unit=True)} in "
                         "every run")
        else:
            keep.append(m)
    return keep, notes


def cell_labels(res: Results) -> dict[str, str]:
    """cell -> its factor values with short names ("cc=reno, buffer=20p")."""
    from ccarena.analysis.checks import short_names
    cells = res.plan.get("cells") or {}
    short = short_names(list(res.factors))
    return {c: ", ".join(f"{short.get(k, k)}={v}" for k, v in p.items()) or c
            for c, p in cells.items()}


def study_order(res: Results) -> dict[str, list]:
    """factor -> its levels in the study's order (the order of the plan's cells), and
    "setting" -> the cells' labels in that order."""
    cells = res.plan.get("cells") or {}
    out: dict[str, list] = {}
    for p in cells.values():
        for k, v in p.items():
            out.setdefault(k, [])
            if v not in out[k]:
                out[k].append(v)
    labels = cell_labels(res)
    out["setting"] = [labels[c] for c in cells if c in labels]
    return out


def representative_runs(res: Results, group) -> list[tuple[str, str, bool]]:
    """(cell, run_id, valid) of the first valid repetition of every cell, in the study's
    order; a cell without any valid run shows its first invalid one (marked), so a failed
    study can be looked at rather than coming out blank."""
    runs = res.runs
    if not len(runs) or "run_id" not in runs:
        return []
    r = runs.assign(_ok=valid_mask(runs).to_numpy())
    r = r.sort_values(["_ok", "rep"] if "rep" in r else ["_ok"], ascending=[False, True]
                      if "rep" in r else [False], kind="stable")
    col = group if group in r else None
    if col is None:
        return [("", str(r["run_id"].iloc[0]), bool(r["_ok"].iloc[0]))] if len(r) else []
    first = r.groupby(col, sort=False)[["run_id", "_ok"]].first()
    planned = list(res.plan.get("cells") or {}) if col == "cell" else []
    order = [c for c in planned if c in first.index] + sorted(
        (c for c in first.index if c not in planned), key=plots.natural_key)
    return [(str(c), str(first.loc[c, "run_id"]), bool(first.loc[c, "_ok"])) for c in order]


def valid_flows(res: Results) -> pd.DataFrame:
    """Flow rows (conn == -1) of the valid runs."""
    fl = res.flows
    if not len(fl):
        return fl
    fl = fl[fl["conn"] == -1] if "conn" in fl else fl
    if "run_id" in fl and "run_id" in res.runs:
        ok = set(res.runs.loc[valid_mask(res.runs), "run_id"].astype(str))
        fl = fl[fl["run_id"].astype(str).isin(ok)]
    return fl


def _first_flow_share(res: Results, a: str, b: str):
    """Per valid run, the goodput share of flow 0 with the two factors, when both
    factors are algorithms (an algorithm x algorithm matrix); else None."""
    fl = res.flows
    if not ("cc" in a and "cc" in b) or not len(fl) or "share" not in fl or "run_id" not in fl:
        return None
    fl = fl[(fl["conn"] == -1) & (fl["flow"] == 0)] if "conn" in fl else fl[fl["flow"] == 0]
    runs = res.runs[valid_mask(res.runs)]
    keep = [c for c in ("run_id", a, b) if c in runs]
    if len(keep) < 3 or fl.empty:
        return None
    out = fl.drop(columns=[c for c in (a, b) if c in fl]).merge(runs[keep], on="run_id")
    out.attrs["flow_name"] = str(fl["name"].iloc[0]) if "name" in fl else "0"
    return out if len(out) else None


def x_and_series(runs: pd.DataFrame, factors: list[str], order: dict) -> tuple[str, str | None]:
    """Which swept factor is the x axis and which the series: a numeric factor (delay,
    rate, buffer, pairs) on x when there is one, else the one with the most levels; the
    series is the other factor (with three or more, the combination of the others,
    column "_series")."""
    def numeric(f):
        return factor_axis(f, runs[f].dropna().unique().tolist(), order.get(f)).numeric
    x = next((f for f in factors if numeric(f)), None) or max(
        factors, key=lambda f: runs[f].nunique())
    rest = [f for f in factors if f != x]
    if not rest:
        return x, None
    return x, rest[0] if len(rest) == 1 else "_series"


def figure_sections(res: Results, tmp: Path, max_timeseries: int,
                    fmt: str = "png") -> list[Section]:
    """Every figure the data support, by section, with the lines saying what was left
    out."""
    labels = cell_labels(res)
    order = study_order(res)
    runs = res.runs.assign(setting=res.runs["cell"].map(labels)) if "cell" in res.runs \
        else res.runs
    sections: list[Section] = []
    factors = [f for f in res.factors if f in runs and runs[f].nunique(dropna=True) > 1]
    n = [0]

    def fig(fn, caption, *a, **kw):
        n[0] += 1
        p = plots.save(fn(*a, **kw), tmp / f"f{n[0]:03d}.{fmt}")
        return figure_data(p, caption)

    ms, notes = left_out(runs, [m for m in FACTOR_METRICS if m in runs])
    if factors:
        sec = Section("Metrics against the swept factors", notes=notes)
        x, series = x_and_series(runs, factors, order)
        if series == "_series":
            rest = [f for f in factors if f != x]
            runs = runs.assign(_series=runs[rest].astype(str).agg(", ".join, axis=1))
        st = cell_stats(runs, [c for c in (x, series) if c], ms) if ms else None
        if ms:
            axis = factor_axis(x, runs[x].dropna().unique().tolist(), order.get(x))
            how = ("lines over its values" + (", log scale" if axis.log else "")
                   if axis.numeric else "points in the study's order, no line between "
                   "categories")
            sec.figures.append(fig(
                plots.metric_vs_factor, f"Results against {column_label(x)} ({how})"
                + (f", one colour per {column_label(series) or 'setting of the other factors'}"
                   if series else "") + ". Points: the mean over valid runs (percentile "
                "metrics: the median); bars: its 95 % interval (Student t; median: "
                "bootstrap), clipped at physical bounds.", st, x, ms,
                hue=series, order=order.get(x), hue_order=order.get(series)))
        sections.append(sec)
    elif notes:
        sections.append(Section("Metrics", notes=notes))

    group = "setting" if "setting" in runs else (factors[0] if factors else None)
    if group:
        bms, _ = left_out(runs, present(runs, BOX_METRICS))
        figs = [fig(plots.box, f"{units.metric_name(m)} per setting over repetitions (box: "
                    "quartiles, triangle: mean, dots: runs).", runs, group, m,
                    order=order.get(group)) for m in bms]
        if figs:
            sections.append(Section("Spread over repetitions", figs))
    delay = next(iter(present(runs, ["rtt_p95_s", "ping_rtt_p95_s"])), None)
    if group and delay and present(runs, ["goodput_bps"]):
        sections.append(Section("Throughput against delay", [fig(
            plots.throughput_delay, "Goodput against the 95th-percentile RTT "
            f"({units.metric_name(delay)}), as Pantheon draws it: small dots are runs, large "
            "ones the mean per setting, shaded the 1-standard-deviation ellipse; better is "
            "up and right.", runs, group, delay=delay, order=order.get(group))]))

    figs = []
    reps = [(labels.get(c, c), rid, ok) for c, rid, ok in representative_runs(res, "cell")]
    fl = valid_flows(res)
    if len(fl) and "goodput_bps" in fl:
        fl = fl.assign(setting=fl["cell"].map(labels)) if "cell" in fl else fl
        figs.append(fig(plots.cdf, "Per-flow steady-state goodput, all valid runs, per "
                        "setting.", fl, "goodput_bps",
                        hue="setting" if "setting" in fl else None,
                        order=order.get("setting")))
    samples = []
    for cell, rid, ok in reps[:max_timeseries]:
        if not ok:
            continue
        tcp = res.run_tables(rid)["tcpinfo"]
        meta = res.metas.get(rid, {})
        if len(tcp) and "srtt_us" in tcp:
            w = tcp[tcp["t"] >= float(meta.get("warmup_s") or 0)] if "t" in tcp else tcp
            samples.append(pd.DataFrame({"rtt_s": w["srtt_us"].to_numpy(float) / 1e6,
                                         "setting": cell}))
    if samples:
        figs.append(fig(plots.cdf, "Smoothed RTT (TCP_INFO srtt) samples after warm-up, "
                        "one representative run per setting.", pd.concat(samples), "rtt_s",
                        hue="setting", order=order.get("setting")))
    if figs:
        sections.append(Section("Distributions", figs))

    sections += _fairness(res, runs, factors, fig)
    sections += _timeseries(res, reps, max_timeseries, fig)
    return sections


def _fairness(res, runs, factors, fig) -> list[Section]:
    figs = []
    one = single_flow(runs)
    if len(factors) >= 2:
        a, b = factors[:2]
        share = _first_flow_share(res, a, b)
        if share is not None and not one:
            name = share.attrs.get("flow_name", "0")
            figs.append(fig(plots.heatmap, f"Share of the goodput taken by flow {name} "
                            f"(rows: {column_label(a)}) against the others (columns: "
                            f"{column_label(b)}); 0.5 = equal for two flows.", share, a, b,
                            "share", vmin=0, vmax=1, cmap="coolwarm",
                            title=f"goodput share of flow {name}"))
        hms, _ = left_out(runs, present(runs, ["jain", "goodput_bps", "rtt_mean_s"]))
        for m in hms:
            figs.append(fig(plots.heatmap, f"{units.metric_name(m)[:1].upper()}"
                            f"{units.metric_name(m)[1:]} for each {column_label(a)} × "
                            f"{column_label(b)}, averaged over the valid runs.",
                            runs[valid_mask(runs)], a, b, m))
    if "n_flows" in runs and runs["n_flows"].nunique() > 1 and "jain" in runs:
        figs.append(fig(plots.fairness_vs_flows, "Jain's index against the number of "
                        "flows (mean, 95 % CI); dotted: 1/n.", runs, "n_flows",
                        hue=next((f for f in factors if "n_flows" not in f and "pairs"
                                  not in f), None)))
    return [Section("Fairness and algorithm pairs", figs)] if figs else []


def _timeseries(res, reps, max_timeseries, fig) -> list[Section]:
    figs = []
    for cell, rid, ok in reps[:max_timeseries]:
        meta = res.metas.get(rid)
        if not meta:
            continue
        bad = "" if ok else (" INVALID run (" + "; ".join(
            map(str, meta.get("invalid_reasons") or [])) + "), shown because the cell has "
            "no valid run.")
        figs.append(fig(plots.timeseries, f"Run {meta.get('label') or rid} ({cell}): cwnd, "
                        "goodput, RTT, bottleneck queue, Jain per interval; grey: warm-up."
                        + bad, res.run_tables(rid), meta,
                        title=None if ok else f"INVALID run: {plots.run_title(meta)}"))
    if not figs:
        return []
    more = len(reps) - max_timeseries
    title = "Time series of one run per cell" + (f" (first {max_timeseries}; "
                                                f"{more} more cells)" if more > 0 else "")
    return [Section(title, figs)]
