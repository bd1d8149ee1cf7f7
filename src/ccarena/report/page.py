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

from ccarena import units
from ccarena.analysis import KEY_METRICS, cell_stats, valid_mask
from ccarena.report import gallery
from ccarena.report.figbase import column_label
from ccarena.report.html import Markup, kv_rows, render, table_data
from ccarena.store import atomic
from ccarena.report.summary import anomaly_lines, completeness, flow_notes
from ccarena.store.results import ResultsDir as Results
from ccarena.store.results import default_report_path

__all__ = ["write_report"]

MODEL_METRICS = ["bdp_pkts", "buffer_bdp", "flow_goodput_bps", "fair_share_bps",
                 "mathis_link_bps", "rtt_mean_s", "loss_ratio"]
META_SHOWN = {"run_id", "study", "cell", "cell_params", "rep", "seed", "t0_ns", "flows",
              "valid", "invalid_reasons", "duration_s", "warmup_s", "label", "index", "cpu",
              "namespaces", "engines", "link", "worker", "cpuset"}


_present = gallery.present


def _cell_key(res: Results) -> list[str]:
    return (["cell"] if "cell" in res.runs else []) + [f for f in res.factors if f in res.runs]


def _results_table(stats: pd.DataFrame, key: list[str], metrics: list[str],
                   notes: dict | None = None) -> dict:
    """Cells as rows, metrics as columns, each its centre and 95 % interval in the
    metric's display unit (units.format_stat: the same words as `ccarena show`) with
    (n); factor columns by their short names. `notes`: a last column, "note", per row
    key (summary.flow_notes: what limited a flow)."""
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
            row[m] = Markup('{} <span class="muted">({})</span>').format(
                units.format_stat(m, s), int(s["n"]))
        if notes is not None:
            row["note"] = notes.get(kv, "")
        rows.append(row)
    df = pd.DataFrame(rows)
    heads = {m: units.metric_label(m) for m in metrics}
    heads.update({k: column_label(k) or k for k in key if "." in str(k)})
    df.columns = [heads.get(c, c) for c in df.columns]
    return table_data(df, left=tuple(heads.get(k, k) for k in key) + ("note",),
                      raw_html=tuple(heads[m] for m in metrics) + ("invalid",))


def _checks(res: Results) -> Markup:
    """The checks section: invalid runs with their reasons, anomalies, what the study
    lacks, re-runs, and the study's pass criteria (templates/checks.html.j2)."""
    runs = res.runs
    ctx: dict = {"n_runs": len(runs), "invalid": None, "anomalies": None, "reruns": None,
                 "criteria": None}
    bad = runs[~valid_mask(runs)] if len(runs) else runs
    labels = gallery.cell_labels(res)
    if len(bad):
        rows = []
        for r in bad.itertuples(index=False):
            rid = getattr(r, "run_id", "")
            meta = res.metas.get(str(rid), {})
            reasons = meta.get("invalid_reasons") or [getattr(r, "invalid_reasons", "")]
            cell = getattr(r, "cell", "")
            rows.append({"run": meta.get("label") or getattr(r, "label", None) or rid,
                         "setting": labels.get(cell, cell), "rep": getattr(r, "rep", ""),
                         "reasons": "; ".join(map(str, np.atleast_1d(reasons)))})
        ctx["invalid"] = {"n": len(bad), "table": table_data(
            pd.DataFrame(rows), left=("run", "setting", "reasons"))}
    odd = anomaly_lines(res)
    if odd:
        ctx["anomalies"] = {"n": len(odd), "table": table_data(
            pd.DataFrame({"anomaly": odd}), left=("anomaly",))}
    ctx["gaps"] = completeness(res)
    rerun = runs[runs["reruns"].fillna(0) > 0] if "reruns" in runs else runs.iloc[0:0]
    if len(rerun):
        shown = pd.DataFrame({
            "run": rerun["label"] if "label" in rerun else rerun["run_id"],
            "setting": rerun["cell"].map(labels).fillna(rerun["cell"]) if "cell" in rerun
            else "", "rep": rerun["rep"] if "rep" in rerun else "",
            "reruns": rerun["reruns"], "reasons": rerun["rerun_reasons"]})
        ctx["reruns"] = {"n": len(rerun), "table": table_data(
            shown, left=("run", "setting", "reasons"))}
    checks = _evaluate_expect(res) if res.study.get("expect") else pd.DataFrame()
    if len(checks):
        ok = checks["ok"].astype(bool)
        shown = checks.copy()
        shown["ok"] = [Markup('<span class="ok">pass</span>') if v else
                       Markup('<span class="bad">FAIL</span>') for v in ok]
        shown = shown.rename(columns={"ok": "result", "detail": "measured and wanted"})
        ctx["criteria"] = {"n": len(checks), "passed": int(ok.sum()),
                           "failed": int((~ok).sum()), "table": table_data(
                               shown, left=tuple(shown.columns),
                               raw_html=("result",), wrap=("measured and wanted",))}
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
        return _checks_frame([{"what": (x.get("name") or x.get("metric")) if isinstance(
            x, dict) else str(x), "ok": False, "why": f"not evaluated: {e}"} for x in exp])
    return _checks_frame(rows)


def _checks_frame(rows: list) -> pd.DataFrame:
    """Check results as display rows: result, check, cell, the measured value and what
    was wanted, and how many runs were valid when not all: the parts the terminal's
    check line is made of (analysis.checks.result_parts), so both say the same."""
    from ccarena.analysis.checks import result_parts
    out = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        p = result_parts(r)
        out.append({"ok": bool(r.get("ok")), "check": p["what"], "cell": p["cell"],
                    "detail": p["detail"], "runs": p["runs"]})
    return pd.DataFrame(out, columns=["ok", "check", "cell", "detail", "runs"])


def _flows_table(res: Results, key: list[str]) -> dict:
    """Per cell and flow over the valid repetitions; the last column is the flow's note
    (what limited it, as `ccarena show`'s limit column says)."""
    fl = gallery.valid_flows(res)
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
    lim = flow_notes(res.flows)
    notes = None
    if lim and "cell" in by and "name" in by:
        notes = {kv: lim.get((kv[by.index("cell")], kv[by.index("name")]), "")
                 for kv in st.groupby(by, sort=False).groups}
    return _results_table(st.drop(columns=["n_invalid"]).assign(n_invalid=0), by, ms, notes)


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
    lim = report_table(flow_limits(res.flows), gallery.cell_labels(res))
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
    metrics, left = gallery.left_out(runs, [m for m in KEY_METRICS if m in runs],
                                     constants=False, undefined=False)
    stats = cell_stats(runs, [k for k in key if k in runs], metrics)
    n_inv = int((~valid_mask(runs)).sum()) if len(runs) else 0
    n_cells = runs["cell"].nunique() if "cell" in runs else len(stats.groupby(key)) if len(
        stats) else 0
    sweep = res.study.get("sweep") or {}
    models = _present(runs, MODEL_METRICS)
    known = [k for k in key if k in runs]
    with tempfile.TemporaryDirectory(prefix="ccarena-report-") as tmp:
        sections = gallery.figure_sections(res, Path(tmp), max_timeseries, figure_format)
    html = render(
        "report.html.j2", name=res.name, path=str(res.source or res.path),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        summary=kv_rows({"study": res.name, "cells": n_cells, "runs": len(runs),
                         "valid runs": len(runs) - n_inv, "invalid runs": n_inv,
                         "swept factors": ", ".join(f"{k} ∈ {v}" for k, v in sweep.items())
                         or ", ".join(res.factors) or "(none)"}),
        checks=_checks(res), results=_results_table(stats, known, metrics),
        results_left_out=[n.replace(": left out, ", ": not shown, ") for n in left],
        models=_results_table(cell_stats(runs, known, models), known, models)
        if models else None,
        sections=sections, flows=_flows_table(res, key), environment=_environment(res),
        limits=_limits_table(res),
        study_json=json.dumps(res.study, indent=1, sort_keys=True, default=str))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out, html)
    return out
