"""ccarena.report: one self-contained report.html per stored study.

Contract: `write_report(study_dir, out=None, max_timeseries=12, figure_format="png")
-> Path` reads the study
directory through the store, computes cell statistics over the
valid runs, draws the figures with ccarena.plots, saves them into a temporary directory
and embeds them (base64 PNG, or inline SVG), and renders the page from the Jinja2
templates of report/templates (html.py) into `<study_dir>/report.html` (or `out`; for a
read-only archive, beside the archive). The page has no external resources and no
scripts. Sections: summary, checks (invalid runs with their reasons, pass criteria if
the study has any), results per cell with 95 % CIs, figures, flows, environment, the
resolved study.
"""
from __future__ import annotations

import datetime as _dt
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ccarena.report import figures as plots
from ccarena.analysis import KEY_METRICS, cell_stats, valid_mask
from ccarena.report.html import (Markup, figure_data, fmt_metric, fmt_num, kv_rows, render, table_data)
from ccarena.store import atomic
from ccarena.report.summary import anomaly_lines, completeness
from ccarena.store.results import ResultsDir as Results
from ccarena.store.results import default_report_path

__all__ = ["write_report"]

FACTOR_METRICS = ["goodput_bps", "utilisation", "jain", "rtt_mean_s", "rtt_p99_s",
                  "loss_ratio", "retrans_ratio", "convergence_s", "fct_mean_s"]
BOX_METRICS = ["goodput_bps", "jain", "rtt_mean_s"]
MODEL_METRICS = ["bdp_pkts", "buffer_bdp", "flow_goodput_bps", "fair_share_bps",
                 "mathis_link_bps", "rtt_mean_s", "loss_ratio"]
META_SHOWN = {"run_id", "study", "cell", "cell_params", "rep", "seed", "t0_ns", "flows",
              "valid", "invalid_reasons", "duration_s", "warmup_s", "label", "index", "cpu",
              "namespaces", "engines", "link", "worker", "cpuset"}


def _present(runs: pd.DataFrame, metrics) -> list[str]:
    return [m for m in metrics if m in runs and pd.to_numeric(runs[m], errors="coerce")
            .notna().any()]


def _cell_key(res: Results) -> list[str]:
    return (["cell"] if "cell" in res.runs else []) + [f for f in res.factors if f in res.runs]


def _results_table(stats: pd.DataFrame, key: list[str], metrics: list[str]) -> dict:
    """Cells as rows, metrics as columns, each `mean ± CI half-width (n)`."""
    if stats.empty:
        return table_data(stats)
    rows = []
    for kv, g in stats.groupby(key, sort=False, dropna=False):
        kv = kv if isinstance(kv, tuple) else (kv,)
        row = dict(zip(key, kv))
        g = g.set_index("metric")
        row["runs"] = int(g["n"].max()) if len(g) else 0
        inv = int(g["n_invalid"].max()) if len(g) else 0
        row["invalid"] = Markup('<span class="bad">{}</span>').format(inv) if inv else "0"
        for m in metrics:
            if m not in g.index:
                row[m] = "–"
                continue
            s = g.loc[m]
            ci = (f" ± {fmt_metric(m, s['ci_half'], 2)}" if pd.notna(s["ci_half"]) else "")
            row[m] = Markup('{}{} <span class="muted">({})</span>').format(
                fmt_metric(m, s["mean"], 3), ci, int(s["n"]))
        rows.append(row)
    df = pd.DataFrame(rows)
    df.columns = [c if c not in metrics else plots.label_of(c) for c in df.columns]
    return table_data(df, left=tuple(key),
                      raw_html=tuple(plots.label_of(m) for m in metrics) + ("invalid",))


def _checks(res: Results) -> Markup:
    """The checks section: invalid runs with their reasons, anomalies, what the study
    lacks, re-runs, and the study's pass criteria (templates/checks.html.j2)."""
    runs = res.runs
    ctx: dict = {"n_runs": len(runs), "invalid": None, "anomalies": None, "reruns": None,
                 "criteria": None}
    bad = runs[~valid_mask(runs)] if len(runs) else runs
    if len(bad):
        rows = []
        for r in bad.itertuples(index=False):
            rid = getattr(r, "run_id", "")
            reasons = (res.metas.get(str(rid), {}).get("invalid_reasons") or
                       [getattr(r, "invalid_reasons", "")])
            rows.append({"run_id": rid, "cell": getattr(r, "cell", ""),
                         "rep": getattr(r, "rep", ""),
                         "reasons": "; ".join(map(str, np.atleast_1d(reasons)))})
        ctx["invalid"] = {"n": len(bad), "table": table_data(
            pd.DataFrame(rows), left=("run_id", "cell", "reasons"))}
    odd = anomaly_lines(res)
    if odd:
        ctx["anomalies"] = {"n": len(odd), "table": table_data(
            pd.DataFrame({"anomaly": odd}), left=("anomaly",))}
    ctx["gaps"] = completeness(res)
    rerun = runs[runs["reruns"].fillna(0) > 0] if "reruns" in runs else runs.iloc[0:0]
    if len(rerun):
        ctx["reruns"] = {"n": len(rerun), "table": table_data(
            rerun[["run_id", "cell", "rep", "reruns", "rerun_reasons"]],
            left=("run_id", "cell", "rerun_reasons"))}
    checks = _evaluate_expect(res) if res.study.get("expect") else pd.DataFrame()
    if len(checks):
        ok = checks["ok"].astype(bool) if "ok" in checks else pd.Series(True, index=checks.index)
        shown = checks.copy()
        if "ok" in shown:
            shown["ok"] = [Markup('<span class="ok">pass</span>') if v else
                           Markup('<span class="bad">FAIL</span>') for v in ok]
        ctx["criteria"] = {"n": len(checks), "passed": int(ok.sum()),
                           "failed": int((~ok).sum()), "table": table_data(
                               shown, left=tuple(c for c in shown.columns if c != "ok"),
                               raw_html=("ok",))}
    return Markup(render("checks.html.j2", **ctx))


def _evaluate_expect(res: Results) -> pd.DataFrame:
    """The study's [[expect]] checks, evaluated by analysis.checks (one definition of
    their meaning) on the planned cells; if the stored study cannot be read, listed
    unevaluated."""
    from ccarena.analysis.checks import evaluate
    from ccarena.study.load import parse_study
    if res.checks is not None:      # as stored where they were evaluated
        return _checks_frame(res.checks)
    try:
        study = parse_study(res.study, res.study_source)
        rows = evaluate(res, study)
    except Exception as e:  # noqa: BLE001 — report what the study asks even when unjudged
        exp = res.study.get("expect")
        exp = exp if isinstance(exp, list) else [exp]
        return pd.DataFrame([{"check": (x.get("name") or x.get("metric")) if isinstance(
            x, dict) else str(x), "ok": False, "why": f"not evaluated: {e}"} for x in exp])
    return _checks_frame(rows)


def _fmt_any(v) -> str:
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_fmt_any(x) for x in list(v)[:8])
        return ("(" + inner + ")" if isinstance(v, tuple) else inner) + (
            ", …" if len(v) > 8 else "")
    return fmt_num(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (
        "" if v is None else str(v))


def _checks_frame(rows: list) -> pd.DataFrame:
    """Check results ({what, cell, ok, measured, min, max, why, ...}) as display rows."""
    out = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        out.append({"check": r.get("what") or r.get("check"), "cell": r.get("cell") or "",
                    "ok": bool(r.get("ok")), "measured": _fmt_any(r.get("measured")),
                    "min": _fmt_any(r.get("min")), "max": _fmt_any(r.get("max")),
                    "note": r.get("why") or (f"{r['trend']} (tolerance {r.get('tolerance')})"
                                             if r.get("trend") else "")
                    + (" (ratio to reference)" if r.get("relative") else "")})
    return pd.DataFrame(out)


def _figures(res: Results, stats: pd.DataFrame, tmp: Path, key: list[str],
             max_timeseries: int, fmt: str = "png") -> list[tuple[str, list[str]]]:
    """(section title, [figure html]) for every figure that the data supports. Cells are
    labelled by their factor values ("cc=reno, buffer=20p"), not by c000."""
    labels = cell_labels(res)
    runs = res.runs.assign(setting=res.runs["cell"].map(labels)) if "cell" in res.runs \
        else res.runs
    sections = []
    factors = [f for f in res.factors if f in runs and runs[f].nunique(dropna=True) > 1]
    n = [0]

    def fig(fn, caption, *a, **kw):
        n[0] += 1
        p = plots.save(fn(*a, **kw), tmp / f"f{n[0]:03d}.{fmt}")
        return figure_data(p, caption)

    # metric against each swept factor; the other factor (if one) as colour
    figs = []
    fstats = cell_stats(runs, factors, _present(runs, FACTOR_METRICS)) if factors else stats
    for f in factors:
        hue = next((h for h in factors if h != f), None)
        ms = _present(runs, FACTOR_METRICS)
        if ms:
            figs.append(fig(plots.metric_vs_factor, f"Metrics against {f}"
                            + (f", one line per {hue}" if hue else "")
                            + ". Points: mean over valid runs; bars: 95 % CI (Student t).",
                            fstats, f, ms, hue=hue))
    if figs:
        sections.append(("Metrics against the swept factors", figs))

    group = "setting" if "setting" in runs else (factors[0] if factors else None)
    if group:
        figs = [fig(plots.box, f"{m} per {group} over repetitions (box: quartiles, "
                    "triangle: mean, dots: runs).", runs, group, m)
                for m in _present(runs, BOX_METRICS)]
        if figs:
            sections.append(("Spread over repetitions", figs))
    delay = next(iter(_present(runs, ["rtt_p95_s", "ping_rtt_p95_s"])), None)
    if group and delay and _present(runs, ["goodput_bps"]):
        sections.append(("Throughput against delay", [fig(
            plots.throughput_delay, f"Goodput against the 95th-percentile RTT ({delay}), as "
            "Pantheon draws it: small dots are runs, large ones the mean per "
            f"{group}, shaded the 1-standard-deviation ellipse; better is up and right.",
            runs, group, delay=delay)]))

    figs = []
    reps = [(labels.get(c, c), rid, ok) for c, rid, ok in _representative_runs(res, "cell")]
    fl = _valid_flows(res)
    if len(fl) and "goodput_bps" in fl:
        fl = fl.assign(setting=fl["cell"].map(labels)) if "cell" in fl else fl
        figs.append(fig(plots.cdf, "Per-flow steady-state goodput, all valid runs, per "
                        f"{group or 'study'}.", fl, "goodput_bps",
                        hue="setting" if "setting" in fl else None))
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
                        "one representative run per cell.", pd.concat(samples), "rtt_s",
                        hue="setting"))
    if figs:
        sections.append(("Distributions", figs))

    figs = []
    if len(factors) >= 2:
        a, b = factors[:2]
        share = _first_flow_share(res, a, b)
        if share is not None:
            name = share.attrs.get("flow_name", "0")
            figs.append(fig(plots.heatmap, f"Share of the goodput taken by flow {name} "
                            f"(rows: {a}) against the others (columns: {b}); 0.5 = equal "
                            "for two flows.", share, a, b, "share", vmin=0, vmax=1,
                            cmap="coolwarm", title=f"goodput share of flow {name}"))
        for m in _present(runs, ["jain", "goodput_bps", "rtt_mean_s"]):
            figs.append(fig(plots.heatmap, f"Mean {m} for each {a} × {b} (valid runs).",
                            runs[valid_mask(runs)], a, b, m))
    if "n_flows" in runs and runs["n_flows"].nunique() > 1 and "jain" in runs:
        figs.append(fig(plots.fairness_vs_flows, "Jain's index against the number of "
                        "flows (mean, 95 % CI); dotted: 1/n.", runs, "n_flows",
                        hue=next((f for f in factors if "n_flows" not in f and "pairs"
                                  not in f), None)))
    if figs:
        sections.append(("Fairness and algorithm pairs", figs))

    figs = []
    for cell, rid, ok in reps[:max_timeseries]:
        meta = res.metas.get(rid)
        if not meta:
            continue
        bad = "" if ok else (" INVALID run (" + "; ".join(
            map(str, meta.get("invalid_reasons") or [])) + "), shown because the cell has "
            "no valid run.")
        figs.append(fig(plots.timeseries, f"Run {rid} ({cell}): cwnd, goodput, RTT, "
                        "bottleneck queue, Jain per interval; grey: warm-up." + bad,
                        res.run_tables(rid), meta,
                        title=None if ok else f"INVALID run {rid}  {cell}"))
    if figs:
        more = len(reps) - max_timeseries
        title = "Time series of one run per cell" + (f" (first {max_timeseries}; "
                                                    f"{more} more cells)" if more > 0 else "")
        sections.append((title, figs))
    return sections


def cell_labels(res: Results) -> dict[str, str]:
    """cell -> its factor values with short names ("cc=reno, buffer=20p")."""
    from ccarena.analysis.checks import short_names
    cells = res.plan.get("cells") or {}
    short = short_names(list(res.factors))
    return {c: ", ".join(f"{short.get(k, k)}={v}" for k, v in p.items()) or c
            for c, p in cells.items()}


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


def _representative_runs(res: Results, group) -> list[tuple[str, str, bool]]:
    """(cell, run_id, valid) of the first valid repetition of every cell; a cell without
    any valid run shows its first invalid one (marked), so a failed study can be looked
    at rather than coming out blank."""
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
    order = sorted(first.index, key=plots.natural_key)
    return [(str(c), str(first.loc[c, "run_id"]), bool(first.loc[c, "_ok"])) for c in order]


def _valid_flows(res: Results) -> pd.DataFrame:
    """Flow rows (conn == -1) of the valid runs."""
    fl = res.flows
    if not len(fl):
        return fl
    fl = fl[fl["conn"] == -1] if "conn" in fl else fl
    if "run_id" in fl and "run_id" in res.runs:
        ok = set(res.runs.loc[valid_mask(res.runs), "run_id"].astype(str))
        fl = fl[fl["run_id"].astype(str).isin(ok)]
    return fl


def _flows_table(res: Results, key: list[str]) -> dict:
    fl = _valid_flows(res)
    if not len(fl) or "goodput_bps" not in fl:
        return table_data(pd.DataFrame())
    by = [c for c in ("cell", "flow", "name", "cc") if c in fl]
    ms = _present(fl, ["goodput_bps", "share", "rtt_mean_s", "rtt_p99_s", "retrans_ratio",
                       "cwnd_limited_frac", "rwnd_limited_frac", "sndbuf_limited_frac",
                       "app_limited_frac",
                       "fct_mean_s", "mathis_bps"])
    if not by or not ms:
        return table_data(pd.DataFrame())
    st = cell_stats(fl.assign(valid=True), by, ms)
    return _results_table(st.drop(columns=["n_invalid"]).assign(n_invalid=0), by, ms)


def _tcp_left_to_host(res: Results) -> str | None:
    """The TCP settings the study left to its hosts whose recorded values differ from the
    reference kernel's (analysis/host_settings.py): what a result here may owe to the
    machine."""
    from ccarena.analysis.host_settings import against_reference, recorded
    from ccarena.study.load import parse_study
    try:
        lines = against_reference(recorded(res.metas), parse_study(res.study,
                                                                   res.study_source))
    except Exception:  # noqa: BLE001 — a study that no longer parses still has a report
        return None
    return "; ".join(lines) if lines else None


def _limits_table(res: Results) -> dict:
    """What limited each flow, with its evidence (report/limits.py)."""
    from ccarena.report.limits import flow_limits, report_table
    lim = report_table(flow_limits(res.flows), cell_labels(res))
    return table_data(lim, left=tuple(lim.columns))


MACHINE_KEYS = {"kernel": "kernel", "cpu_model": "CPU model", "ccarena": "ccarena version",
                "commit": "ccarena commit"}


def machines_line(metas: list[dict]) -> str | None:
    """When a study's runs came from several machines (meta["worker"]): how many, and
    whether they differ in what shapes a result (docs/scale-out.md)."""
    workers = [m.get("worker") or {} for m in metas]
    hosts = sorted({w.get("host") for w in workers if w.get("host")})
    differ = [name for k, name in MACHINE_KEYS.items()
              if len({str(w.get(k)) for w in workers if w}) > 1]
    if len(hosts) < 2 and not differ:
        return None
    shown = ", ".join(hosts[:6]) + (f" and {len(hosts) - 6} more" if len(hosts) > 6 else "")
    if differ:
        return (f"WARNING: the runs came from {len(hosts)} machines ({shown}) that differ in "
                f"{', '.join(differ)}; compare their runs with care (runs.parquet: "
                "worker_host)")
    return (f"the runs came from {len(hosts)} machines ({shown}), alike in kernel, CPU model "
            "and ccarena version and commit")


def _environment(res: Results) -> list[tuple]:
    env = dict(res.environment)
    if res.preflight:
        env["preflight (backend and algorithm sources)"] = res.preflight
    metas = list(res.metas.values())
    for k, v in (metas[0].items() if metas else ()):
        # only what every run shares: a swept value (e.g. the buffer) is no environment,
        # and the study-level file wins over a run's copy
        same = all(json.dumps(m.get(k), sort_keys=True, default=str) ==
                   json.dumps(v, sort_keys=True, default=str) for m in metas[1:])
        if k in META_SHOWN or k in env:
            continue
        env[k if same else f"{k} (run {metas[0].get('run_id')}; differs between runs)"] = v
    for k in ("environment", "env", "host", "machine"):
        if isinstance(res.study.get(k), dict):
            env.update(res.study[k])
    line = machines_line(metas)
    if line:
        env["machines"] = line
    tcp = _tcp_left_to_host(res)
    if tcp:
        env["TCP settings left to the host, unlike the reference kernel's"] = tcp
    if "cpu_busy_frac" in res.runs:
        env["cpu busy (mean over runs)"] = f"{res.runs['cpu_busy_frac'].mean():.3g}"
    if "cpu_steal_frac" in res.runs:
        env["cpu steal (max over runs)"] = f"{res.runs['cpu_steal_frac'].max():.3g}"
    return kv_rows(env)


def write_report(study_dir, out=None, max_timeseries: int = 12,
                 figure_format: str = "png") -> Path:
    """Write report.html for a stored study and return its path. figure_format "svg"
    inlines vector figures (sharper, larger) instead of base64 PNGs."""
    if figure_format not in ("png", "svg"):
        raise ValueError(f"report figures: format {figure_format!r} (use png or svg)")
    res = Results.open(study_dir)
    out = Path(out) if out else default_report_path(res)
    runs = res.runs.copy()
    if {"goodput_bps", "n_flows"} <= set(runs.columns):  # mean per flow, beside the models
        runs["flow_goodput_bps"] = runs["goodput_bps"] / runs["n_flows"].where(
            runs["n_flows"] > 0)
    key = _cell_key(res) or ["cell"]
    metrics = _present(runs, KEY_METRICS)
    stats = cell_stats(runs, [k for k in key if k in runs], metrics)
    n_inv = int((~valid_mask(runs)).sum()) if len(runs) else 0
    n_cells = runs["cell"].nunique() if "cell" in runs else len(stats.groupby(key)) if len(
        stats) else 0
    sweep = res.study.get("sweep") or {}
    models = _present(runs, MODEL_METRICS)
    known = [k for k in key if k in runs]
    with tempfile.TemporaryDirectory(prefix="ccarena-report-") as tmp:
        sections = _figures(res, stats, Path(tmp), key, max_timeseries, figure_format)
    html = render(
        "report.html.j2", name=res.name, path=str(res.source or res.path),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        summary=kv_rows({"study": res.name, "cells": n_cells, "runs": len(runs),
                         "valid runs": len(runs) - n_inv, "invalid runs": n_inv,
                         "swept factors": ", ".join(f"{k} ∈ {v}" for k, v in sweep.items())
                         or ", ".join(res.factors) or "(none)"}),
        checks=_checks(res), results=_results_table(stats, known, metrics),
        models=_results_table(cell_stats(runs, known, models), known, models)
        if models else None,
        sections=sections, flows=_flows_table(res, key), environment=_environment(res),
        limits=_limits_table(res),
        study_json=json.dumps(res.study, indent=1, sort_keys=True, default=str))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out, html)
    return out
