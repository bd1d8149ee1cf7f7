"""Time handling shared by the metrics: run timing, flow windows, cumulative counters,
and the per-interval series (goodput over time, Jain's index over time).

Contract: functions take the per-run tables (pandas DataFrames as in
docs/dev/contracts.md §5, each with `t` in seconds since the run's t0, or `t_ns` plus
meta["t0_ns"]) and the run's meta dict; they never mutate their inputs, never read
files, and accept empty or missing (None) tables.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ccarena.metrics.formulas import jain_rows

# Flows that always have data to send: only these compete for a fair share.
BACKLOGGED_KINDS = ("bulk", "parallel")
DEFAULT_INTERVAL_S = 0.5


def nonempty(df) -> bool:
    return isinstance(df, pd.DataFrame) and len(df) > 0


# The columns that locate a table's rows; without them a table cannot be used at all.
REQUIRED = {"tcpinfo": ("t", "flow", "conn"), "rx": ("t", "flow", "conn", "bytes"),
            "conns": ("flow", "conn"), "rr": ("latency_ns",), "ping": ("t", "rtt_s"),
            "link_stats": ("t",)}


def usable(df, name: str):
    """df if it has rows and the columns REQUIRED for its table name, else None."""
    if nonempty(df) and set(REQUIRED.get(name, ())) <= set(df.columns):
        return df
    return None


def with_t(df, meta: dict):
    """Return df with a `t` column (seconds since t0), derived from t_ns if needed."""
    if not nonempty(df) or "t" in df.columns:
        return df
    if "t_ns" in df.columns and meta.get("t0_ns") is not None:
        df = df.copy()
        df["t"] = (df["t_ns"].astype("int64") - int(meta["t0_ns"])) / 1e9
    return df


@dataclass(frozen=True)
class Timing:
    duration_s: float
    warmup_s: float
    base_rtt_s: float
    rate_bps: float
    base_rtt_measured: bool = False  # True: meta had no base RTT, the data gave one


def run_timing(tables: dict, meta: dict) -> Timing:
    """Duration, warm-up, base RTT and bottleneck rate, with fallbacks from the data."""
    dur = meta.get("duration_s")
    if dur is None:
        ts = [float(df["t"].max()) for df in tables.values() if nonempty(df) and "t" in df]
        dur = max(ts) if ts else 0.0
    bott = meta.get("bottleneck") or {}
    rate = bott.get("rate_bps")
    base = meta.get("base_rtt_s")
    if base is None and bott.get("delay_s") is not None:
        base = 2.0 * float(bott["delay_s"])  # delay is one-way
    measured = False
    if base is None or not float(base) > 0:
        # no emulated delay: the path's own unloaded RTT is the smallest one observed
        m = measured_min_rtt(tables)
        if m == m:
            base, measured = m, True
    return Timing(float(dur), float(meta.get("warmup_s") or 0.0),
                  float(base) if base is not None else float("nan"),
                  float(rate) if rate is not None else float("nan"), measured)


def measured_min_rtt(tables: dict) -> float:
    """Smallest RTT seen: TCP_INFO min_rtt (kernel's minimum, handshake included), else
    the fastest ping; NaN if neither exists."""
    tcp = tables.get("tcpinfo")
    if nonempty(tcp) and "min_rtt_us" in tcp:
        v = tcp["min_rtt_us"].to_numpy(float)
        v = v[v > 0]
        if v.size:
            return float(v.min()) * 1e-6
    ping = tables.get("ping")
    if nonempty(ping) and "rtt_s" in ping and ping["rtt_s"].notna().any():
        return float(ping["rtt_s"].min())
    return float("nan")


def flow_table(tables: dict, meta: dict, timing: Timing) -> pd.DataFrame:
    """One row per flow: flow, name, kind, cc, from, to, conns, start_s, stop_s, dir,
    plus the steady-state window [win_a, win_b] = [max(warmup, start), min(duration, stop)].

    Flows come from meta["flows"]. Only when meta lists none are they taken from the
    data (as bulk flows active for the whole run); otherwise a flow id that meta does not
    know is damaged data, counted by run_metrics, never a new flow."""
    rows = [dict(f) for f in meta.get("flows") or []]
    known = {int(r["flow"]) for r in rows if "flow" in r}
    for name in (() if rows else ("rx", "tcpinfo", "conns")):
        df = tables.get(name)
        if nonempty(df) and "flow" in df.columns:
            for f in sorted(set(df["flow"].astype("int64").tolist()) - known):
                rows.append({"flow": f})
                known.add(f)
    cols = ["flow", "name", "kind", "cc", "from", "to", "conns", "start_s", "stop_s"]
    ft = pd.DataFrame(rows, columns=list(dict.fromkeys(cols + [k for r in rows for k in r])))
    sized = pd.Series(False, index=ft.index)
    for k in ("bytes", "size"):  # a size-limited flow has a completion time
        if k in ft:
            sized |= ft[k].notna()
    ft = ft[cols].copy()
    ft["sized"] = sized
    ft["flow"] = ft["flow"].astype("int64")
    ft["name"] = ft["name"].where(ft["name"].notna(), "flow" + ft["flow"].astype(str))
    ft["kind"] = ft["kind"].astype(object).fillna("bulk")
    ft["sized"] = ft["sized"] | (ft["kind"] == "download")
    ft["start_s"] = pd.to_numeric(ft["start_s"], errors="coerce").fillna(0.0)
    ft["stop_s"] = pd.to_numeric(ft["stop_s"], errors="coerce").fillna(timing.duration_s)
    ft["stop_s"] = ft["stop_s"].clip(upper=timing.duration_s)
    # dir 0 carries data from the senders' side (s*) to the receivers' side (r*).
    src = ft["from"].astype("string").fillna("")
    ft["dir"] = np.where(src.str.startswith("r"), 1, 0)
    ft["win_a"] = np.maximum(ft["start_s"], timing.warmup_s)
    ft["win_b"] = ft["stop_s"]
    return ft.sort_values("flow").reset_index(drop=True)


def _groups(df: pd.DataFrame, keys: list[str]):
    """Yield (key tuple, start, stop) slices of df, which must be sorted by keys."""
    k = df[keys].to_numpy()
    if len(k) == 0:
        return
    change = np.flatnonzero(np.any(k[1:] != k[:-1], axis=1)) + 1
    starts = np.concatenate(([0], change))
    stops = np.concatenate((change, [len(k)]))
    for s, e in zip(starts, stops):
        yield tuple(k[s]), s, e


def cum_at(df, value: str, points: dict, keys=("flow", "conn")) -> dict:
    """Value of a cumulative counter at given times, per connection.

    points: {key tuple -> array of times}, or {flow -> times} applied to all its conns.
    Linear interpolation between samples; 0 before a connection's first sample (it did
    not exist yet) and its last value after its last sample (it had closed).
    Returns {key tuple -> array}."""
    out = {}
    if not nonempty(df):
        return out
    keys = list(keys)
    d = df[keys + ["t", value]].sort_values(keys + ["t"], kind="stable")
    t = d["t"].to_numpy(float)
    v = d[value].to_numpy(float)
    for key, s, e in _groups(d, keys):
        key = tuple(int(x) for x in key)
        tq = points.get(key, points.get(key[0]))
        if tq is None:
            continue
        out[key] = np.interp(np.asarray(tq, float), t[s:e], v[s:e], left=0.0, right=v[e - 1])
    return out


def interval_edges(duration_s: float, interval_s: float) -> np.ndarray:
    """Edges 0, dt, 2dt, ... up to the duration; a last partial interval is dropped
    (it would be a biased, short sample)."""
    if duration_s <= 0 or interval_s <= 0:
        return np.zeros(0)
    n = int(np.floor(duration_s / interval_s + 1e-9))
    return np.arange(n + 1) * interval_s


def goodput_matrix(rx, flows: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """Goodput (bit/s) per interval (rows) and flow (columns, in flows' order),
    from receiver byte counters, conns of a flow summed."""
    nf, k = len(flows), max(len(edges) - 1, 0)
    m = np.zeros((k, nf))
    if k == 0 or not nonempty(rx):
        return m
    col = {f: i for i, f in enumerate(flows["flow"].tolist())}
    points = {f: edges for f in col}
    for (f, _c), b in cum_at(rx, "bytes", points).items():
        m[:, col[f]] += np.diff(b)
    return m * 8.0 / np.diff(edges)[:, None]


def active_matrix(flows: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """True where an interval's midpoint lies inside the flow's [start_s, stop_s)."""
    mid = (edges[:-1] + edges[1:]) / 2.0
    a = flows["start_s"].to_numpy(float)[None, :]
    b = flows["stop_s"].to_numpy(float)[None, :]
    return (mid[:, None] >= a) & (mid[:, None] < b)


def fairness_columns(flows: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the flows that count for fairness: the backlogged ones, or all
    flows if none is backlogged (e.g. a study of paced flows only)."""
    m = flows["kind"].isin(BACKLOGGED_KINDS).to_numpy()
    return m if m.any() else np.ones(len(flows), dtype=bool)


def goodput_series(rx, meta: dict, interval_s: float = DEFAULT_INTERVAL_S,
                   tables: dict | None = None) -> pd.DataFrame:
    """Goodput over time, long format: t (interval start), t_end, flow, name, cc,
    goodput_bps, active. One row per interval and flow."""
    tables = dict(tables or {})
    tables["rx"] = usable(with_t(rx, meta), "rx")
    timing = run_timing(tables, meta)
    flows = flow_table(tables, meta, timing)
    edges = interval_edges(timing.duration_s, interval_s)
    m = goodput_matrix(tables["rx"], flows, edges)
    act = active_matrix(flows, edges)
    k, nf = m.shape
    return pd.DataFrame({
        "t": np.repeat(edges[:-1], nf), "t_end": np.repeat(edges[1:], nf),
        "flow": np.tile(flows["flow"].to_numpy(), k),
        "name": np.tile(flows["name"].to_numpy(object), k),
        "cc": np.tile(flows["cc"].to_numpy(object), k),
        "goodput_bps": m.ravel(), "active": act.ravel(),
    })


def jain_series(rx, meta: dict, interval_s: float = DEFAULT_INTERVAL_S,
                tables: dict | None = None) -> pd.DataFrame:
    """Jain's index per interval over the active backlogged flows: t, t_end, jain, n_active."""
    tables = dict(tables or {})
    tables["rx"] = usable(with_t(rx, meta), "rx")
    timing = run_timing(tables, meta)
    flows = flow_table(tables, meta, timing)
    edges = interval_edges(timing.duration_s, interval_s)
    return _jain_frame(goodput_matrix(tables["rx"], flows, edges), flows, edges)


def _jain_frame(m: np.ndarray, flows: pd.DataFrame, edges: np.ndarray) -> pd.DataFrame:
    act = active_matrix(flows, edges) & fairness_columns(flows)[None, :]
    return pd.DataFrame({"t": edges[:-1], "t_end": edges[1:],
                         "jain": jain_rows(m, act), "n_active": act.sum(axis=1)})


# -- convergence fairness (transperf's score) ---------------------------------------------
CONVERGENCE_WINDOW_S = 1.0       # transperf's CONVERGENCE_BUCKET
CONVERGENCE_ALLOWANCE_S = 4.0    # transperf's default convergence_sec


def convergence_start(flows: pd.DataFrame, timing: Timing,
                      allowance_s: float = CONVERGENCE_ALLOWANCE_S) -> float:
    """The convergence time t_c from which the flows must share fairly:
    t_c = max(warmup, last start of a flow that counts for fairness + allowance).
    transperf gives every flow `convergence_sec` (4 s) from the experiment's start; here
    the allowance runs from the last flow's arrival, so a late joiner gets it too."""
    if not len(flows):
        return float("nan")
    fair = fairness_columns(flows)
    last = float(flows.loc[fair, "start_s"].max())
    return max(float(timing.warmup_s), last + float(allowance_s))


def window_jain(rx, flows: pd.DataFrame, start_s: float, end_s: float,
                window_s: float = CONVERGENCE_WINDOW_S) -> pd.DataFrame:
    """Jain's index per whole window [start_s + k·w, start_s + (k+1)·w) inside
    [start_s, end_s] over the active flows that count for fairness: t, t_end, jain,
    n_active (a last partial window is dropped)."""
    if not (end_s > start_s) or window_s <= 0 or not len(flows):
        return pd.DataFrame(columns=["t", "t_end", "jain", "n_active"])
    edges = start_s + interval_edges(end_s - start_s, window_s)
    if len(edges) < 2:
        return pd.DataFrame(columns=["t", "t_end", "jain", "n_active"])
    return _jain_frame(goodput_matrix(rx, flows, edges), flows, edges)


def convergence_fairness(rx, flows: pd.DataFrame, timing: Timing,
                         allowance_s: float = CONVERGENCE_ALLOWANCE_S,
                         window_s: float = CONVERGENCE_WINDOW_S) -> tuple[float, float,
                                                                         pd.DataFrame]:
    """(jain_min_1s, t_c, the windows): the minimum of Jain's index over the 1 s windows
    of [t_c, duration] that have >= 2 active flows counting for fairness; NaN if there
    is no such window."""
    t_c = convergence_start(flows, timing, allowance_s)
    if np.isnan(t_c):
        return float("nan"), t_c, window_jain(rx, flows, 0.0, 0.0, window_s)
    w = window_jain(rx, flows, t_c, timing.duration_s, window_s)
    multi = w[w["n_active"] >= 2] if len(w) else w
    return (float(multi["jain"].min()) if len(multi) and multi["jain"].notna().any()
            else float("nan")), t_c, w


def convergence_series(rx, meta: dict, allowance_s: float = CONVERGENCE_ALLOWANCE_S,
                       window_s: float = CONVERGENCE_WINDOW_S,
                       tables: dict | None = None) -> tuple[pd.DataFrame, float]:
    """Jain's index per 1 s window over the whole run, on the grid of the windows the
    score uses (t, t_end, jain, n_active, scored: the window counts for jain_min_1s),
    and the convergence time t_c: what the convergence figure draws."""
    tables = dict(tables or {})
    tables["rx"] = usable(with_t(rx, meta), "rx")
    timing = run_timing(tables, meta)
    flows = flow_table(tables, meta, timing)
    t_c = convergence_start(flows, timing, allowance_s)
    first = (t_c - np.floor(t_c / window_s + 1e-9) * window_s) if not np.isnan(t_c) else 0.0
    w = window_jain(tables["rx"], flows, first, timing.duration_s, window_s)
    w = w.assign(scored=(w["t"] >= t_c - 1e-9) & (w["n_active"] >= 2)) if len(w) else \
        w.assign(scored=pd.Series(dtype=bool))
    return w, t_c
