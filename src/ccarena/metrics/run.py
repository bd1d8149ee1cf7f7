"""run_metrics: from one run's sample tables to per-flow and per-run metrics.

Contract: `run_metrics(tables, meta)` takes {"tcpinfo", "rx", "conns", "rr", "ping",
"link_stats"} -> DataFrame (any may be missing, None or empty) and the run's meta.json
dict, and returns (flows, run):
- flows: one row per flow (conn == -1) and, for a flow with several connections, one
  more row per connection (conn >= 0); columns listed in docs/metrics.md.
- run: a flat dict of scalars (run_id, cell, rep, valid and every run metric).
A metric whose inputs are missing is NaN, never an exception. Steady-state metrics use
each flow's window [max(warmup, start), min(duration, stop)]; run-level ones use
[warmup, duration]. Inputs are not modified. Vectorised: loops run over connections,
never over samples.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ccarena.metrics import formulas as F
from ccarena.metrics import limits as L
from ccarena.metrics.series import (CONVERGENCE_ALLOWANCE_S, DEFAULT_INTERVAL_S, _jain_frame, convergence_fairness, cum_at, fairness_columns, flow_table, goodput_matrix, interval_edges, nonempty, run_timing, usable, with_t)

FLOW_ID_COLUMNS = ["run_id", "flow", "name", "kind", "cc", "from", "to", "start_s", "stop_s",
                   "dir", "window_s", "conn", "n_conns"]
# Connections from clients outside the study (curl, wget on /bytes/<size>): contracts §2
EXTERNAL_FLOW = 0xFFFFFFFF
COUNTERS = ("bytes_sent", "bytes_retrans", "total_retrans", "delivered", "delivered_ce",
            "busy_us", "rwnd_limited_us", "sndbuf_limited_us",
            "bytes_acked")
NAN = float("nan")


def _windowed(df, flows: pd.DataFrame):
    """Rows of df inside their flow's steady window (a <= t <= b)."""
    a = df["flow"].map(flows.set_index("flow")["win_a"])
    b = df["flow"].map(flows.set_index("flow")["win_b"])
    return df[(df["t"] >= a) & (df["t"] <= b)]


def _sample_stats(df, keys, col: str, scale: float, prefix: str) -> pd.DataFrame:
    """mean, p50, p95, p99, min of a sampled column per group (scaled to SI units)."""
    g = df.groupby(keys, sort=True)[col]
    out = g.agg(["mean", "min"]) * scale
    q = g.quantile([p / 100 for p in F.PERCENTILES]).unstack() * scale
    out.columns = [f"{prefix}_mean_s", f"{prefix}_min_s"]
    for p, c in zip(F.PERCENTILES, q.columns):
        out[f"{prefix}_p{p}_s"] = q[c].to_numpy()
    return out


def _counter_deltas(tcp, flows: pd.DataFrame) -> pd.DataFrame:
    """Growth of the cumulative TCP_INFO counters inside each flow's window, per conn:
    value of the last sample at or before b minus that of the last sample at or before a
    (0 if the connection had no sample yet)."""
    cols = [c for c in COUNTERS if c in tcp.columns]
    keys = ["flow", "conn"]
    d = tcp.sort_values(keys + ["t"], kind="stable")
    a = d["flow"].map(flows.set_index("flow")["win_a"])
    b = d["flow"].map(flows.set_index("flow")["win_b"])
    # float before subtracting: the raw counters are uint64, and a counter that went
    # backwards (damaged data) must give a negative delta, not a wrapped 1.8e19
    end = d[d["t"] <= b].groupby(keys)[cols].last().astype(float)
    start = d[d["t"] <= a].groupby(keys)[cols].last().astype(float)
    return end.sub(start.reindex(end.index).fillna(0.0), fill_value=0.0)


def _tcp_conn_metrics(tcp, flows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-conn and per-flow TCP_INFO metrics (RTT percentiles, counters, windows)."""
    win = _windowed(tcp, flows)
    per = []
    for keys in (["flow", "conn"], ["flow"]):
        g = win.groupby(keys)
        s = (_sample_stats(win, keys, "srtt_us", 1e-6, "rtt") if "srtt_us" in win
             else pd.DataFrame(index=g.size().index))
        extra = pd.DataFrame({
            "cwnd_mean_pkts": g["cwnd"].mean() if "cwnd" in win else NAN,
            "mss": g["mss"].median() if "mss" in win else NAN,
            "min_rtt_s": g["min_rtt_us"].min() * 1e-6 if "min_rtt_us" in win else NAN,
            # the peer's advertised window limits the sender; our rcv_wnd is a fallback
            "wnd_bytes": (g["snd_wnd"].median() if "snd_wnd" in win else
                          g["rcv_wnd"].median() if "rcv_wnd" in win else NAN),
        }, index=s.index)
        per.append(s.join(extra).join(L.summarise(win, keys)))
    deltas = _counter_deltas(tcp, flows)
    conn = per[0].join(deltas, how="outer")
    flow = per[1].join(deltas.groupby(level="flow").sum(), how="outer")
    return conn, flow


def _conn_records(conns) -> pd.DataFrame:
    """Per (flow, conn): completion time, received bytes and errors from conns records.

    Completion = last byte at the receiving side - connection start at the client;
    for a download the client is the receiver, as contracts.md §2 says."""
    if not nonempty(conns):
        return pd.DataFrame(columns=["fct_s", "bytes_conn", "errors"])
    c = conns.copy()
    for col in ("connect_start_ns", "last_byte_ns", "bytes"):
        if col not in c:  # a record without it cannot give that number, the rest still can
            c[col] = np.nan
    keys = ["flow", "conn"]
    role = c["role"].astype("string") if "role" in c else pd.Series("", index=c.index)
    side = c["side"].astype("string") if "side" in c else pd.Series("", index=c.index)
    start = c[role == "client"].groupby(keys)["connect_start_ns"].min()
    recv = c[side == "recv"].groupby(keys)
    last = recv["last_byte_ns"].max()
    nbytes = recv["bytes"].max()
    err = c["error"].astype("string").fillna("") if "error" in c else pd.Series("", index=c.index)
    errors = (err.str.len() > 0).groupby([c["flow"], c["conn"]]).sum()
    out = pd.DataFrame({"fct_s": (last - start) / 1e9, "bytes_conn": nbytes, "errors": errors})
    out.index.names = keys
    return out


def _link_metrics(link, timing) -> dict:
    r = {k: NAN for k in ("link_arrivals", "link_drops", "loss_ratio", "link_marks",
                          "mark_ratio", "queue_mean_pkts", "queue_p95_pkts", "queue_max_pkts",
                          "queue_mean_bytes", "queue_delay_mean_s", "link_utilisation")}
    if not nonempty(link):
        return r
    # a row at time t counts the interval that ends at t: (warmup, duration]
    d = link[(link.get("dir", 0) == 0) & (link["t"] > timing.warmup_s)
             & (link["t"] <= timing.duration_s)]
    if d.empty:
        return r
    def total(col):
        return float(d[col].sum()) if col in d else NAN
    arr, drops, marks = total("arrivals"), total("drops"), total("marks")
    r.update(link_arrivals=arr, link_drops=drops, loss_ratio=F.safe_ratio(drops, arr),
             link_marks=marks, mark_ratio=F.safe_ratio(marks, arr))
    if "qlen_pkts" in d:
        r.update(queue_mean_pkts=float(d["qlen_pkts"].mean()),
                 queue_p95_pkts=F.percentiles(d["qlen_pkts"], (95,))[95],
                 queue_max_pkts=float(d["qlen_pkts"].max()))
    if "qlen_bytes" in d:
        r["queue_mean_bytes"] = float(d["qlen_bytes"].mean())
        r["queue_delay_mean_s"] = F.safe_ratio(r["queue_mean_bytes"] * 8.0, timing.rate_bps)
    if "bytes_out" in d:
        span = timing.duration_s - timing.warmup_s
        r["link_utilisation"] = F.safe_ratio(d["bytes_out"].sum() * 8.0,
                                             timing.rate_bps * span)
    return r


def _ping_metrics(ping, timing, prefix: str = "ping") -> dict:
    """RTT probe statistics; the same for ICMP ping ("ping_*") and the UDP probe ("udp_*")."""
    keys = ["ping_rtt_mean_s", "ping_rtt_p50_s", "ping_rtt_p95_s", "ping_rtt_p99_s",
            "ping_rtt_inflation", "ping_loss", "ping_count"]
    if prefix != "ping":
        return {k.replace("ping_", prefix + "_", 1): v
                for k, v in _ping_metrics(ping, timing).items()}
    r = dict.fromkeys(keys, NAN)
    if not nonempty(ping) or "rtt_s" not in ping:
        return r
    d = ping[(ping["t"] >= timing.warmup_s) & (ping["t"] <= timing.duration_s)]
    if d.empty:
        return r
    rtt = d["rtt_s"].to_numpy(float)
    ok = rtt[~np.isnan(rtt)]
    p = F.percentiles(ok)
    mean = float(ok.mean()) if ok.size else NAN
    r.update(ping_rtt_mean_s=mean, ping_rtt_p50_s=p[50],
             ping_rtt_p95_s=p[95], ping_rtt_p99_s=p[99],
             ping_rtt_inflation=F.safe_ratio(mean, timing.base_rtt_s if timing.base_rtt_s > 0
                                             else NAN),
             ping_loss=1.0 - ok.size / rtt.size, ping_count=float(rtt.size))
    return r


def _rr_metrics(rr) -> dict:
    r = {"rr_count": NAN, "rr_latency_mean_s": NAN, "rr_latency_p99_s": NAN}
    if nonempty(rr) and "latency_ns" in rr:
        lat = rr["latency_ns"].to_numpy(float) / 1e9
        r.update(rr_count=float(lat.size), rr_latency_mean_s=float(lat.mean()),
                 rr_latency_p99_s=F.percentiles(lat, (99,))[99])
    return r


def _steady_goodput(rx, flows: pd.DataFrame) -> tuple[dict, dict]:
    """(per conn, per flow) goodput in bit/s and bytes over each flow's window."""
    pts = {int(f): np.array([a, b]) for f, a, b in
           flows[["flow", "win_a", "win_b"]].itertuples(index=False)}
    conn = {}
    for (f, c), (ba, bb) in cum_at(rx, "bytes", pts).items():
        a, b = pts[f]
        conn[(f, c)] = ((bb - ba) * 8.0 / (b - a) if b > a else NAN, bb - ba)
    flow = {}
    for (f, _c), (g, n) in conn.items():
        g0, n0 = flow.get(f, (0.0, 0.0))
        flow[f] = (g0 + g, n0 + n)
    return conn, flow


def _aggregate_goodput(rx, flows: pd.DataFrame, timing) -> tuple[float, float]:
    """(all flows, direction-0 flows) bytes delivered in the run window [warmup,
    duration] x 8 / its length. Not the sum of per-flow goodputs: with flows joining
    late those average over different windows and would overstate the link's use."""
    a, b = timing.warmup_s, timing.duration_s
    if not nonempty(rx) or not b > a:
        return NAN, NAN
    d0 = set(flows.loc[flows["dir"] == 0, "flow"].astype(int))
    pts = {int(f): np.array([a, b]) for f in flows["flow"]}
    tot = tot0 = 0.0
    for (f, _c), (ba, bb) in cum_at(rx, "bytes", pts).items():
        tot += bb - ba
        tot0 += (bb - ba) if f in d0 else 0.0
    return tot * 8.0 / (b - a), tot0 * 8.0 / (b - a)


def run_metrics(tables: dict, meta: dict, *, interval_s: float = DEFAULT_INTERVAL_S,
                jain_threshold: float = 0.9,
                convergence_allowance_s: float = CONVERGENCE_ALLOWANCE_S
                ) -> tuple[pd.DataFrame, dict]:
    """All metrics of one run; see the module contract and docs/metrics.md."""
    tables = {k: with_t(v, meta) for k, v in (tables or {}).items()}
    # a table without the columns that locate its rows cannot be used at all
    tables = {k: usable(v, k) for k, v in tables.items()}
    for name, col in (("tcpinfo", "bytes_sent"), ("rx", "bytes")):
        tables[name] = _main_direction(tables.get(name), col)
    timing = run_timing(tables, meta)
    flows = flow_table(tables, meta, timing)
    quality = _data_quality(tables, flows)
    tables = {k: (v[v["flow"].isin(flows["flow"])] if nonempty(v) and "flow" in v else v)
              for k, v in tables.items()}
    rx, tcp = tables.get("rx"), tables.get("tcpinfo")

    # -- goodput and completion --------------------------------------------------
    g_conn, g_flow = _steady_goodput(rx, flows) if nonempty(rx) else ({}, {})
    recs = _conn_records(tables.get("conns"))
    if nonempty(tcp):
        t_conn, t_flow = _tcp_conn_metrics(tcp, flows)
    else:
        t_conn = t_flow = pd.DataFrame()

    rows = []
    conn_keys = set(g_conn) | {tuple(int(x) for x in k) for k in recs.index} | \
        {tuple(int(x) for x in k) for k in t_conn.index}
    for fl in flows.to_dict("records"):
        f = int(fl["flow"])
        base = {"run_id": meta.get("run_id"), "flow": f,
                **{k: fl[k] for k in ("name", "kind", "cc", "from", "to", "start_s", "stop_s")},
                "dir": int(fl["dir"]), "window_s": max(fl["win_b"] - fl["win_a"], 0.0)}
        conns = sorted(c for (ff, c) in conn_keys if ff == f)
        # nothing received: 0 when the receiving engine ran and recorded (a flow that
        # never connected delivered nothing); NaN only when there is no record at all
        ran = nonempty(rx) or _receiver_ran(fl, meta)
        g, nbytes = g_flow.get(f, (0.0 if ran else NAN, 0.0 if ran else NAN))
        # Jain's index among the connections of one striped transfer (parallel TCP studies)
        jc = F.jain([g_conn.get((f, c), (NAN, NAN))[0] for c in conns]) \
            if fl["kind"] == "parallel" and len(conns) > 1 else NAN
        rows.append({**base, "conn": -1, "n_conns": len(conns), "goodput_bps": g,
                     "bytes_rx": nbytes, "jain_conns": jc,
                     **_tcp_row(t_flow, f), **_fct_summary(recs, f, fl, conns)})
        if len(conns) > 1:
            for c in conns:
                gc, nc = g_conn.get((f, c), (NAN, NAN))
                rc = recs.loc[(f, c)] if (f, c) in recs.index else None
                fct = float(rc["fct_s"]) if rc is not None else NAN
                rows.append({**base, "conn": c, "n_conns": 1, "goodput_bps": gc,
                             "bytes_rx": nc, **_tcp_row(t_conn, (f, c)),
                             "fct_s": fct,
                             "fct_goodput_bps": F.safe_ratio(
                                 float(rc["bytes_conn"]) * 8 if rc is not None else NAN, fct),
                             "errors": float(rc["errors"]) if rc is not None else 0.0})
    fdf = pd.DataFrame(rows, columns=None if rows else FLOW_ID_COLUMNS + [
        "goodput_bps", "bytes_rx", "fct_s", "errors"])
    fdf = _derived_flow_columns(fdf, timing)

    # -- run level ---------------------------------------------------------------
    top = fdf[fdf["conn"] == -1].set_index("flow").reindex(flows["flow"])
    fair = fairness_columns(flows)
    gp = top["goodput_bps"].to_numpy(float)
    run = {"run_id": meta.get("run_id"), "study": meta.get("study"), "cell": meta.get("cell"),
           "rep": meta.get("rep"), "valid": bool(meta.get("valid", True)),
           "duration_s": timing.duration_s, "warmup_s": timing.warmup_s,
           "base_rtt_s": timing.base_rtt_s, "base_rtt_measured": timing.base_rtt_measured,
           "rate_bps": timing.rate_bps,
           "n_flows": len(flows)}
    agg, agg0 = _aggregate_goodput(rx, flows, timing)
    run.update(goodput_bps=agg, goodput_dir0_bps=agg0,
               utilisation=F.safe_ratio(agg0, timing.rate_bps),
               jain=F.jain(gp[fair]),
               jain_cc=F.jain_groups(gp[fair], flows["cc"].astype(object).fillna("?")
                                     .to_numpy(object)[fair]))

    edges = interval_edges(timing.duration_s, interval_s)
    js = _jain_frame(goodput_matrix(rx, flows, edges), flows, edges)
    multi = js[js["n_active"] >= 2]
    steady = multi[multi["t"] >= timing.warmup_s]
    conv_at = F.convergence_time(multi["t"], multi["jain"], jain_threshold)
    last_join = float(flows.loc[fair, "start_s"].max()) if fair.any() else NAN
    run.update(jain_interval_mean=float(steady["jain"].mean()) if len(steady) else NAN,
               jain_interval_min=float(steady["jain"].min()) if len(steady) else NAN,
               converged_at_s=conv_at, convergence_s=max(conv_at - last_join, 0.0)
               if not np.isnan(conv_at) else NAN, interval_s=interval_s)
    # transperf's convergence fairness: the worst 1 s window once the flows had time
    jmin, t_c, _ = convergence_fairness(rx, flows, timing, convergence_allowance_s)
    run.update(jain_min_1s=jmin, jain_min_1s_from_s=t_c)

    run.update(_run_rtt(tcp, timing))
    run.update(_ping_metrics(tables.get("ping"), timing))
    run.update(_ping_metrics(tables.get("udp"), timing, prefix="udp"))
    run.update(_rr_metrics(tables.get("rr")))
    run.update(_link_metrics(tables.get("link_stats"), timing))
    sums = {c: float(top[c].sum()) if c in top and top[c].notna().any() else NAN
            for c in ("retrans_segs", "retrans_bytes", "sent_bytes")}
    run.update(sums, retrans_ratio=F.safe_ratio(sums["retrans_bytes"], sums["sent_bytes"]))
    run.update(_run_models(run, fdf, timing, meta))
    dl = fdf[(fdf["kind"] == "download") & (fdf["n_conns"] == 1) & fdf["fct_s"].notna()]
    run.update(fct_mean_s=float(dl["fct_s"].mean()) if len(dl) else NAN,
               fct_p95_s=F.percentiles(dl["fct_s"], (95,))[95] if len(dl) else NAN,
               errors=float(top["errors"].sum()) if "errors" in top else 0.0)
    run.update(quality)
    cpu = meta.get("cpu") or {}
    run.update(cpu_busy_frac=cpu.get("busy_frac", NAN), cpu_steal_frac=cpu.get("steal_frac", NAN))
    return fdf, run


def _data_quality(tables: dict, flows: pd.DataFrame) -> dict:
    """Counts that say the samples are damaged: rows of flows meta does not know, and
    connections whose cumulative counters go backwards. Nonzero means: do not trust
    this run's metrics (the runner may flag it invalid). Connections of external
    clients (flow 0xFFFFFFFF) are not damage: they are counted in external_conns."""
    unknown = 0
    for df in tables.values():
        if nonempty(df) and "flow" in df:
            f = df["flow"]
            unknown += int((~f.isin(flows["flow"]) & (f != EXTERNAL_FLOW)).sum())
    conns = tables.get("conns")
    external = (float(conns.loc[conns["flow"] == EXTERNAL_FLOW, "conn"].nunique())
                if nonempty(conns) and "flow" in conns and "conn" in conns else 0.0)
    resets = 0
    for name, col in (("tcpinfo", "bytes_sent"), ("rx", "bytes")):
        df = tables.get(name)
        if nonempty(df) and col in df:
            d = df.sort_values(["flow", "conn", "t"], kind="stable")
            same = (d["flow"].to_numpy()[1:] == d["flow"].to_numpy()[:-1]) & \
                   (d["conn"].to_numpy()[1:] == d["conn"].to_numpy()[:-1])
            v = d[col].to_numpy(float)
            resets += int(np.sum(same & (np.diff(v) < 0)))
    return {"unknown_flow_rows": float(unknown), "counter_resets": float(resets),
            "external_conns": external}


def _main_direction(df, col: str):
    """Keep, per (flow, conn), the samples of one host only: the one that moved the most
    bytes. A request/response connection carries data both ways; mixing two hosts'
    cumulative counters in one series would make nonsense of every difference."""
    if not nonempty(df) or "host" not in df or col not in df:
        return df
    top = df.groupby(["flow", "conn", "host"], sort=False)[col].max().reset_index()
    if not top.duplicated(["flow", "conn"]).any():
        return df
    best = top.sort_values(col).drop_duplicates(["flow", "conn"], keep="last")
    keep = df.set_index(["flow", "conn", "host"]).index.isin(
        best.set_index(["flow", "conn", "host"]).index)
    return df[keep]


def _receiver_ran(fl: dict, meta: dict) -> bool:
    """Did the flow's receiving host run an engine that wrote its records?"""
    return fl.get("to") in (meta.get("engines") or {})   # "to" receives, whatever the kind


def _tcp_row(t: pd.DataFrame, key) -> dict:
    if t.empty or key not in t.index:
        return {}
    return {k: v if isinstance(v, str) or v is None else float(v)
            for k, v in t.loc[key].items()}


def _fct_summary(recs: pd.DataFrame, f: int, fl, conns: list) -> dict:
    """Completion times of a size-limited flow (downloads): over its connections."""
    out = {"fct_s": NAN, "fct_p95_s": NAN, "fct_max_s": NAN, "completed": NAN,
           "fct_goodput_bps": NAN, "errors": 0.0}
    if recs.empty:
        return out
    r = recs[recs.index.get_level_values("flow") == f]
    out["errors"] = float(r["errors"].sum())
    if not fl["sized"]:
        return out
    fct = r["fct_s"].dropna()
    if fct.empty:
        return out
    out.update(fct_s=float(fct.mean()), fct_p95_s=F.percentiles(fct, (95,))[95],
               fct_max_s=float(fct.max()), completed=float(fct.size),
               fct_goodput_bps=F.safe_ratio(float(r["bytes_conn"].sum()) * 8, float(fct.sum())))
    return out


def _derived_flow_columns(fdf: pd.DataFrame, timing) -> pd.DataFrame:
    """Ratios and model values computed from the per-row measurements."""
    def col(name):
        return fdf[name].astype(float) if name in fdf else pd.Series(NAN, index=fdf.index)
    d = col("bytes_sent")
    fdf["sent_bytes"] = d
    fdf["retrans_bytes"] = col("bytes_retrans")
    fdf["retrans_segs"] = col("total_retrans")
    fdf["retrans_ratio"] = fdf["retrans_bytes"] / d.where(d > 0)
    dlv = col("delivered")
    fdf["ce_ratio"] = col("delivered_ce") / dlv.where(dlv > 0)
    mss = col("mss").where(col("mss") > 0, 1448.0)
    segs = d / mss
    fdf["loss_p"] = fdf["retrans_segs"] / segs.where(segs > 0)
    rtt = col("rtt_mean_s")
    # base RTT 0 (no emulated delay): ratios over it are undefined, not infinite
    base = timing.base_rtt_s if timing.base_rtt_s > 0 else NAN
    fdf["rtt_inflation"] = rtt / base
    fdf["queue_delay_s"] = rtt - timing.base_rtt_s
    fdf["power"] = fdf["goodput_bps"] / rtt.where(rtt > 0)
    # what bounded each flow: the receive window at the base RTT is a ceiling no flow can
    # pass; the congestion window at the measured RTT is what the sender allowed itself
    fdf["rwnd_bound_bps"] = col("wnd_bytes") * 8.0 / base
    fdf["cwnd_bound_bps"] = col("cwnd_mean_pkts") * mss * 8.0 / rtt.where(rtt > 0)
    # what limited it: judged from the samples (metrics/limits.py), with the kernel's
    # own accounting as a second opinion
    for c in ("limited_by", "limit_evidence"):
        if c not in fdf:
            fdf[c] = None
    fdf = L.kernel_opinion(fdf, col)
    fdf["mathis_bps"] = [F.mathis_bps(m, r, p) for m, r, p in zip(mss, rtt, fdf["loss_p"])]
    top = fdf["conn"] == -1
    tot = fdf.loc[top, "goodput_bps"].sum()
    fdf["share"] = fdf["goodput_bps"] / tot if tot > 0 else NAN
    drop = [c for c in COUNTERS if c in fdf]
    return fdf.drop(columns=drop)


def _run_rtt(tcp, timing) -> dict:
    keys = ["rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_p99_s", "rtt_min_s"]
    r = dict.fromkeys(keys, NAN)
    if nonempty(tcp) and "srtt_us" in tcp:
        d = tcp[(tcp["t"] >= timing.warmup_s) & (tcp["t"] <= timing.duration_s)]
        x = d["srtt_us"].to_numpy(float) * 1e-6
        if x.size:
            p = F.percentiles(x)
            r.update(rtt_mean_s=float(x.mean()), rtt_p50_s=p[50], rtt_p95_s=p[95],
                     rtt_p99_s=p[99], rtt_min_s=float(x.min()))
    r["rtt_inflation"] = F.safe_ratio(r["rtt_mean_s"], timing.base_rtt_s
                                      if timing.base_rtt_s > 0 else NAN)
    r["queue_delay_s"] = r["rtt_mean_s"] - timing.base_rtt_s
    return r


def _run_models(run: dict, fdf: pd.DataFrame, timing, meta: dict) -> dict:
    """Model values to set beside the measured ones (BDP, buffer in BDPs, Mathis, power)."""
    mss = float(fdf["mss"].median()) if "mss" in fdf and fdf["mss"].notna().any() else 1448.0
    bdp = F.bdp_bytes(timing.rate_bps, timing.base_rtt_s)
    bott = meta.get("bottleneck") or {}
    if bott.get("buffer_packets") is not None:
        buf_bdp = F.safe_ratio(bott["buffer_packets"] * (mss + 52), bdp)  # wire size/packet
    elif bott.get("buffer_bytes") is not None:
        buf_bdp = F.safe_ratio(bott["buffer_bytes"], bdp)
    else:
        buf_bdp = NAN
    rtt = run["rtt_mean_s"] if not np.isnan(run["rtt_mean_s"]) else run.get("ping_rtt_mean_s", NAN)
    n = int(((fdf["conn"] == -1) & (fdf["dir"] == 0)).sum()) or 1
    return {"bdp_bytes": bdp, "bdp_pkts": F.safe_ratio(bdp, mss), "buffer_bdp": buf_bdp,
            "power": F.safe_ratio(run["goodput_dir0_bps"], rtt),
            "power_norm": F.safe_ratio(run["utilisation"], F.safe_ratio(rtt, timing.base_rtt_s)),
            "mathis_link_bps": F.mathis_bps(mss, rtt, run["loss_ratio"]),
            "fair_share_bps": F.safe_ratio(timing.rate_bps, n)}
