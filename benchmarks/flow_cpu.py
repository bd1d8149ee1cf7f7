#!/usr/bin/env python3
"""CPU cost of ccarena-flow, side by side with iperf3 in the same run (root).

1. CPU seconds per GB moved: one bulk flow (cubic) over a plain veth pair between two
   namespaces, ccarena-flow vs iperf3, alternated, client + server CPU of each
   (user + sys from wait4's rusage, i.e. getrusage of the exited process).
2. Sampling cost: 100 paced (light, app-limited) flows with sample_interval 10 ms vs
   1 s (sampling effectively off); the CPU difference of the engine, per wall second,
   is the cost of sampling 100 sockets every 10 ms, in % of one core.

Namespaces are ccaflowbench*, removed always. Prints a table and the ratios.
Usage: sudo python3 benchmarks/flow_cpu.py [--secs 4] [--reps 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "testbeds"))
from flow_harness import BIN, go, read_conns, read_records, veth_pair  # noqa: E402

W = Path("/tmp/ccaflow-bench")
B_IP = "10.78.0.2"


def spawn(ns: str, argv: list[str], **kw) -> subprocess.Popen:
    # `ip netns exec` execs the command: the pid is the program's own.
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)


def reap(p: subprocess.Popen, timeout: float = 60) -> float:
    """Wait for p; return its user+sys CPU seconds (rusage of the exited child)."""
    deadline = time.time() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return ru.ru_utime + ru.ru_stime
        if time.time() > deadline:
            p.kill()
        time.sleep(0.02)


def engine_pair(a: str, b: str, recv_cfg: dict, send_cfg: dict, d: Path) -> tuple[float, float, int]:
    d.mkdir(parents=True, exist_ok=True)
    procs = []
    for ns, cfg in ((b, recv_cfg), (a, send_cfg)):
        path = d / f"{cfg['host']}.json"
        path.write_text(json.dumps(cfg))
        p = spawn(ns, [str(BIN), "--config", str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "READY"
        procs.append(p)
    t0 = go(procs)
    cpu_s = reap(procs[1])
    cpu_r = reap(procs[0])
    return cpu_r, cpu_s, t0


def ours_bulk(a: str, b: str, secs: float, d: Path) -> tuple[float, float]:
    shutil.rmtree(d, ignore_errors=True)
    end = int((secs + 0.5) * 1e9)
    recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": end, "listen": [{"port": 5000, "cc": "cubic"}]}
    send = {"host": "s", "out_dir": str(d / "s"), "end_ns": end,
            "flows": [{"flow": 0, "kind": "bulk", "dst": B_IP, "port": 5000, "cc": "cubic",
                       "start_ns": 0, "stop_ns": int(secs * 1e9)}]}
    cpu_r, cpu_s, _ = engine_pair(a, b, recv, send, d)
    moved = read_conns(d / "r" / "conns.jsonl")[0]["bytes"]
    return cpu_r + cpu_s, moved


def iperf3_bulk(a: str, b: str, secs: float) -> tuple[float, float]:
    srv = spawn(b, ["iperf3", "-s", "-1", "-p", "5201"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    cli = spawn(a, ["iperf3", "-c", B_IP, "-p", "5201", "-t", str(secs), "-C", "cubic", "-J"],
                stdout=subprocess.PIPE, text=True)
    out = cli.stdout.read()
    cpu_c = reap(cli)
    cpu_s = reap(srv)
    moved = json.loads(out)["end"]["sum_received"]["bytes"]
    return cpu_c + cpu_s, moved


def sampling_cost(a: str, b: str, interval_ns: int, secs: float, d: Path) -> tuple[float, float, dict]:
    shutil.rmtree(d, ignore_errors=True)
    end = int(secs * 1e9)
    recv = {"host": "r", "out_dir": str(d / "r"), "end_ns": end, "sample_interval_ns": interval_ns,
            "listen": [{"port": 5000}]}
    flows = [{"flow": i, "kind": "paced", "dst": B_IP, "port": 5000, "write_bytes": 1448, "gap_ns": 100_000_000,
              "gap_dist": "exp", "seed": i, "start_ns": 0} for i in range(100)]
    send = {"host": "s", "out_dir": str(d / "s"), "end_ns": end, "sample_interval_ns": interval_ns, "flows": flows}
    cpu_r, cpu_s, _ = engine_pair(a, b, recv, send, d)
    eng = json.loads((d / "s" / "engine.json").read_text())
    return cpu_s, cpu_r, eng


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    with veth_pair("ccaflowbench", a_ip="10.78.0.1", b_ip=B_IP) as (a, b):
        ours, theirs = [], []
        for r in range(args.reps):
            cpu, moved = ours_bulk(a, b, args.secs, W / f"bulk{r}")
            ours.append(cpu / (moved / 1e9))
            print(f"  ccarena-flow rep {r}: {moved/1e9:.2f} GB in {args.secs:.0f} s, {cpu:.2f} CPU s "
                  f"→ {ours[-1]:.3f} CPU s/GB", flush=True)
            cpu, moved = iperf3_bulk(a, b, args.secs)
            theirs.append(cpu / (moved / 1e9))
            print(f"  iperf3       rep {r}: {moved/1e9:.2f} GB in {args.secs:.0f} s, {cpu:.2f} CPU s "
                  f"→ {theirs[-1]:.3f} CPU s/GB", flush=True)
        o, t = statistics.median(ours), statistics.median(theirs)
        print(f"bulk CPU s/GB (client+server, median of {args.reps}): ccarena-flow {o:.3f}, iperf3 {t:.3f}, "
              f"ratio ccarena-flow/iperf3 = {o/t:.2f}")

        secs = args.secs + 1
        on, off = [], []
        for r in range(args.reps):
            s_on, r_on, eng = sampling_cost(a, b, 10_000_000, secs, W / f"samp-on{r}")
            s_off, r_off, _ = sampling_cost(a, b, 1_000_000_000, secs, W / f"samp-off{r}")
            on.append(s_on + r_on)
            off.append(s_off + r_off)
            recs = eng["records"]["tcpinfo"]
            print(f"  rep {r}: 10 ms: sender {s_on:.3f} + receiver {r_on:.3f} CPU s ({recs} tcpinfo records, "
                  f"{eng['sample_gaps']} gaps, max late {eng['max_tick_late_ns']/1e6:.2f} ms); "
                  f"1 s: sender {s_off:.3f} + receiver {r_off:.3f} CPU s", flush=True)
        delta = (statistics.median(on) - statistics.median(off)) / secs
        print(f"sampling 100 flows every 10 ms (both hosts: 100 tcpinfo + 100 rx records per tick): "
              f"{delta*100:.2f} % of one core (goal < 5 %)")
    shutil.rmtree(W, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
