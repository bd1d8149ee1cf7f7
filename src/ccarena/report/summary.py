"""The terminal summary of a stored study: one line per cell and flow, mean ± 95 % CI over
valid repetitions, and the invalid runs named with their reasons."""
from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ccarena import units
from ccarena.errors import CcarenaError
from ccarena.analysis.aggregates import flow_cells

COLUMNS = (  # (metric, header); values in units.display_unit, as the report shows them
    ("goodput_bps", "goodput Mbit/s"),
    ("rtt_mean_s", "RTT ms"),
    ("rtt_p95_s", "RTT p95 ms"),
    ("fct_s", "download s"),
)
# per cell, from the runs: the bottleneck's own drops over its arrivals (not the senders'
# retransmissions, which exceed the loss when SACK is off and a timeout resends in bulk)
RUN_COLUMNS = (("loss_ratio", "loss %"),)


def _fmt(metric: str, row) -> str:
    """A cell's statistics in the words of the report (units.format_stat): the mean ±
    its interval rounded to the interval's digits, a percentile's median [low, high]."""
    v = row.get("median" if row.get("center") == "median" else "mean")
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return units.format_stat(metric, row)


def table_rows(results) -> tuple[list[str], list[list[str]]]:
    """The summary as (headers, rows): one row per cell and flow. Metric columns appear
    only when some cell has a value; a swept flow.<name>.cc would repeat the cc column."""
    cells = results.cells
    if not len(cells):     # not written yet, or older than the runs
        cells = flow_cells(results)
    plan = results.plan
    params = list(next(iter(plan.get("cells", {}).values()), {}) or {})
    params = [p for p in params if not (p.startswith("flow.") and p.endswith(".cc"))]
    have = set(cells.loc[cells["mean"].notna(), "metric"]) if len(cells) else set()
    present = [(m, h) for m, h in COLUMNS if m in have]
    runs = results.runs
    run_stats = _run_cells(runs)
    run_present = [(m, h) for m, h in RUN_COLUMNS if m in run_stats and run_stats[m]]
    limits = _limits(results.flows)
    head = [p.rsplit(".", 1)[-1] for p in params] + ["flow", "cc"] + \
        [h for _, h in present + run_present] + (["limit"] if limits else []) + ["n"]
    rows = []
    odd = (runs[runs["anomalies"].fillna(0) > 0].groupby("cell").size().to_dict()
           if len(runs) and "anomalies" in runs else {})
    st = results.status()
    missing = (st[st["state"] == "missing"].groupby("cell").size().to_dict()
               if len(st) else {})
    if len(cells):
        keys = [k for k in ["cell", *params, "name", "cc"] if k in cells.columns]
        for key, g in cells.groupby(keys, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            d = dict(zip(keys, key))
            by = {r["metric"]: r for r in g.to_dict("records")}
            n = max((int(r.get("n", 0)) for r in by.values()), default=0)
            bad = max((int(r.get("n_invalid", 0)) for r in by.values()), default=0)
            rows.append([str(d.get(p, "")) for p in params]
                        + [str(d.get("name", "")), str(d.get("cc", ""))]
                        + [_fmt(m, by.get(m, {})) for m, _ in present]
                        + [_fmt(m, run_stats[m].get(d.get("cell"), {}))
                           for m, _ in run_present]
                        + ([limits.get((d.get("cell"), d.get("name")), "-")] if limits else [])
                        + [f"{n}" + (f" +{bad} invalid" if bad else "")
                           + (f" +{missing[d['cell']]} missing" if missing.get(d.get("cell"))
                              else "")
                           + (f" ({odd[d['cell']]} anomalous)" if odd.get(d.get("cell"))
                              else "")])
    return head, rows


def _run_cells(runs) -> dict[str, dict]:
    """metric -> cell -> statistics over the cell's valid runs (run-level columns)."""
    from ccarena.analysis.stats import cell_stats
    out = {}
    for m, _ in RUN_COLUMNS:
        if m in runs and "cell" in runs and runs[m].notna().any():
            st = cell_stats(runs, ["cell"], [m])
            out[m] = {r["cell"]: r for r in st.to_dict("records")}
    return out


def flow_notes(flows) -> dict:
    """(cell, flow name) -> the note the report's flows table shows beside the flow's
    numbers: today what limited it (the terminal's limit column, "cwnd 97%")."""
    return _limits(flows)


def _limits(flows) -> dict:
    """(cell, flow) -> what limited the flow most often over its valid runs, with the mean
    share of samples it did ("sndbuf 97%"; report/limits.py)."""
    from ccarena.report.limits import flow_limits, short
    return {(r["cell"], r["name"]): short(r) for r in flow_limits(flows).to_dict("records")}


def terminal() -> Console:
    """The console tables are printed on: as wide as the terminal, or COLUMNS, or 80
    columns when the output is no terminal (a file, a pipe, CI's log), rich's own rule;
    every table folds to fit it (summary_table)."""
    return Console()


def summary_tables(title: str | None, head: list[str], rows: list[list[str]],
                   console: Console, keys: int | None = None) -> list[Table]:
    """The summary as rich Tables that fit the console. One table with one line per row
    when that fits; else the compact layout (each header and value on two lines:
    "goodput" over "Mbit/s", the mean over "± half-width"; no vertical rules), which puts
    a study of two factors, four metric columns, limit and n in 80 columns; else the
    metric columns are split over several compact tables, each with the factors, flow and
    cc of its rows. A column wider than the console alone is folded by rich. `keys`: how
    many leading columns name a row (default: up to cc)."""
    if keys is None:
        keys = head.index("cc") + 1    # parameters, flow, cc; then the numbers
    wide = _table(title, head, rows, keys, compact=False)
    if _natural(console, wide) <= console.width:
        return [wide]
    groups: list[list[int]] = [[]]
    for c in range(keys, len(head)):
        trial = groups[-1] + [c]
        if groups[-1] and _natural(console, _part(title, head, rows, keys, trial)) > \
                console.width:
            groups.append([c])
        else:
            groups[-1] = trial
    return [_part(title if i == 0 else None, head, rows, keys, g)
            for i, g in enumerate(groups)]


def _part(title, head, rows, keys: int, cols: list[int]) -> Table:
    """The compact table of the key columns and the numeric columns `cols`."""
    pick = list(range(keys)) + cols
    return _table(title, [head[i] for i in pick], [[r[i] for i in pick] for r in rows],
                  keys, compact=True)


def _table(title, head, rows, keys: int, compact: bool) -> Table:
    # compact: no vertical rules and no outer padding (they cost 3 columns a column), a
    # blank line between rows of two lines
    t = Table(title=title, box=box.SIMPLE_HEAD, show_lines=True, show_edge=False,
              pad_edge=False, collapse_padding=True) if compact else \
        Table(title=title, show_lines=False)
    for i, h in enumerate(head):
        t.add_column(_fold(h, i >= keys) if compact else h,
                     justify="right" if i >= keys else "left")
    for r in rows:
        t.add_row(*[_fold(v, i >= keys) if compact else v for i, v in enumerate(r)])
    return t


def _natural(console: Console, t: Table) -> int:
    """The width a table takes unconstrained (a measurement is clamped to the width it
    is given)."""
    return console.measure(t, options=console.options.update_width(10_000)).maximum


def _fold(text: str, numeric: bool) -> str:
    """A header or value of a numeric column on lines of their own: the unit under the
    name, the CI under the mean, each count of n on its own line."""
    if not numeric:
        return text
    if " ± " in text:
        return text.replace(" ± ", "\n± ")
    if " [" in text:                    # a median over its bootstrap interval
        return text.replace(" [", "\n[", 1)
    if " +" in text or " (" in text:
        return text.replace(" +", "\n+").replace(" (", "\n(")
    head, _, last = text.rpartition(" ")
    return f"{head}\n{last}" if head else text


def render(results, console: Console | None = None) -> list[Table]:
    console = console or terminal()
    runs = results.runs
    head, rows = table_rows(results)
    tables = summary_tables(f"{results.path.name}  ({len(runs)} runs)", head, rows, console)
    for i, t in enumerate(tables):
        if i:
            console.print()
        console.print(t)
    console.print("[dim]mean ± half-width of the 95 % confidence interval over the valid "
                  "runs of a cell (n); RTT p95: the median over runs \\[its bootstrap "
                  "interval]; invalid runs (the machine or a tool failed the "
                  "experiment) are never averaged in. loss: the bottleneck's drops over its "
                  "arrivals; limit: what held the sender back in most samples (cwnd: the "
                  "congestion window, rwnd: the receiver's window, sndbuf: its own send "
                  "buffer, pacing: its pacing, app: nothing to send).[/dim]")
    for line in algorithm_lines(results):
        console.print(f"[dim]{escape(line)}[/dim]")
    from ccarena.report.limits import flow_limits, show_lines
    cells = (results.plan or {}).get("cells", {}) or {}
    labels = {c: ", ".join(f"{k.rsplit('.', 1)[-1]} {v}" for k, v in p.items()) or str(c)
              for c, p in cells.items()}
    for line in show_lines(flow_limits(results.flows), labels):
        console.print(escape(line), highlight=False)
    for line in completeness(results):
        console.print(f"[red]{escape(line)}[/red]")
    for p in results.problems if hasattr(results, "problems") else []:
        console.print(f"[yellow]damaged: {escape(p)}[/yellow]")
    for line in anomaly_lines(results):
        console.print(f"[magenta]anomaly[/magenta] {escape(line)}")
    if len(runs) and "valid" in runs:
        bad = runs[~runs["valid"].astype(bool)]
        for _, r in bad.iterrows():
            console.print(f"[yellow]invalid run {r['label']}[/yellow]: "
                          + escape(str(r["invalid_reasons"])))
    if len(runs) and "reruns" in runs:
        for _, r in runs[runs["reruns"].fillna(0) > 0].iterrows():
            console.print(f"[dim]run {r['label']} was run {int(r['reruns']) + 1} times; set "
                          f"aside (superseded/): {escape(str(r['rerun_reasons']))}[/dim]")
    return tables


def algorithm_lines(results) -> list[str]:
    """Where each algorithm came from and, for ccarena's BPF ones, which variant ran and
    what it follows (the study's preflight record)."""
    algs = ((getattr(results, "preflight", None) or {}).get("algorithms")) or {}
    out = []
    for n, a in sorted(algs.items()):
        line = f"algorithm {n}: {a.get('source')} {a.get('kernel_name') or ''}".rstrip()
        if a.get("variant"):
            line += f", {a['variant']} variant following {a.get('follows')}"
        out.append(line)
    return out


def anomaly_lines(results) -> list[str]:
    """One line per anomaly of a stored run (metrics/anomalies.py): valid runs whose
    result may look like a failure, listed so no table shows them as normal."""
    runs = results.runs
    if not len(runs) or "anomaly_list" not in runs:
        return []
    out = []
    for _, r in runs[runs["anomalies"].fillna(0) > 0].sort_values("label").iterrows():
        for what in str(r["anomaly_list"]).splitlines():
            out.append(f"run {r['label']}: {what}")
    return out


def completeness(results) -> list[str]:
    """One line per cell that lacks planned runs: how many were valid, invalid, missing."""
    st = results.status()
    if not len(st):
        return ["no run of this study completed"]
    plan_cells = results.plan.get("cells") or {}
    out = []
    for c, g in st.groupby("cell"):
        n = g["state"].value_counts()
        valid, bad, miss = int(n.get("valid", 0)), int(n.get("invalid", 0)), \
            int(n.get("missing", 0))
        if bad or miss:
            params = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}"
                               for k, v in (plan_cells.get(c) or {}).items())
            what = "NO valid run" if not valid else f"{valid} of {len(g)} planned runs valid"
            out.append(f"cell {c}{f' ({params})' if params else ''}: {what}"
                       + (f", {bad} invalid" if bad else "") + (f", {miss} missing" if miss
                                                                  else ""))
    return out


def print_checks(checks: list[dict] | None, console: Console | None = None) -> bool:
    """Print evaluated checks (analysis.checks.evaluate), each with its measured value and
    target; True when every check passed. The report only reads: the checks were stored
    where they were evaluated."""
    from ccarena.analysis.checks import format_result
    console = console or terminal()
    for r in checks or []:
        tag = "[green]pass[/green]" if r["ok"] else "[red]FAIL[/red]"
        console.print(f"{tag}  " + escape(format_result(r)))
    return all(r["ok"] for r in checks or [])


def as_dict(results, checks: list | None = None) -> dict:
    """The summary as plain data (`--json`): per cell and flow the statistics in SI units,
    what each cell lacks, anomalies, invalid runs, and the checks if evaluated."""
    import json as _json
    cells = results.cells if len(results.cells) else flow_cells(results)
    st = results.status()
    counts = st["state"].value_counts() if len(st) else {}
    rows = []
    if len(cells):
        keys = [k for k in cells.columns if k not in ("metric",) and
                k not in ("n", "n_invalid", "n_missing", "mean", "sd", "min", "max", "median",
                          "ci_low", "ci_high", "ci_half", "cov", "center", "interval")]
        for key, g in cells.groupby(keys, sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            rows.append({**dict(zip(keys, key)), "metrics": {
                r["metric"]: {k: r.get(k) for k in ("mean", "median", "ci_low", "ci_high",
                                                     "ci_half", "center", "sd", "n",
                                                     "n_invalid")}
                for r in g.to_dict("records")}})
    runs = results.runs
    bad = runs[~runs["valid"].astype(bool)] if len(runs) and "valid" in runs else runs
    out = {"results": str(results.path), "study": results.name,
           "runs": {"planned": int(len(st)), "valid": int(counts.get("valid", 0)),
                    "invalid": int(counts.get("invalid", 0)),
                    "missing": int(counts.get("missing", 0))},
           "incomplete_cells": completeness(results) if len(st) else [],
           "cells": rows, "anomalies": anomaly_lines(results),
           "invalid_runs": [{"label": r["label"], "reasons": r["invalid_reasons"]}
                            for _, r in bad.iterrows()] if len(bad) else [],
           "problems": list(getattr(results, "problems", []))}
    if checks is not None:
        out["checks"] = checks
    # NaN is not JSON: a missing value is null
    return _json.loads(_json.dumps(out, default=str).replace("NaN", "null"))


def markdown(results) -> str:
    """The summary as a Markdown table (for docs pages and notebooks)."""
    head, rows = table_rows(results)
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", f"{len(results.runs)} runs; mean ± half-width of the 95 % CI over valid "
              "runs; RTT p95: the median over runs [its bootstrap interval]."]
    return "\n".join(lines)
