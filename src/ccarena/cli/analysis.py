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
import re
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


EXPORT_FORMATS = ("csv", "json", "parquet")


def cmd_export(args) -> int:
    """The tables as CSV, JSON (an array of row objects per table) or Parquet files in a
    directory, or one table on standard output (`-o -`). Nothing is created before the
    tables are known, and a directory this command made is removed again when it fails
    before writing anything."""
    fmt = args.format
    d = resolve_results(args.results_dir, args.results)
    known = (*STUDY_TABLES, *PER_RUN)
    wanted = [t for t in args.tables.split(",") if t] if args.tables else list(known)
    unknown = [t for t in wanted if t not in known]
    if unknown:
        raise CcarenaError(f"export {d}: unknown table(s) {', '.join(unknown)}; known: "
                           f"{', '.join(known)}")
    con = connect(d)
    have = views(con)
    if args.out == "-":
        return _export_stdout(con, d, wanted, have, fmt, bool(args.tables))
    out = Path(args.out) if args.out else (
        d.parent / f"{archive_stem(d)}-{fmt}" if d.is_file() else d / fmt)
    made = not out.exists()
    try:
        for t in wanted:
            if t not in have:
                print(f"{t}: not in {d} (skipped)", file=sys.stderr)
                continue
            out.mkdir(parents=True, exist_ok=True)
            dest = out / f"{t}.{fmt}"
            how = {"csv": "HEADER, DELIMITER ','", "json": "FORMAT JSON, ARRAY true",
                   "parquet": "FORMAT PARQUET"}[fmt]
            con.execute(f"COPY (SELECT * FROM {t}) TO {_sql_str(dest)} ({how})")
            n = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            print(f"{dest}  ({n} rows)")
    except BaseException:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    return 0


def _export_stdout(con, d: Path, wanted: list[str], have: list[str], fmt: str,
                   named: bool) -> int:
    """`export -o -`: one table (JSON: several, as an object of tables) on stdout."""
    if fmt != "json" and (not named or len(wanted) != 1):
        raise CcarenaError(f"export {d} -o -: {fmt} on standard output holds one table; "
                           "name it with --tables (e.g. --tables runs)")
    missing = [t for t in wanted if t not in have]
    if missing and named:
        raise CcarenaError(f"export {d} -o -: no table {', '.join(missing)} in these "
                           f"results (it has: {', '.join(have)})")
    frames = {t: con.execute(f"SELECT * FROM {t}").df() for t in wanted if t in have}
    if fmt == "csv":
        next(iter(frames.values())).to_csv(sys.stdout, index=False)
    elif fmt == "parquet":
        import io

        buf = io.BytesIO()
        next(iter(frames.values())).to_parquet(buf, index=False)
        sys.stdout.flush()
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.buffer.flush()
    else:
        import json
        rows = {t: json.loads(df.to_json(orient="records", date_format="iso"))
                for t, df in frames.items()}
        print(json.dumps(rows[wanted[0]] if len(wanted) == 1 else rows, indent=1))
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
    mode = args.units or ("raw" if args.csv or args.json else "human")
    if args.json:       # every row, as a list of objects (SI units unless --units human)
        print(json_text(records(in_units(df) if mode == "human" else df)))
    elif args.csv:
        (in_units(df) if mode == "human" else df).to_csv(sys.stdout, index=False)
    elif not len(df):
        print(f"(no rows; columns: {', '.join(map(str, df.columns))})")
    else:
        from rich.console import Console
        Console(width=None if sys.stdout.isatty() else 200).print(
            frame_table(df, args.max_rows, units=mode))
        if len(df) > args.max_rows:
            print(f"({len(df) - args.max_rows} more rows: --max-rows N, or --csv for all)")
    return 0


# aggregates whose result has the unit of their argument: avg(goodput_bps) is a rate
_SAME_UNIT = re.compile(r"^(avg|mean|min|max|median|sum|first|last|any_value|arg_min|arg_max|"
                        r"stddev|stddev_samp|stddev_pop|quantile|quantile_cont|quantile_disc)"
                        r"\(\s*\"?([A-Za-z0-9_.]+)\"?\s*[,)]", re.I)


def column_unit(name: str) -> tuple[float, str]:
    """(scale, unit) of a result column by its name: a metric (goodput_bps, rtt_p95_s,
    loss_ratio) or an aggregate of one (avg(goodput_bps)); (1, "") for anything else."""
    from ccarena import units
    n = str(name)
    m = _SAME_UNIT.match(n)
    return units.display_unit(m.group(2) if m else n)


def in_units(df):
    """The frame with every column that has a unit in that unit, named "col [unit]"."""
    import pandas as pd
    out = {}
    for c in df.columns:
        scale, unit = column_unit(c)
        if unit and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(
                df[c]):
            out[f"{c} [{unit}]"] = df[c] * scale
        else:
            out[c] = df[c]
    return pd.DataFrame(out)


def frame_table(df, max_rows: int | None = None, units: str = "raw"):
    """A DataFrame as a rich Table: no rules (the text stays easy to cut and grep), numbers
    right-aligned with six significant digits and never in scientific notation, missing
    values empty, cells taken as plain text (a value like "[red]" is not markup). With
    units "human", columns that hold a metric are shown in its unit (goodput_bps
    [Mbit/s], rtt_mean_s [ms], loss_ratio [%]); "raw" keeps SI units."""
    import numpy as np
    import pandas as pd
    from rich.table import Table
    from rich.text import Text

    from ccarena.units import plain
    if units == "human":
        df = in_units(df)
    t = Table(box=None, header_style="bold", pad_edge=False)
    for c in df.columns:
        t.add_column(Text(str(c), style="bold"),
                     justify="right" if pd.api.types.is_numeric_dtype(df[c]) else "left")

    def cell(v) -> Text:
        if v is None or (pd.api.types.is_scalar(v) and pd.isna(v)):
            return Text("")
        if isinstance(v, (float, np.floating)):
            return Text(plain(float(v), 6))
        return Text(str(v))

    rows = df if max_rows is None else df.head(max_rows)
    for r in rows.itertuples(index=False):
        t.add_row(*(cell(v) for v in r))
    return t


def cmd_compare(args) -> int:
    import ccarena
    a = open_results(resolve_results(args.a, args.results))
    b = open_results(resolve_results(args.b, args.results))
    res = ccarena.compare(a, b, metrics=args.metric, by=args.by, alpha=args.alpha)
    by, diff = res.attrs["by"], res.attrs["host_differences"]
    if args.json:
        print(json_text({"a": str(a.source or a.path), "b": str(b.source or b.path),
                         "by": by, "alpha": args.alpha, "rows": records(res),
                         "host_differences": diff}))
        return exits.OK if len(res) else exits.ERROR
    if res.empty:
        print(f"no common cells (matched on {', '.join(by)})")
        return exits.ERROR
    if args.csv:
        res.to_csv(args.csv, index=False)
    from ccarena.report.summary import summary_tables, terminal
    head, rows = compare_rows(res, by, args.units)
    console = terminal()
    console.print(f"A = {a.source or a.path}\nB = {b.source or b.path}\n"
                  + compare_legend(res, args.alpha), markup=False, highlight=False)
    for i, t in enumerate(summary_tables(None, head, rows, console, keys=len(by) + 1)):
        if i:
            console.print()
        console.print(t)
    inv_a, inv_b = int(res["n_invalid_a"].iloc[0]), int(res["n_invalid_b"].iloc[0])
    if inv_a or inv_b:
        print(f"invalid runs excluded: A {inv_a}, B {inv_b}")
    if diff:
        console.print(f"[yellow]warning[/yellow]: the two studies' hosts had different TCP "
                      f"settings ({len(diff)}); a difference above may be theirs:")
        for line in diff:
            console.print("  " + line, markup=False, highlight=False)
    return 0


def records(df) -> list[dict]:
    """A DataFrame as JSON-ready rows: missing values null, numpy scalars plain."""
    import json
    return json.loads(df.to_json(orient="records", date_format="iso", default_handler=str))


def json_text(obj) -> str:
    """`--json` output: indented, NaN as null (NaN is not JSON)."""
    import json
    import math

    def clean(o):
        if isinstance(o, float) and math.isnan(o):
            return None
        if isinstance(o, dict):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o
    return json.dumps(clean(obj), indent=1, default=str)


def compare_legend(res, alpha: float) -> str:
    """What compare's table shows: which interval each column uses, which test and which
    correction for the number of tests."""
    n = int(res["n_tests"].iloc[0]) if "n_tests" in res and len(res) else 0
    return ("A, B: mean ± half-width of its 95 % CI (Student t) over valid runs (n); "
            "percentile metrics (p95, p99): median [95 % bootstrap CI, BCa]. "
            "B−A: the difference with its own 95 % CI (Welch; medians: bootstrap). "
            "p: Welch's t-test (medians: Mann-Whitney U); q: p adjusted for the false "
            f"discovery rate over the {n} tests of this table (Benjamini-Hochberg); "
            f"* = q < {alpha:g}. d = Cohen's d of the means (A−B).")


def _missing(v) -> bool:
    import math
    return v is None or (isinstance(v, float) and math.isnan(v))


def _p(v) -> str:
    import math
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return "< 0.001" if v < 0.001 else f"{v:.3f}"


def compare_rows(res, by: list[str], mode: str = "human") -> tuple[list[str], list[list[str]]]:
    """compare_studies' rows for people: the metric named with its unit, both centres
    with their intervals, the difference B−A with its interval and in per cent, p, q,
    Cohen's d and the star; `mode` "raw" keeps metric names and SI units."""
    import math

    from ccarena import units
    from ccarena.report.figbase import column_label

    def stat(m, r, side):
        row = {"mean": r[f"mean_{side}"], "median": r.get(f"median_{side}"),
               "center": r.get("center", "mean"), "ci_low": r.get(f"ci_low_{side}"),
               "ci_high": r.get(f"ci_high_{side}"), "ci_half": r[f"ci_half_{side}"]}
        if mode == "raw":     # SI units, the interval clipped as format_stat clips it
            v = row["median"] if row["center"] == "median" else row["mean"]
            lo, hi, h = row["ci_low"], row["ci_high"], row["ci_half"]
            if _missing(lo) or _missing(hi):
                lo, hi = (None, None) if _missing(h) else (v - h, v + h)
            if lo is not None:
                b_lo, b_hi = units.metric_bounds(m)
                lo, hi = max(lo, b_lo), min(hi, b_hi)
            return units.format_estimate(v, low=lo, high=hi, digits=6) + \
                f" ({r[f'n_{side}']})"
        return f"{units.format_stat(m, row)} ({r[f'n_{side}']})"

    def delta(m, r):
        scale = 1.0 if mode == "raw" else units.display_unit(m)[0]
        d, lo, hi = -r["diff"], -r["diff_ci_high"], -r["diff_ci_low"]
        if d is None or (isinstance(d, float) and math.isnan(d)):
            return ""
        if any(isinstance(x, float) and math.isnan(x) for x in (lo, hi)):
            s = units.format_estimate(d * scale, digits=6 if mode == "raw" else 4)
        else:
            s = units.format_estimate(d * scale, low=lo * scale, high=hi * scale)
        return s if s.startswith("-") else "+" + s

    head = [column_label(k) if mode == "human" and "." in str(k) else str(k) for k in by] + \
        ["metric", "A", "B", "B−A", "B−A %", "p", "q", "d", ""]
    rows = []
    for r in res.to_dict("records"):
        m = r["metric"]
        ca = r["median_a"] if r.get("center") == "median" else r["mean_a"]
        rel = (f"{-100 * r['diff'] / abs(ca) + 0.0:+.1f}" if ca and not math.isnan(ca)
               and not math.isnan(r["diff"]) else "")
        rows.append([str(r[k]) for k in by] + [
            units.metric_label(m) if mode == "human" else m, stat(m, r, "a"),
            stat(m, r, "b"), delta(m, r), rel, _p(r["p"]), _p(r["q"]),
            "" if math.isnan(r["cohen_d"]) else f"{r['cohen_d']:.2f}",
            "*" if r["significant"] else ""])
    return head, rows


def cmd_check(args) -> int:
    """Re-evaluate a stored study's checks, or another study file's, without re-running.
    Exit 3 when a check fails or cannot be evaluated; 4, 5 or 6 when planned runs are
    missing, a cell has no valid run, or none has (cli/exits.py)."""
    import ccarena
    from ccarena.report.summary import anomaly_lines, completeness, print_checks
    d = resolve_results(args.results_dir, args.results)
    res = open_results(d)
    checks = ccarena.check(res, args.study)
    gaps, anomalies = completeness(res), anomaly_lines(res)
    if args.json:
        print(json_text({"results": str(d), "study": args.study or res.name,
                         "stored": checks.stored, "note": checks.note,
                         "incomplete_cells": gaps, "anomalies": anomalies,
                         "checks": list(checks), "passed": checks.passed,
                         "outcome": res.outcome}))
        return exits.of_study(res, checks.passed)
    for line in gaps:
        print(line)
    for line in anomalies:
        print(f"anomaly {line}")
    if not checks:
        print(f"{d}: the study declares no checks")
        return _status(res, None)
    if args.study:      # another study's checks: shown, never stored as this study's own
        print(f"checks of {args.study} (not stored: {d}'s own checks.json is kept)")
    elif not checks.stored:     # a read-only copy: the checks are printed all the same
        print(checks.note)
    return _status(res, print_checks(checks))


def _status(res, passed: bool | None) -> int:
    lacks = exits.outcome_line(res)
    if lacks:
        print(f"ccarena: {lacks}", file=sys.stderr)
    return exits.of_study(res, passed)


# -- parser ---------------------------------------------------------------------------------

def results_opt(p, help: str = "base directory to look up a name prefix") -> None:
    """--results, the base directory of stored studies (every command that names one)."""
    p.add_argument("--results", default="results", help=f"{help} (default: results)")


def register(subparsers) -> None:
    """Add report, export, query, compare and check to the main CLI's subparsers."""

    p = subparsers.add_parser("report", help="write report.html for a stored study",
                              description="Write a self-contained report.html (figures "
                              "embedded) for a stored study.")
    p.add_argument("results_dir", metavar="RESULTS", help="results directory or name prefix")
    p.add_argument("--out", help="where to write (default: RESULTS/report.html)")
    p.add_argument("--max-timeseries", type=int, default=12,
                   help="time-series figures: one run per cell, at most this many")
    p.add_argument("--svg", action="store_true",
                   help="inline vector (SVG) figures instead of PNG: sharp at any zoom, a "
                   "page of about the same size")
    results_opt(p)
    p.set_defaults(func=cmd_report)

    p = subparsers.add_parser("export", help="export a study's tables (CSV, JSON, Parquet)",
                              description="Export runs, flows, cells and the per-run tables "
                              "(unioned over runs) as CSV, JSON or Parquet files, or one "
                              "table on standard output (-o -).")
    p.add_argument("results_dir", metavar="RESULTS")
    p.add_argument("-f", "--format", choices=EXPORT_FORMATS, default="csv",
                   help="csv (the default), json (an array of row objects) or parquet")
    p.add_argument("--csv", dest="format", action="store_const", const="csv",
                   help="the same as -f csv")
    p.add_argument("-o", "--out", help="output directory (default: RESULTS/FORMAT, e.g. "
                   "RESULTS/csv), or - for standard output: one table (--tables), or "
                   "with -f json several as one object")
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
    p.add_argument("--json", action="store_true", help="print every row as JSON (a list "
                   "of objects)")
    p.add_argument("--units", choices=("human", "raw"),
                   help="human: columns that hold a metric in its unit (Mbit/s, ms, %%), "
                   "named 'col [unit]' (the default for the table); raw: SI units as "
                   "stored (the default for --csv and --json)")
    p.add_argument("--max-rows", type=int, default=200)
    results_opt(p)
    p.set_defaults(func=cmd_query)

    p = subparsers.add_parser("compare", help="compare two stored studies cell by cell",
                              description="For every cell both studies share (same swept "
                              "factor values) and every metric: both means with 95 % CIs "
                              "(percentiles: medians with bootstrap CIs), the difference with "
                              "its CI, Welch's t-test (medians: Mann-Whitney U), q-values "
                              "controlling the false discovery rate over the table "
                              "(Benjamini-Hochberg) and Cohen's d.")
    p.add_argument("a", metavar="A", help="first results directory (or name prefix)")
    p.add_argument("b", metavar="B", help="second results directory (or name prefix)")
    p.add_argument("--metric", action="append", help="metric to compare (repeatable; "
                   "default: the key run metrics)")
    p.add_argument("--by", action="append", help="columns that identify a cell (repeatable; "
                   "default: the common swept factors, else cell)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="false discovery rate: * marks q < alpha (default 0.05)")
    p.add_argument("--csv", help="also write the full comparison to this CSV file (SI units)")
    p.add_argument("--json", action="store_true", help="print the full comparison as JSON "
                   "(SI units): the rows, the columns matched on, host setting differences")
    p.add_argument("--units", choices=("human", "raw"), default="human",
                   help="human: each metric in its unit (Mbit/s, ms, %%; the default); "
                   "raw: metric names and SI units as stored")
    results_opt(p)
    p.set_defaults(func=cmd_compare)

    p = subparsers.add_parser("check", help="re-evaluate a stored study's checks",
                              description="Evaluate the checks ([[expect]]) against stored "
                              "results without re-running: the study's own, or those of "
                              "--study (a file or built-in name). The study's own checks are "
                              "stored (RESULTS/checks.json); another study's are only "
                              "printed. Exit status 3 when a check fails.")
    p.add_argument("results_dir", metavar="RESULTS")
    p.add_argument("--study", help="take the checks from this study file or built-in name "
                   "(at the scale the results ran at, where it has that scale)")
    p.add_argument("--json", action="store_true", help="print the checks, what the cells "
                   "lack and the anomalies as JSON (same exit status)")
    results_opt(p)
    p.set_defaults(func=cmd_check)
