"""Anomalies: what in a run looks like a failure although the run was measured properly.

A run is *invalid* when the machine or a tool failed the experiment (validity.py); it is
never averaged in. An *anomaly* is different: the network may really have done it (a RED
queue that locks a flow out, a flow stuck in RTO backoff), so the run stays valid and its
numbers count, but the anomaly is listed beside them everywhere (meta.json, runs.parquet,
`ccarena show`, `ccarena check`, the report), so no table shows it as a normal result.

    anomalies(tables, meta) -> [{"kind", "flow", "value", "what"}]

kinds:
  connect_failed       a connection of the flow never connected (timeout, refused, reset)
  no_delivery          the flow's receiver got no byte at all
  stalled              a backlogged flow (bulk, parallel) received nothing for longer than
                       STALL_MIN_S or STALL_RTTS base RTTs (many retransmission timeouts)
  stuck_in_recovery    the sender spent longer than that without leaving loss recovery
                       (Recovery or Loss state) at a stretch, delivering nothing or under
                       CRAWL_FRAC of its fair share of the bottleneck (rate / backlogged
                       connections): without SACK a burst of losses is repaired one hole
                       per round trip while partial ACKs keep the RTO from firing, so a
                       flow can crawl through one recovery for tens of seconds
  download_incomplete  downloads (or requests) that started and never completed
  emulator_drops       the user-space link lost packets for its own reasons (its receive or
                       send path, or its ports), not by the emulated queue or loss model
Thresholds are stated here, not tuned per study."""
from __future__ import annotations

import numpy as np
import pandas as pd

STALL_MIN_S = 2.0      # a gap shorter than this is ordinary (an RTO or two, a SYN retry)
STALL_RTTS = 20        # ... or shorter than this many base RTTs
RECOVERY_STATES = (3, 4)   # TCP_CA_Recovery, TCP_CA_Loss
CRAWL_FRAC = 0.1       # recovery at a tenth of the fair share is a crawl, not a repair
BACKLOGGED = ("bulk", "parallel")


def _threshold(meta: dict) -> float:
    return max(STALL_MIN_S, STALL_RTTS * float(meta.get("base_rtt_s") or 0.0))


def _t(df: pd.DataFrame, meta: dict) -> pd.Series:
    if "t" in df:
        return df["t"].astype(float)
    return (df["t_ns"].astype("int64") - int(meta.get("t0_ns") or 0)) / 1e9


def _flow_end(f: dict, meta: dict) -> float:
    stop = f.get("stop_s")
    return float(stop) if stop is not None else float(meta.get("duration_s") or 0.0)


def longest_gap(times: np.ndarray, start: float, end: float) -> tuple[float, float]:
    """The longest interval in [start, end] without any of `times` -> (length, its start)."""
    ts = np.sort(times[(times >= start) & (times <= end)])
    edges = np.concatenate(([start], ts, [end]))
    gaps = np.diff(edges)
    if not len(gaps):
        return 0.0, start
    i = int(np.argmax(gaps))
    return float(gaps[i]), float(edges[i])


def longest_stretch(t: np.ndarray, flag: np.ndarray) -> tuple[float, float]:
    """Longest run of consecutive True samples -> (its length in time, its start)."""
    best, best_at, run_at = 0.0, 0.0, None
    for ti, on in zip(t, flag):
        if on and run_at is None:
            run_at = ti
        elif not on and run_at is not None:
            if ti - run_at > best:
                best, best_at = ti - run_at, run_at
            run_at = None
    if run_at is not None and len(t) and t[-1] - run_at > best:
        best, best_at = t[-1] - run_at, run_at
    return float(best), float(best_at)


def _deliveries(rx, flow: int) -> pd.DataFrame | None:
    """The rx samples of `flow` at which its receiver had got more bytes than at the
    connection's previous sample (rx holds cumulative byte counts per connection)."""
    if rx is None or not len(rx):
        return None
    r = rx[rx["flow"] == flow].sort_values("t_ns", kind="stable")
    grew = r.groupby("conn")["bytes"].diff().fillna(r["bytes"]) > 0
    return r[grew]


def _connect_failures(conns, flow: int, name: str, meta: dict) -> list[dict]:
    if conns is None or not len(conns) or "error" not in conns:
        return []
    c = conns[conns["flow"] == flow]
    err = c["error"].astype("string").fillna("")
    never = c["connected_ns"].isna() if "connected_ns" in c else pd.Series(False, c.index)
    bad = c[(err.str.len() > 0) & never]
    out = []
    for _, r in bad.iterrows():
        at = r.get("end_ns")
        when = (f" at {(int(at) - int(meta.get('t0_ns') or 0)) / 1e9:.2f} s"
                if pd.notna(at) and meta.get("t0_ns") else "")
        out.append({"kind": "connect_failed", "flow": name, "value": str(r["error"]),
                    "what": f"flow {name}: connection {int(r['conn'])} never connected "
                            f"({r['error']}{when})"})
    return out


def _fair_share(meta: dict) -> float | None:
    """The bottleneck's rate over the run's backlogged connections (None: rate unknown)."""
    rate = (meta.get("bottleneck") or {}).get("rate_bps")
    n = sum(int(f.get("conns") or 1) for f in meta.get("flows") or []
            if f.get("kind") in BACKLOGGED)
    return float(rate) / max(n, 1) if rate else None


def _stuck(sc: pd.DataFrame, meta: dict, thr: float, fair: float | None):
    """The longest stretch over `thr` s in loss recovery during which the connection
    delivered nothing, or (with the fair share known) under CRAWL_FRAC of it ->
    (length s, start s, delivery rate bit/s), else None. A sender that recovers loss
    after loss at line rate (BBR at 1 % random loss) is not stuck."""
    t = _t(sc, meta).to_numpy()
    rec = sc["ca_state"].isin(RECOVERY_STATES).to_numpy()
    col = "delivered" if "delivered" in sc else "bytes_acked" if "bytes_acked" in sc else None
    if col is None:
        dur, at = longest_stretch(t, rec)
        return (dur, at, 0.0) if dur > thr else None
    got = sc[col].astype(float).diff().fillna(0.0).clip(lower=0).to_numpy()
    unit = 8.0 * (sc["mss"].astype(float).to_numpy() if col == "delivered" and "mss" in sc
                  else 1.0)
    bits = got * unit
    # nothing at all: the longest stretch in recovery without a delivery
    dur, at = longest_stretch(t, rec & (got <= 0))
    if dur > thr:
        return dur, at, 0.0
    if not fair or col == "delivered" and "mss" not in sc:
        return None
    best = None
    i, n = 0, len(t)
    while i < n:                      # each maximal stretch in recovery
        if not rec[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and rec[j + 1]:
            j += 1
        d = t[j] - t[i]
        if d > thr:
            rate = bits[i + 1:j + 1].sum() / d
            if rate < CRAWL_FRAC * fair and (best is None or d > best[0]):
                best = (float(d), float(t[i]), float(rate))
        i = j + 1
    return best


def anomalies(tables: dict, meta: dict) -> list[dict]:
    out: list[dict] = []
    rx, tcp, conns = (tables.get(k) for k in ("rx", "tcpinfo", "conns"))
    thr = _threshold(meta)
    engines = meta.get("engines") or {}
    fair = _fair_share(meta)
    for f in meta.get("flows") or []:
        fid, name, kind = f["flow"], f["name"], f["kind"]
        start, end = float(f.get("start_s") or 0.0), _flow_end(f, meta)
        out += _connect_failures(conns, fid, name, meta)
        got = _deliveries(rx, fid)
        receiver = f["to"]          # "to" receives the data, whatever the kind
        if (got is None or not len(got)) and (receiver in engines or not engines):
            out.append({"kind": "no_delivery", "flow": name, "value": 0,
                        "what": f"flow {name}: its receiver got no data in the whole run"})
            continue
        if kind in BACKLOGGED and got is not None and len(got) and end - start > thr:
            stop = end
            if f.get("bytes") is not None and conns is not None and len(conns):
                # a size-limited transfer is done when its last byte arrived
                last = conns[(conns["flow"] == fid)]["last_byte_ns"].max()
                if pd.notna(last) and meta.get("t0_ns"):
                    stop = min(stop, (int(last) - int(meta["t0_ns"])) / 1e9)
            # per connection: one locked-out connection of a parallel transfer is hidden
            # when the others' deliveries are pooled
            for conn, gc in got.groupby("conn"):
                gap, at = longest_gap(_t(gc, meta).to_numpy(), start, stop)
                if gap > thr:
                    which = f" connection {int(conn)}" if kind == "parallel" else ""
                    out.append({"kind": "stalled", "flow": name, "value": round(gap, 3),
                                "what": f"flow {name}{which}: received nothing for "
                                        f"{gap:.1f} s (from {at:.1f} s; limit {thr:.1f} s)"})
                    break
        if tcp is not None and len(tcp) and "ca_state" in tcp:
            s = tcp[tcp["flow"] == fid]
            if "host" in s:
                s = s[s["host"] == f["from"]]     # the data sender's view
            for conn, sc in s.groupby("conn") if len(s) else []:
                # a paced or request-response flow's rate is its application's: only
                # a flow that always has data is held to its fair share
                found = _stuck(sc.sort_values("t_ns"), meta, thr,
                               fair if kind in BACKLOGGED + ("download",) else None)
                if found:
                    dur, at, rate = found
                    how = "delivering nothing" if not rate else (
                        f"delivering {rate / 1e6:.3g} Mbit/s (under {CRAWL_FRAC:.0%} of its "
                        f"fair share, {fair / 1e6:.3g} Mbit/s)")
                    out.append({"kind": "stuck_in_recovery", "flow": name,
                                "value": round(dur, 3),
                                "what": f"flow {name}: connection {int(conn)} stayed in loss "
                                        f"recovery for {dur:.1f} s (from {at:.1f} s), {how}"})
                    break
        if kind == "download" and conns is not None and len(conns) and f.get("size"):
            c = conns[(conns["flow"] == fid) & (conns.get("side") == "recv")]
            short = c[c["bytes"].fillna(0) < f["size"]] if len(c) else c
            failed = 0
            if len(short) and meta.get("t0_ns"):
                t0 = int(meta["t0_ns"])
                # a download the run's end cut while it still made progress is no failure;
                # one that ended short before the end, or had stalled, is
                ended = (short["end_ns"].astype(float) - t0) / 1e9 if "end_ns" in short \
                    else pd.Series(float("nan"), index=short.index)
                last = short["last_byte_ns"] if "last_byte_ns" in short else None
                last = ((last.astype(float) - t0) / 1e9) if last is not None else \
                    pd.Series(float("nan"), index=short.index)
                began = (short["connect_start_ns"].astype(float) - t0) / 1e9 \
                    if "connect_start_ns" in short else last
                progress = last.fillna(began)
                failed = int(((ended < end - 0.1) | (progress < end - thr)).sum())
            if failed:
                out.append({"kind": "download_incomplete", "flow": name, "value": failed,
                            "what": f"flow {name}: {failed} of {len(c)} downloads ended "
                                    "short of their size or stopped receiving"})
    out += _emulator_drops(meta)
    return out


def _emulator_drops(meta: dict) -> list[dict]:
    link = meta.get("link") or {}
    own = int(link.get("rx_ring_drops") or 0) + int(link.get("tx_errors") or 0)
    own += sum(int((c or {}).get("dropped") or 0)
               for c in (meta.get("link_ingress") or {}).values())
    if not own:
        return []
    return [{"kind": "emulator_drops", "flow": None, "value": own,
             "what": f"the link emulator lost {own} packets for its own reasons (its "
                     "receive or send path, or its ports), not by the emulated queue"}]
