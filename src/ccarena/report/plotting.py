"""Figures by name over one or more stored studies: what `ccarena plot` draws, and
`ccarena.plot()` from Python.

Contract: `plot(results, name, *, metric=None, by=None, run=None, labels=None) ->
Figure`. `results` is one results directory (a path, an archive or an opened ResultsDir)
or a list of them; with several, each is one colour and one label in the same figure
(its study name, or its directory name when two share a study). `PLOTS` maps each name
to its one-line description. `by` and `metric` take column names; a swept factor may
also be given by its short name (`buffer` for `bottleneck.buffer`) or its underscore
alias. Invalid runs are never drawn (figures.py excludes and counts them); an unknown
name, metric or column raises ValueError naming what exists.
"""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from ccarena.analysis import cell_stats, valid_mask
from ccarena.analysis.checks import short_names
from ccarena.metrics.series import convergence_series
from ccarena.report import figures as F
from ccarena.report.page import _representative_runs, cell_labels
from ccarena.store.results import ResultsDir

__all__ = ["PLOTS", "plot", "names"]

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
        raise ValueError("plot: no results given")
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
    shown = [c for c in df.columns if c not in ("run_id", "label")][:40]
    raise ValueError(f"plot: no {what} {name!r}; columns include: {', '.join(map(str, shown))}")


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


def _both(sets, attr: str) -> pd.DataFrame:
    frames = [getattr(s, attr) for s in sets if len(getattr(s, attr))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _find_run(s: _Set, run: str | None) -> list[tuple[str, str, bool]]:
    """(setting, run_id, valid) of the asked run (run id, label or its prefix), or of the
    representative run of every cell."""
    if run is None:
        return [(s.setting.get(c, c), rid, ok) for c, rid, ok in
                _representative_runs(s.res, "cell")]
    for rid, m in s.res.metas.items():
        if run in (rid, m.get("label")) or str(m.get("label", "")).startswith(run):
            return [(s.setting.get(m.get("cell"), m.get("cell", "")), rid,
                     bool(m.get("valid", True)))]
    raise ValueError(f"plot: no run {run!r} in {s.res.source or s.res.path} (give a run id "
                     "or label, `ccarena show` lists them)")


# -- the plots ------------------------------------------------------------------------------

def _timeseries(sets, metric, by, run):
    fig = None
    multi = len(sets) > 1
    for s in sets:
        setting, rid, _ = _find_run(s, run)[0]
        meta = s.res.metas[rid]
        title = f"run {rid}  {setting}" if not multi else "runs: " + ", ".join(
            x.label for x in sets)
        fig = F.timeseries(s.res.run_tables(rid), meta, fig=fig, title=title,
                           label=s.label if multi else None)
    return fig


def _goodput_cdf(sets, metric, by, run):
    fl = _valid(_both(sets, "flows"))
    fl = fl[fl["conn"] == -1] if "conn" in fl else fl
    metric = metric or "goodput_bps"
    hue = _column(fl, by, _factors(sets), "column") if by else "setting"
    fl, hue = _group(fl, hue, len(sets) > 1)
    return F.cdf(fl, metric, hue=hue, title=f"CDF of per-flow {metric} (valid runs)")


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
    return F.cdf(df, "rtt_s", hue=hue, title="CDF of smoothed RTT samples after warm-up "
                 "(valid runs)")


def _box(sets, metric, by, run):
    runs = _both(sets, "runs")
    metric = metric or "goodput_bps"
    by = _column(runs, by, _factors(sets), "column") or "setting"
    if len(sets) > 1:   # one colour per results directory, side by side
        return F.box_per_flow(runs, metric, by=by, flow="results",
                              title=f"{metric} per {by} over repetitions")
    return F.box(runs, by, metric)


def _metric_vs_factor(sets, metric, by, run):
    runs = _both(sets, "runs")
    swept = _swept(sets)
    factor = _column(runs, by, _factors(sets), "factor") or (swept[0] if swept else None)
    if factor is None:
        raise ValueError("plot metric_vs_factor: the study sweeps nothing; give --by")
    hue = "results" if len(sets) > 1 else next((f for f in swept if f != factor), None)
    metrics = [metric or "goodput_bps"]
    st = cell_stats(runs, [c for c in (factor, hue) if c], metrics)
    return F.metric_vs_factor(st, factor, metrics[0], hue=hue)


def _throughput_delay(sets, metric, by, run):
    runs = _both(sets, "runs")
    swept = _swept(sets)
    cc = next((f for f in swept if f.endswith(".cc") or f == "cc"), None)
    group = _column(runs, by, _factors(sets), "column") or cc or "setting"
    runs, group = _group(runs, group, len(sets) > 1)
    delay = metric or next((m for m in ("rtt_p95_s", "ping_rtt_p95_s")
                            if m in runs and runs[m].notna().any()), "rtt_p95_s")
    return F.throughput_delay(runs, group, delay=delay)


def _fairness_vs_flows(sets, metric, by, run):
    runs = _both(sets, "runs")
    n_col = _column(runs, by, _factors(sets), "column") or "n_flows"
    hue = "results" if len(sets) > 1 else next(
        (f for f in _swept(sets) if "pairs" not in f and "n_flows" not in f
         and f != n_col), None)
    return F.fairness_vs_flows(runs, n_col, value=metric or "jain", hue=hue)


def _heatmap(sets, metric, by, run):
    metric = metric or "jain"
    fig = Figure(figsize=(5.5 * len(sets), 4.5), layout="constrained")
    axes = fig.subplots(1, len(sets), squeeze=False)[0]
    for ax, s in zip(axes, sets):
        swept = _swept([s])
        if by:
            rc = [_column(s.runs, b.strip(), s.res.factors, "factor") for b in by.split(",")]
        else:
            rc = swept[:2]
        if len(rc) != 2:
            raise ValueError("plot heatmap: needs two factors (the study sweeps "
                             f"{len(swept)}); give --by ROW,COL")
        F.heatmap(_valid(s.runs), rc[0], rc[1], metric, ax=ax,
                  title=f"{s.label}: mean {metric}" if len(sets) > 1 else None)
    return fig


def _box_per_flow(sets, metric, by, run):
    fl = _both(sets, "flows")
    if not len(fl):
        return F.box_per_flow(fl, metric or "goodput_bps")
    by = _column(fl, by, _factors(sets), "column") or "setting"
    flow = "name"
    if len(sets) > 1:
        fl = fl.assign(_flow=fl["results"].astype(str) + ": " + fl["name"].astype(str))
        flow = "_flow"
    return F.box_per_flow(fl, metric or "goodput_bps", by=by, flow=flow)


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
        raise ValueError(f"plot: no figure {name!r}; known: {', '.join(PLOTS)}")
    sets = _sets(results, labels)
    return PLOTS[name][1](sets, metric, by, run)
