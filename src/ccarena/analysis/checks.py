"""A study's `[[expect]]` checks, evaluated on its stored results. Like transperf, every
check is evaluated and reported with its measured value and target; nothing stops at the
first failure. `ccarena run` exits 3 when one fails.

    [[expect]]
    name = "bufferbloat: the large queue inflates the RTT"
    metric = "ping_rtt_p50_s"       # a column of flows.parquet (level = "flow") or runs.parquet
                                    # ("run"), or a ratio of two: "goodput_bps / wnd_limit_bps"
    level = "run"
    flow = "bulk"                   # flow level: this flow (also matches bulk.1, bulk.2, ...)
    where = { "bottleneck.buffer" = "100p" }   # only these cells (a value or a list of values)
    stat = "mean"                   # mean | median | min | max | each (every valid run)
    min = "5*base_rtt"              # number | "<x>%rate" | "<x>*rate" | "<x>*base_rtt" (of that cell)
    max = "100%rate"
    relative_to = { "flow.bulk.enabled" = false }   # divide by the same stat in that cell
    trend = "nondecreasing"         # over a swept factor, with `over` and `tolerance`
    over = "flow.p.conns"

Bounds and ratios are evaluated per cell (each cell passes or fails on its own)."""
from __future__ import annotations

import math
import re

import pandas as pd
from rich.console import Console
from rich.markup import escape

from ccarena import units

_REL = re.compile(r"^\s*([0-9.]+)\s*(%rate|\*base_rtt|\*rate)\s*$")
TRENDS = ("increasing", "nondecreasing", "decreasing", "nonincreasing")


def _bound(v, rate: float, base_rtt: float):
    if v is None:
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = _REL.match(str(v))
    if not m:
        raise ValueError(f"cannot read bound {v!r}; write a number, '90%rate' or '3*base_rtt'")
    x, what = float(m.group(1)), m.group(2)
    if what == "%rate":
        return x / 100 * rate
    if what == "*rate":
        return x * rate
    return x * base_rtt


def _num(v) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        return units.split_quantity(str(v))[0]
    except ValueError:
        return math.nan


def _select(df: pd.DataFrame, e: dict, level: str) -> pd.DataFrame:
    if "valid" in df:
        df = df[df["valid"].astype(bool)]
    if level == "flow" and "conn" in df:
        df = df[df["conn"] == -1]
    if "flow" in e and "name" in df:
        f = e["flow"]
        df = df[(df["name"] == f) | df["name"].astype(str).str.startswith(f + ".")]
    return df


def _where(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    """Keep rows whose parameter equals the value (or one of a list of values)."""
    for k, v in (where or {}).items():
        if k not in df:
            return df.iloc[0:0]
        vals = [str(x) for x in v] if isinstance(v, list) else [str(v)]
        df = df[df[k].astype(str).isin(vals)]
    return df


def _stat(vals: pd.Series, stat: str):
    vals = vals.astype(float).dropna()
    if not len(vals):
        return None
    if stat == "each":
        return list(vals)
    return float(getattr(vals, stat)())


def evaluate(results, study) -> list[dict]:
    flows, runs = results.flows, results.runs
    params = list(study.sweep)
    ctx = runs.set_index("run_id")[["rate_bps", "base_rtt_s"]] if len(runs) and \
        {"rate_bps", "base_rtt_s"} <= set(runs.columns) else None
    out = []
    for i, e in enumerate(study.expect):
        level = e.get("level", "flow")
        label = _label(e)
        df = _select(flows if level == "flow" else runs, e, level)
        df = _where(df, e.get("where"))
        metric = e["metric"]
        if "/" in metric:     # a ratio of two columns, e.g. "goodput_bps / wnd_limit_bps"
            a, b = (x.strip() for x in metric.split("/", 1))
            if a in df and b in df:
                df = df.assign(**{metric: df[a].astype(float) / df[b].astype(float)})
        if metric not in df or not len(df):
            out.append({"check": i, "what": label, "ok": False, "why": "no valid values"})
            continue
        if ctx is not None and "rate_bps" not in df:
            df = df.join(ctx, on="run_id")
        stat = e.get("stat", "mean")
        if "trend" in e:
            out.append(_trend(i, label, df, e, stat))
            continue
        groups = df.groupby("cell") if "cell" in df else [("all", df)]
        for cell, g in groups:
            v = _stat(g[metric], stat)
            rate = float(g["rate_bps"].mean()) if "rate_bps" in g else math.nan
            rtt = float(g["base_rtt_s"].mean()) if "base_rtt_s" in g else math.nan
            lo, hi = _bound(e.get("min"), rate, rtt), _bound(e.get("max"), rate, rtt)
            where = ", ".join(f"{p}={g[p].iloc[0]}" for p in params if p in g)
            r = {"check": i, "what": label, "cell": where or str(cell), "min": lo, "max": hi}
            if "relative_to" in e:
                ref_df = _select(flows if level == "flow" else runs, e, level)
                keep = {p: g[p].iloc[0] for p in params if p in g and p not in e["relative_to"]}
                ref_df = _where(_where(ref_df, keep), e["relative_to"])
                ref = _stat(ref_df[metric], "mean") if len(ref_df) else None
                if ref in (None, 0) or v is None:
                    out.append({**r, "ok": False, "why": "no valid reference values (reference runs missing or invalid)"})
                    continue
                v = [x / ref for x in v] if isinstance(v, list) else v / ref
                r["relative"] = True
            if v is None:
                out.append({**r, "ok": False, "why": "no valid values"})
                continue
            xs = v if isinstance(v, list) else [v]
            bad = [x for x in xs if (lo is not None and x < lo) or (hi is not None and x > hi)]
            out.append({**r, "ok": not bad, "measured": v})
    return out


def _trend(i, label, df, e, stat) -> dict:
    over, kind, tol = e["over"], e["trend"], float(e.get("tolerance", 0.0))
    if over not in df:
        return {"check": i, "what": label, "ok": False, "why": f"{over} is not swept"}
    pts = sorted(((_num(k), _stat(g[e["metric"]], stat if stat != "each" else "mean"))
                  for k, g in df.groupby(over)), key=lambda p: p[0])
    ys = [y for _, y in pts]
    ok = True
    for a, b in zip(ys, ys[1:]):
        scale = max(abs(a), abs(b), 1e-12)
        d = (b - a) / scale
        ok &= {"increasing": d > -tol, "nondecreasing": d >= -tol,
               "decreasing": d < tol, "nonincreasing": d <= tol}[kind]
    return {"check": i, "what": label, "ok": bool(ok), "measured": [
        (x, y) for x, y in pts], "trend": kind, "tolerance": tol}


def _label(e: dict) -> str:
    s = e.get("name") or f"{e.get('stat', 'mean')} {e['metric']}"
    return s


def _fmt(x) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x[:8]) + (", …" if len(x) > 8 else "") + "]"
    if isinstance(x, tuple):
        return f"{_fmt(x[0])}: {_fmt(x[1])}"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def run_checks(results, study, console: Console | None = None) -> bool:
    if not study.expect:
        return True
    import sys
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    res = evaluate(results, study)
    for r in res:
        tag = "[green]pass[/green]" if r["ok"] else "[red]FAIL[/red]"
        if "why" in r:
            detail = r["why"]
        elif "trend" in r:
            detail = f"{r['trend']} (tolerance {r['tolerance']:g}): {_fmt(r['measured'])}"
        else:
            rel = " (ratio to reference)" if r.get("relative") else ""
            lim = " and ".join(x for x in (f"≥ {_fmt(r['min'])}" if r.get("min") is not None
                                           else "", f"≤ {_fmt(r['max'])}"
                                           if r.get("max") is not None else "") if x)
            detail = f"{_fmt(r['measured'])}{rel}, want {lim}"
        cell = f" [{r['cell']}]" if r.get("cell") else ""
        console.print(f"{tag}  " + escape(f"{r['what']}{cell}: {detail}"))
    try:
        import json
        (results.path / "checks.json").write_text(json.dumps(res, indent=1, default=str))
    except OSError:
        pass
    return all(r["ok"] for r in res)
