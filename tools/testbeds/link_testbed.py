"""Three-namespace testbed for ccarena-link checks and benchmarks (root only).

    A (10.9.0.1/24, eth0) ── lw [L: ccarena-link] le ── B (10.9.0.2/24, eth0)

or, with ``plain=True``, A's eth0 and B's eth0 are the two ends of one veth pair (the
reference path). Every name starts with ``ccalinktest``; ``down()`` (also run by the
context manager on any error) deletes the namespaces and kills what it started.
TSO/GSO/GRO are off on every interface; TCP buffers in A and B are raised to 64 MiB
so one flow can fill a 40 ms × multi-Gbit/s path. Like the orchestrator (see
ccarena.testbed.user_link.placement), the emulator is pinned to one CPU and A's and B's
receive work is steered to the others with RPS; ``steer=False`` leaves both to the
scheduler.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
from ccarena.paths import find_binary  # noqa: E402
from ccarena.testbed import netns  # noqa: E402
from ccarena.testbed.netns import sysfs_write  # noqa: E402
from ccarena.testbed.user_link import (HANDOFF_MIN_KERNEL, add_handoff_fifo, cpu_mask, kernel_version, placement, port_counters)
LINK_BIN = Path(find_binary("ccarena-link") or ROOT / "target" / "release" / "ccarena-link")
A_IP, B_IP = "10.9.0.1", "10.9.0.2"


def sh(*args: str, check: bool = True, capture: bool = False) -> str:
    r = subprocess.run(args, check=False, text=True, capture_output=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return r.stdout


def direction(rate_bps=None, delay_ns=0, buffer=None, queue=None, **extra) -> dict:
    d = {"rate_bps": rate_bps, "delay_ns": delay_ns, "buffer": buffer or {"packets": 1000},
         "queue": queue or {"kind": "droptail"}}
    d.update(extra)
    return d


class Testbed:
    def __init__(self, tag: str, plain: bool = False, steer: bool = True, confine: bool = False,
                 handoff: bool = True):
        """``confine`` (plain only): the endpoints (iperf3 and their receive work) run on
        the CPUs the orchestrator's placement leaves them next to an emulator, so the
        reference path gets the same CPUs as the endpoints of an emulated one."""
        self.tag = f"ccalinktest{tag}{os.getpid() % 10000}"
        self.A, self.L, self.B = self.tag + "a", self.tag + "l", self.tag + "b"
        self.plain = plain
        # as the orchestrator's routers (user_link.handoff_qdiscs), a fifo on the ports
        # towards the emulator; here those are the hosts' own eth0 (unlike a router's
        # port, TCP small queues also push back there)
        self.handoff = handoff and not plain and kernel_version() >= HANDOFF_MIN_KERNEL
        self.link_cpus, self.rps_cpus = placement() if steer and not plain else ([], [])
        self.confine_cpus: list[int] = []
        if confine and plain:
            self.confine_cpus = placement()[1]
            self.rps_cpus = self.confine_cpus
        self.procs: list[subprocess.Popen] = []
        self.servers: dict[int, subprocess.Popen] = {}
        self.link: subprocess.Popen | None = None
        self.tmp = Path(tempfile.mkdtemp(prefix="ccalinktest-"))
        self.out_dir = self.tmp / "out"

    # -- lifecycle -----------------------------------------------------------
    def __enter__(self) -> "Testbed":
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def nsx(self, ns: str, *args: str, check: bool = True) -> str:
        return sh(*netns.exec_argv(ns, list(args)), check=check)

    def up(self) -> None:
        A, L, B = self.A, self.L, self.B
        for n in (A, B) if self.plain else (A, L, B):
            netns.create(n)            # as a run's hosts: lo up, IPv6 off
        if self.plain:
            sh("ip", "-n", A, "link", "add", "name", "eth0", "type", "veth", "peer", "name", "eth0", "netns", B)
        else:
            sh("ip", "-n", L, "link", "add", "name", "lw", "type", "veth", "peer", "name", "eth0", "netns", A)
            sh("ip", "-n", L, "link", "add", "name", "le", "type", "veth", "peer", "name", "eth0", "netns", B)
            for i in ("lw", "le"):
                sh("ip", "-n", L, "link", "set", i, "up")
                netns.set_offloads(L, i, False)
        sh("ip", "-n", A, "addr", "add", f"{A_IP}/24", "dev", "eth0")
        sh("ip", "-n", B, "addr", "add", f"{B_IP}/24", "dev", "eth0")
        for n in (A, B):
            sh("ip", "-n", n, "link", "set", "eth0", "up")
            netns.set_offloads(n, "eth0", False)
            netns.sysctl_set(n, {"net.ipv4.tcp_rmem": "4096 131072 67108864",
                                 "net.ipv4.tcp_wmem": "4096 16384 67108864"})
            if self.rps_cpus:
                sysfs_write(n, "class/net/eth0/queues/rx-0/rps_cpus", cpu_mask(self.rps_cpus))
            if self.handoff:
                add_handoff_fifo(n, "eth0")

    def down(self) -> None:
        for p in self.procs + ([self.link] if self.link else []):
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs.clear()
        self.link = None
        for n in (self.A, self.L, self.B):
            netns.remove(n)            # kills what still runs inside, as a run's teardown
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the link ------------------------------------------------------------
    def start_link(self, w2e: dict, e2w: dict | None = None, **top) -> None:
        cfg = {"ifaces": {"west": "lw", "east": "le"}, "out_dir": str(self.out_dir),
               "stats_interval_ns": 10_000_000, "late_tolerance_ns": 100_000, "seed": 1,
               "w2e": w2e, "e2w": e2w or w2e, "cpus": self.link_cpus,
               # the orchestrator's packet I/O unless the caller names one
               "io": os.environ.get("CCARENA_LINK_IO", "auto")}
        cfg.update(top)
        path = self.tmp / "link.json"
        path.write_text(json.dumps(cfg))
        self.link = subprocess.Popen(netns.exec_argv(self.L, [str(LINK_BIN), "--config",
                                                              str(path)]),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.link.stdout.readline()
        if line.strip() != "READY":
            raise RuntimeError(f"ccarena-link did not start: {line!r} {self.link.stderr.read()}")
        self._ingress0 = self.ingress_drops()
        time.sleep(0.2)

    def stop_link(self) -> dict:
        """Stop the emulator -> its link.json, plus `ingress_drops`: the frames its ports'
        peers dropped while it ran (not counted by the emulator itself)."""
        assert self.link is not None
        self.link.terminate()
        out, err = self.link.communicate(timeout=20)
        rc = self.link.returncode
        self.link = None
        if rc != 0 or "DONE" not in out:
            raise RuntimeError(f"ccarena-link exit {rc}: {err.strip()}")
        j = json.loads((self.out_dir / "link.json").read_text())
        if not self.plain:
            j["ingress_drops"] = self.ingress_drops() - self._ingress0
        return j

    def ingress_drops(self) -> int:
        """Frames A's and B's eth0 (veth and hand-off fifo) dropped on transmit so far:
        their peers are the emulator's ports, so these never reached it."""
        return sum(port_counters(ns, "eth0")["dropped"] for ns in (self.A, self.B))

    def link_pid(self) -> int:
        assert self.link is not None
        return self.link.pid

    # -- traffic -------------------------------------------------------------
    def ping(self, count: int, interval: float = 0.1, size: int = 56) -> list[float]:
        out = self.nsx(self.A, "ping", "-n", "-c", str(count), "-i", str(interval),
                       "-s", str(size), B_IP, check=False)
        return [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]

    def ping_summary(self, count: int, interval: float = 0.05) -> dict:
        """min/avg/max/mdev in ms from ping's summary (3 decimals, unlike per-packet times)."""
        out = self.nsx(self.A, "ping", "-n", "-q", "-c", str(count), "-i", str(interval), B_IP, check=False)
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", out)
        if not m:
            raise RuntimeError(f"ping failed: {out[-200:]}")
        return dict(zip(("min", "avg", "max", "mdev"), map(float, m.groups())))

    def ping_bg(self, count: int, interval: float = 0.1) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.A, "ping", "-n", "-c", str(count), "-i", str(interval), B_IP],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def _taskset(self) -> list[str]:
        return ["taskset", "-c", ",".join(map(str, self.confine_cpus))] if self.confine_cpus else []

    def iperf_servers(self, ports) -> None:
        for port in ports:
            old = self.servers.get(port)
            if old is not None and old.poll() is None:
                try:
                    old.wait(timeout=5)  # a one-shot server still finishing its test
                except subprocess.TimeoutExpired:
                    old.kill()
                    old.wait()
            p = subprocess.Popen(["ip", "netns", "exec", self.B, *self._taskset(), "iperf3", "-s", "-1", "-p", str(port)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append(p)
            self.servers[port] = p
        time.sleep(0.3)

    def iperf_bg(self, port: int, seconds: float, parallel: int = 1, omit: int = 0) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.A, *self._taskset(), "iperf3", "-c", B_IP, "-p", str(port), "-t", str(seconds),
                              "-P", str(parallel), "-O", str(omit), "-C", "cubic", "-J"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def iperf(self, seconds: float, parallel: int = 1, omit: int = 0, port: int = 5201) -> float:
        """Receiver goodput in bit/s of one iperf3 run (cubic)."""
        self.iperf_servers([port])
        p = self.iperf_bg(port, seconds, parallel, omit)
        return iperf_result(p)


def iperf_result(p: subprocess.Popen) -> float:
    out, err = p.communicate(timeout=120)
    try:
        j = json.loads(out)
    except json.JSONDecodeError:
        raise RuntimeError(f"iperf3 failed: {err.strip()[-300:]} {out[-300:]}")
    if "error" in j:
        raise RuntimeError(f"iperf3: {j['error']}")
    return j["end"]["sum_received"]["bits_per_second"]


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if s else float("nan")


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")
