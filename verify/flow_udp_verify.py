#!/usr/bin/env python3
"""Real checks of ccarena-flow's UDP RTT probe in two namespaces (root).

ccaudptestA ── veth ── ccaudptestB, offloads off, htb 20 Mbit/s on A's eth0 (this kernel
has no netem, so no emulated propagation delay: what the probe must show is the
*queueing* delay a competing flow builds). B runs a udp_echo listener and a TCP
listener; A runs a 100 Hz udp_probe (64 B) for 8 s and, from 2 s to 6 s, a bulk flow
(cubic) to B through the same htb. Checks, each printed with its measured value:
  * 100 Hz sends happen at 100 Hz: sends on the 10 ms grid, intervals, skipped sends;
  * every probe answered (rtt != u64::MAX) on an idle path, RTT small;
  * with the bulk flow the probe RTT rises by the queueing delay and agrees with the
    bulk flow's own TCP srtt (tcpinfo.bin) — same queue, same delay;
  * a 1 kHz probe keeps its rate too.
Namespaces are removed and engines stopped always.
Usage: sudo python3 verify/flow_udp_verify.py
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "testbeds"))
from flow_harness import go, read_records, start_engine, veth_pair, wait_done  # noqa: E402

W = Path("/tmp/ccaudp-check")
B_IP = "10.77.0.2"
LOST = np.iinfo(np.uint64).max
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str) -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def run(d: Path, a: str, b: str, flows: list[dict], end_ns: int) -> tuple[int, dict, dict]:
    recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": end_ns + 1_000_000_000,
            "listen": [{"port": 5000, "cc": "cubic"}, {"port": 7000, "proto": "udp_echo"}]}
    send = {"host": "s", "out_dir": str(d / "s"), "end_ns": end_ns, "flows": flows}
    pr = start_engine(b, recv, d)
    ps = start_engine(a, send, d)
    t0 = go([pr, ps])
    rcs, _, errs = wait_done(ps, end_ns / 1e9 + 30)
    rcr, _, errr = wait_done(pr, end_ns / 1e9 + 30)
    check(f"{d.name}: engines exit 0", rcs == 0 and rcr == 0, f"sender {rcs} {errs.strip()} receiver {rcr} {errr.strip()}")
    eng_s = json.loads((d / "s" / "engine.json").read_text())
    eng_r = json.loads((d / "r" / "engine.json").read_text())
    return t0, eng_s, eng_r


def rate_checks(tag: str, u: np.ndarray, t_start: int, interval: int, dur_s: float, probe: dict) -> None:
    t = u["t_ns"].astype(np.int64)
    phase = (t - t_start) % interval
    late = np.minimum(phase, interval - phase) / 1e3  # µs from the nearest grid point
    gaps = np.diff(t) / 1e6
    hz = (len(t) - 1) / ((t[-1] - t[0]) / 1e9)
    want = round(dur_s * 1e9 / interval)
    check(f"{tag}: sends at {1e9 / interval:.0f} Hz",
          abs(hz - 1e9 / interval) / (1e9 / interval) < 0.01 and probe["sent"] + probe["skipped_sends"] == want
          and probe["skipped_sends"] <= want // 50,
          f"{len(t)} sends ({probe['skipped_sends']} skipped of {want} grid points), mean rate {hz:.2f} Hz, "
          f"interval median {np.median(gaps):.3f} ms p1 {np.percentile(gaps, 1):.3f} p99 {np.percentile(gaps, 99):.3f} ms, "
          f"send after grid point median {np.median(late):.0f} µs p99 {np.percentile(late, 99):.0f} µs "
          f"max {probe['max_send_late_ns'] / 1e3:.0f} µs")


def hundred_hz_with_and_without_bulk() -> None:
    d = W / "probe-bulk"
    shutil.rmtree(d, ignore_errors=True)
    with veth_pair("ccaudptest", rate="20mbit", offloads=False) as (a, b):
        iv = 10_000_000
        flows = [{"flow": 1, "kind": "udp_probe", "dst": B_IP, "port": 7000, "interval_ns": iv, "size": 64,
                  "start_ns": 0, "stop_ns": 8_000_000_000},
                 {"flow": 0, "kind": "bulk", "dst": B_IP, "port": 5000, "cc": "cubic",
                  "start_ns": 2_000_000_000, "stop_ns": 6_000_000_000}]
        t0, eng, eng_r = run(d, a, b, flows, 9_000_000_000)
    u = read_records(d / "s" / "udp.bin")
    probe = eng["udp_probes"][0]
    rate_checks("100 Hz probe", u, t0, iv, 8.0, probe)
    rel = (u["t_ns"].astype(np.int64) - t0) / 1e9
    idle = u[((rel < 1.9) | (rel > 7.0))]
    busy = u[(rel > 3.0) & (rel < 5.9)]
    lost_idle = int(np.sum(idle["rtt_ns"] == LOST))
    rtt_idle = idle["rtt_ns"][idle["rtt_ns"] != LOST] / 1e6
    rtt_busy = busy["rtt_ns"][busy["rtt_ns"] != LOST] / 1e6
    ti = read_records(d / "s" / "tcpinfo.bin")
    trel = (ti["t_ns"].astype(np.int64) - t0) / 1e9
    srtt = ti["srtt_us"][(trel > 3.0) & (trel < 5.9)] / 1e3
    check("idle path: every probe answered, RTT small",
          lost_idle == 0 and len(rtt_idle) > 250 and np.median(rtt_idle) < 2.0,
          f"{len(idle)} probes, {lost_idle} lost, RTT median {np.median(rtt_idle):.3f} ms "
          f"p99 {np.percentile(rtt_idle, 99):.3f} ms; udp_echo echoed {eng_r['udp_echo']['echoed']}")
    med_b, med_s = float(np.median(rtt_busy)), float(np.median(srtt))
    check("bulk flow through the htb: probe RTT rises by the queueing delay",
          med_b > np.median(rtt_idle) + 2.0,
          f"probe RTT median {med_b:.2f} ms (p10 {np.percentile(rtt_busy, 10):.2f}, p90 {np.percentile(rtt_busy, 90):.2f}) "
          f"with bulk vs {np.median(rtt_idle):.3f} ms idle; "
          f"{int(np.sum(busy['rtt_ns'] == LOST))} of {len(busy)} lost")
    check("probe RTT agrees with the bulk flow's TCP srtt (same queue)",
          0.5 <= med_b / med_s <= 2.0,
          f"probe {med_b:.2f} ms, tcpinfo srtt {med_s:.2f} ms (ratio {med_b / med_s:.2f})")
    check("udp.bin complete", eng["records"]["udp"] == len(u) == probe["sent"] and probe["lost"] == int(np.sum(u["rtt_ns"] == LOST)),
          f"{len(u)} records, engine.json {probe}")


def one_khz() -> None:
    d = W / "probe-1khz"
    shutil.rmtree(d, ignore_errors=True)
    with veth_pair("ccaudptest", rate="20mbit", offloads=False) as (a, b):
        iv = 1_000_000
        flows = [{"flow": 2, "kind": "udp_probe", "dst": B_IP, "port": 7000, "interval_ns": iv, "size": 64,
                  "start_ns": 0, "stop_ns": 3_000_000_000}]
        t0, eng, _ = run(d, a, b, flows, 4_000_000_000)
    u = read_records(d / "s" / "udp.bin")
    probe = eng["udp_probes"][0]
    rate_checks("1 kHz probe", u, t0, iv, 3.0, probe)
    ok = u["rtt_ns"] != LOST
    check("1 kHz probe answered", int(np.sum(~ok)) == 0,
          f"{int(np.sum(~ok))} lost of {len(u)}, RTT median {np.median(u['rtt_ns'][ok]) / 1e3:.0f} µs; "
          f"sender CPU {eng['cpu_user_s'] + eng['cpu_sys_s']:.3f} s for {len(u)} probes")


def ten_ms_delay_via_ccarena_link() -> None:
    """10 ms one-way each way emulated by ccarena-link (user-space, since no netem):
    the probe's idle RTT must be >= 20 ms and agree with ping's; a bulk flow adds the
    link's queueing delay (20 Mbit/s, 100-packet droptail)."""
    from link_testbed import LINK_BIN, Testbed, direction  # the link engineer's testbed
    if not LINK_BIN.exists():
        print(f"SKIP 10 ms delay: {LINK_BIN} not built")
        return
    d = W / "probe-delay"
    shutil.rmtree(d, ignore_errors=True)
    with Testbed("udp") as tb:
        tb.start_link(direction(rate_bps=20_000_000, delay_ns=10_000_000, buffer={"packets": 100}),
                      direction(rate_bps=20_000_000, delay_ns=10_000_000, buffer={"packets": 100}))
        ping = tb.ping_summary(40, 0.05)
        iv = 10_000_000
        flows = [{"flow": 1, "kind": "udp_probe", "dst": "10.9.0.2", "port": 7000, "interval_ns": iv, "size": 64,
                  "start_ns": 0, "stop_ns": 6_000_000_000},
                 {"flow": 0, "kind": "bulk", "dst": "10.9.0.2", "port": 5000, "cc": "cubic",
                  "start_ns": 2_000_000_000, "stop_ns": 4_500_000_000}]
        t0, eng, _ = run(d, tb.A, tb.B, flows, 7_000_000_000)
        link = tb.stop_link()
    u = read_records(d / "s" / "udp.bin")
    rate_checks("100 Hz probe over ccarena-link", u, t0, iv, 6.0, eng["udp_probes"][0])
    rel = (u["t_ns"].astype(np.int64) - t0) / 1e9
    ok = u["rtt_ns"] != LOST
    idle = u["rtt_ns"][ok & (rel < 1.9)] / 1e6
    busy = u["rtt_ns"][ok & (rel > 3.0) & (rel < 4.4)] / 1e6
    # 100 packets of 1514 B at 20 Mbit/s = 60.6 ms of queue at most
    check("10 ms one-way delay: probe RTT >= 20 ms and = ping's",
          np.min(idle) >= 20.0 and abs(np.median(idle) - ping["avg"]) < 1.0,
          f"probe idle RTT min {np.min(idle):.3f} median {np.median(idle):.3f} ms; ping min {ping['min']:.3f} "
          f"avg {ping['avg']:.3f} ms; link late_packets {link.get('late_packets')}")
    check("10 ms one-way delay: bulk adds queueing delay, bounded by the buffer",
          np.median(busy) > np.median(idle) + 5 and np.max(busy) < 20 + 61 + 5,
          f"probe RTT with bulk median {np.median(busy):.2f} ms max {np.max(busy):.2f} ms "
          f"(base 20 ms + at most 60.6 ms of 100-packet queue); lost {int(np.sum(~ok))} of {len(u)}")


if __name__ == "__main__":
    try:
        hundred_hz_with_and_without_bulk()
        one_khz()
        ten_ms_delay_via_ccarena_link()
    finally:
        from ccarena.testbed import netns
        for ns in ("ccaudptestA", "ccaudptestB"):
            netns.remove(ns)           # kills what still runs inside
    bad = [r for r in results if not r[1]]
    print(f"{len(results) - len(bad)}/{len(results)} checks passed")
    sys.exit(1 if bad else 0)
