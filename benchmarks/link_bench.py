#!/usr/bin/env python3
"""Performance benchmark of ccarena-link (root; ~4 minutes). Prints, measured side by
side in one run (these machines are noisy, so only same-run ratios mean something):

  (a) goodput of one cubic iperf3 flow through the emulator (20 ms one-way delay,
      unlimited rate, MTU 1500, offloads off) and its ratio to a plain veth pair, for
      each packet I/O (--io packet,xdp: AF_PACKET and AF_XDP, interleaved); also the
      plain pair with its endpoints confined to the CPUs the emulator leaves them, and
      the emulator's CPU time over the run's wall time;
  (b) delay error (release lateness) under load at 100 Mbit/s and 1 Gbit/s:
      p50/p99/max from link.json;
  (c) CPU time of the emulator per forwarded packet;
  (d) 1024 concurrent flows (8 iperf3 clients x -P 128): no crash, peak RSS;
  (e) with --spin-sweep: lateness and CPU versus the busy-poll window spin_ns.

Usage: sudo python3 benchmarks/link_bench.py [--seconds 10] [--rounds 2] [--spin-sweep]
Needs target/release/ccarena-link (cargo build --release -p ccarena-link) and iperf3.
Everything it creates is named ccalinktest* and removed at the end, also on errors.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "testbeds"))
from link_testbed import LINK_BIN, Testbed, direction, iperf_result, median  # noqa: E402


def us(ns):
    return f"{ns / 1000:.0f}"


def cpu_per_pkt(j):
    n = max(j["forwarded"], 1)
    return (j["cpu_user_s"] + j["cpu_sys_s"]) / n * 1e9


def busy(j):
    """The emulator's CPU time over the run's wall time; the rest is its naps and sleeps
    and time the hypervisor gave to others (steal). Whether it kept up is its lateness."""
    return (j["cpu_user_s"] + j["cpu_sys_s"]) / max((j["end_ns"] - j["start_ns"]) / 1e9, 1e-9)


IOS = ("packet", "xdp")


def bench_a(secs, rounds, ios=IOS, handoff=True):
    """Plain veth and the emulator with each packet I/O, interleaved round by round so
    that background load hits all of them alike."""
    plain_g, conf_g, link_g, links = [], [], {io: [] for io in ios}, {io: [] for io in ios}
    with Testbed("p", plain=True) as plain, Testbed("c", plain=True, confine=True) as conf, \
            Testbed("e", handoff=handoff) as tb:
        for r in range(rounds):
            plain_g.append(plain.iperf(secs, omit=2, port=5201 + r))
            conf_g.append(conf.iperf(secs, omit=2, port=5221 + r))
            for k, io in enumerate(ios):
                tb.start_link(direction(None, 20_000_000, {"packets": 10000}), io=io)
                link_g[io].append(tb.iperf(secs, omit=2, port=5211 + 10 * k + r))
                links[io].append(tb.stop_link())
    gp, gc = median(plain_g), median(conf_g)
    print(f"(a) one cubic flow, MTU 1500, TSO/GSO/GRO off{'' if tb.handoff else ', no hand-off fifo'}")
    print(f"    plain veth:                          {gp / 1e9:6.2f} Gbit/s   (runs: {', '.join(f'{g / 1e9:.2f}' for g in plain_g)})")
    print(f"    plain veth, endpoints on CPU {','.join(map(str, conf.confine_cpus)) or '-'} only: {gc / 1e9:6.2f} Gbit/s   "
          f"(runs: {', '.join(f'{g / 1e9:.2f}' for g in conf_g)})   [the CPUs the emulator leaves the endpoints]")
    for io in ios:
        gl = median(link_g[io])
        j = links[io][-1]
        print(f"    ccarena-link io={io:6s} 20 ms, no limit: {gl / 1e9:6.2f} Gbit/s   (runs: {', '.join(f'{g / 1e9:.2f}' for g in link_g[io])})"
              f"   ratio {gl / gp * 100:.0f} %   [goal >= 2 Gbit/s and >= 60 %]; "
              f"{gl / gc * 100:.0f} % of the confined endpoints")
        print(f"        link: forwarded {j['forwarded']}, late>100us {j['late_packets']}, p50/p99/max late "
              f"{us(j['p50_late_ns'])}/{us(j['p99_late_ns'])}/{us(j['max_late_ns'])} us, "
              f"rx_ring_drops {j['rx_ring_drops']}, ingress drops {', '.join(str(x.get('ingress_drops')) for x in links[io])}, "
              f"tx_errors {j['tx_errors']}, tx_waits {j['tx_waits']}; "
              f"CPU/pkt {', '.join(f'{cpu_per_pkt(x):.0f}' for x in links[io])} ns; "
              f"emulator thread busy {', '.join(f'{busy(x) * 100:.0f}' for x in links[io])} % of the run")
    return [(f"(a) {io} saturated", x) for io in ios for x in links[io]]


def bench_b(secs, rates=(100, 1000), ios=IOS):
    """The orchestrator's placement (emulator pinned, endpoints' receive work steered
    away by RPS) with each packet I/O, and the scheduler's placement with AF_PACKET."""
    rows = []
    for steer in (True, False):
        with Testbed("b" + "ns"[steer], steer=steer) as tb:
            for rate in (int(r * 1e6) for r in rates):
                for io in (ios if steer else ("packet",)):
                    bdp = int(rate * 0.040 / 8 / 1514)
                    tb.start_link(direction(rate, 20_000_000, {"packets": max(2 * bdp, 100)}), io=io)
                    g = tb.iperf(secs, omit=2)
                    j = tb.stop_link()
                    rows.append((steer, io, rate, g, j))
    print("(b) delay error under load (one cubic flow, 20 ms one-way delay, buffer 2 BDP)")
    for steer, io, rate, g, j in rows:
        how = "pinned+RPS" if steer else "unpinned  "
        print(f"    {how} io={io:6s} {rate / 1e6:5.0f} Mbit/s: goodput {g / 1e6:7.1f} Mbit/s; lateness p50 "
              f"{us(j['p50_late_ns'])} us, p99 {us(j['p99_late_ns'])} us, max {us(j['max_late_ns'])} us; "
              f"late>100us {j['late_packets']}/{j['forwarded']}; ingress drops {j.get('ingress_drops')}; "
              f"CPU {cpu_per_pkt(j):.0f} ns/pkt")
    return [(f"(b) {io} {rate / 1e6:.0f} Mbit/s {'pinned' if steer else 'unpinned'}", j)
            for steer, io, rate, g, j in rows]


def bench_d(secs, io="packet"):
    with Testbed("d") as tb:
        tb.start_link(direction(1_000_000_000, 20_000_000, {"packets": 2000}, {"kind": "fq_codel"}), io=io)
        ports = list(range(5301, 5309))
        tb.iperf_servers(ports)
        clients = [tb.iperf_bg(p, secs, parallel=128) for p in ports]
        errs, total = [], 0.0
        for c in clients:
            try:
                total += iperf_result(c)
            except RuntimeError as e:
                errs.append(str(e)[:120])
        alive = tb.link.poll() is None
        j = tb.stop_link()
    print(f"(d) io={io}: 1024 concurrent cubic flows (8 x iperf3 -P 128) over 1 Gbit/s, 20 ms, fq_codel, 2000 p")
    print(f"    link alive: {alive}; aggregate goodput {total / 1e6:.0f} Mbit/s; iperf3 errors: {len(errs)} {errs[:2]}")
    print(f"    peak RSS {j['max_rss_kib'] / 1024:.1f} MiB; forwarded {j['forwarded']}; drops queue/aqm "
          f"{j['w2e']['drops_queue']}/{j['w2e']['drops_aqm']}; rx_ring_drops {j['rx_ring_drops']}; "
          f"lateness p99 {us(j['p99_late_ns'])} us; CPU {cpu_per_pkt(j):.0f} ns/pkt")
    return j


def bench_spin(secs):
    print("(e) busy-poll window vs lateness (100 Mbit/s, 20 ms, one cubic flow)")
    with Testbed("s") as tb:
        for spin in (0, 20_000, 60_000, 200_000):
            tb.start_link(direction(100_000_000, 20_000_000, {"packets": 700}), spin_ns=spin)
            t0 = time.time()
            g = tb.iperf(secs, omit=1)
            j = tb.stop_link()
            wall = time.time() - t0
            cpu = (j["cpu_user_s"] + j["cpu_sys_s"]) / wall * 100
            print(f"    spin {spin / 1000:5.0f} us: lateness p50 {us(j['p50_late_ns'])} p99 {us(j['p99_late_ns'])} "
                  f"max {us(j['max_late_ns'])} us; late>100us {j['late_packets']}/{j['forwarded']}; "
                  f"link CPU {cpu:.0f} % of one core; goodput {g / 1e6:.1f} Mbit/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--spin-sweep", action="store_true")
    ap.add_argument("--only", default="abd", help="subset of a, b, d")
    ap.add_argument("--rates", default="100,1000", help="(b): bottleneck rates in Mbit/s")
    ap.add_argument("--io", default=",".join(IOS), help="packet I/O kinds to compare in (a) and (b)")
    ap.add_argument("--no-handoff", action="store_true",
                    help="no fifo on the ports towards the emulator (shows the drops it prevents)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("link_bench: needs root (network namespaces)")
    if not LINK_BIN.exists():
        sys.exit(f"link_bench: {LINK_BIN} missing: cargo build --release -p ccarena-link")
    print(f"ccarena-link benchmark, kernel {os.uname().release}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    runs = []
    if "a" in a.only:
        runs += bench_a(a.seconds, a.rounds, tuple(a.io.split(",")), handoff=not a.no_handoff)
    if "b" in a.only:
        runs += bench_b(a.seconds, [float(r) for r in a.rates.split(",")], tuple(a.io.split(",")))
    if runs:
        print("(c) CPU time of ccarena-link per forwarded packet (user+sys / forwarded; includes the "
              "kernel work done in the emulator's system calls) [goal <= 2 us]")
        for name, j in runs:
            print(f"    {name}: {cpu_per_pkt(j):.0f} ns")
    if "d" in a.only:
        for io in a.io.split(","):
            bench_d(a.seconds, io)
    if a.spin_sweep:
        bench_spin(a.seconds)
    print(f"load average {os.getloadavg()[0]:.2f} at end (other work on the machine skews everything above)")


if __name__ == "__main__":
    main()
