#!/usr/bin/env python3
"""Correctness checks of ccarena-link on real namespaces (root; ~2 minutes).

Each check prints its measured value next to its target and PASS/FAIL; the script exits
1 if any check failed. Targets are physics with tolerances (contracts, docs/link.md):
  - RTT at no load = 2 x one-way delay, within max(50 us, 1 %) after subtracting the
    plain veth path's own RTT (measured in the same run),
  - iperf3 cubic goodput = 95..100 % of a 10 and a 100 Mbit/s configured rate
    (the rate counts whole Ethernet frames; 1448/1514 = 95.6 % is the ideal),
  - a ping next to a bulk flow through a drop-tail buffer of B packets waits
    up to B*1514*8/rate extra (median between 50 % and 105 % of it, as cubic's queue
    oscillates between (1-beta)B and B).
"""

import subprocess
import sys
import time

sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1] / "tools" / "testbeds"))
from link_testbed import B_IP, Testbed, direction, median, pct, iperf_result  # noqa: E402

from ccarena.measure.records import read_bin  # noqa: E402

results = []


def check(name, value, ok, target):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {value}  (target {target})", flush=True)


def main():
    with Testbed("p", plain=True) as plain:
        plain.ping(2, 0.05)  # ARP
        base = median(plain.ping(100, 0.03))
    print(f"plain veth ping RTT median {base * 1000:.1f} us")

    # No load, no steering: as the orchestrator runs a study of probes only (steering
    # hands each delivery to another CPU, ~0.1 ms per RTT here; docs/link.md, Placement).
    with Testbed("u", steer=False) as tu:
        # Per-packet medians (robust to the odd scheduling hiccup of a shared VM); ping
        # prints 2 decimals below 10 ms and 1 decimal up to 100 ms, fine for these targets.
        for delay_ms in (1, 4, 20):
            tu.start_link(direction(None, delay_ms * 1_000_000))
            tu.ping(2, 0.05)  # ARP
            rtts = tu.ping(100, 0.03)
            stat, name = median(rtts), "median"
            j = tu.stop_link()
            extra = stat - base - 2 * delay_ms
            tol = max(0.050, 0.01 * 2 * delay_ms)
            check(f"no-load RTT, delay {delay_ms} ms ({name} {stat:.3f} ms; link p50/p99 late "
                  f"{j['p50_late_ns'] / 1000:.0f}/{j['p99_late_ns'] / 1000:.0f} us; io {j['io_kind']})",
                  f"error {extra * 1000:+.0f} us", abs(extra) <= tol, f"|err| <= {tol * 1000:.0f} us")

    with Testbed("c") as tb:

        for rate in (10_000_000, 100_000_000):
            bdp_pkts = int(rate * 0.020 / 8 / 1514) + 10
            tb.start_link(direction(rate, 5_000_000, {"packets": max(bdp_pkts, 50)}))
            g = tb.iperf(12, omit=2)
            j = tb.stop_link()
            r = g / rate
            check(f"goodput at {rate / 1e6:.0f} Mbit/s", f"{g / 1e6:.2f} Mbit/s = {r * 100:.1f} %", 0.95 <= r <= 1.0,
                  "95..100 %")
            print(f"      link: late_packets={j['late_packets']} p99_late={j['p99_late_ns'] / 1000:.0f} us "
                  f"drops={j['w2e']['drops_queue']} rx_ring_drops={j['rx_ring_drops']} ingress_drops={j['ingress_drops']} tx_errors={j['tx_errors']} "
                  f"bytes_out/rate/time={j['w2e']['bytes_out'] * 8 / rate / ((j['end_ns'] - j['start_ns']) / 1e9) * 100:.1f} %")

        rate, B = 10_000_000, 50
        tb.start_link(direction(rate, 5_000_000, {"packets": B}))
        base_rtt = median(tb.ping(20, 0.05)[1:])
        tb.iperf_servers([5202])
        bulk = tb.iperf_bg(5202, 14)
        time.sleep(4)
        rtts = tb.ping(80, 0.1)
        g = iperf_result(bulk)
        j = tb.stop_link()
        expect = B * 1514 * 8 / rate * 1000
        extra = [x - base_rtt for x in rtts]
        m, p95 = median(extra), pct(extra, 0.95)
        check(f"bufferbloat B={B} at 10 Mbit/s (bulk {g / 1e6:.2f} Mbit/s)",
              f"extra delay median {m:.1f} ms, p95 {p95:.1f} ms", 0.5 * expect <= m <= 1.05 * expect
              and p95 <= 1.05 * expect + 2, f"<= {expect:.1f} ms = B*1514*8/rate")

        aqm_checks(tb)
        misc_checks(tb)
        overload_check(tb)
        records_check(tb)

    config_checks()
    n_fail = results.count(False)
    print(f"{len(results) - n_fail} passed, {n_fail} failed")
    return 1 if n_fail else 0


def bloat(tb, w2e, e2w=None, seconds=12):
    """Median and p95 extra ping RTT (ms) next to one cubic bulk flow; link.json."""
    tb.start_link(w2e, e2w)
    tb.ping(2, 0.05)
    base_rtt = median(tb.ping(20, 0.05))
    tb.iperf_servers([5203])
    bulk = tb.iperf_bg(5203, seconds)
    time.sleep(4)
    n = int((seconds - 6) / 0.1)
    rtts = tb.ping(n, 0.1)
    g = iperf_result(bulk)
    j = tb.stop_link()
    j["pings_lost"] = n - len(rtts)     # non-ECT packets an ECN-marking AQM may drop
    extra = [x - base_rtt for x in rtts]
    return median(extra), pct(extra, 0.95), g, j


def aqm_checks(tb):
    rate = 10_000_000
    big = {"packets": 1000}
    m, p95, g, j = bloat(tb, direction(rate, 5_000_000, big, {"kind": "codel"}))
    check(f"CoDel at 10 Mbit/s, 1000 p buffer (bulk {g / 1e6:.2f} Mbit/s, AQM drops {j['w2e']['drops_aqm']})",
          f"ping extra median {m:.1f} ms, p95 {p95:.1f} ms", m < 15 and j["w2e"]["drops_aqm"] > 0,
          "median < 15 ms (target 5 ms; drop-tail would give ~1200 ms)")
    m, p95, g, j = bloat(tb, direction(rate, 5_000_000, big, {"kind": "fq_codel"}))
    check(f"FQ-CoDel at 10 Mbit/s (bulk {g / 1e6:.2f} Mbit/s)", f"ping extra median {m:.1f} ms, p95 {p95:.1f} ms",
          m < 3, "sparse ping flow isolated: median < 3 ms")
    for n in (tb.A, tb.B):
        tb.nsx(n, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
    try:
        m, p95, g, j = bloat(tb, direction(rate, 5_000_000, big, {"kind": "red", "min_th": 20, "max_th": 60,
                                                                  "max_p": 0.1, "weight": 0.02}, ecn=True))
        w = j["w2e"]
        # RED drops what it would mark when the packet is not ECN-capable (RFC 3168
        # §6.1.1.1): the pings are not, so AQM drops up to the pings lost are expected
        check(f"RED+ECN at 10 Mbit/s (bulk {g / 1e6:.2f} Mbit/s)",
              f"marks {w['marks']}, AQM drops {w['drops_aqm']} (pings lost {j['pings_lost']}), "
              f"ping extra median {m:.1f} ms",
              w["marks"] > 0 and w["drops_aqm"] <= j["pings_lost"] and m < 60 * 1514 * 8 / rate * 1000,
              "ECT packets marked, not dropped (AQM drops <= non-ECT pings lost); queue below max_th")
        K = 20
        m, p95, g, j = bloat(tb, direction(rate, 5_000_000, big, {"kind": "step", "k_packets": K}))
        w = j["w2e"]
        kd = K * 1514 * 8 / rate * 1000
        check(f"step marker K={K} + ECN cubic (bulk {g / 1e6:.2f} Mbit/s)",
              f"marks {w['marks']}, ping extra median {m:.1f} ms", w["marks"] > 0 and m < 1.5 * kd + 2,
              f"marks > 0 and queue near K: < {1.5 * kd + 2:.0f} ms")
    finally:
        for n in (tb.A, tb.B):
            tb.nsx(n, "sysctl", "-qw", "net.ipv4.tcp_ecn=2")
    m, p95, g, j = bloat(tb, direction(rate, 5_000_000, {"packets": 100}, {"kind": "classes", "classes": [
        {"ips": [], "ports": [], "buffer": {"packets": 10}}, {}]}))
    # ICMP has no ports and the class matches nothing: all traffic in the default class.
    check("classes: unmatched traffic uses the last class", f"ping extra median {m:.1f} ms",
          m > 0.5 * 100 * 1514 * 8 / rate * 1000, "behaves as drop-tail 100 p")
    m, p95, g, j = bloat(tb, direction(rate, 5_000_000, {"packets": 100}, {"kind": "classes", "classes": [
        {"ips": ["10.9.0.1"], "ports": [], "buffer": {"packets": 10}}, {"ports": [5203]}]}))
    check("classes: both endpoints' traffic in class 0 (strict priority)", f"ping extra median {m:.1f} ms",
          m < 10 * 1514 * 8 / rate * 1000 + 2, "queue limited to class 0's 10 p")


def misc_checks(tb):
    tb.start_link(direction(None, 2_000_000), hosts=[{"ip": "10.9.0.2", "delay_ns": 10_000_000}])
    tb.ping(2, 0.05)
    rtt = tb.ping_summary(30, 0.05)["avg"]
    tb.stop_link()
    check("per-host delay 10 ms on 10.9.0.2", f"RTT {rtt:.3f} ms", abs(rtt - 24.0) < 0.25, "24 ms = 2 x (2 + 10)")

    tb.start_link(direction(None, 1_000_000, loss={"kind": "bernoulli", "p": 0.02}))
    tb.ping(2, 0.05)
    tb.ping(1500, 0.005)
    j = tb.stop_link()
    n = j["w2e"]["arrivals"] + j["e2w"]["arrivals"]
    lost = j["w2e"]["drops_loss"] + j["e2w"]["drops_loss"]
    se = (0.02 * 0.98 / n) ** 0.5
    check("Bernoulli loss 2 %", f"{lost}/{n} = {lost / n * 100:.2f} %", abs(lost / n - 0.02) < 4 * se, "2 % within 4 SE")

    trace = tb.tmp / "12mbit.trace"
    trace.write_text("\n".join(str(i) for i in range(1, 101)) + "\n")
    tb.start_link(direction(None, 5_000_000, {"packets": 100}, trace_file=str(trace)),
                  direction(None, 5_000_000, {"packets": 100}))
    g = tb.iperf(10, omit=2)
    tb.stop_link()
    ideal = 12e6 * 1448 / 1500
    check("mahimahi trace, one 1500-byte opportunity per ms", f"goodput {g / 1e6:.2f} Mbit/s",
          0.95 <= g / ideal <= 1.01, f"95..101 % of {ideal / 1e6:.2f} Mbit/s")

    tb.start_link(direction(None, 5_000_000, jitter={"kind": "uniform", "ns": 2_000_000}))
    tb.ping(2, 0.05)
    r = tb.ping(300, 0.01)
    tb.stop_link()
    lo, hi, mid = pct(r, 0.01), pct(r, 0.99), median(r)
    inside = sum(6.0 <= x <= 14.3 for x in r) / len(r)
    check("uniform jitter +-2 ms per direction", f"RTT p1 {lo:.2f} median {mid:.2f} p99 {hi:.2f} ms, {inside * 100:.1f} % in range",
          inside >= 0.95 and abs(mid - 10) < 0.6 and hi - lo > 4, "sum of two U(-2,2) ms around 10 ms (>= 95 % inside)")


def overload_check(tb):
    """Sustained overload: a 400 Mbit/s UDP flood into a 10 Mbit/s link."""
    tb.start_link(direction(10_000_000, 5_000_000, {"packets": 100}))
    tb.iperf_servers([5220])
    p = subprocess.Popen(["ip", "netns", "exec", tb.A, "iperf3", "-c", B_IP, "-p", "5220", "-u", "-b", "400M",
                          "-t", "8", "-J"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tb.procs.append(p)
    p.communicate(timeout=60)
    alive = tb.link.poll() is None
    j = tb.stop_link()
    w = j["w2e"]
    check("overload: 400 Mbit/s UDP into 10 Mbit/s, 100 p buffer",
          f"alive {alive}, arrivals {w['arrivals']}, queue drops {w['drops_queue']}, out {w['bytes_out'] * 8 / 8e6:.1f} Mbit/s avg, "
          f"peak RSS {j['max_rss_kib'] / 1024:.0f} MiB, ring drops {j['rx_ring_drops']}",
          alive and w["drops_queue"] > 0.9 * w["arrivals"] and j["max_rss_kib"] < 400 * 1024,
          "drops counted, memory bounded")


def records_check(tb):
    """link_stats.bin and link_events.bin agree with link.json's totals."""
    tb.start_link(direction(10_000_000, 5_000_000, {"packets": 30}), event_log=True)
    tb.iperf(4)
    j = tb.stop_link()
    st = read_bin(tb.out_dir / "link_stats.bin")      # as a run's collect step reads them
    ev = read_bin(tb.out_dir / "link_events.bin")
    problems = []
    for d, name in ((0, "w2e"), (1, "e2w")):
        s, t = st[st["dir"] == d], j[name]
        for f in ("arrivals", "departures", "bytes_out", "marks"):
            if int(s[f].sum()) != t[f]:
                problems.append(f"{name}.{f}: records {int(s[f].sum())} vs totals {t[f]}")
        drops = t["drops_queue"] + t["drops_loss"] + t["drops_aqm"] + t["drops_delay_line"]
        if int(s["drops"].sum()) != drops:
            problems.append(f"{name}.drops: {int(s['drops'].sum())} vs {drops}")
        e = ev[ev["dir"] == d]
        if (e["ev"] == 0).sum() + drops != t["arrivals"]:
            problems.append(f"{name}: enq {int((e['ev'] == 0).sum())} + drops {drops} != arrivals {t['arrivals']}")
        if (e["ev"] == 2).sum() != t["drops_queue"] or (e["ev"] == 1).sum() != t["departures"]:
            problems.append(f"{name}: event counts differ from totals")
        if (s["qlen_pkts"] > 30).any() or (e["qlen_pkts"] > 30).any():
            problems.append(f"{name}: queue above its limit")
    dur = (j["end_ns"] - j["start_ns"]) / 1e9
    n_int = len(st) / 2
    if abs(n_int - dur / 0.01) > 2:
        problems.append(f"{n_int:.0f} intervals for {dur:.2f} s")
    check("link_stats.bin / link_events.bin vs link.json",
          f"{len(st)} stats records, {len(ev)} events, w2e drops_queue {j['w2e']['drops_queue']}: "
          + ("; ".join(problems) if problems else "consistent"), not problems, "sums equal totals")


def config_checks():
    import json
    import subprocess
    import tempfile
    from link_testbed import LINK_BIN
    bad = {"ifaces": {"west": "lw", "east": "le"}, "out_dir": "/tmp/x",
           "w2e": {"delay_ns": -1, "buffer": {"packets": 10}}, "e2w": {"buffer": {"packets": 10}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(bad, f)
        f.flush()
        r = subprocess.run([str(LINK_BIN), "--config", f.name], capture_output=True, text=True)
    line = r.stderr.strip()
    check("bad config", f"exit {r.returncode}: {line}", r.returncode == 2 and line.startswith("ccarena-link: load config")
          and "w2e.delay_ns" in line and line.count("\n") == 0 and r.stdout == "", "exit 2, one line, nothing started")


if __name__ == "__main__":
    sys.exit(main())
