"""What limited each flow, per cell, as `ccarena show` and the report show it.

Contract: `flow_limits(flows)` takes the stored flows table (rows of conn == -1, with
cell, name, valid, goodput_bps and the metrics/limits.py columns) and returns one row per
(cell, flow name) over the cell's valid runs: the limit most runs gave, in how many runs,
its mean share of samples, the evidence line of a typical run (the one nearest the median
goodput among them) and how many runs the kernel's own counters named another limit.
`show_lines(...)` and `report_table(...)` format it. Reads nothing but its argument.
"""
from __future__ import annotations

import pandas as pd

MAX_SHOW_LINES = 24


def flow_limits(flows: pd.DataFrame) -> pd.DataFrame:
    cols = ["cell", "name", "limited_by", "runs", "of", "share", "evidence",
            "kernel_disagrees", "kernel_limited_by"]
    if not len(flows) or "limited_by" not in flows or "cell" not in flows:
        return pd.DataFrame(columns=cols)
    f = flows[flows["conn"] == -1] if "conn" in flows else flows
    if "valid" in f:
        f = f[f["valid"].fillna(False).astype(bool)]
    rows = []
    for (cell, name), g in f.groupby(["cell", "name"], sort=True):
        lim = g["limited_by"].dropna()
        if not len(lim):
            continue
        top = lim.mode().iloc[0]
        mine = g[g["limited_by"] == top]
        gp = mine["goodput_bps"] if "goodput_bps" in mine else pd.Series(dtype=float)
        typical = (mine.loc[(gp - gp.median()).abs().idxmin()] if gp.notna().any()
                   else mine.iloc[0])
        dis = mine["limit_disagrees"] if "limit_disagrees" in mine else pd.Series(dtype=float)
        kern = mine["kernel_limited_by"].dropna() if "kernel_limited_by" in mine else \
            pd.Series(dtype=object)
        rows.append({"cell": cell, "name": name, "limited_by": top, "runs": len(mine),
                     "of": len(lim), "share": float(mine["limited_frac"].mean())
                     if "limited_frac" in mine else float("nan"),
                     "evidence": typical.get("limit_evidence"),
                     "kernel_disagrees": int((dis == 1.0).sum()),
                     "kernel_limited_by": kern.mode().iloc[0] if len(kern) else None})
    return pd.DataFrame(rows, columns=cols)


def short(r: dict) -> str:
    """The summary table's cell: "sndbuf 97%" (* when the kernel's counters disagreed)."""
    return f"{r['limited_by']} {r['share']:.0%}" + ("*" if r["kernel_disagrees"] else "")


def show_lines(lim: pd.DataFrame, labels: dict | None = None) -> list[str]:
    """The evidence under `ccarena show`'s table, one line per cell and flow."""
    if not len(lim):
        return []
    labels = labels or {}
    out = ["what limited each flow (a typical valid run's samples; * the kernel's "
           "counters named another limit):"]
    for r in lim.head(MAX_SHOW_LINES).to_dict("records"):
        runs = "" if r["runs"] == r["of"] else f" [{r['runs']} of {r['of']} runs]"
        out.append(f"  [{labels.get(r['cell'], r['cell'])}] {r['name']}: {r['evidence']}{runs}")
    if len(lim) > MAX_SHOW_LINES:
        out.append(f"  ... {len(lim) - MAX_SHOW_LINES} more: ccarena query \"select cell, "
                   "name, limited_by, limit_evidence from flows\"")
    return out


def report_table(lim: pd.DataFrame, labels: dict | None = None) -> pd.DataFrame:
    """The report's table: cell, flow, limit, runs, evidence, the kernel's view."""
    if not len(lim):
        return lim
    labels = labels or {}
    return pd.DataFrame({
        "cell": [labels.get(c, c) for c in lim["cell"]], "flow": lim["name"],
        "limit": lim["limited_by"], "runs": [f"{a} of {b}" for a, b in zip(lim["runs"],
                                                                           lim["of"])],
        "evidence (a typical run)": lim["evidence"],
        "kernel's counters": [f"{k}" + (f" (differs in {d} runs)" if d else "")
                              for k, d in zip(lim["kernel_limited_by"],
                                              lim["kernel_disagrees"])]})
