"""Figures by name over one or more stored studies: what `ccarena plot` draws, and
`ccarena.plot()` from Python.

Contract: `plot(results, name, *, metric=None, by=None, run=None, labels=None) ->
Figure`. `results` is one results directory (a path, an archive or an opened ResultsDir)
or a list of them; with several, each is one colour and one label in the same figure
(its study name, or its directory name when two share a study). `PLOTS` maps each name
to its one-line description. `by` and `metric` take column names; a swept factor may
also be given by its short name (`buffer` for `bottleneck.buffer`) or its underscore
alias. `run` takes a run's label or id, or factor values ("cc=reno", "cc=reno,rep=2":
the first valid repetition unless rep is given). Invalid runs are never drawn
(figures.py excludes and counts them). An unknown name, metric, column or run raises
PlotError (a ccarena error and a ValueError) naming the closest matches and what exists.
"""
from __future__ import annotations

import difflib

import pandas as pd
from matplotlib.figure import Figure

from ccarena.analysis import cell_stats, valid_mask
from ccarena.analysis.checks import short_names
from ccarena.metrics.series import convergence_series
from ccarena.report import figures as F
from ccarena.report.gallery import cell_labels, study_order
from ccarena.report.gallery import representative_runs as _representative_runs
from ccarena.errors import ResultsError
from ccarena.report.figbase import column_label
from ccarena.store.results import ResultsDir

__all__ = ["PLOTS", "plot", "names", "PlotError"]


class PlotError(ResultsError, ValueError):
    """A plot that cannot be drawn as asked: an unknown name, metric, column or run."""


def _near(word: str, options) -> str:
    """" (did you mean 'x'?)" for the closest of `options`, or ""."""
    m = difflib.get_close_matches(str(word), [str(o) for o in options], n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(x) for x in m)}?)" if m else ""

MAX_RUNS_SAMPLED = 200      # rtt_cdf: runs whose samples are pooled, at most
MAX_SAMPLES_PER_RUN = 5000
MAX_CONVERGENCE_LINES = 8


class _Set:
    """One results directory with its label and its runs/flows labelled by setting."""

    def __init__(self, res: ResultsDir, label: str):
        self.res, self.label = res, label
        labels = cell_labels(res)
        self.setting = labels
        r, f = res.runs, res.flows
        self.runs = r.assign(setting=r["cell"].map(labels).fillna(r["cell"]),
                             results=label) if "cell" in r else r.assign(results=label)
        self.flows = (f.assign(setting=f["cell"].map(labels).fillna(f["cell"]),
                               results=label) if "cell" in f else f.assign(results=label)) \
            if len(f) else f


def _open(results) -> list[ResultsDir]:
    items = results if isinstance(results, (list, tuple)) else [results]
    return [r if isinstance(r, ResultsDir) else ResultsDir.open(r) for r in items]


def _sets(results, labels=None) -> list[_Set]:
    rs = _open(results)
    if not rs:
        raise PlotError("plot: no results given")
    if labels is None:
        names = [r.name for r in rs]
        labels = names if len(set(names)) == len(names) else \
            [(r.source.name if r.source else r.path.name) for r in rs]
    return [_Set(r, str(lab)) for r, lab in zip(rs, labels)]


def _column(df: pd.DataFrame, name: str | None, factors: list[str], what: str) -> str | None:
    """A column of df from its name, underscore alias or a factor's short name."""
    if name is None:
        return None
    if name in df:
        return name
    short = {v: k for k, v in short_names(factors).items()}
    for cand in (short.get(name), name.replace("_", "."),
                 next((f for f in factors if f.endswith("." + name)), None)):
        if cand and cand in df:
            return cand
    shown = [c for c in df.columns if c not in ("run_id", "label")]
    raise PlotError(f"plot: no {what} {name!r}{_near(name, list(shown) + factors)}; "
                    f"columns include: {', '.join(map(str, shown[:40]))}")


def _metric(df: pd.DataFrame, metric: str | None, default: str, table: str) -> str:
    """The metric to draw: a numeric column of `df` (runs or flows), else PlotError with
    the closest names."""
    m = metric or default
    if len(df) and m in df and pd.api.types.is_numeric_dtype(df[m]):
        return m
    if not len(df) and metric is None:
        return m
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
               and c not in ("rep", "index", "flow", "conn")]
    if len(df) and m in df:
        raise PlotError(f"plot: {m!r} is not a number in {table}; metrics: "
                        f"{', '.join(numeric[:30])}")
    raise PlotError(f"plot: no metric {m!r} in {table}{_near(m, numeric)}; metrics include: "
                    f"{', '.join(numeric[:30])}")


def _factors(sets: list[_Set]) -> list[str]:
    out: list[str] = []
    for s in sets:
        out += [f for f in s.res.factors if f not in out]
    return out


def _swept(sets: list[_Set]) -> list[str]:
    """The factors that vary in the runs (in any set)."""
    runs = pd.concat([s.runs for s in sets], ignore_index=True)
    return [f for f in _factors(sets) if f in runs and runs[f].nunique(dropna=True) > 1]


def _group(df: pd.DataFrame, col: str, multi: bool) -> tuple[pd.DataFrame, str]:
    """With several sets, the group column prefixed by each set's label."""
    if not multi:
        return df, col
    return df.assign(_group=df["results"].astype(str) + ": " + df[col].astype(str)), "_group"


def _order(sets: list[_Set], col: str | None) -> list | None:
    """A factor's levels (or the settings) in the study's order, over every set."""
    if not col:
        return None
    out: list = []
    for s in sets:
        out += [v for v in study_order(s.res).get(col, []) if v not in out]
    return out or None


def _both(sets, attr: str) -> pd.DataFrame:
    frames = [getattr(s, attr) for s in sets if len(getattr(s, attr))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _find_run(s: _Set, run: str | None) -> list[tuple[str, str, bool]]:
    """(setting, run_id, valid) of the asked run (run id, label or its prefix, or factor
    values "cc=reno[,rep=2]"), or of the representative run of every cell."""
    if run is None:
        return [(s.setting.get(c, c), rid, ok) for c, rid, ok in
                _representative_runs(s.res, "cell")]
    for rid, m in s.res.metas.items():
        if run in (rid, m.get("label")) or str(m.get("label", "")).startswith(run):
            return [(s.setting.get(m.get("cell"), m.get("cell", "")), rid,
                     bool(m.get("valid", True)))]
    if "=" in run:
        return [_run_by_values(s, run)]
    raise PlotError(f"plot: no run {run!r} in {s.res.source or s.res.path} (give a run "
                    "label such as `c000-r1`, or factor values such as `cc=reno,rep=2`; "
                    "`ccarena show` lists them)")


def _run_by_values(s: _Set, run: str) -> tuple[str, str, bool]:
    """The run whose cell has the factor values "k=v,k=v" (short or full factor names;
    rep=N picks the repetition, else the first valid one)."""
    want = {}
    for part in run.split(","):
        k, _, v = part.partition("=")
        want[k.strip()] = v.strip()
    rep = want.pop("rep", None)
    factors = list(s.res.factors)
    short = {column_label(f): f for f in factors}
    full = {}
    for k, v in want.items():
        f = k if k in factors else short.get(k) or next(
            (x for x in factors if x.endswith("." + k)), None)
        if f is None:
            raise PlotError(f"plot --run {run!r}: no factor {k!r}"
                            f"{_near(k, list(short) + factors)}; the study sweeps "
                            f"{', '.join(factors) or 'nothing'}")
        full[f] = v
    cells = [c for c, p in (s.res.plan.get("cells") or {}).items()
             if all(str(p.get(f)) == v for f, v in full.items())]
    metas = [(rid, m) for rid, m in s.res.metas.items() if m.get("cell") in cells
             and (rep is None or str(m.get("rep")) == rep)]
    if not metas:
        raise PlotError(f"plot --run {run!r}: no run has these values in "
                        f"{s.res.source or s.res.path} (cells: "
                        f"{'; '.join(s.setting.values())})")
    metas.sort(key=lambda t: (not t[1].get("valid", True), t[1].get("rep") or 0))
    rid, m = metas[0]
    return s.setting.get(m.get("cell"), m.get("cell", "")), rid, bool(m.get("valid", True))


# -- the plots ------------------------------------------------------------------------------

def _timeseries(sets, metric, by, run):
    fig = None
    multi = len(sets) > 1
    for s in sets:
        setting, rid, _ = _find_run(s, run)[0]
        meta = s.res.metas[rid]
        title = F.run_title(meta) if not multi else "runs: " + ", ".join(
            f"{x.label} ({F.run_title(x.res.metas[_find_run(x, run)[0][1]])})"
            for x in sets)
        fig = F.timeseries(s.res.run_tables(rid), meta, fig=fig, title=title,
                           label=s.label if multi else None)
    return fig


def _goodput_cdf(sets, metric, by, run):
    fl = _valid(_both(sets, "flows"))
    fl = fl[fl["conn"] == -1] if "conn" in fl else fl
    metric = _metric(fl, metric, "goodput_bps", "flows")
    hue = _column(fl, by, _factors(sets), "column") if by else "setting"
    order = _order(sets, hue)
    fl, hue = _group(fl, hue, len(sets) > 1)
    return F.cdf(fl, metric, hue=hue, order=order,
                 title=f"CDF of per-flow {F.name_of(metric)} (valid runs)")


def _valid(df: pd.DataFrame) -> pd.DataFrame:
    return df[valid_mask(df)] if len(df) else df


def _rtt_cdf(sets, metric, by, run):
    parts = []
    for s in sets:
        runs = _valid(s.runs)
        if run is not None:
            runs = runs[runs["run_id"].isin([r for _, r, _ in _find_run(s, run)])]
        for r in runs.head(MAX_RUNS_SAMPLED).itertuples(index=False):
            tcp = s.res.run_tables(r.run_id)["tcpinfo"]
            if not len(tcp) or "srtt_us" not in tcp or "t" not in tcp:
                continue
            meta = s.res.metas.get(r.run_id, {})
            w = tcp[tcp["t"] >= float(meta.get("warmup_s") or 0)]
            k = max(1, len(w) // MAX_SAMPLES_PER_RUN)
            parts.append(pd.DataFrame({"rtt_s": w["srtt_us"].to_numpy(float)[::k] / 1e6,
                                       "setting": r.setting, "results": s.label}))
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    hue = "setting"
    if len(df):
        df, hue = _group(df, "setting", len(sets) > 1)
    return F.cdf(df, "rtt_s", hue=hue, order=_order(sets, "setting"),
                 title="CDF of smoothed RTT samples after warm-up (valid runs)")


def _box(sets, metric, by, run):
    runs = _both(sets, "runs")
    metric = _metric(runs, metric, "goodput_bps", "runs")
    by = _column(runs, by, _factors(sets), "column") or "setting"
    if len(sets) > 1:   # one colour per results directory, side by side
        return F.box_per_flow(runs, metric, by=by, flow="results", order=_order(sets, by),
                              title=f"{F.name_of(metric)} per {column_label(by) or 'setting'}"
                              " over repetitions")
    return F.box(runs, by, metric, order=_order(sets, by))


def _metric_vs_factor(sets, metric, by, run):
    runs = _both(sets, "runs")
    swept = _swept(sets)
    factor = _column(runs, by, _factors(sets), "factor") or (swept[0] if swept else None)
    if factor is None:
        raise PlotError("plot metric_vs_factor: the study sweeps nothing; give --by")
    hue = "results" if len(sets) > 1 else next((f for f in swept if f != factor), None)
    metrics = [_metric(runs, metric, "goodput_bps", "runs")]
    st = cell_stats(runs, [c for c in (factor, hue) if c], metrics)
    return F.metric_vs_factor(st, factor, metrics[0], hue=hue, order=_order(sets, factor),
                              hue_order=_order(sets, hue) if hue else None)


def _throughput_delay(sets, metric, by, run):
    runs = _both(sets, "runs")
    swept = _swept(sets)
    cc = next((f for f in swept if f.endswith(".cc") or f == "cc"), None)
    group = _column(runs, by, _factors(sets), "column") or cc or "setting"
    runs, group = _group(runs, group, len(sets) > 1)
    delay = _metric(runs, metric, next((m for m in ("rtt_p95_s", "ping_rtt_p95_s")
                                        if m in runs and runs[m].notna().any()),
                                       "rtt_p95_s"), "runs")
    return F.throughput_delay(runs, group, delay=delay,
                              order=None if len(sets) > 1 else _order(sets, group))


def _fairness_vs_flows(sets, metric, by, run):
    runs = _both(sets, "runs")
    n_col = _column(runs, by, _factors(sets), "column") or "n_flows"
    hue = "results" if len(sets) > 1 else next(
        (f for f in _swept(sets) if "pairs" not in f and "n_flows" not in f
         and f != n_col), None)
    return F.fairness_vs_flows(runs, n_col, value=_metric(runs, metric, "jain", "runs"),
                               hue=hue)


def _heatmap(sets, metric, by, run):
    metric = _metric(_both(sets, "runs"), metric, "jain", "runs")
    fig = Figure(figsize=(5.5 * len(sets), 4.5), layout="constrained")
    axes = fig.subplots(1, len(sets), squeeze=False)[0]
    for ax, s in zip(axes, sets):
        swept = _swept([s])
        if by:
            rc = [_column(s.runs, b.strip(), s.res.factors, "factor") for b in by.split(",")]
        else:
            rc = swept[:2]
        if len(rc) != 2:
            raise PlotError("plot heatmap: needs two factors (the study sweeps "
                            f"{len(swept)}); give --by ROW,COL")
        F.heatmap(_valid(s.runs), rc[0], rc[1], metric, ax=ax,
                  title=f"{s.label}: {F.name_of(metric)}" if len(sets) > 1 else None)
    return fig


def _box_per_flow(sets, metric, by, run):
    fl = _both(sets, "flows")
    metric = _metric(fl, metric, "goodput_bps", "flows")
    if not len(fl):
        return F.box_per_flow(fl, metric)
    by = _column(fl, by, _factors(sets), "column") or "setting"
    flow = "name"
    if len(sets) > 1:
        fl = fl.assign(_flow=fl["results"].astype(str) + ": " + fl["name"].astype(str))
        flow = "_flow"
    return F.box_per_flow(fl, metric, by=by, flow=flow, order=_order(sets, by))


def _convergence(sets, metric, by, run):
    frames = []
    for s in sets:
        for setting, rid, ok in _find_run(s, run):
            if not ok and run is None:
                continue
            w, t_c = convergence_series(s.res.run_tables(rid)["rx"], s.res.metas[rid])
            label = f"{s.label}: {setting}" if len(sets) > 1 else (setting or rid)
            frames.append(w.assign(t_c=t_c, label=label))
    frames = frames[:MAX_CONVERGENCE_LINES]
    return F.convergence(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame())


PLOTS = {
    "timeseries": ("one run over time: cwnd, goodput, RTT, queue, Jain (--run; default the "
                   "first valid run)", _timeseries),
    "goodput_cdf": ("CDF of per-flow goodput over valid runs, per setting (--by, --metric)",
                    _goodput_cdf),
    "rtt_cdf": ("CDF of smoothed RTT samples after warm-up, per setting (--run)", _rtt_cdf),
    "box": ("a run metric over repetitions, one box per setting (--metric, --by)", _box),
    "metric_vs_factor": ("mean and 95 % CI of a run metric against a swept factor "
                         "(--metric, --by)", _metric_vs_factor),
    "throughput_delay": ("goodput against p95 RTT per run, mean and 1-sd ellipse per "
                         "algorithm, delay axis reversed (Pantheon; --metric: the delay, "
                         "--by)", _throughput_delay),
    "fairness_vs_flows": ("Jain's index against the number of flows, with 1/n (--metric, "
                          "--by: the count column)", _fairness_vs_flows),
    "heatmap": ("mean of a metric for two factors, e.g. algorithm x algorithm (--metric, "
                "--by ROW,COL)", _heatmap),
    "box_per_flow": ("a per-flow metric over repetitions, one box per flow and setting "
                     "(--metric, --by)", _box_per_flow),
    "convergence": ("Jain per 1 s window, the convergence time and the minimum after it "
                    "(jain_min_1s, transperf; --run)", _convergence),
}


def names() -> dict[str, str]:
    """Plot name -> its one-line description."""
    return {k: v[0] for k, v in PLOTS.items()}


def plot(results, name: str, *, metric: str | None = None, by: str | None = None,
         run: str | None = None, labels: list[str] | None = None) -> Figure:
    """Draw the figure `name` (see `names()`) of one or several stored studies and
    return it; save it with `ccarena.save(fig, path)`."""
    if name not in PLOTS:
        raise PlotError(f"plot: no figure {name!r}{_near(name, PLOTS)}; known: "
                        f"{', '.join(PLOTS)}")
    sets = _sets(results, labels)
    return PLOTS[name][1](sets, metric, by, run)
