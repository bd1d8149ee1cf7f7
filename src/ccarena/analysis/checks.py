"""A study's `[[expect]]` checks, evaluated on its stored results. Like transperf, every
check is evaluated and reported with its measured value and target; nothing stops at the
first failure.

    [[expect]]
    name = "bufferbloat: the large queue inflates the RTT"
    metric = "ping_rtt_p50_s"       # a column of flows (level = "flow") or runs ("run"),
                                    # or a ratio of two: "goodput_bps / rwnd_bound_bps"
    level = "run"
    flow = "bulk"                   # flow level: this flow (also matches bulk.1, bulk.2, ...)
    where = { "bottleneck.buffer" = "100p" }   # only these cells (a value or a list)
    stat = "mean"                   # mean | median | min | max | each (every valid run)
    min = "5*base_rtt"              # number | "<x>%rate" | "<x>*rate" | "<x>*base_rtt"
    max = "100%rate"
    relative_to = { "flow.bulk.enabled" = false }   # divide by the same stat in that cell
    trend = "nondecreasing"         # over a swept factor, with `over` and `tolerance`
    over = "flow.p.conns"

Bounds and ratios are evaluated per cell, and the cells are the *planned* ones
(plan.json): a planned cell with no valid run fails every check that covers it ("no valid
values"), so a study cut short or broken by failures never passes. Each result says how
many of the cell's planned runs were valid, invalid and missing."""
from __future__ import annotations

import math

import pandas as pd

from ccarena import units
from ccarena.study.expect import bound_terms

def _bound(v, rate: float, base_rtt: float):
    """A bound's value in the cell (study.expect.parse_bound checked its form)."""
    if v is None:
        return None
    x, unit = bound_terms(v)
    return x * {"": 1.0, "rate": rate, "base_rtt": base_rtt}[unit]


def _num(v) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        return units.split_quantity(str(v))[0]
    except ValueError:
        return math.nan


def _level(key: str, v) -> float:
    """A swept value as a number in the unit its key parses to ("500kbit" < "1mbit"),
    for ordering a trend; a value the key cannot parse falls back to its leading number."""
    from ccarena.study.keys import key_for
    k = key_for(key)
    if k is not None:
        try:
            x = k(v)
            x = x[1] if isinstance(x, tuple) else x       # a buffer: (unit, size)
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                return float(x)
        except (ValueError, TypeError):
            pass
    return _num(v)


def _select(df: pd.DataFrame, e: dict, level: str) -> pd.DataFrame:
    if "valid" in df:
        df = df[df["valid"].astype(bool)]
    if level == "flow" and "conn" in df:
        df = df[df["conn"] == -1]
    if "flow" in e and "name" in df:
        f = e["flow"]
        df = df[(df["name"] == f) | df["name"].astype(str).str.startswith(f + ".")]
    return df


def _matches(params: dict, where: dict) -> bool:
    for k, v in (where or {}).items():
        if k not in params:
            return False
        vals = [str(x) for x in v] if isinstance(v, list) else [str(v)]
        if str(params[k]) not in vals:
            return False
    return True


def _stat(vals: pd.Series, stat: str):
    vals = vals.astype(float).dropna()
    if not len(vals):
        return None
    if stat == "each":
        return list(vals)
    return float(getattr(vals, stat)())


def planned_cells(results, params=()) -> dict[str, dict]:
    """cell label -> swept values, from plan.json; without one (results made by hand), the
    cells that have rows, with the values of their `params` columns."""
    plan = getattr(results, "plan", None) or {}
    if plan.get("cells"):
        return dict(plan["cells"])
    out: dict[str, dict] = {}
    for df in (results.runs, results.flows):
        if "cell" in df:
            for c, g in df.groupby("cell"):
                out.setdefault(str(c), {k: g[k].iloc[0] for k in params if k in g})
    return out or {"all": {}}


def short_names(params) -> dict[str, str]:
    """Dotted factor keys -> the shortest unambiguous tail ("flow.bulk.cc" -> "cc",
    unless another factor also ends in "cc": then "bulk.cc")."""
    out = {}
    for p in params:
        parts = p.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if sum(1 for q in params if q == tail or q.endswith("." + tail)) == 1:
                out[p] = tail
                break
        else:
            out[p] = p
    return out


def cell_counts(results) -> dict[str, dict]:
    """cell -> {"planned", "valid", "invalid", "missing"} runs (from results.status())."""
    st = results.status() if hasattr(results, "status") else None
    if st is None or not len(st):
        return {}
    out = {}
    for c, g in st.groupby("cell"):
        n = g["state"].value_counts()
        out[str(c)] = {"planned": len(g), "valid": int(n.get("valid", 0)),
                       "invalid": int(n.get("invalid", 0)), "missing": int(n.get("missing", 0))}
    return out


def evaluate(results, study) -> list[dict]:
    """Every check on every planned cell it covers -> [{check, what, cell, ok, measured,
    min, max, why?, runs?}]."""
    flows, runs = results.flows, results.runs
    params = list(study.sweep)
    short = short_names(params)
    cells = planned_cells(results, params)
    counts = cell_counts(results)
    ctx = runs.set_index("run_id")[["rate_bps", "base_rtt_s"]] if len(runs) and \
        {"rate_bps", "base_rtt_s", "run_id"} <= set(runs.columns) else None
    out = []
    for i, e in enumerate(study.expect):
        level = e.get("level", "flow")
        label = e.get("name") or f"{e.get('stat', 'mean')} {e['metric']}"
        metric = e["metric"]
        base = _with_metric(flows if level == "flow" else runs, metric)
        df = _select(base, e, level)
        if ctx is not None and "rate_bps" not in df and "run_id" in df:
            df = df.join(ctx, on="run_id")
        covered = {c: p for c, p in cells.items() if _matches(p, e.get("where"))
                   and _has_flow(study, c, e.get("flow"))}
        if not covered:
            out.append({"check": i, "what": label, "ok": False,
                        "why": f"no planned cell matches where = {e.get('where')}"})
            continue
        stat = e.get("stat", "mean")
        if "trend" in e:
            if "cell" in df:     # the trend runs over the covered cells only
                df = df[df["cell"].astype(str).isin(covered)]
            out.append(_trend(i, label, df, e, stat, covered, counts))
            continue
        for cell, p in covered.items():
            g = df[df["cell"].astype(str) == cell] if "cell" in df else df
            where = ", ".join(f"{short[k]}={p[k]}" for k in params if k in p)
            r = {"check": i, "what": label, "cell": where or cell, "metric": metric,
                 **({"runs": counts[cell]} if cell in counts else {})}
            if metric not in df and len(df):     # the cause is the name, not the runs
                out.append({**r, "ok": False, "why": f"the {level} rows have no metric "
                            f"{metric!r} (docs/metrics.md)"})
                continue
            if metric not in g or not len(g):
                out.append({**r, "ok": False, "why": _no_values(counts.get(cell))})
                continue
            lacking = int(g[metric].astype(float).isna().sum())
            if lacking:     # a value a valid run should have and does not (a download
                #             that never completed has no fct_s): not judged on the rest
                out.append({**r, "ok": False, "why": f"{lacking} of {len(g)} valid "
                            f"{'flows' if level == 'flow' else 'runs'} have no {metric}"})
                continue
            v = _stat(g[metric], stat)
            rate = float(g["rate_bps"].mean()) if "rate_bps" in g else math.nan
            rtt = float(g["base_rtt_s"].mean()) if "base_rtt_s" in g else math.nan
            r["min"], r["max"] = _bound(e.get("min"), rate, rtt), _bound(e.get("max"), rate, rtt)
            if any(b is not None and math.isnan(b) for b in (r["min"], r["max"])):
                out.append({**r, "ok": False, "why": "a bound cannot be computed (the cell's "
                            "rate or base RTT is unknown)"})
                continue
            if "relative_to" in e:
                ref = _reference(base, e, level, p, params, metric, cells)
                if ref in (None, 0) or v is None:
                    out.append({**r, "ok": False, "why": "no valid reference values "
                                "(reference runs missing or invalid)"})
                    continue
                v = [x / ref for x in v] if isinstance(v, list) else v / ref
                r["relative"] = True
            if v is None:
                out.append({**r, "ok": False, "why": _no_values(counts.get(cell))})
                continue
            xs = v if isinstance(v, list) else [v]
            lo, hi = r["min"], r["max"]
            bad = [x for x in xs if (lo is not None and x < lo) or (hi is not None and x > hi)]
            out.append({**r, "ok": not bad, "measured": v})
    return out


def record(results, study) -> list[dict]:
    """evaluate(), stored as the results' checks (checks.json: ResultsDir.checks and
    .passed read them); -> the checks. Raises StoreError on a read-only copy."""
    from ccarena.store.writer import Writer
    checks = evaluate(results, study) if study.expect else []
    Writer(results).write_checks(checks)
    results.checks = checks
    return checks


def _with_metric(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The frame with the metric as a column: a ratio of two columns "a / b" computed."""
    if "/" in metric and metric not in df:
        a, b = (x.strip() for x in metric.split("/", 1))
        if a in df and b in df:
            return df.assign(**{metric: df[a].astype(float) / df[b].astype(float)})
    return df


def _has_flow(study, cell: str, flow: str | None) -> bool:
    """Does the cell have the check's flow? (A sweep may switch it off: enabled = false.)"""
    if flow is None or not getattr(study, "cells", None) or not cell[1:].isdigit():
        return True
    idx = int(cell[1:])
    c = next((x for x in study.cells if x.index == idx), None)
    if c is None:
        return True
    return any(f.name == flow or f.name.startswith(flow + ".") for f in c.study.flows)


def _no_values(c: dict | None) -> str:
    if not c:
        return "no valid values"
    return (f"no valid values ({c['valid']} of {c['planned']} planned runs valid, "
            f"{c['invalid']} invalid, {c['missing']} missing)")


def _reference(df, e, level, p, params, metric, cells):
    ref_df = _select(df, e, level)
    keep = {k: p[k] for k in params if k in p and k not in e["relative_to"]}
    want = {**keep, **e["relative_to"]}
    ref_cells = [c for c, q in cells.items() if _matches(q, want)]
    if "cell" in ref_df:
        ref_df = ref_df[ref_df["cell"].astype(str).isin(ref_cells)]
    if metric not in ref_df or not len(ref_df):
        return None
    return _stat(ref_df[metric], "mean")


def _trend(i, label, df, e, stat, covered, counts) -> dict:
    over, kind, tol = e["over"], e["trend"], float(e.get("tolerance", 0.0))
    r = {"check": i, "what": label, "metric": e["metric"]}
    if not any(over in p for p in covered.values()):
        return {**r, "ok": False, "why": f"{over} is not swept"}
    empty = [c for c in covered if "cell" in df and e["metric"] in df
             and not len(df[df["cell"].astype(str) == c][e["metric"]].dropna())]
    if empty or e["metric"] not in df:
        missing = ", ".join(f"{c} ({_no_values(counts.get(c))})" for c in empty) or \
            "every cell"
        return {**r, "ok": False, "why": f"no valid values in {missing}"}
    pts = sorted(((_level(over, k), _stat(g[e["metric"]], stat if stat != "each" else "mean"))
                  for k, g in df.groupby(over)), key=lambda p: p[0])
    ys = [y for _, y in pts]
    ok = True
    for a, b in zip(ys, ys[1:]):
        scale = max(abs(a), abs(b), 1e-12)
        d = (b - a) / scale
        ok &= {"increasing": d > -tol, "nondecreasing": d >= -tol,
               "decreasing": d < tol, "nonincreasing": d <= tol}[kind]
    return {**r, "ok": bool(ok), "measured": [(x, y) for x, y in pts], "trend": kind,
            "tolerance": tol, "over": over}


def result_parts(r: dict) -> dict:
    """One check result in the words people read, in parts: {what, cell, detail, runs}
    (detail: the measured value and its bounds in the metric's display unit, "95.59
    Mbit/s, want ≥ 85 Mbit/s"). The terminal joins them (format_result), the report shows
    them as columns: one wording for both."""
    m = r.get("metric", "")
    rel = r.get("relative")
    u = "" if rel else units.display_unit(m)[1]

    def num(x):
        return units.format_number(x, 4) if rel else units.format_metric(m, x, 4)

    def v(x):       # a value, a list of values (stat = "each") or a trend's points
        if isinstance(x, list) and x and isinstance(x[0], (tuple, list)):
            return ", ".join(f"{_level_text(r.get('over'), a)}: {num(b)}"
                             + (f" {u}" if u else "") for a, b in x[:8]) + (
                ", …" if len(x) > 8 else "")
        if isinstance(x, list):
            return "[" + ", ".join(num(y) for y in x[:8]) + (", …" if len(x) > 8 else "") \
                + "]" + (f" {u}" if u else "")
        return num(x) + (f" {u}" if u and num(x) != "–" else "")

    if "why" in r:
        detail = r["why"]
    elif "trend" in r:
        detail = f"{r['trend']} (tolerance {r['tolerance']:g}): {v(r['measured'])}"
    else:
        lim = " and ".join(x for x in (f"≥ {v(r['min'])}" if r.get("min") is not None else "",
                                       f"≤ {v(r['max'])}" if r.get("max") is not None else "")
                           if x)
        detail = f"{v(r['measured'])}{' (ratio to reference)' if rel else ''}" + \
            (f", want {lim}" if lim else "")
    c = r.get("runs")
    runs = (f"{c['valid']}/{c['planned']} runs valid" if c and c["valid"] < c["planned"]
            else "")
    return {"what": str(r.get("what", "")), "cell": str(r.get("cell") or ""),
            "detail": detail, "runs": runs}


def _level_text(over: str | None, x) -> str:
    """A trend's level (the swept value in the unit its key parses to) as people write
    it: 0.01 over bottleneck.delay -> '10 ms'."""
    from ccarena.study.keys import key_for
    k = key_for(over) if over else None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    kind = getattr(k, "type", "")
    if kind == "rate":
        return units.format_rate(f)
    if kind == "time":
        return units.format_time(f)
    return units.plain(f)


def format_result(r: dict) -> str:
    """One check result for people: the measured value and its bounds in the metric's
    display unit (Mbit/s, ms, ...)."""
    p = result_parts(r)
    cell = f" [{p['cell']}]" if p["cell"] else ""
    runs = f" [{p['runs']}]" if p["runs"] else ""
    return f"{p['what']}{cell}: {p['detail']}{runs}"


class Checks(list):
    """Evaluated checks, one dict each (evaluate's), with `passed` (True when every check
    passed, False when one failed or could not be evaluated, None without checks),
    `stored` (True when written as the results' checks.json) and `note` (why they were
    not stored, for people)."""

    def __init__(self, checks=(), stored: bool = False, note: str | None = None):
        super().__init__(checks)
        self.stored, self.note = stored, note

    @property
    def passed(self) -> bool | None:
        return all(r["ok"] for r in self) if self else None


def check(results, study=None) -> Checks:
    """The checks of `study` on stored `results`, without re-running. `study` None: the
    results' own stored study, whose checks are also stored (checks.json; a read-only
    copy such as an opened archive keeps them in memory, and `note` says so); another
    study's checks are only evaluated, never stored as these results' own."""
    from ccarena.errors import ResultsError
    from ccarena.store.atomic import StoreError
    if study is not None:
        return Checks(evaluate(results, study) if study.expect else [], note=(
            "another study's checks: not stored, the results' own checks.json is kept"))
    if not results.study:
        raise ResultsError(f"opening results {results.path}: no stored study; name the "
                           "checks' study (--study FILE, or ccarena.check(results, study))")
    from ccarena.study.load import parse_study
    own = parse_study(results.study, results.study_source)
    if not own.expect:
        return Checks([], note="the study declares no checks")
    try:
        return Checks(record(results, own), stored=True)
    except StoreError as e:
        return Checks(evaluate(results, own), note=f"checks.json not written: {e}")
