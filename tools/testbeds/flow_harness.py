"""Small harness for ccarena-flow checks and benchmarks (not the orchestrator).

Creates two namespaces joined by a veth pair (names start with the given prefix),
starts one ccarena-flow per namespace, sends `GO <t0>` to both, waits for DONE and
reads the outputs through their .schema.json sidecars with numpy. Namespaces are
removed in `finally`, always.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from ccarena.measure.records import dtype_from_schema  # noqa: E402
from ccarena.paths import find_binary  # noqa: E402
from ccarena.testbed import netns  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(find_binary("ccarena-flow") or ROOT / "target" / "release" / "ccarena-flow")


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


@contextmanager
def veth_pair(prefix: str, a_ip="10.77.0.1", b_ip="10.77.0.2", rate: str | None = None, offloads=True):
    """Namespaces <prefix>A and <prefix>B, eth0 in each; optional htb rate on A's eth0."""
    a, b = prefix + "A", prefix + "B"
    try:
        netns.create(a)                # as a run's hosts: lo up, IPv6 off
        netns.create(b)
        sh("ip", "-n", a, "link", "add", "name", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b)
        for ns, ip in ((a, a_ip), (b, b_ip)):
            sh("ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            if not offloads:
                netns.set_offloads(ns, "eth0", False)
        if rate:
            sh("tc", "-n", a, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1")
            sh("tc", "-n", a, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate", rate)
        yield a, b
    finally:
        for ns in (a, b):
            netns.remove(ns)           # kills what still runs inside


def start_engine(ns: str, cfg: dict, workdir: Path) -> subprocess.Popen:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{cfg['host']}.json"
    path.write_text(json.dumps(cfg))
    p = subprocess.Popen(netns.exec_argv(ns, [str(BIN), "--config", str(path)]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    while line.startswith("LISTEN "):      # one per listener before READY (contracts §2)
        line = p.stdout.readline()
    if line.strip() != "READY":
        p.kill()
        raise RuntimeError(f"{ns}: expected READY, got {line!r}; stderr: {p.stderr.read()}")
    return p


def go(procs: list[subprocess.Popen], delay_s: float = 0.2) -> int:
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + int(delay_s * 1e9)
    for p in procs:
        p.stdin.write(f"GO {t0}\n")
        p.stdin.flush()
    return t0


def wait_done(p: subprocess.Popen, timeout: float) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.terminate()
        out, err = p.communicate(timeout=10)
    return p.returncode, out, err


def read_records(path: Path) -> np.ndarray:
    """The records of one .bin file as a numpy structured array, laid out as ccarena reads
    them (ccarena.measure.records: the same schema sidecar, the same partial-record rule)."""
    schema = json.loads(Path(str(path) + ".schema.json").read_text())
    dt = dtype_from_schema(schema, str(path))
    raw = path.read_bytes()
    n = len(raw) // dt.itemsize
    return np.frombuffer(raw[: n * dt.itemsize], dtype=dt)


def read_conns(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def rx_goodput_bps(rx: np.ndarray, t_from: int, t_to: int) -> float:
    """Goodput summed over all connections between two times, from cumulative bytes."""
    total = 0
    for key in set(zip(rx["flow"].tolist(), rx["conn"].tolist())):
        r = rx[(rx["flow"] == key[0]) & (rx["conn"] == key[1])]
        r = r[np.argsort(r["t_ns"], kind="stable")]
        b0 = np.interp(t_from, r["t_ns"].astype(float), r["bytes"].astype(float), left=0)
        b1 = np.interp(t_to, r["t_ns"].astype(float), r["bytes"].astype(float))
        total += b1 - b0
    return total * 8 / ((t_to - t_from) / 1e9)


def proc_cpu_s(pid: int) -> float:
    """utime+stime of a process and its waited-for children, in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tck


if __name__ == "__main__":
    print("flow_harness.py: helpers for flow_verify.py and flow_cpu.py (nothing to run)")
