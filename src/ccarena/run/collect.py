"""Collect: a run's raw outputs (the engines' .bin records and engine.json, the link's
records and link.json, the tracer's records) read into tables, with what they say about
the run's validity; and the kernel's word on which algorithm each socket ran.

`collect(ctx)` fills ctx.tables and ctx.meta; failures go to ctx.reasons, the machine's
noise to ctx.noise (validity.py tells which is which). Every table gets `run_id` and, where
it has `t_ns`, `t` in seconds from t0."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ccarena import cc as ccmod
from ccarena.errors import CcarenaError
from ccarena.measure import records
from ccarena.measure import validity
from ccarena.study.impair import jitter_extent_s, random_impairments
from ccarena.study.resolve import PROBE_FLOW_ID


def _read(reader, path, reasons: list[str]):
    """A raw output, or None with the failure in `reasons`: a file a tool could not
    finish (a full disk, a crash) makes the run invalid, never the study fail."""
    try:
        return reader(path)
    except (OSError, ValueError, CcarenaError) as e:
        reasons.append(f"{path.relative_to(path.parents[2]) if len(path.parents) > 2 else path}"
                       f": unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
        return None


def _json(path: Path):
    return json.loads(path.read_text())


def collect(ctx) -> None:
    """Read every part's raw output into tables; check what the kernel says it ran."""
    raw, tables, meta, study = ctx.raw, ctx.tables, ctx.meta, ctx.study
    reasons, noise = ctx.reasons, ctx.noise
    if not raw.is_dir():       # the run failed before any part wrote anything
        noise += validity.judge_cpu(meta.get("cpu", {}))
        return
    parts = {k: [] for k in ("tcpinfo", "rx", "rr", "conns", "udp")}
    engines = {}
    for hd in sorted(p for p in raw.glob("*") if p.is_dir() and p.name not in ("logs", "link")):
        for k in ("tcpinfo", "rx", "rr", "udp"):
            df = _read(records.read_bin, hd / f"{k}.bin", reasons)
            if df is not None and len(df):
                df.insert(0, "host", hd.name)
                parts[k].append(df)
        c = _read(records.read_jsonl, hd / "conns.jsonl", reasons)
        if c is not None and len(c):
            c.insert(0, "host", hd.name)
            parts["conns"].append(c)
        ej = hd / "engine.json"
        if ej.exists() and (e := _read(_json, ej, reasons)) is not None:
            engines[hd.name] = e
            # a CPU-limited host's gaps are the study's own doing, not noise
            limited = hd.name in (meta.get("host_limits") or {})
            (reasons if limited else noise).extend(
                validity.judge_engine(hd.name, engines[hd.name]))
    for k, v in parts.items():
        if v:
            tables[k] = pd.concat(v, ignore_index=True)
    if "udp" in tables:      # -> the ping table's shape: probe, seq, rtt_s (NaN: no echo)
        u = tables["udp"]
        names = {PROBE_FLOW_ID + j: p.name for j, p in enumerate(study.probes)}
        lost = u["rtt_ns"] == 0xFFFFFFFFFFFFFFFF
        tables["udp"] = pd.DataFrame({
            "t_ns": u["t_ns"], "probe": u["flow"].map(names), "seq": u["seq"],
            "rtt_s": u["rtt_ns"].where(~lost).astype(float) / 1e9})
    trace = _read(records.read_bin, raw / "trace" / "tcpprobe.bin", reasons)
    if trace is not None and len(trace):
        trace = trace.sort_values("t_ns", kind="stable").reset_index(drop=True)
        tables["tcpprobe"] = trace
    meta["engines"] = engines
    link_dir = raw / "link"
    if link_dir.is_dir():
        for k in ("link_stats", "link_events"):
            df = _read(records.read_bin, link_dir / f"{k}.bin", reasons)
            if df is not None and len(df):
                tables[k] = df
        lj = link_dir / "link.json"
        if lj.exists() and (link := _read(_json, lj, reasons)) is not None:
            meta["link"] = link
            noise += validity.judge_link(meta["link"], meta.get("link_ingress"))
    noise += validity.judge_cpu(meta.get("cpu", {}))
    noise += judge_saturation(study, tables, meta)
    if meta.get("backend") == "kernel":
        meta["kernel_delay"] = kernel_delay(study, tables)
        noise += validity.judge_kernel_delay(meta["kernel_delay"])
    reasons += check_algorithms(tables.get("conns"), meta)
    t0 = meta.get("t0_ns")
    for k, df in tables.items():
        df.insert(0, "run_id", meta["run_id"])
        if t0 and "t_ns" in df.columns:
            df["t"] = (df["t_ns"].astype("int64") - int(t0)) / 1e9


def judge_saturation(study, tables: dict, meta: dict) -> list[str]:
    """validity.judge_cpu_limited for this run, where its backlogged flows should have
    saturated the bottleneck (validity.saturating_windows) and only the machine could
    have lost their packets: not with random impairments on the path (loss of any model,
    corruption and duplication keep queues short and rates low by themselves; jitter's
    and netem's reordering make TCP resend what was not lost), nor a rate that changes (schedule, trace), nor hosts the study gave a CPU
    quota or set (their CPU limit is the experiment). Records meta["link_delivery"]."""
    b = study.bottleneck
    hosts = study.hosts.values()
    if (random_impairments(b) or b.trace or b.rate_schedule or "cpu" not in meta
            or not meta.get("t0_ns")
            or any(h.loss or h.cpus is not None or h.cpuset is not None for h in hosts)):
        return []
    rates = {0: b.rate_bps, 1: b.reverse_rate_bps}
    flows = [{"flow": i, "kind": f.kind, "from": f.src, "to": f.dst, "start_s": f.start_s,
              "stop_s": f.stop_s, "bytes": f.bytes} for i, f in enumerate(study.flows)]
    windows = validity.saturating_windows(flows, rates, study.duration_s, study.warmup_s,
                                          study.base_rtt_s)
    delivery = validity.link_delivery(tables.get("link_stats"), rates, windows,
                                      int(meta["t0_ns"]))
    losses = {("w2e" if d == 0 else "e2w"): validity.sender_losses(tables.get("tcpinfo"),
                                                                  flows, d)
              for d in windows}
    for d, v in delivery.items():
        v.update(losses.get(d) or {})
    out = validity.judge_cpu_limited(delivery, losses, b.buffer.kind, b.buffer.size,
                                     meta["cpu"])
    # bursts: only where a drop-tail queue drops, and no data crosses the other way
    # (validity.judge_cpu_bursts)
    if b.queue == "droptail" and not b.ecn:
        inflight = {}
        for d, w in windows.items():
            name = "w2e" if d == 0 else "e2w"
            if name not in delivery or _reverse_data(study, d):
                continue
            f = validity.sender_inflight(tables.get("tcpinfo"), flows, d, w,
                                         int(meta["t0_ns"]), study.sample_interval_s)
            if f:
                inflight[name] = f
                delivery[name]["inflight_p95_bytes"] = f["p95_bytes"]
                a = validity.drops_in_avoidance(
                    tables.get("link_stats"), tables.get("tcpinfo"), flows, d, w,
                    int(meta["t0_ns"]), validity.burst_need_bytes(
                        rates[d], study.base_rtt_s, b.buffer.bytes(study.mtu)),
                    # the queue's packets arrived within its drain time, sent up to
                    # a round trip before
                    b.buffer.bytes(study.mtu) * 8 / rates[d] + study.base_rtt_s) or {}
                delivery[name]["avoidance_drops"] = a.get("drops")
                delivery[name]["below_drops"] = a.get("below")
                if a.get("below_window_bytes") is not None:
                    delivery[name]["below_window_bytes"] = a["below_window_bytes"]
        judged = {r.split(": ", 1)[1].split(" ", 1)[0] for r in out}
        out += validity.judge_cpu_bursts(delivery, inflight, b.buffer.bytes(study.mtu),
                                         study.base_rtt_s, meta["cpu"], judged)
    if delivery:
        meta["link_delivery"] = delivery
    return out


def _reverse_data(study, d: int) -> bool:
    """Does data cross the bottleneck against direction `d` (0: s* -> r*)? Flows carry
    their data from `from` to `to`; request-response and command flows both ways."""
    back = ("r", "s") if d == 0 else ("s", "r")
    return any(f.kind in ("rr", "command") or
               (str(f.src).startswith(back[0]) and str(f.dst).startswith(back[1]))
               for f in study.flows)


def kernel_delay(study, tables: dict) -> dict:
    """validity.kernel_delay for a kernel-backend run: the ping probes' replies and each
    TCP connection's min_rtt, per path between the two sides of the bottleneck, against
    the round trip the study gives that path; the tolerance is the user-space link's for
    a late release (user_link.late_tolerance_ns), once per direction, plus the path's
    own round trip in a slow guest (KERNEL_PATH_RTT_S)."""
    from ccarena.testbed.user_link import late_tolerance_ns
    b = study.bottleneck
    up = jitter_extent_s(b)[1]     # how far above the delay a draw may lie, each way

    def base(a: str, z: str) -> float | None:
        if a is None or z is None or a[:1] == z[:1]:
            return None        # not across the bottleneck
        extra = sum(study.hosts[h].delay_s for h in (a, z) if h in study.hosts)
        return b.delay_s + b.reverse_delay + 2 * extra

    paths = []
    ping = tables.get("ping")
    for p in study.probes:
        rt = base(p.src, p.dst)
        if p.kind == "ping" and rt is not None and ping is not None and len(ping):
            paths.append({"path": f"ping {p.src}->{p.dst}", "base_s": rt,
                          "jitter_s": up,
                          "rtt_s": ping[ping["probe"] == p.name]["rtt_s"].to_numpy()})
    ti = tables.get("tcpinfo")
    if ti is not None and len(ti) and "min_rtt_us" in ti:
        for i, f in enumerate(study.flows):
            rt = base(f.src, f.dst)
            if f.kind == "command" or rt is None:
                continue
            m = ti[(ti["flow"] == i) & (ti["min_rtt_us"] > 0)]
            if len(m):
                per_conn = m.groupby(["host", "conn"])["min_rtt_us"].min() / 1e6
                paths.append({"path": f"flow {f.name}", "base_s": rt,
                              "jitter_s": up, "rtt_s": per_conn.to_numpy()})
    tol = 2 * late_tolerance_ns(study) / 1e9 + validity.KERNEL_PATH_RTT_S
    unloaded = not study.flows      # (a command may send too)
    return validity.kernel_delay(paths, tol, unloaded)


# A module's own second set of ops, which it switches a connection to by its rule: Linux's
# dctcp runs a connection that did not negotiate ECN (its SYN is ECT, which a listener
# not on an ECN-needing algorithm refuses) as dctcp-reno, Reno's rules. That is DCTCP as
# Linux defines it (the BPF pack's dctcp follows the same rules under its own name); the
# connection's recorded algorithm says which ran.
OWN_FALLBACK = {"dctcp": {"dctcp-reno"}}


def check_algorithms(conns: pd.DataFrame | None, meta: dict) -> list[str]:
    """The data sender of each flow must have run the algorithm asked for (kernel's word),
    or that algorithm's own fallback (OWN_FALLBACK)."""
    if conns is None or not len(conns) or "cc" not in conns:
        return []
    out = []
    for f in meta["flows"]:
        rows = conns[(conns["flow"] == f["flow"]) & (conns.get("side") == "send")]
        got = set(rows["cc"].dropna())
        if got and not got <= {f["cc_kernel"]} | OWN_FALLBACK.get(f["cc_kernel"], set()):
            out.append(f"flow {f['name']}: asked for {f['cc_kernel']}, the kernel ran "
                       f"{', '.join(sorted(got))}")
    return out




def guard_counts(kernel_names: dict, inodes: list[int]) -> dict:
    """What each BPF algorithm's guard has repaired so far in these namespaces."""
    return {k: ccmod.run_guard_counts(k, inodes) for k in bpf_algorithms(kernel_names)}


def bpf_algorithms(kernel_names: dict) -> list[str]:
    return sorted({k for k in kernel_names.values() if k.startswith("cca_")})


def judge_guards(ctx, before: dict, inodes: list[int]) -> None:
    """BPF algorithms on this kernel can meet a corrupted ssthresh that their guard
    repairs (docs/algorithms.md, "Known issue"): a late repair (the bad value acted for an
    ACK) makes the run invalid, for the machine's kernel (a re-run is the remedy, as for
    noise); one redone at entry, before any use, is recorded only."""
    meta = ctx.meta
    for k in bpf_algorithms(ctx.kernel_names):
        g0, g1 = before.get(k), ccmod.run_guard_counts(k, inodes)
        if g0 is None or g1 is None:
            continue
        if g1.at_entry > g0.at_entry:
            meta.setdefault("cc_guard_at_entry", {})[k] = g1.at_entry - g0.at_entry
        if g1.late > g0.late:
            meta.setdefault("cc_repairs", {})[k] = g1.late - g0.late
            # where the fault entered: what the late repairs found corrupted, and the CA
            # states they were made in (the namespaces are this run's own)
            meta.setdefault("cc_repairs_found", {})[k] = {
                "ssthresh": g1.late_ssthresh - g0.late_ssthresh,
                "cwnd": g1.late_cwnd - g0.late_cwnd,
                "ca_states": [s for s in range(8) if g1.late_states >> s & 1]}
            # the host kernel's fault, not the algorithm's: the run is the machine's
            # to repeat, as one spoiled by noise (the attempt set aside names it)
            ctx.noise.append(f"{k}: {g1.late - g0.late} corrupted ssthresh/cwnd values "
                             "repaired by its guard during the run (the kernel skipped a "
                             "BPF call: docs/algorithms.md, Known issue)")
