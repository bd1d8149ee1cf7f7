"""The analysis commands of the CLI: report, export, query, compare, check.

Contract: `register(subparsers)` adds the five subcommands to the main parser's
subparsers; each sets `func=cmd_<name>`, a function `(args) -> int` (0 = success). A
RESULTS argument is a results directory or a prefix of a directory name under
`--results` (default `results/`, the newest match wins). Errors are raised as
CcarenaError (one line; the main CLI prints it). `connect(results_dir)` is the DuckDB
session behind `query`, usable from Python.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ccarena.cli import exits
from ccarena.errors import CcarenaError, ResultsError
from ccarena.store.bundle import SUFFIX as ARCHIVE_SUFFIX
from ccarena.store.bundle import stem as archive_stem
from ccarena.store.results import open_results
from ccarena.store.tables import RUN_TABLES
from ccarena.store.tables import STUDY_TABLES as STUDY_TABLE_DOCS

PER_RUN = tuple(RUN_TABLES)
STUDY_TABLES = tuple(STUDY_TABLE_DOCS)


def resolve_results(arg: str, base: str = "results") -> Path:
    """A results directory or archive (`ccarena archive`) from a path, or a name prefix
    under `base`."""
    p = Path(arg)
    if p.is_dir() or p.is_file():
        return p
    b = Path(base)
    cands = sorted(q for q in b.glob(f"{arg}*") if q.is_dir() or q.name.endswith(
        ARCHIVE_SUFFIX)) if b.is_dir() else []
    if not cands:
        raise ResultsError(f"opening results {arg!r}: no such directory, and no directory "
                           f"{b}/{arg}* (give a path or a name prefix)")
    return cands[-1]


def _sql_str(p: Path) -> str:
    return "'" + str(p).replace("'", "''") + "'"


def connect(results_dir):
    """In-memory DuckDB over a results directory: tables runs, flows, cells (as the store
    reads them: rebuilt when missing or stale) and views of the per-run tables unioned over
    the complete runs (store.tables.RUN_TABLES; columns matched by name). A damaged run
    file is left out (the store names it in `problems`); views exist only for tables some
    run has."""
    import duckdb
    res = open_results(results_dir)
    con = duckdb.connect(":memory:")
    frames = {"runs": res.runs, "flows": res.flows, "cells": res.cells}
    for t, df in frames.items():
        if len(df.columns):
            con.register(f"_{t}", df)
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM _{t}")
    for t in PER_RUN:
        files = [d / f"{t}.parquet" for d in res.run_dirs() if (d / f"{t}.parquet").exists()]
        good = [f for f in files if _readable(f, res)]
        if good:
            lst = ", ".join(_sql_str(f) for f in good)
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet([{lst}], "
                        "union_by_name=true)")
    return con


def _readable(p: Path, res) -> bool:
    import pyarrow.parquet as pq
    try:
        pq.read_metadata(p)
        return True
    except Exception as e:  # noqa: BLE001 — pyarrow raises many types for damaged files
        res.problems.append(f"{p}: unreadable ({str(e).splitlines()[0]}); left out")
        return False


def views(con) -> list[str]:
    return sorted(r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall())


# -- handlers -------------------------------------------------------------------------------

def cmd_report(args) -> int:
    from ccarena.report import write_report
    d = resolve_results(args.results_dir, args.results)
    out = write_report(d, out=args.out, max_timeseries=args.max_timeseries,
                       figure_format="svg" if args.svg else "png")
    print(out)
    return 0


def cmd_export(args) -> int:
    d = resolve_results(args.results_dir, args.results)
    out = Path(args.out) if args.out else (d.parent / f"{archive_stem(d)}-csv" if d.is_file()
                                           else d / "csv")
    out.mkdir(parents=True, exist_ok=True)
    con = connect(d)
    wanted = args.tables.split(",") if args.tables else [*STUDY_TABLES, *PER_RUN]
    have = views(con)
    unknown = [t for t in wanted if t not in (*STUDY_TABLES, *PER_RUN)]
    if unknown:
        raise CcarenaError(f"export {d}: unknown table(s) {', '.join(unknown)}; known: "
                           f"{', '.join((*STUDY_TABLES, *PER_RUN))}")
    for t in wanted:
        if t not in have:
            print(f"{t}: not in {d} (skipped)", file=sys.stderr)
            continue
        dest = out / f"{t}.csv"
        con.execute(f"COPY (SELECT * FROM {t}) TO {_sql_str(dest)} (HEADER, DELIMITER ',')")
        n = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        print(f"{dest}  ({n} rows)")
    return 0


def cmd_query(args) -> int:
    import duckdb
    d = resolve_results(args.results_dir, args.results)
    con = connect(d)
    try:
        df = con.execute(args.sql).df()
    except duckdb.Error as e:
        msg = str(e).splitlines()[0]
        raise CcarenaError(f"query on {d}: {msg} (views: {', '.join(views(con))})") from e
    if args.csv:
        df.to_csv(sys.stdout, index=False)
    elif not len(df):
        print(f"(no rows; columns: {', '.join(map(str, df.columns))})")
    else:
        from rich.console import Console
        Console(width=None if sys.stdout.isatty() else 200).print(frame_table(df, args.max_rows))
        if len(df) > args.max_rows:
            print(f"({len(df) - args.max_rows} more rows: --max-rows N, or --csv for all)")
    return 0


def frame_table(df, max_rows: int | None = None):
    """A DataFrame as a rich Table: no rules (the text stays easy to cut and grep), numbers
    right-aligned with six significant digits, missing values empty, cells taken as plain
    text (a value like "[red]" is not markup)."""
    import numpy as np
    import pandas as pd
    from rich.table import Table
    from rich.text import Text
    t = Table(box=None, header_style="bold", pad_edge=False)
    for c in df.columns:
        t.add_column(str(c), justify="right" if pd.api.types.is_numeric_dtype(df[c]) else "left")

    def cell(v) -> Text:
        if v is None or (pd.api.types.is_scalar(v) and pd.isna(v)):
            return Text("")
        if isinstance(v, (float, np.floating)):
            return Text(f"{v:.6g}")
        return Text(str(v))

    rows = df if max_rows is None else df.head(max_rows)
    for r in rows.itertuples(index=False):
        t.add_row(*(cell(v) for v in r))
    return t


def cmd_compare(args) -> int:
    import pandas as pd

    from ccarena.analysis import KEY_METRICS, compare_studies
    from ccarena.report.html import fmt_metric
    a = open_results(resolve_results(args.a, args.results))
    b = open_results(resolve_results(args.b, args.results))
    metrics = args.metric or [m for m in KEY_METRICS if m in a.runs and m in b.runs]
    by = args.by or None
    if by is None:
        common = [f for f in a.factors if f in b.factors and f in a.runs and f in b.runs]
        by = common or ["cell"]
    missing = [c for c in by if c not in a.runs or c not in b.runs]
    if missing:
        raise CcarenaError(f"compare {a.path} {b.path}: column(s) {', '.join(missing)} not in "
                           "both studies' runs")
    res = compare_studies(a.runs, b.runs, metrics, by=by, alpha=args.alpha)
    if res.empty:
        print(f"no common cells (matched on {', '.join(by)})")
        return 1
    res = res[(res["n_a"] > 0) | (res["n_b"] > 0)]  # metrics neither study measured
    if args.csv:
        res.to_csv(args.csv, index=False)
    rows = []
    for r in res.to_dict("records"):
        m = r["metric"]
        ci = lambda v: "" if pd.isna(v) else f" ± {fmt_metric(m, v, 2)}"  # noqa: E731
        rows.append({**{k: r[k] for k in by}, "metric": m,
                     "A": f"{fmt_metric(m, r['mean_a'], 4)}{ci(r['ci_half_a'])} ({r['n_a']})",
                     "B": f"{fmt_metric(m, r['mean_b'], 4)}{ci(r['ci_half_b'])} ({r['n_b']})",
                     "B-A %": f"{-100 * r['diff'] / abs(r['mean_a']):+.1f}"
                     if r["mean_a"] and pd.notna(r["mean_a"]) and pd.notna(r["diff"]) else "",
                     "welch p": f"{r['welch_p']:.3g}", "MWU p": f"{r['mw_p']:.3g}",
                     "d": f"{r['cohen_d']:.2f}", "r_rb": f"{r['rank_biserial']:.2f}",
                     "": "*" if r["significant"] else ""})
    from rich.table import Table

    from ccarena.report.summary import terminal
    console = terminal()
    console.print(f"A = {a.source or a.path}\nB = {b.source or b.path}\nmeans ± 95 % CI "
                  f"(n valid runs); * = Welch p < {args.alpha}; d = Cohen's d (A-B), "
                  "r_rb = rank-biserial (A vs B)", markup=False, highlight=False)
    t = Table(*[c for c in rows[0]], header_style="bold")
    for c in t.columns[len(by) + 1:]:
        c.justify = "right"
    for r in rows:
        t.add_row(*[str(v) for v in r.values()])
    console.print(t)
    inv_a, inv_b = int(res["n_invalid_a"].iloc[0]), int(res["n_invalid_b"].iloc[0])
    if inv_a or inv_b:
        print(f"invalid runs excluded: A {inv_a}, B {inv_b}")
    from ccarena.analysis.host_settings import differences, recorded
    diff = differences(recorded(a.metas), recorded(b.metas))
    if diff:
        console.print(f"[yellow]warning[/yellow]: the two studies' hosts had different TCP "
                      f"settings ({len(diff)}); a difference above may be theirs:")
        for line in diff:
            console.print("  " + line, markup=False, highlight=False)
    return 0


def cmd_check(args) -> int:
    """Re-evaluate a stored study's checks, or another study file's, without re-running.
    Exit 3 when a check fails or cannot be evaluated; 4, 5 or 6 when planned runs are
    missing, a cell has no valid run, or none has (cli/exits.py)."""
    from ccarena.analysis.checks import evaluate, record
    from ccarena.report.summary import anomaly_lines, completeness, print_checks
    from ccarena.store.atomic import StoreError
    from ccarena.study.load import load_study, parse_study
    d = resolve_results(args.results_dir, args.results)
    res = open_results(d)
    if args.study:
        study = load_study(args.study)
    elif res.study:
        study = parse_study(res.study, res.study_source)
    else:
        raise ResultsError(f"opening results {d}: no stored study; name the checks' study "
                           "with --study")
    gaps = completeness(res)
    for line in gaps:
        print(line)
    for line in anomaly_lines(res):
        print(f"anomaly {line}")
    if not study.expect:
        print(f"{d}: the study declares no checks")
        return _status(res, None)
    if args.study:      # another study's checks: shown, never stored as this study's own
        checks = evaluate(res, study)
        print(f"checks of {args.study} (not stored: {d}'s own checks.json is kept)")
    else:
        try:
            checks = record(res, study)
        except StoreError as e:     # a read-only copy: the checks are printed all the same
            checks = evaluate(res, study)
            print(f"checks.json not written: {e}")
    return _status(res, print_checks(checks))


def _status(res, passed: bool | None) -> int:
    lacks = exits.outcome_line(res)
    if lacks:
        print(f"ccarena: {lacks}", file=sys.stderr)
    return exits.of_study(res, passed)


# -- parser ---------------------------------------------------------------------------------

def register(subparsers) -> None:
    """Add report, export, query, compare and check to the main CLI's subparsers."""
    def results_opt(p):
        p.add_argument("--results", default="results",
                       help="base directory to look up a name prefix (default: results)")

    p = subparsers.add_parser("report", help="write report.html for a stored study",
                              description="Write a self-contained report.html (figures "
                              "embedded) for a stored study.")
    p.add_argument("results_dir", metavar="RESULTS", help="results directory or name prefix")
    p.add_argument("--out", help="where to write (default: RESULTS/report.html)")
    p.add_argument("--max-timeseries", type=int, default=12,
                   help="time-series figures: one run per cell, at most this many")
    p.add_argument("--svg", action="store_true",
                   help="inline vector (SVG) figures instead of PNG: sharper, larger file")
    results_opt(p)
    p.set_defaults(func=cmd_report)

    p = subparsers.add_parser("export", help="export a study's tables as CSV",
                              description="Export runs, flows, cells and the per-run tables "
                              "(unioned over runs) as CSV files.")
    p.add_argument("results_dir", metavar="RESULTS")
    p.add_argument("--csv", action="store_true", help="write CSV (the default format)")
    p.add_argument("--out", help="output directory (default: RESULTS/csv)")
    p.add_argument("--tables", help="comma-separated subset, e.g. runs,flows,tcpinfo")
    results_opt(p)
    p.set_defaults(func=cmd_export)

    p = subparsers.add_parser("query", help="SQL (DuckDB) over a study's Parquet files",
                              description="Run SQL with DuckDB. Views: runs, flows, cells, "
                              "and tcpinfo, rx, conns, rr, ping, link_stats, link_events "
                              "unioned over all runs (each row has run_id).",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog='example:\n  ccarena query RESULTS "SELECT cell, '
                              'avg(goodput_bps)/1e6 AS mbit FROM runs GROUP BY cell"')
    p.add_argument("results_dir", metavar="RESULTS")
    p.add_argument("sql", metavar="SQL")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p.add_argument("--max-rows", type=int, default=200)
    results_opt(p)
    p.set_defaults(func=cmd_query)

    p = subparsers.add_parser("compare", help="compare two stored studies cell by cell",
                              description="For every cell both studies share (same swept "
                              "factor values) and every metric: both means with 95 % CIs, "
                              "Welch's t-test, Mann-Whitney U and effect sizes.")
    p.add_argument("a", metavar="A", help="first results directory (or name prefix)")
    p.add_argument("b", metavar="B", help="second results directory (or name prefix)")
    p.add_argument("--metric", action="append", help="metric to compare (repeatable; "
                   "default: the key run metrics)")
    p.add_argument("--by", action="append", help="columns that identify a cell (repeatable; "
                   "default: the common swept factors, else cell)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--csv", help="also write the full comparison to this CSV file")
    results_opt(p)
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser("check", help="re-evaluate a stored study's checks",
                              description="Evaluate the checks ([[expect]]) against stored "
                              "results without re-running: the study's own, or those of "
                              "--study (a file or built-in name). The study's own checks are "
                              "stored (RESULTS/checks.json); another study's are only "
                              "printed. Exit status 3 when a check fails.")
    p.add_argument("results_dir", metavar="RESULTS")
    p.add_argument("--study", help="take the checks from this study file or built-in name")
    results_opt(p)
    p.set_defaults(func=cmd_check)
