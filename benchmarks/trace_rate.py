#!/usr/bin/env python3
"""How fast can ccarena-trace follow a fast flow, and what does it cost? (root)

veth ccatracetestA ── ccatracetestB, offloads off; first with no rate limit (several
Gbit/s here), then with htb 1gbit on A's eth0 (~1 Gbit/s). One cubic bulk flow of
ccarena-flow A→B for 5 s per run; runs alternate untraced / traced (ABAB…) and print,
measured over the same 3 s window:
  goodput (rx.bin); the flow's ACK rate: B's TcpOutSegs (ACKs B sent) and A's TcpInSegs
  (segments A received), and A's TcpExt TCPBacklogCoalesce (ACKs merged into the previous
  one in a busy socket's backlog: the kernel then runs tcp_rcv_established, and so
  tcp_probe, once for both — expected events = InSegs − coalesced); tracer events/s and
  events lost (ring buffer full); the BPF program's run count (every tcp_probe hit in
  every namespace, the filtered ones included) and ns per run (--bpf-stats); the tracer
  process's CPU; the machine's CPU busy time per GB moved.
Last, a stress run tracing the receiver's namespace (no rate limit): one event per data
segment its socket processes (~10^5 events/s), accounted over the whole run against
B's TcpInSegs − TCPBacklogCoalesce.
Namespaces are removed and processes stopped always.
Usage: sudo python3 benchmarks/trace_rate.py [pairs]     (default 2 pairs of runs per rate)
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "testbeds"))
from flow_harness import go, read_records, rx_goodput_bps, start_engine, wait_done  # noqa: E402
from trace_verify import PREFIX, TRACE, ns_exec, start_trace, stop_trace, testbed, wait_detached  # noqa: E402

from ccarena.testbed import netns  # noqa: E402

W = Path("/tmp/ccatrace-rate")
DUR = 5_000_000_000


def snmp_tcp(ns: str) -> dict:
    lines = [l.split() for l in ns_exec(ns, "cat", "/proc/net/snmp").stdout.splitlines() if l.startswith("Tcp:")]
    return dict(zip(lines[0][1:], map(int, lines[1][1:])))


def backlog_coalesce(ns: str) -> int:
    """TcpExt TCPBacklogCoalesce: segments merged into the previous one in a busy socket's
    backlog (tcp_add_backlog) — the kernel then runs tcp_rcv_established, and so
    tcp_probe, once for the merged segment."""
    lines = [l.split() for l in ns_exec(ns, "cat", "/proc/net/netstat").stdout.splitlines() if l.startswith("TcpExt:")]
    return int(lines[1][lines[0].index("TCPBacklogCoalesce")])


def cpu_busy_s() -> float:
    f = list(map(int, Path("/proc/stat").read_text().splitlines()[0].split()[1:]))
    idle = f[3] + f[4]
    import os
    return (sum(f[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def one(a: str, b: str, traced: bool, k: int) -> dict:
    d = W / f"run{k}-{'traced' if traced else 'plain'}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    tr = start_trace(d / "trace", [a], "5000-5999", "--bpf-stats") if traced else None
    try:
        recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": DUR + 3_000_000_000, "listen": [{"port": 5001, "cc": "cubic"}]}
        send = {"host": "s", "out_dir": str(d / "s"), "end_ns": DUR + 2_000_000_000,
                "flows": [{"flow": 0, "kind": "bulk", "dst": "10.78.0.2", "port": 5001, "cc": "cubic",
                           "start_ns": 0, "stop_ns": DUR}]}
        pr = start_engine(b, recv, d)
        ps = start_engine(a, send, d)
        t0 = go([pr, ps])
        time.sleep(max(0.0, (t0 + 1_000_000_000 - time.clock_gettime_ns(time.CLOCK_MONOTONIC)) / 1e9))
        tm0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        sa0, sb0, c0, bc0, bb0 = snmp_tcp(a), snmp_tcp(b), cpu_busy_s(), backlog_coalesce(a), backlog_coalesce(b)
        time.sleep(3.0)
        sa1, sb1, c1, bc1, bb1 = snmp_tcp(a), snmp_tcp(b), cpu_busy_s(), backlog_coalesce(a), backlog_coalesce(b)
        tm1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        wait_done(ps, 30)
        wait_done(pr, 30)
    finally:
        rep = None
        if tr is not None:
            rc, out, err = stop_trace(tr)
            if rc != 0:
                print(f"tracer exit {rc}: {err.strip()}")
            rep = json.loads((d / "trace" / "trace.json").read_text())
    rx = read_records(d / "r" / "rx.bin")
    secs = (tm1 - tm0) / 1e9
    gp = rx_goodput_bps(rx, tm0, tm1)
    r = {"traced": traced, "goodput_gbps": gp / 1e9, "acks_per_s": (sb1["OutSegs"] - sb0["OutSegs"]) / secs,
         "a_insegs_per_s": (sa1["InSegs"] - sa0["InSegs"]) / secs,
         "a_coalesced_per_s": (bc1 - bc0) / secs,
         "b_insegs_per_s": (sb1["InSegs"] - sb0["InSegs"]) / secs, "b_coalesced_per_s": (bb1 - bb0) / secs,
         "cpu_s_per_gb": (c1 - c0) / (gp * secs / 8 / 1e9)}
    if rep is not None:
        ev = read_records(d / "trace" / "tcpprobe.bin")
        t = ev["t_ns"].astype("int64")
        in_win = int(((t >= tm0) & (t < tm1)).sum())
        r.update(events_per_s=in_win / secs, events=rep["events"], lost=rep["lost"], matched=rep["matched"],
                 tracer_cpu_s=rep["cpu_user_s"] + rep["cpu_sys_s"],
                 tracer_s=(rep["detached_ns"] - rep["attached_ns"]) / 1e9,
                 ns_per_run=(rep.get("bpf_stats") or {}).get("ns_per_run"),
                 run_cnt=(rep.get("bpf_stats") or {}).get("run_cnt"))
    return r


def stress(a: str, b: str, dst: str) -> None:
    """Whole-run accounting on the receiver: events = InSegs - TCPBacklogCoalesce - the
    segments not processed in ESTABLISHED (handshake ACK, FIN)."""
    d = W / "stress"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    tr = start_trace(d / "trace", [b], "5000-5999", "--bpf-stats")
    try:
        s0, c0 = snmp_tcp(b)["InSegs"], backlog_coalesce(b)
        recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": 7_000_000_000, "listen": [{"port": 5001}]}
        send = {"host": "s", "out_dir": str(d / "s"), "end_ns": 6_000_000_000,
                "flows": [{"flow": 0, "kind": "bulk", "dst": dst, "port": 5001, "start_ns": 0, "stop_ns": DUR}]}
        pr = start_engine(b, recv, d)
        ps = start_engine(a, send, d)
        go([pr, ps])
        wait_done(ps, 30)
        wait_done(pr, 30)
        s1, c1 = snmp_tcp(b)["InSegs"], backlog_coalesce(b)
    finally:
        stop_trace(tr)
    rep = json.loads((d / "trace" / "trace.json").read_text())
    ev = read_records(d / "trace" / "tcpprobe.bin")
    conn = json.loads((d / "r" / "conns.jsonl").read_text().splitlines()[0])
    secs = (int(ev["t_ns"].max()) - int(ev["t_ns"].min())) / 1e9
    expect = (s1 - s0) - (c1 - c0)
    bs = rep.get("bpf_stats") or {}
    print(f"{conn['bytes'] * 8 / (DUR / 1e9) / 1e9:.2f} Gbit/s; B InSegs {s1 - s0} - TCPBacklogCoalesce {c1 - c0} = {expect}; "
          f"events {rep['events']} ({rep['events'] / secs:.0f}/s, difference {expect - rep['events']}), lost {rep['lost']}; "
          f"sum data_len {int(ev['data_len'].sum())} B vs {conn['bytes']} B received; BPF {bs.get('ns_per_run', 0):.0f} ns/run; "
          f"tracer CPU {rep['cpu_user_s'] + rep['cpu_sys_s']:.3f} s "
          f"({1e9 * (rep['cpu_user_s'] + rep['cpu_sys_s']) / max(1, rep['events']):.0f} ns per event)", flush=True)


def show(r: dict) -> None:
    line = (("traced  " if r["traced"] else "untraced")
            + f" goodput {r['goodput_gbps']:.2f} Gbit/s, ACKs B sent {r['acks_per_s']:.0f}/s, "
            f"A InSegs {r['a_insegs_per_s']:.0f}/s (backlog-coalesced {r['a_coalesced_per_s']:.0f}/s), "
            f"CPU {r['cpu_s_per_gb']:.2f} s/GB")
    if r["traced"]:
        line += (f" | events {r['events_per_s']:.0f}/s = "
                 f"{r['events_per_s'] / (r['a_insegs_per_s'] - r['a_coalesced_per_s']):.3f} of (InSegs - coalesced), "
                 f"lost {r['lost']} of {r['matched']}, BPF {r['ns_per_run']:.0f} ns/run over {r['run_cnt']} runs, "
                 f"tracer CPU {r['tracer_cpu_s']:.3f} s in {r['tracer_s']:.1f} s "
                 f"({100 * r['tracer_cpu_s'] / r['tracer_s']:.1f} % of a core)")
    print(line, flush=True)


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


if __name__ == "__main__":
    if not TRACE.exists():
        sys.exit(f"{TRACE} missing: cargo build --release -p ccarena-trace")
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rows: list[dict] = []
    rates = (None, "1gbit")
    try:
        for rate in rates:
            print(f"--- veth, offloads off, {'no rate limit' if rate is None else 'htb ' + rate + ' on A'}")
            with testbed("plain" if rate is None else "sender", rate=rate, bfifo=None) as (a, b, _):
                for _ in range(pairs):
                    for traced in (False, True):
                        r = one(a, b, traced, len(rows))
                        r["rate"] = rate
                        rows.append(r)
                        show(r)
    finally:
        for ns in ("A", "B", "R"):
            netns.remove(PREFIX + ns)
        # Stress: trace the receiver's namespace: one event per data segment it processes.
        print("--- stress: no rate limit, tracing the receiver B (one event per data segment)")
        with testbed("plain", rate=None, bfifo=None) as (a, b, dst):
            stress(a, b, dst)
    left = wait_detached()
    print(f"after: bpftool lists {left[0]} links / {left[1]} programs named tcp_probe")
    for rate in rates:
        pl = [r for r in rows if not r["traced"] and r["rate"] == rate]
        tr = [r for r in rows if r["traced"] and r["rate"] == rate]
        print(f"{rate or 'unlimited'}: median untraced {median([r['goodput_gbps'] for r in pl]):.2f} Gbit/s "
              f"{median([r['cpu_s_per_gb'] for r in pl]):.2f} s/GB; traced {median([r['goodput_gbps'] for r in tr]):.2f} Gbit/s "
              f"{median([r['cpu_s_per_gb'] for r in tr]):.2f} s/GB; events {median([r['events_per_s'] for r in tr]):.0f}/s; "
              f"lost {sum(r['lost'] for r in tr)} of {sum(r['matched'] for r in tr)}")
    (W / "rows.json").write_text(json.dumps(rows, indent=1))
