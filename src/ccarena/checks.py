"""A study's `[[expect]]` checks, evaluated on its stored results (transperf-style: every
failure is reported with its measured value and target, never stopping at the first).

    [[expect]]
    metric = "goodput_bps"          # a column of flows.parquet (or runs.parquet with level="run")
    flow = "bulk"                   # optional: only this flow
    where = { "bottleneck.buffer" = "100p" }   # optional: only these cells
    min = "90%rate"                 # bound: a number, or "<x>%rate" of the bottleneck rate,
    max = "100%rate"                #        or "<x>*base_rtt"
    stat = "mean"                   # mean (default), min, max, median, each (every run)
"""
from __future__ import annotations

import math
import re

from rich.console import Console

_REL = re.compile(r"^\s*([0-9.]+)\s*(%rate|\*base_rtt|\*rate)\s*$")


def _bound(v, meta: dict):
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = _REL.match(str(v))
    if not m:
        raise ValueError(f"cannot read bound {v!r}; write a number, '90%rate' or '3*base_rtt'")
    x, what = float(m.group(1)), m.group(2)
    if what == "%rate":
        return x / 100 * (meta.get("rate_bps") or math.nan)
    if what == "*rate":
        return x * (meta.get("rate_bps") or math.nan)
    return x * (meta.get("base_rtt_s") or math.nan)


def evaluate(results, study) -> list[dict]:
    out = []
    flows = results.flows
    runs = results.runs
    for i, e in enumerate(study.expect):
        level = e.get("level", "flow")
        df = flows if level == "flow" else runs
        if len(df) == 0:
            out.append({"check": i, "ok": False, "what": str(e), "why": "no data"})
            continue
        if "valid" in df:
            df = df[df["valid"].astype(bool)]
        if level == "flow" and "conn" in df:
            df = df[df["conn"] == -1]
        if "flow" in e and "name" in df:
            df = df[df["name"] == e["flow"]]
        for k, v in (e.get("where") or {}).items():
            if k in df:
                df = df[df[k].astype(str) == str(v)]
        metric = e["metric"]
        if metric not in df or not len(df):
            out.append({"check": i, "ok": False, "what": _label(e), "why": "no values"})
            continue
        b = study.bottleneck
        meta = {"rate_bps": b.rate_bps, "base_rtt_s": study.base_rtt_s}
        lo, hi = _bound(e.get("min"), meta), _bound(e.get("max"), meta)
        stat = e.get("stat", "mean")
        vals = df[metric].astype(float).dropna()
        xs = list(vals) if stat == "each" else [getattr(vals, stat)()]
        bad = [x for x in xs if (lo is not None and x < lo) or (hi is not None and x > hi)]
        out.append({"check": i, "ok": not bad and len(xs) > 0, "what": _label(e),
                    "measured": xs if stat == "each" else xs[0], "min": lo, "max": hi})
    return out


def _label(e: dict) -> str:
    s = e.get("name") or f"{e.get('stat', 'mean')} {e['metric']}"
    if "flow" in e:
        s += f" of {e['flow']}"
    if e.get("where"):
        s += " where " + ", ".join(f"{k}={v}" for k, v in e["where"].items())
    return s


def run_checks(results, study, console: Console | None = None) -> bool:
    if not study.expect:
        return True
    console = console or Console()
    res = evaluate(results, study)
    for r in res:
        tag = "[green]pass[/green]" if r["ok"] else "[red]FAIL[/red]"
        detail = r.get("why") or f"measured {r.get('measured')} (min {r.get('min')}, max {r.get('max')})"
        console.print(f"{tag}  {r['what']}: {detail}")
    return all(r["ok"] for r in res)
