"""Synthetic runs for tests, benchmarks and documentation figures.

Contract: `synthetic_run(...) -> (tables, meta)` builds per-run tables with the columns of
docs/dev/contracts.md §5 and a meta dict like meta.json, from a seeded RNG, with no
network. The numbers are plausible (flows share the rate, RTT = base + queueing delay,
sawtooth windows) but not a TCP model: use them to exercise code, not to claim physics.
`write_synthetic_study(dir, ...)` lays out a whole results directory (runs/*/…parquet,
meta.json, runs/flows/cells.parquet, study.json, plan.json).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MSS = 1448


def synthetic_run(n_flows: int = 4, duration_s: float = 30.0, dt: float = 0.01,
                  rate_bps: float = 10e6, delay_s: float = 0.010, buffer_pkts: int = 100,
                  ccs=("cubic", "reno"), shares=None, seed: int = 1, run_id: str = "r0",
                  cell: str = "c0", rep: int = 0, warmup_s: float = 2.0,
                  t0_ns: int = 10**12, params: dict | None = None,
                  stagger_s: float = 0.0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    t = np.arange(1, int(round(duration_s / dt)) + 1) * dt
    k = t.size
    base_rtt = 2 * delay_s
    shares = np.asarray(shares if shares is not None else np.ones(n_flows), float)
    starts = np.arange(n_flows) * stagger_s
    active = t[:, None] >= starts[None, :]
    w = np.where(active, shares[None, :] * (1 + 0.2 * rng.standard_normal((k, n_flows))), 0)
    w = np.clip(w, 0, None)
    frac = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-12)
    # small buffers cost utilisation (a plausible shape, not a model)
    util = min(0.99, 0.98 - 1.6 / max(buffer_pkts, 1) + rng.normal(0, 0.005))
    rate_flow = util * rate_bps / 8 * frac  # bytes/s per flow
    cum = np.cumsum(rate_flow * dt, axis=0)
    qlen = np.clip(buffer_pkts * (0.5 + 0.3 * np.sin(t / 2.0))[:, None]
                   + rng.normal(0, 3, (k, 1)), 0, buffer_pkts)[:, 0]
    qdelay = qlen * (MSS + 52) * 8 / rate_bps
    srtt = (base_rtt + qdelay)[:, None] * (1 + 0.02 * rng.random((k, n_flows)))
    sent = cum * 1.01
    retr = cum * 0.01
    tns = t0_ns + (t * 1e9).astype("int64")
    flow = np.tile(np.arange(n_flows), k)
    rep_t = np.repeat(t, n_flows)
    rep_ns = np.repeat(tns, n_flows)
    on = active.ravel()
    cwnd = (srtt * rate_flow / MSS).ravel()
    cwnd = np.maximum(cwnd * (1 + 0.3 * np.sin(rep_t * 3)), 2).astype("int64")
    tcp = pd.DataFrame({
        "run_id": run_id, "t_ns": rep_ns, "t": rep_t, "flow": flow, "conn": 0,
        "cwnd": cwnd,
        "ssthresh": 64, "srtt_us": (srtt.ravel() * 1e6).astype("int64"),
        "rttvar_us": 1000, "min_rtt_us": int(base_rtt * 1e6), "mss": MSS,
        "total_retrans": (retr.ravel() / MSS).astype("int64"), "lost": 0, "unacked": cwnd,
        "sacked": 0, "ca_state": 0, "snd_wnd": 3 * 2**20, "rcv_wnd": 65535,
        "delivery_rate": (rate_flow.ravel()).astype("int64"),
        "pacing_rate": (2 * rate_flow.ravel()).astype("int64"),
        "bytes_acked": cum.ravel().astype("int64"), "bytes_sent": sent.ravel().astype("int64"),
        "bytes_retrans": retr.ravel().astype("int64"), "busy_us": (rep_t * 1e6).astype("int64"),
        "rwnd_limited_us": 0, "sndbuf_limited_us": 0,
        "delivered": (cum.ravel() / MSS).astype("int64"), "delivered_ce": 0,
        # a bulk sender held by its congestion window: cwnd in flight, more data waiting
        "notsent_bytes": 65536, "retrans": 0, "sndbuf": 4 * 2**20, "wmem_queued": 3 * 2**20,
    })[on].reset_index(drop=True)
    rx = pd.DataFrame({"run_id": run_id, "t_ns": rep_ns, "t": rep_t, "flow": flow, "conn": 0,
                       "bytes": cum.ravel().astype("int64")})[on].reset_index(drop=True)
    n_tcp = len(tcp)
    link = pd.DataFrame({
        "run_id": run_id, "t_ns": np.concatenate([tns, tns]), "t": np.concatenate([t, t]),
        "dir": np.repeat([0, 1], k), "qlen_pkts": np.concatenate([qlen, np.zeros(k)]).astype(int),
        "qlen_bytes": np.concatenate([qlen * (MSS + 52), np.zeros(k)]).astype("int64"),
        "arrivals": np.concatenate([np.full(k, 100), np.full(k, 50)]),
        "departures": np.concatenate([np.full(k, 99), np.full(k, 50)]),
        "drops": np.concatenate([rng.binomial(100, 0.01, k), np.zeros(k, int)]),
        "marks": 0,
        "bytes_out": np.concatenate([np.full(k, rate_bps * dt / 8 * 0.97), np.full(k, 3000)]
                                    ).astype("int64"),
    })
    pt = np.arange(0.1, duration_s, 0.1)
    prt = base_rtt + np.interp(pt, t, qdelay)
    prt[rng.random(pt.size) < 0.01] = np.nan
    ping = pd.DataFrame({"run_id": run_id, "t_ns": t0_ns + (pt * 1e9).astype("int64"), "t": pt,
                         "probe": "ping0", "seq": np.arange(pt.size), "rtt_s": prt})
    conns = pd.DataFrame([
        {"run_id": run_id, "t_ns": t0_ns, "t": 0.0, "flow": f, "conn": 0, "role": role,
         "side": side, "cc": ccs[f % len(ccs)], "connect_start_ns": t0_ns + int(starts[f] * 1e9),
         "connected_ns": t0_ns + int((starts[f] + base_rtt) * 1e9),
         "first_byte_ns": t0_ns + int((starts[f] + 2 * base_rtt) * 1e9),
         "last_byte_ns": int(tns[-1]), "end_ns": int(tns[-1]), "bytes": int(cum[-1, f]),
         "error": None}
        for f in range(n_flows) for role, side in (("client", "send"), ("server", "recv"))])
    meta = {
        "run_id": run_id, "study": "synthetic", "cell": cell, "cell_params": dict(params or {}),
        "rep": rep, "seed": seed, "t0_ns": t0_ns, "duration_s": duration_s,
        "warmup_s": warmup_s, "base_rtt_s": base_rtt,
        "bottleneck": {"rate_bps": rate_bps, "delay_s": delay_s, "buffer_packets": buffer_pkts,
                       "queue": "droptail"},
        "flows": [{"flow": f, "name": f"bulk{f}", "kind": "bulk", "from": f"s{f + 1}",
                   "to": f"r{f + 1}", "cc": ccs[f % len(ccs)], "cc_kernel": ccs[f % len(ccs)],
                   "cc_source": "kernel", "conns": 1, "start_s": float(starts[f]),
                   "stop_s": duration_s} for f in range(n_flows)],
        "valid": True, "invalid_reasons": [], "cpu": {"busy_frac": 0.3, "steal_frac": 0.0},
    }
    assert n_tcp == len(rx)
    tables = {"tcpinfo": tcp, "rx": rx, "conns": conns, "ping": ping, "link_stats": link,
              "rr": pd.DataFrame(columns=["run_id", "t_ns", "t", "flow", "conn", "latency_ns"])}
    return tables, meta


def write_synthetic_study(study_dir, *, buffers=(20, 100), ccs=(("cubic",), ("reno",)),
                          reps: int = 3, n_flows: int = 2, duration_s: float = 10.0,
                          dt: float = 0.01, invalid: tuple = ()) -> Path:
    """A small results directory written through the store, as a real study's is: cells =
    buffers x ccs, `reps` runs each.

    invalid: run ids to mark invalid (to check they are counted, not averaged)."""
    from ccarena.analysis import aggregates
    from ccarena.metrics.run import run_metrics
    from ccarena.store.writer import Writer
    d = Path(study_dir)
    w = Writer.create_at(d, "synthetic")
    res = w.results
    cells, order = {}, []
    seed = 0
    for buf in buffers:
        for cc in ccs:
            cell = f"buf{buf}-{'+'.join(cc)}"
            params = {"bottleneck.buffer": f"{buf}p", "flow.bulk.cc": "+".join(cc)}
            cells[cell] = params
            for rep in range(reps):
                seed += 1
                rid = f"{cell}-r{rep}"
                tables, meta = synthetic_run(
                    n_flows=n_flows, duration_s=duration_s, dt=dt, buffer_pkts=buf, ccs=cc,
                    seed=seed, run_id=rid, cell=cell, rep=rep, params=params,
                    shares=np.linspace(1.0, 0.3 if cc[0] == "reno" else 0.8, n_flows))
                label = f"{len(order):03d}-{rid}"  # like the store: dirs named by label
                meta["label"] = label
                if rid in invalid:
                    meta.update(valid=False, invalid_reasons=["cpu steal 12% > 5%"])
                fdf, run = run_metrics(tables, meta)
                run["valid"] = meta["valid"]
                w.write_run(w.new_run(label), tables, fdf, run, meta)
                order.append({"index": len(order), "cell": cell, "rep": rep, "seed": seed,
                              "label": label})
    w.write_study_raw({
        "study": {"name": "synthetic", "duration": f"{duration_s}s", "warmup": "2s",
                  "repetitions": reps},
        "bottleneck": {"rate": "10mbit", "delay": "10ms", "queue": "droptail"},
        "flow": [{"name": "bulk", "from": "s1", "to": "r1"}],
        "sweep": {"bottleneck.buffer": [f"{b}p" for b in buffers],
                  "flow.bulk.cc": ["+".join(c) for c in ccs]}},
        {"version": 1, "study": "synthetic", "seed": 1, "shuffled": False, "cells": cells,
         "runs": order})
    w.write_environment({"kernel": "0.0.0-synthetic", "machine": "x86_64", "cpus": 1})
    aggregates.refresh(res)
    return d
