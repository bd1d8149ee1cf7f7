"""When a run is invalid: the machine or the tools failed the experiment, not the network.

A run is flagged (never silently averaged in) when
- the hypervisor stole the CPU for more than STEAL_MAX of the run (busy time is recorded
  but not judged: a busy machine matters only when it makes the tools late, which the
  sampling-gap and link-lateness checks see directly);
- a flow engine missed more than SAMPLE_GAP_MAX of its sampling ticks;
- the user-space link lost packets on the way into it (its ports' veth peers dropped
  them: testbed/user_link.ingress_counters), in its own receive or send path, or released
  more than LATE_MAX of packets later than its tolerance (testbed/user_link.late_tolerance_ns);
- the kernel backend's shaper sent below SHAPER_MIN of its rate while its queue was
  backlogged (judge_shaper);
- the kernel backend's delay ran late: no round trip came back within the tolerance of
  the base RTT the study gives its path, or, with no flow to queue behind, more than
  LATE_MAX of the pings came back later than that (judge_kernel_delay);
- the CPU, not the emulated link, limited backlogged flows: the link delivered below
  CPU_LIMIT_UTIL_MAX of its rate, its queue never reached CPU_LIMIT_QUEUE_FRAC of its
  buffer, the senders lost packets the link never dropped, and the machine's CPU was at
  least CPU_LIMIT_BUSY_MIN busy (judge_cpu_limited); or the link delivered below
  CPU_LIMIT_UTIL_MAX and its drop-tail queue overflowed while the senders' windows were
  too small to fill it: packets reached it in bursts that only a machine short of CPU
  makes (judge_cpu_bursts);
- the setup overran the lead before t0 while the user-space link follows a rate schedule
  or trace (run/one_run.py): the link counts it from the planned t0, the flows would lag;
- a socket ran another congestion control than the one the study asked for;
- a process failed.

The first seven (and a tracer that lost events) are the machine's noise: the experiment
was not measured, through no fault of its own, and the runner runs it again (`noise_only`,
study.reruns). The others say something failed or is wrong, and re-running would hide it."""
from __future__ import annotations

import numpy as np
import pandas as pd

STEAL_MAX = 0.25
SAMPLE_GAP_MAX = 0.10
LINK_RING_DROP_MAX = 0.001
LATE_MAX = 0.02
SHAPER_MIN = 0.95
SHAPER_JUDGE_S = 1.0
CPU_LIMIT_UTIL_MAX = 0.80
CPU_LIMIT_QUEUE_FRAC = 0.5
CPU_LIMIT_BUSY_MIN = 0.90
CPU_LIMIT_JUDGE_S = 1.0
CPU_LIMIT_JUDGE_RTTS = 10
CPU_LIMIT_LOST_MIN = 0.001     # of the segments sent, and at least CPU_LIMIT_LOST_MIN_PKTS
CPU_LIMIT_LOST_MIN_PKTS = 10
# the path's own round trip on the kernel backend without netem (veth pairs, two routers,
# htb): ~50 us on a host; in the reference kernel under QEMU's TCG its floor was 0.1-0.3 ms
# and its median 0.5-1.2 ms (docs/vm.md)
KERNEL_PATH_RTT_S = 1e-3
BACKLOGGED = ("bulk", "parallel")
# judge_cpu_bursts: the largest burst one ACK releases from one connection on a path whose
# ACKs the bottleneck clocks (a segment-offload unit), the buffer it needs in BDPs, and
# the share of the time the windows are judged over
BURST_GSO_BYTES = 65536
BURST_MIN_BUFFER_BDP = 0.10
BURST_INFLIGHT_QUANTILE = 0.95


def judge_cpu(cpu: dict) -> list[str]:
    out = []
    if cpu.get("steal_frac", 0) > STEAL_MAX:
        out.append(f"CPU steal {cpu['steal_frac']:.0%} of the run (limit {STEAL_MAX:.0%})")
    return out


def judge_sampler(what: str, ticks: int, missed: int) -> list[str]:
    """A sampler that missed more than SAMPLE_GAP_MAX of its ticks left holes the
    queue and rate series would hide."""
    total = ticks + missed
    if total and missed / total > SAMPLE_GAP_MAX:
        return [f"{what} missed {missed} of {total} sampling ticks"]
    return []


def judge_engine(host: str, engine: dict) -> list[str]:
    n = engine.get("samples", 0) or 0
    gaps = engine.get("sample_gaps", 0) or 0
    if n and gaps / max(n, 1) > SAMPLE_GAP_MAX:
        return [f"flow engine on {host} missed {gaps} of {n} sampling ticks"]
    return []


def judge_link(link: dict, ingress: dict | None = None) -> list[str]:
    """`link` is link.json; `ingress` what its ports' peers dropped on the way in, by
    direction ({"w2e": {"dropped": n, ...}}: the emulator cannot see those; the
    orchestrator counts them), judged per direction against what reached it."""
    out = []
    for d, s in (link.get("directions") or {}).items() if isinstance(link.get("directions"),
                                                                      dict) else []:
        fwd = s.get("forwarded", 0) or 0
        drops = s.get("rx_ring_drops", 0) or 0
        late = s.get("late_packets", 0) or 0
        if fwd and drops / fwd > LINK_RING_DROP_MAX:
            out.append(f"link {d}: {drops} packets lost in its own receive path")
        if fwd and late / fwd > LATE_MAX:
            out.append(f"link {d}: {late} of {fwd} packets released late")
    fwd = link.get("forwarded", 0) or 0
    drops = link.get("rx_ring_drops", 0) or 0
    tx_lost = link.get("tx_errors", 0) or 0
    late = link.get("late_packets", 0) or 0
    if fwd and drops / fwd > LINK_RING_DROP_MAX:
        out.append(f"link: {drops} packets lost in its own receive path")
    for d, c in sorted((ingress or {}).items()):
        lost = c.get("dropped", 0) or 0
        offered = ((link.get(d) or {}).get("arrivals", 0) or 0) + lost
        if lost and lost / offered > LINK_RING_DROP_MAX:
            out.append(f"link {d}: {lost} of {offered} packets lost on the way into it "
                       f"(its port could not take them)")
    # packets the kernel refused to take from the emulator (e.g. the receiving CPU's
    # backlog full for longer than the emulator waits): lost, and not by the model
    if fwd and tx_lost / fwd > LINK_RING_DROP_MAX:
        out.append(f"link: {tx_lost} packets lost in its own send path")
    if fwd and late / fwd > LATE_MAX:
        out.append(f"link: {late} of {fwd} packets released late")
    return out


def shaper_delivery(stats, rates: dict) -> dict:
    """Kernel backend: how much of its rate each rate-limited qdisc sent while its queue
    could not run dry -> {"w2e"|"e2w": {"frac": sent / (rate x time), "busy_s": time}}.

    `stats` is the qdisc sampler's table (t_ns, dir, qlen_bytes, bytes_out per ~10 ms);
    `rates` maps a direction (0 = w2e, 1 = e2w) to its rate in bit/s (None: unlimited).
    An interval counts when the backlog at its start alone would keep the link busy for
    all of it, so the link cannot have idled for want of packets."""
    out = {}
    if stats is None or len(stats) == 0:
        return out
    for d, rate in sorted(rates.items()):
        if not rate:
            continue
        s = stats[stats["dir"] == d].sort_values("t_ns")
        t = s["t_ns"].to_numpy(dtype="int64")
        backlog = s["qlen_bytes"].to_numpy(dtype="float64")
        sent = s["bytes_out"].to_numpy(dtype="float64")[1:]
        dt = (t[1:] - t[:-1]) / 1e9
        full = backlog[:-1] * 8 >= rate * dt
        busy_s = float(dt[full].sum())
        if busy_s > 0:
            out["w2e" if d == 0 else "e2w"] = {
                "frac": float(sent[full].sum() * 8 / (rate * busy_s)), "busy_s": busy_s}
    return out


def judge_shaper(delivery: dict) -> list[str]:
    """A shaper that sent below SHAPER_MIN of its rate with a standing queue fell behind
    itself — htb's timer delayed on a busy or stolen CPU — and the run's bottleneck was
    slower than the study says (seen here: a 100 Mbit/s htb delivering 83 Mbit/s for a
    whole minute at 14 % CPU steal, with a standing queue and no losses). Judged only
    with SHAPER_JUDGE_S of such time or more."""
    return [f"kernel shaper {d}: sent {v['frac']:.0%} of its rate over {v['busy_s']:.1f} s "
            f"with a standing queue (limit {SHAPER_MIN:.0%})"
            for d, v in sorted(delivery.items())
            if v["busy_s"] >= SHAPER_JUDGE_S and v["frac"] < SHAPER_MIN]


def kernel_delay(paths: list[dict], tolerance_s: float, unloaded: bool) -> dict:
    """The kernel backend's delay, from what the endpoints saw -> meta["kernel_delay"].

    netem counts nothing per packet, so unlike ccarena-link it cannot say when it released
    a packet late (its hrtimer fired late on a busy or slow CPU: 5-31 ms under QEMU's TCG
    on a loaded host). A round trip can never be shorter than the delays the study puts
    on its path, but on a path with no queue it is no longer than that either, apart from
    the path's own time: so the floor of the round trips — the smallest ping RTT, each
    TCP connection's min_rtt (its handshake found the path empty) — shows an emulator
    that ran late on every packet, and with no flow to queue behind (`unloaded`) each ping
    shows its own lateness.

    `paths`: {"path": name, "base_s": the RTT the study gives it (2 x (delay + the two
    hosts' extra delays)), "jitter_s", "rtt_s": samples}; `tolerance_s`: how far above
    base_s a round trip may come back (plus 2 x jitter)."""
    out: dict = {"tolerance_s": tolerance_s, "unloaded": unloaded, "paths": {}}
    excess = []
    for p in paths:
        r = np.asarray(p["rtt_s"], dtype=float)
        r = r[~np.isnan(r)]
        if not len(r):
            continue
        allowance = tolerance_s + 2 * p.get("jitter_s", 0.0)
        rec = {"n": int(len(r)), "base_s": p["base_s"], "floor_s": float(r.min()),
               "excess_s": float(r.min() - p["base_s"]), "allowance_s": allowance}
        if unloaded and p["path"].startswith("ping"):
            rec["late"] = int((r > p["base_s"] + allowance).sum())
        out["paths"][p["path"]] = rec
        excess.append((rec["excess_s"] - allowance, p["path"]))
    if excess:
        out["floor_path"] = min(excess)[1]
    return out


def judge_kernel_delay(rec: dict) -> list[str]:
    """kernel_delay's record -> the reasons its emulated delay ran late (none if the
    record has no path)."""
    paths = rec.get("paths") or {}
    out = []
    if paths:
        name = rec["floor_path"]
        p = paths[name]
        if p["excess_s"] > p["allowance_s"]:
            out.append(f"kernel link late on every packet: no round trip came back within "
                       f"{p['allowance_s'] * 1e3:.2g} ms of its base RTT (the closest: "
                       f"{name}, {p['floor_s'] * 1e3:.3g} ms for a base RTT of "
                       f"{p['base_s'] * 1e3:.3g} ms)")
    for name, p in sorted(paths.items()):
        late = p.get("late", 0)
        if p["n"] and late / p["n"] > LATE_MAX:
            out.append(f"kernel link late: {late} of {p['n']} replies on {name} came back "
                       f"more than {p['allowance_s'] * 1e3:.2g} ms after the base RTT "
                       f"{p['base_s'] * 1e3:.3g} ms with no flow to queue behind")
    return out


def noise_only(meta: dict) -> bool:
    """The run is invalid, and only for the machine's noise: every reason is one the noise
    checks gave (the runner lists those in meta["noise_reasons"])."""
    reasons = meta.get("invalid_reasons") or []
    noise = set(meta.get("noise_reasons") or [])
    return not meta.get("valid", True) and bool(reasons) and all(r in noise for r in reasons)


def backlogged(flows: list[dict], d: int) -> list[dict]:
    """The flows whose data always waits (bulk or parallel without a byte limit) and
    crosses direction `d` of the bottleneck (0 = w2e: s* -> r*, 1 = e2w: r* -> s*)."""
    side = ("s", "r") if d == 0 else ("r", "s")
    return [f for f in flows if f["kind"] in BACKLOGGED and f.get("bytes") is None
            and str(f["from"]).startswith(side[0]) and str(f["to"]).startswith(side[1])]


def saturating_windows(flows: list[dict], rates: dict, duration_s: float, warmup_s: float,
                       base_rtt_s: float) -> dict[int, tuple[float, float]]:
    """When the offered load should saturate each direction of the bottleneck ->
    {direction (0 = w2e, 1 = e2w): (from_s, to_s) after t0}.

    `flows`: {"flow", "kind", "from", "to", "start_s", "stop_s", "bytes"} per flow;
    `rates`: direction -> bit/s (None: unlimited, not judged). A direction is judged over
    the time all of its backlogged flows run together after the warm-up, when that lasts
    at least CPU_LIMIT_JUDGE_S and CPU_LIMIT_JUDGE_RTTS base RTTs. One such flow suffices:
    a TCP sender with data always waiting fills any link its window lets it fill."""
    out = {}
    for d, rate in sorted(rates.items()):
        mine = backlogged(flows, d)
        if not rate or not mine:
            continue
        t_from = max([warmup_s] + [float(f.get("start_s") or 0.0) for f in mine])
        t_to = min([duration_s] + [float(f["stop_s"]) for f in mine
                                   if f.get("stop_s") is not None])
        if t_to - t_from >= max(CPU_LIMIT_JUDGE_S, CPU_LIMIT_JUDGE_RTTS * base_rtt_s):
            out[d] = (t_from, t_to)
    return out


def link_delivery(stats, rates: dict, windows: dict, t0_ns: int) -> dict:
    """What each judged direction of the bottleneck carried in its window ->
    {"w2e"|"e2w": {"rate_bps", "delivered_bps", "frac", "queue_max_pkts",
    "queue_max_bytes", "drops", "from_s", "to_s"}} (`drops`: what the link dropped in
    that direction in the whole run).

    `stats` is the link_stats table (t_ns, dir, qlen_pkts, qlen_bytes, drops, bytes_out per
    interval: the user-space link's or the kernel qdisc sampler's); a row counts when its
    interval ends inside the window."""
    out = {}
    if stats is None or len(stats) == 0 or not windows:
        return out
    for d, (a, b) in sorted(windows.items()):
        s = stats[stats["dir"] == d]
        t = (s["t_ns"].astype("int64") - int(t0_ns)) / 1e9
        w = s[(t > a) & (t <= b)]
        if not len(w):
            continue
        delivered = float(w["bytes_out"].astype(float).sum() * 8 / (b - a))
        out["w2e" if d == 0 else "e2w"] = {
            "rate_bps": float(rates[d]), "delivered_bps": delivered,
            "frac": delivered / float(rates[d]),
            "queue_max_pkts": int(w["qlen_pkts"].max()) if "qlen_pkts" in w else None,
            "queue_max_bytes": int(w["qlen_bytes"].max()) if "qlen_bytes" in w else None,
            "drops": int(s["drops"].sum()) if "drops" in s else None,
            "window_drops": int(w["drops"].sum()) if "drops" in w else None,
            "from_s": a, "to_s": b}
    return out


def _sender_rows(tcpinfo, mine: list[dict]):
    """The TCP_INFO rows of the data senders of flows `mine` (each flow's rows on its
    `from` host where the table says which host sampled it); an empty table if none."""
    parts = [tcpinfo[(tcpinfo["flow"] == f["flow"]) & (tcpinfo["host"] == f["from"])]
             for f in mine] if "host" in tcpinfo else \
        [tcpinfo[tcpinfo["flow"] == f["flow"]] for f in mine]
    return pd.concat([p for p in parts if len(p)] or [tcpinfo.iloc[:0]])


def sender_inflight(tcpinfo, flows: list[dict], d: int, window: tuple[float, float],
                    t0_ns: int, interval_s: float) -> dict | None:
    """What the senders of direction `d`'s backlogged flows had in flight during `window`
    (seconds after t0) -> {"p95_bytes", "max_bytes", "conns", "samples"}: per sampling
    interval, each connection's last TCP_INFO `unacked x mss` on its data sender, summed
    over the connections; the BURST_INFLIGHT_QUANTILE quantile and the maximum over the
    intervals (`tcpinfo`: host, flow, conn, t_ns, unacked, mss)."""
    mine = backlogged(flows, d)
    if tcpinfo is None or not len(tcpinfo) or not mine or "unacked" not in tcpinfo \
            or not interval_s:
        return None
    t = _sender_rows(tcpinfo, mine)
    if not len(t):
        return None
    rel = (t["t_ns"].astype("int64") - int(t0_ns)) / 1e9
    t = t[(rel > window[0]) & (rel <= window[1])].assign(
        bin=(rel[(rel > window[0]) & (rel <= window[1])] // interval_s).astype("int64"))
    if not len(t):
        return None
    mss = t["mss"].astype(float).where(t["mss"] > 0, 1448.0)
    t = t.assign(inflight=t["unacked"].astype(float) * mss).sort_values("t_ns")
    per_bin = t.groupby(["bin", "flow", "conn"])["inflight"].last().groupby("bin").sum()
    out = {"p95_bytes": float(per_bin.quantile(BURST_INFLIGHT_QUANTILE)),
           "max_bytes": float(per_bin.max()), "samples": int(len(per_bin)),
           "conns": int(t.groupby(["flow", "conn"]).ngroups)}
    if "snd_wnd" in t and (t["snd_wnd"] > 0).any():
        # the receivers' advertised windows, summed like the in-flight bytes (a kernel
        # without tcpi_snd_wnd reports 0: unknown, not a closed window)
        wnd = t.groupby(["bin", "flow", "conn"])["snd_wnd"].last().groupby("bin").sum()
        out["wnd_p95_bytes"] = float(wnd.astype(float).quantile(BURST_INFLIGHT_QUANTILE))
    return out


def sender_losses(tcpinfo, flows: list[dict], d: int) -> dict | None:
    """What the senders of direction `d`'s backlogged flows retransmitted over the whole
    run -> {"retrans": segments, "segments": segments sent}, from each connection's last
    TCP_INFO sample on its data sender (`tcpinfo`: host, flow, conn, t_ns,
    total_retrans, bytes_sent, mss)."""
    mine = backlogged(flows, d)
    if tcpinfo is None or not len(tcpinfo) or not mine:
        return None
    t = _sender_rows(tcpinfo, mine).sort_values("t_ns")
    if not len(t):
        return None
    last = t.groupby(["flow", "conn"]).last()
    mss = last["mss"].astype(float).where(last["mss"] > 0, 1448.0)
    return {"retrans": int(last["total_retrans"].sum()),
            "segments": int((last["bytes_sent"].astype(float) / mss).sum())}


def _of_rate(delivered: float, rate: float) -> str:
    for unit, m in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3), ("bit/s", 1.0)):
        if rate >= m:
            return f"{delivered / m:.3g} of {rate / m:.3g} {unit}"
    return f"{delivered:.3g} of {rate:.3g} bit/s"


def judge_cpu_limited(delivery: dict, losses: dict, buffer_kind: str, buffer_size: int,
                      cpu: dict) -> list[str]:
    """The CPU, not the emulated link, limited the run.

    Physics: a link that sends below its rate must have had an empty queue; senders with
    data always waiting leave a link empty only when something before it holds them back:
    their windows (the algorithm's choice, receive buffers, the link's own drops), or the
    machine, which must produce, forward and acknowledge every packet and loses or delays
    them when its CPU cannot keep up. The machine is named when, per direction
    (`delivery` from link_delivery, `losses` {direction: sender_losses}):
    - the link delivered below CPU_LIMIT_UTIL_MAX of its rate, and
    - its queue never held CPU_LIMIT_QUEUE_FRAC of its buffer (`buffer_kind` "packets" or
      "bytes": compared with the queue's packets or bytes) — a queue that did shows the
      link was the bottleneck at times, and
    - the senders retransmitted more than the link dropped, by at least CPU_LIMIT_LOST_MIN
      of their segments (and CPU_LIMIT_LOST_MIN_PKTS): packets were lost where no loss was
      emulated (random loss is not judged at all) — without that, the senders' own windows
      held them back, which is the experiment's result, and
    - the machine's CPU was at least CPU_LIMIT_BUSY_MIN busy (or stolen) during the run."""
    busy = float(cpu.get("busy_frac") or 0.0) + float(cpu.get("steal_frac") or 0.0)
    if not delivery or busy < CPU_LIMIT_BUSY_MIN:
        return []
    out = []
    for d, v in sorted(delivery.items()):
        q = v["queue_max_pkts"] if buffer_kind == "packets" else v["queue_max_bytes"]
        lost = losses.get(d)
        if q is None or lost is None or v["frac"] >= CPU_LIMIT_UTIL_MAX \
                or q >= CPU_LIMIT_QUEUE_FRAC * buffer_size:
            continue
        extra = lost["retrans"] - int(v.get("drops") or 0)
        if extra < max(CPU_LIMIT_LOST_MIN_PKTS, CPU_LIMIT_LOST_MIN * lost["segments"]):
            continue
        unit = "packets" if buffer_kind == "packets" else "bytes"
        how = "busy" if float(cpu.get("steal_frac") or 0.0) < 0.01 else "busy or stolen"
        out.append(f"the CPU, not the link, limited the run: {d} delivered "
                   f"{_of_rate(v['delivered_bps'], v['rate_bps'])} ({v['frac']:.0%}; limit "
                   f"{CPU_LIMIT_UTIL_MAX:.0%}) while the bottleneck queue never held more "
                   f"than {q} of its {buffer_size} {unit}, the senders retransmitted "
                   f"{lost['retrans']} packets where the link dropped {int(v.get('drops') or 0)}, "
                   f"and the CPU was {busy:.0%} {how} (limit {CPU_LIMIT_BUSY_MIN:.0%})")
    return out


def drops_in_avoidance(stats, tcpinfo, flows: list[dict], d: int,
                       window: tuple[float, float], t0_ns: int,
                       below_bytes: float | None = None, lookback_s: float = 0.0) -> dict | None:
    """The packets the link dropped in direction `d` during `window` (seconds after t0)
    in intervals that began with every sender of the direction's backlogged flows in
    congestion avoidance (its last TCP_INFO sample before the interval: cwnd >=
    ssthresh), i.e. ACK-clocked, adding about one packet per RTT. Slow start (cwnd below
    ssthresh, also after a timeout) sends two packets per ACK in bursts that overflow a
    queue before the windows reach the BDP, by TCP's design; its drops are not counted.

    -> {"drops": those packets, "below": the part of them dropped in intervals where,
    from `lookback_s` before the interval to its end (the time the queue's packets
    took to arrive: the caller gives the buffer's drain time plus the base RTT), every
    sender stayed in congestion avoidance and in the Open state (ca_state 0: no loss
    being repaired), was held by its congestion window alone (the kernel's rwnd- and
    sndbuf-limited times did not grow over that span, up to the first sample after
    it), and the largest windows (cwnd x mss) summed to less than `below_bytes`}. Such
    senders release packets only as ACKs return, at most an offload unit per ACK, so
    their queue holds their windows less the BDP plus one such burst: a drop below
    that is a burst the windows cannot make ("below_window_bytes": the largest such
    sum). "below" is judged only where the backlogged flows are the only ones crossing
    the bottleneck that way (other flows fill the queue too), else None, as without
    `below_bytes` or the columns to tell; the result None without the tables."""
    mine = backlogged(flows, d)
    if stats is None or tcpinfo is None or not len(stats) or not len(tcpinfo) or not mine \
            or not {"cwnd", "ssthresh"} <= set(tcpinfo.columns):
        return None
    s = stats[stats["dir"] == d].sort_values("t_ns")
    if len(s) < 2:
        return None
    interval = int(s["t_ns"].diff().median())
    rel = (s["t_ns"].astype("int64") - int(t0_ns)) / 1e9
    w = s[(rel > window[0]) & (rel <= window[1]) & (s["drops"] > 0)]
    side = ("s", "r") if d == 0 else ("r", "s")
    crossing = [f for f in flows if str(f["from"]).startswith(side[0])
                and str(f["to"]).startswith(side[1])]
    judge_below = below_bytes is not None and len(crossing) == len(mine) and {
        "ca_state", "mss", "rwnd_limited_us", "sndbuf_limited_us"} <= set(tcpinfo.columns)
    if not len(w):
        return {"drops": 0, "below": 0 if judge_below else None}
    ends = w["t_ns"].astype("int64").to_numpy()
    starts = pd.DataFrame({"t_ns": ends - interval, "drops": w["drops"].to_numpy()})
    t = _sender_rows(tcpinfo, mine)
    avoiding = pd.Series(True, index=starts.index)
    for _, g in t.groupby(["flow", "conn"]):
        g = g[["t_ns", "cwnd", "ssthresh"]].astype("int64").sort_values("t_ns")
        m = pd.merge_asof(starts[["t_ns"]], g, on="t_ns", direction="backward")
        sampled = m["cwnd"].notna()
        avoiding &= ~sampled | (m["cwnd"] >= m["ssthresh"])
    out = {"drops": int(starts["drops"][avoiding].sum()), "below": None}
    if judge_below:
        held, window_bytes = _held_by_cwnd(t, starts["t_ns"].to_numpy(), ends,
                                           int(lookback_s * 1e9))
        below = avoiding & held & (window_bytes < below_bytes)
        out["below"] = int(starts["drops"][below].sum())
        if below.any():
            out["below_window_bytes"] = float(window_bytes[below].max())
    return out


def _held_by_cwnd(t, starts, ends, lookback_ns: int):
    """For each span (starts[i] - lookback_ns, ends[i]]: were all the connections of
    TCP_INFO rows `t` sampled through it (a sample at or before its beginning and one at
    or after its end) in congestion avoidance and the Open state at every sample, with
    no growth of their rwnd- and sndbuf-limited times -> (a boolean Series), and the
    sum over the connections of their largest cwnd x mss in it (a float Series)."""
    n = len(starts)
    held = np.ones(n, dtype=bool)
    total = np.zeros(n)
    for _, g in t.groupby(["flow", "conn"]):
        g = g.sort_values("t_ns")
        ts = g["t_ns"].astype("int64").to_numpy()
        ok = ((g["ca_state"] == 0) & (g["cwnd"] >= g["ssthresh"])).to_numpy()
        wnd = (g["cwnd"] * g["mss"].where(g["mss"] > 0, 1448)).astype(float).to_numpy()
        lim = (g["rwnd_limited_us"] + g["sndbuf_limited_us"]).astype("int64").to_numpy()
        first = np.searchsorted(ts, starts - lookback_ns, side="right") - 1
        last = np.searchsorted(ts, ends, side="left")
        for i in range(n):
            a, z = first[i], last[i]
            if a < 0 or z >= len(ts):
                held[i] = False
                continue
            held[i] &= bool(ok[a:z + 1].all()) and lim[z] == lim[a]
            total[i] += wnd[a:z + 1].max()
    return pd.Series(held), pd.Series(total)


def _bytes(n: float) -> str:
    for unit, m in (("MB", 1e6), ("KB", 1e3)):
        if n >= m:
            return f"{n / m:.3g} {unit}"
    return f"{n:.0f} B"


def burst_need_bytes(rate_bps: float, base_rtt_s: float, buffer_bytes: int) -> float:
    """What backlogged, ACK-clocked senders keep in flight when their drop-tail queue is
    half full: the BDP plus half the buffer (judge_cpu_bursts)."""
    return rate_bps * base_rtt_s / 8 + buffer_bytes / 2


def judge_cpu_bursts(delivery: dict, inflight: dict, buffer_bytes: int, base_rtt_s: float,
                     cpu: dict, judged: set[str] = frozenset()) -> list[str]:
    """The machine, not the emulated link, limited the run: its drop-tail queue
    overflowed although the senders' windows could not fill it.

    Physics: a drop-tail queue drops only when full. Backlogged senders keep a full link
    and a queue behind it only with the path's bandwidth-delay product (BDP) plus that
    queue in flight, so a loss-based sender whose packets are lost at that queue has the
    BDP plus the buffer in flight when it loses them, and a sawtooth between there and a
    multiplicative decrease spends most of its time near the top. Windows whose sum
    stayed below BDP + buffer/2 for BURST_INFLIGHT_QUANTILE of the time cannot fill the
    queue by arriving at the rate the ACKs clock: packets reached it in bursts. One ACK
    on a path the bottleneck clocks releases at most one segment-offload unit
    (BURST_GSO_BYTES) per connection; larger bursts come from a machine that held
    packets or ACKs back and let them go at once -- a CPU that could not keep up with
    the rate (measured: --jobs 2 at 200 Mbit/s, one CPU per run, delivers 60-70 % of the
    rate with a queue that overflows in bursts while the windows stay below the BDP,
    and no loss beyond the link's drops for judge_cpu_limited to see).

    Per direction (`delivery` from link_delivery, `inflight` {direction: sender_inflight},
    `judged`: directions judge_cpu_limited already named), the machine is named when
    the link delivered below CPU_LIMIT_UTIL_MAX of its rate in the window, the buffer
    holds at least BURST_GSO_BYTES per connection and BURST_MIN_BUFFER_BDP of the BDP
    (so neither offload bursts nor a sawtooth's trough explain the drops), and either
    - at its own time: a drop came while every sender was in congestion avoidance, in
      the Open state and held by its congestion window alone, the windows summing to
      less than burst_need_bytes (v["below_drops"], drops_in_avoidance: such a sender
      is ACK-clocked, and its queue never fills), or
    - over the window: it dropped at least CPU_LIMIT_LOST_MIN_PKTS packets while the
      senders were in congestion avoidance (v["avoidance_drops"]: slow start's bursts
      are TCP's own) while their in-flight bytes stayed below burst_need_bytes for
      BURST_INFLIGHT_QUANTILE of the window, and the receivers' advertised windows did
      not (a window smaller than that is what held the senders back, and its updates
      release bursts of their own).
    The CPU's busy and stolen time are given, not judged: a share of one CPU whose link
    emulator polls is busy whether or not it keeps up, and bursts were seen from a share
    88 % busy. The caller judges only a drop-tail queue with no data crossing the other
    direction (and no random loss, jitter or rate change, judge_saturation's rules):
    an AQM drops before its buffer fills, and ACKs queued behind reverse data arrive
    compressed and release bursts by the network's own doing (Zhang, Shenker & Clark,
    SIGCOMM 1991)."""
    if not delivery or not base_rtt_s:
        return []
    out = []
    for d, v in sorted(delivery.items()):
        f = inflight.get(d)
        if d in judged or not f or v["frac"] >= CPU_LIMIT_UTIL_MAX:
            continue
        bdp = v["rate_bps"] * base_rtt_s / 8
        if buffer_bytes < max(BURST_GSO_BYTES * f["conns"], BURST_MIN_BUFFER_BDP * bdp):
            continue
        need = burst_need_bytes(v["rate_bps"], base_rtt_s, buffer_bytes)
        drops = int(v.get("avoidance_drops") or 0)
        below = int(v.get("below_drops") or 0)
        if below:
            held = (f"dropped {below} packets from a full queue in congestion avoidance "
                    f"while the senders' windows summed to at most "
                    f"{_bytes(v['below_window_bytes'])} "
                    f"({v['below_window_bytes'] / bdp:.2f} BDP")
        elif drops >= CPU_LIMIT_LOST_MIN_PKTS and f["p95_bytes"] < need and not (
                f.get("wnd_p95_bytes") is not None and f["wnd_p95_bytes"] < need):
            # (a receive window below `need` is what kept the senders there: each
            # window update opens many segments at once, a burst by TCP's own doing)
            held = (f"dropped {drops} packets from a full queue in congestion avoidance "
                    f"while the senders had at most {_bytes(f['p95_bytes'])} in flight "
                    f"{BURST_INFLIGHT_QUANTILE:.0%} of the time "
                    f"({f['p95_bytes'] / bdp:.2f} BDP")
        else:
            continue
        out.append(f"the machine, not the link, limited the run: {d} delivered "
                   f"{_of_rate(v['delivered_bps'], v['rate_bps'])} ({v['frac']:.0%}; limit "
                   f"{CPU_LIMIT_UTIL_MAX:.0%}) and {held}; the {_bytes(buffer_bytes)} "
                   f"buffer fills only with {_bytes(bdp + buffer_bytes)}): packets reached "
                   f"the link in bursts the windows cannot make (the CPU was "
                   f"{float(cpu.get('busy_frac') or 0.0):.0%} busy, "
                   f"{float(cpu.get('steal_frac') or 0.0):.0%} stolen)")
    return out
