#!/usr/bin/env python3
"""Functional checks of ccarena-flow on real namespaces (root; iperf3, curl, wget).

Each check prints its measured value next to its target; all failures are collected,
the script exits 1 if any. Namespaces are named ccaflowtest* and removed always.
Usage: sudo python3 verify/flow_verify.py [check ...]   (default: all)
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "testbeds"))
from flow_harness import (BIN, go, read_conns, read_records, rx_goodput_bps, sh, start_engine,  # noqa: E402
                          veth_pair, wait_done)

W = Path("/tmp/ccaflow-check")
A_IP, B_IP = "10.77.0.1", "10.77.0.2"
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str) -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def fresh(sub: str) -> Path:
    d = W / sub
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def iperf3_bps(a: str, b: str, cc: str, secs: int = 5) -> float:
    srv = subprocess.Popen(["ip", "netns", "exec", b, "iperf3", "-s", "-1", "-p", "5201"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = sh("ip", "netns", "exec", a, "iperf3", "-c", B_IP, "-p", "5201", "-t", str(secs), "-C", cc, "-J").stdout
        j = json.loads(out)
        return j["end"]["sum_received"]["bits_per_second"]
    finally:
        srv.wait(timeout=10)


def bulk_vs_iperf3() -> None:
    rate = 100e6
    with veth_pair("ccaflowtest", rate="100mbit") as (a, b):
        for cc in ("cubic", "bbr", "reno"):
            d = fresh(f"bulk-{cc}")
            recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": 7_000_000_000, "listen": [{"port": 5000, "cc": cc}]}
            send = {"host": "s", "out_dir": str(d / "s"), "end_ns": 7_000_000_000,
                    "flows": [{"flow": 0, "kind": "bulk", "dst": B_IP, "port": 5000, "cc": cc,
                               "start_ns": 0, "stop_ns": 5_000_000_000}]}
            pr = start_engine(b, recv, d)
            ps = start_engine(a, send, d)
            t0 = go([pr, ps])
            time.sleep(0.2 + 2.0)
            ss = sh("ip", "netns", "exec", a, "ss", "-tin", "dst", B_IP).stdout
            rcs, _, errs = wait_done(ps, 30)
            rcr, _, errr = wait_done(pr, 30)
            check(f"bulk[{cc}] exit codes", rcs == 0 and rcr == 0, f"sender {rcs} {errs.strip()} receiver {rcr} {errr.strip()}")
            check(f"bulk[{cc}] ss shows algorithm", f" {cc} " in ss, ss.splitlines()[-1].strip()[:60] if ss else "no ss output")
            rx = read_records(d / "r" / "rx.bin")
            ti = read_records(d / "s" / "tcpinfo.bin")
            ours = rx_goodput_bps(rx, t0 + 1_000_000_000, t0 + 5_000_000_000)
            theirs = iperf3_bps(a, b, cc)
            ratio = ours / theirs
            check(f"bulk[{cc}] goodput vs iperf3", 0.9 <= ratio <= 1.1 and ours <= rate * 1.02,
                  f"ccarena-flow {ours/1e6:.1f} Mbit/s, iperf3 {theirs/1e6:.1f} Mbit/s, ratio {ratio:.3f}")
            steady = ti[(ti["t_ns"] > t0 + 1_000_000_000) & (ti["t_ns"] < t0 + 5_000_000_000)]
            srtt_ms = float(steady["srtt_us"].mean()) / 1e3
            cwnd = float(steady["cwnd"].mean())
            mss = int(steady["mss"][0])
            # W/RTT must be about the rate (within a factor 2; bbr keeps cwnd ~2 BDP).
            w_rate = cwnd * mss * 8 / (srtt_ms / 1e3)
            check(f"bulk[{cc}] tcpinfo sane", mss == 1448 and srtt_ms > 0 and 0.5 * rate < w_rate < 4 * rate,
                  f"mean cwnd {cwnd:.0f} pkts, srtt {srtt_ms:.2f} ms, mss {mss}, cwnd*mss/srtt {w_rate/1e6:.0f} Mbit/s, "
                  f"{len(ti)} samples")
            conns_s = read_conns(d / "s" / "conns.jsonl")
            conns_r = read_conns(d / "r" / "conns.jsonl")
            check(f"bulk[{cc}] conns.jsonl records the kernel's cc on both ends",
                  conns_s[0]["cc"] == cc and conns_r[0]["cc"] == cc and conns_r[0]["bytes"] == conns_s[0]["bytes"],
                  f"client {conns_s[0]['cc']} sent {conns_s[0]['bytes']}, server {conns_r[0]['cc']} got {conns_r[0]['bytes']}")
            eng = json.loads((d / "s" / "engine.json").read_text())
            check(f"bulk[{cc}] engine.json sampling", eng["samples"] > 400,
                  f"samples {eng['samples']} gaps {eng['sample_gaps']} max late {eng['max_tick_late_ns']/1e6:.2f} ms")


def downloads() -> None:
    with veth_pair("ccaflowtest", rate="50mbit") as (a, b):
        d = fresh("download")
        # A serves (it is the data sender: htb on A's eth0 shapes the downloads).
        srv = {"host": "a", "out_dir": str(d / "a"), "end_ns": 8_000_000_000, "listen": [{"port": 8080, "cc": "cubic"}]}
        cli = {"host": "b", "out_dir": str(d / "b"), "end_ns": 8_000_000_000,
               "flows": [{"flow": 2, "kind": "download", "dst": A_IP, "port": 8080, "cc": "reno", "size": 178176,
                          "count": 5, "every_ns": 500_000_000, "start_ns": 0, "stop_ns": 6_000_000_000},
                         {"flow": 3, "kind": "download", "dst": A_IP, "port": 8080, "size": 1_000_000,
                          "count": 3, "every_ns": 0, "start_ns": 0}]}
        ps = start_engine(a, srv, d)
        pc = start_engine(b, cli, d)
        t0 = go([ps, pc])
        time.sleep(0.5)
        t = sh("ip", "netns", "exec", b, "curl", "-s", "-o", "/dev/null", "-w", "%{time_total} %{size_download} %{http_code}",
               f"http://{A_IP}:8080/bytes/178176").stdout.split()
        check("curl download", t[1:] == ["178176", "200"], f"time_total {t[0]} s, {t[1]} bytes, HTTP {t[2]}")
        wg = subprocess.run(["ip", "netns", "exec", b, "wget", "-q", "-O", "/dev/null", f"http://{A_IP}:8080/bytes/100000"])
        check("wget download", wg.returncode == 0, f"wget exit {wg.returncode}")
        c404 = sh("ip", "netns", "exec", b, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://{A_IP}:8080/nothing").stdout
        check("unknown path is 404", c404 == "404", f"HTTP {c404}")
        rcc, _, errc = wait_done(pc, 30)
        ps.send_signal(signal.SIGTERM)
        rcs, outs, errs = wait_done(ps, 30)
        check("download client done", rcc == 0, f"exit {rcc} {errc.strip()}")
        check("server SIGTERM → DONE, exit 0", rcs == 0 and outs.strip() == "DONE", f"exit {rcs} out {outs.strip()!r} {errs.strip()}")
        cl = read_conns(d / "b" / "conns.jsonl")
        f2 = sorted([c for c in cl if c["flow"] == 2], key=lambda c: c["conn"])
        f3 = sorted([c for c in cl if c["flow"] == 3], key=lambda c: c["conn"])
        ok = len(f2) == 5 and all(c["error"] is None and c["bytes"] == 178176 for c in f2)
        starts = [(c["connect_start_ns"] - t0) / 1e6 for c in f2]
        times = [(c["last_byte_ns"] - c["connect_start_ns"]) / 1e6 for c in f2]
        # 178176 B at 50 Mbit/s needs 28.5 ms of serialisation, less htb's burst (<= 32 KB).
        check("download schedule + times", ok and all(abs(s - 500 * i) < 20 for i, s in enumerate(starts))
              and all(t >= (178176 - 32000) * 8 / 50e6 * 1e3 for t in times),
              f"starts ms {[round(s, 1) for s in starts]}, download ms {[round(t, 1) for t in times]}")
        ok3 = len(f3) == 3 and all(c["error"] is None and c["bytes"] == 1_000_000 for c in f3)
        back2back = all(f3[i + 1]["connect_start_ns"] >= f3[i]["end_ns"] for i in range(len(f3) - 1)) if ok3 else False
        check("download every_ns=0 back to back", ok3 and back2back,
              f"{[(c['conn'], c['bytes'], c['error']) for c in f3]}")
        sv = read_conns(d / "a" / "conns.jsonl")
        curl_rec = [c for c in sv if c["flow"] == 0xFFFFFFFF and c["bytes"] == 178176]
        check("server records curl with flow 0xFFFFFFFF and its cc", len(curl_rec) == 1 and curl_rec[0]["cc"] == "cubic",
              f"{len(sv)} server conns; curl: {curl_rec[:1]}")
        ti = read_records(d / "a" / "tcpinfo.bin")
        rx = read_records(d / "b" / "rx.bin")
        check("download sampled on both sides", len(ti) > 0 and len(rx) > 0, f"tcpinfo {len(ti)} rx {len(rx)}")


def paced_rr_parallel() -> None:
    with veth_pair("ccaflowtest", rate="100mbit") as (a, b):
        d = fresh("mixed")
        recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": 6_000_000_000, "listen": [{"port": 5000}]}
        send = {"host": "s", "out_dir": str(d / "s"), "end_ns": 6_000_000_000, "flows": [
            {"flow": 0, "kind": "paced", "dst": B_IP, "port": 5000, "write_bytes": 1448, "gap_ns": 1_000_000,
             "gap_dist": "const", "start_ns": 0, "stop_ns": 4_000_000_000},
            {"flow": 1, "kind": "paced", "dst": B_IP, "port": 5000, "write_bytes": 1000, "gap_ns": 2_000_000,
             "gap_dist": "exp", "seed": 7, "start_ns": 0, "stop_ns": 4_000_000_000},
            {"flow": 2, "kind": "rr", "dst": B_IP, "port": 5000, "request_bytes": 100, "response_bytes": 1000,
             "count": 200, "gap_ns": 5_000_000, "start_ns": 0},
            {"flow": 3, "kind": "parallel", "conns": 4, "dst": B_IP, "port": 5000, "cc": "reno",
             "bytes": 20_000_000, "start_ns": 500_000_000},
        ]}
        pr = start_engine(b, recv, d)
        ps = start_engine(a, send, d)
        t0 = go([pr, ps])
        rcs, _, errs = wait_done(ps, 30)
        rcr, _, errr = wait_done(pr, 30)
        check("mixed exit codes", rcs == 0 and rcr == 0, f"{rcs} {errs.strip()} / {rcr} {errr.strip()}")
        rx = read_records(d / "r" / "rx.bin")
        for flow, want in ((0, 1448 * 8 * 1000), (1, 1000 * 8 * 500)):
            r = rx[rx["flow"] == flow]
            got = rx_goodput_bps(r, t0 + 500_000_000, t0 + 3_500_000_000)
            check(f"paced flow {flow} offered load", abs(got / want - 1) < 0.1, f"{got/1e6:.3f} Mbit/s, expected {want/1e6:.3f}")
        rr = read_records(d / "s" / "rr.bin")
        lat_ms = rr["latency_ns"] / 1e6 if len(rr) else []
        check("rr exchanges", len(rr) == 200 and float(min(lat_ms)) > 0,
              f"{len(rr)} records, latency ms min {min(lat_ms):.3f} median {sorted(lat_ms)[len(lat_ms)//2]:.3f} max {max(lat_ms):.3f}"
              if len(rr) else "no records")
        srv_rr = [c for c in read_conns(d / "r" / "conns.jsonl") if c["flow"] == 2]
        check("rr server sent 200 responses", len(srv_rr) == 1 and srv_rr[0]["bytes"] == 200_000, f"{srv_rr}")
        cl = [c for c in read_conns(d / "s" / "conns.jsonl") if c["flow"] == 3]
        sv = [c for c in read_conns(d / "r" / "conns.jsonl") if c["flow"] == 3]
        check("parallel stripes bytes over 4 conns", sorted(c["bytes"] for c in cl) == [5_000_000] * 4
              and sum(c["bytes"] for c in sv) == 20_000_000 and all(c["cc"] == "reno" for c in cl),
              f"client {[c['bytes'] for c in cl]} server {[c['bytes'] for c in sv]}")


def bad_configs(tmp: Path = W / "bad") -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cases = {
        "missing size": {"host": "x", "out_dir": str(tmp / "o"), "flows": [{"flow": 0, "kind": "download", "dst": B_IP, "port": 1}]},
        "unknown cc": {"host": "x", "out_dir": str(tmp / "o"), "flows": [{"flow": 0, "kind": "bulk", "dst": B_IP, "port": 1, "cc": "nosuchcc"}]},
    }
    for name, cfg in cases.items():
        p = tmp / "c.json"
        p.write_text(json.dumps(cfg))
        r = subprocess.run([str(BIN), "--config", str(p)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        check(f"bad config ({name}) exits 2 with one line", r.returncode == 2 and r.stderr.count("\n") == 1
              and r.stderr.startswith("ccarena-flow: "), f"exit {r.returncode}: {r.stderr.strip()}")


CHECKS = {"bulk": bulk_vs_iperf3, "download": downloads, "mixed": paced_rr_parallel, "bad": bad_configs}

if __name__ == "__main__":
    names = sys.argv[1:] or list(CHECKS)
    for n in names:
        try:
            CHECKS[n]()
        except Exception as e:  # a check that crashes is a failure, the others still run
            check(n, False, f"crashed: {e!r}")
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)
