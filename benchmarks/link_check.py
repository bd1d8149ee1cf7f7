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

import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from link_testbed import Testbed, direction, median, pct, iperf_result  # noqa: E402

results = []


def check(name, value, ok, target):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {value}  (target {target})", flush=True)


def main():
    with Testbed("p", plain=True) as plain:
        plain.ping(2, 0.05)  # ARP
        base = median(plain.ping(100, 0.03))
    print(f"plain veth ping RTT median {base * 1000:.1f} us")

    with Testbed("c") as tb:
        # ping prints 2 decimals below 10 ms: per-packet medians for short delays,
        # the summary average (3 decimals) for the long one.
        for delay_ms in (1, 4, 20):
            tb.start_link(direction(None, delay_ms * 1_000_000))
            tb.ping(2, 0.05)  # ARP
            if delay_ms < 5:
                rtts = tb.ping(100, 0.03)
                stat, name = median(rtts), "median"
            else:
                stat, name = tb.ping_summary(50, 0.05)["avg"], "avg"
            j = tb.stop_link()
            extra = stat - base - 2 * delay_ms
            tol = max(0.050, 0.01 * 2 * delay_ms)
            check(f"no-load RTT, delay {delay_ms} ms ({name} {stat:.3f} ms; link p50/p99 late "
                  f"{j['p50_late_ns'] / 1000:.0f}/{j['p99_late_ns'] / 1000:.0f} us)",
                  f"error {extra * 1000:+.0f} us", abs(extra) <= tol, f"|err| <= {tol * 1000:.0f} us")

        for rate in (10_000_000, 100_000_000):
            bdp_pkts = int(rate * 0.020 / 8 / 1514) + 10
            tb.start_link(direction(rate, 5_000_000, {"packets": max(bdp_pkts, 50)}))
            g = tb.iperf(12, omit=2)
            j = tb.stop_link()
            r = g / rate
            check(f"goodput at {rate / 1e6:.0f} Mbit/s", f"{g / 1e6:.2f} Mbit/s = {r * 100:.1f} %", 0.95 <= r <= 1.0,
                  "95..100 %")
            print(f"      link: late_packets={j['late_packets']} p99_late={j['p99_late_ns'] / 1000:.0f} us "
                  f"drops={j['w2e']['drops_queue']}")

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

    n_fail = results.count(False)
    print(f"{len(results) - n_fail} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
