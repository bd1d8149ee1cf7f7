#!/usr/bin/env python3
"""Record the call traces of Linux's own congestion-control modules (docs/dev/cc-replay.md).

Runs in the reference kernel (``make cc-traces`` boots it with ``ccarena vm``), as root.
For each algorithm and scenario: a sender, a router and a receiver namespace in a line,
joined by veth pairs (offloads off, so every segment is one packet); netem on the
router's port towards the receiver is the bottleneck (rate, delay, queue limit, loss,
reordering: its drops are the network's, not the sender's own qdisc's, which TCP would
take as local congestion), netem on its port towards the sender is the ACK path (delay,
ACK loss); the scenario's sysctls in the sender's namespace; then one TCP
connection of the algorithm under ``ccarena-cc-record``, which writes
``<out>/<algo>/<scenario>.csv.gz``. Nothing is left behind: the namespaces are deleted
after each scenario, also on error.

    python3 record.py [--out DIR] [--algos reno,bic] [--scenarios bulk,rto]
    python3 record.py send ...   /   python3 record.py recv ...   (the two ends; internal)

The scenarios (SCENARIOS below) each exercise a part of the algorithm's life: slow start
and congestion avoidance with losses from a full queue (SACK), NewReno recovery without
SACK, a retransmission time-out, a spurious fast retransmit undone (reordering, DSACK
and timestamps), a restart after idle, and stretch ACKs (ACK loss on top of delayed
ACKs); and, for DCTCP, ECN marking at a queue threshold (its receiver runs DCTCP too);
for HighSpeed and YeAH, a deep queue (windows and queues their default paths never reach).
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RECORDER = ROOT / "target" / "release" / "ccarena-cc-record"
PORT = 5201
S, M, R = "ccrec-s", "ccrec-m", "ccrec-r"
ADDR_S, ADDR_R = "10.77.1.1", "10.77.2.2"
ALGOS = ["reno", "scalable", "bic"]

# name: description, forward netem, reverse netem, sender sysctls, sender options
SCENARIOS = {
    "bulk": dict(
        describe="2 Mbit/s, 40 ms RTT, 20-packet queue, SACK and timestamps, delayed ACKs: "
                 "slow start, losses from the full queue, SACK recovery, congestion avoidance",
        fwd="delay 20ms rate 2mbit limit 20", rev="delay 20ms", sysctl={}, send=["--bytes", "600000"]),
    "nosack": dict(
        describe="as bulk without SACK, 1 % random loss: NewReno recovery (duplicate ACKs, "
                 "partial ACKs)",
        fwd="delay 20ms rate 2mbit limit 20 loss 1%", rev="delay 20ms",
        sysctl={"net.ipv4.tcp_sack": "0"}, send=["--bytes", "400000"]),
    "rto": dict(
        describe="as bulk; 1 s after the start the path drops everything for 1.2 s: "
                 "retransmission time-outs, Loss state, slow start again",
        fwd="delay 20ms rate 2mbit limit 20", rev="delay 20ms", sysctl={},
        send=["--bytes", "500000", "--blackout", "1.0", "1.2",
              "--blackout-qdisc", "delay 20ms rate 2mbit limit 20 loss 100%"]),
    "reorder": dict(
        describe="25 % of the packets skip the 20 ms delay: duplicate ACKs from reordering, "
                 "spurious fast retransmits undone by DSACK and timestamps",
        fwd="delay 20ms reorder 25% 50% rate 2mbit limit 40", rev="delay 20ms", sysctl={},
        send=["--bytes", "400000"]),
    "idle": dict(
        describe="200 kB, 1.5 s of silence (longer than the RTO), 200 kB: the restart "
                 "after idle (RFC 5681 section 4.1)",
        fwd="delay 20ms rate 2mbit limit 20", rev="delay 20ms", sysctl={},
        send=["--bytes", "200000", "--pause", "1.5", "--then", "200000"]),
    "stretch": dict(
        describe="as bulk with 40 % of the ACKs lost: stretch ACKs acknowledging several "
                 "segments each",
        fwd="delay 20ms rate 2mbit limit 20", rev="delay 20ms loss 40%", sysctl={},
        send=["--bytes", "500000"]),
    "deepq": dict(
        describe="2 Mbit/s, 40 ms RTT, a 100-packet queue: windows near 100 segments and "
                 "queues of over 80 packets (HighSpeed above its first table row, YeAH's "
                 "precautionary decongestion)",
        fwd="delay 20ms rate 2mbit limit 100", rev="delay 20ms", sysctl={},
        send=["--bytes", "1200000"]),
    "ecn": dict(
        describe="2 Mbit/s (htb) with RED marking CE at 10 packets queued (step marking, "
                 "as DCTCP expects), 40 ms RTT on the ACK path, ECN negotiated",
        fwd_tc=[["root", "handle", "1:", "htb", "default", "1"],
                ["class", "parent", "1:", "classid", "1:1", "htb", "rate", "2mbit"],
                ["parent", "1:1", "handle", "10:", "red", "limit", "150000", "min", "15000",
                 "max", "15001", "avpkt", "1500", "burst", "11", "bandwidth", "2mbit",
                 "probability", "1.0", "ecn"]],
        rev="delay 40ms", sysctl={"net.ipv4.tcp_ecn": "1"}, send=["--bytes", "500000"]),
}
# the scenarios every algorithm is recorded in, and those only some need
DEFAULT_SCENARIOS = ["bulk", "nosack", "rto", "reorder", "idle", "stretch"]
EXTRA_SCENARIOS = {"dctcp": ["ecn"], "highspeed": ["deepq"], "yeah": ["deepq"]}
# algorithms whose receiver's side matters (the others' receivers keep the default)
RECEIVER_TOO = {"dctcp"}


def sh(*argv, check=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"record.py: {' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def teardown():
    for ns in (S, M, R):
        sh("ip", "netns", "del", ns, check=False)


def setup(sc: dict):
    teardown()
    for ns in (S, M, R):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        # no cached ssthresh or RTT from an earlier connection of the scenario
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")
    sh("ip", "link", "add", "ccrec-s0", "netns", S, "type", "veth", "peer", "name", "ccrec-ms", "netns", M)
    sh("ip", "link", "add", "ccrec-r0", "netns", R, "type", "veth", "peer", "name", "ccrec-mr", "netns", M)
    for ns, dev, addr in ((S, "ccrec-s0", ADDR_S + "/24"), (M, "ccrec-ms", "10.77.1.2/24"),
                          (M, "ccrec-mr", "10.77.2.1/24"), (R, "ccrec-r0", ADDR_R + "/24")):
        sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
    # permanent neighbours: ARP through a lossy ACK path could fail the connection
    mac = {(ns, dev): json.loads(sh("ip", "-n", ns, "-j", "link", "show", dev).stdout)[0]["address"]
           for ns, dev in ((S, "ccrec-s0"), (M, "ccrec-ms"), (M, "ccrec-mr"), (R, "ccrec-r0"))}
    for ns, dev, ip, peer in ((S, "ccrec-s0", "10.77.1.2", (M, "ccrec-ms")),
                              (M, "ccrec-ms", ADDR_S, (S, "ccrec-s0")),
                              (M, "ccrec-mr", ADDR_R, (R, "ccrec-r0")),
                              (R, "ccrec-r0", "10.77.2.1", (M, "ccrec-mr"))):
        sh("ip", "-n", ns, "neigh", "replace", ip, "lladdr", mac[peer], "dev", dev, "nud", "permanent")
    sh("ip", "-n", S, "route", "add", "default", "via", "10.77.1.2")
    sh("ip", "-n", R, "route", "add", "default", "via", "10.77.2.1")
    sh("ip", "netns", "exec", M, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    for k, v in sc["sysctl"].items():
        sh("ip", "netns", "exec", S, "sysctl", "-qw", f"{k}={v}")
    if "fwd_tc" in sc:
        for args in sc["fwd_tc"]:
            obj = "class" if args[0] == "class" else "qdisc"
            sh("ip", "netns", "exec", M, "tc", obj, "add", "dev", "ccrec-mr",
               *(args[1:] if obj == "class" else args))
    else:
        sh("ip", "netns", "exec", M, "tc", "qdisc", "add", "dev", "ccrec-mr", "root", "netem",
           *sc["fwd"].split())
    sh("ip", "netns", "exec", M, "tc", "qdisc", "add", "dev", "ccrec-ms", "root", "netem", *sc["rev"].split())


def record(algo: str, name: str, out: Path):
    sc = SCENARIOS[name]
    dest = out / algo / f"{name}.csv.gz"
    dest.parent.mkdir(parents=True, exist_ok=True)
    sh("modprobe", f"tcp_{algo}", check=False)   # reno is built in
    try:
        setup(sc)
        me = str(Path(__file__).resolve())
        recv = subprocess.Popen(["ip", "netns", "exec", R, sys.executable, me, "recv",
                                 *(["--algo", algo] if algo in RECEIVER_TOO else [])])
        time.sleep(1.0)
        cmd = [str(RECORDER), "--algo", algo, "--port", str(PORT), "--out", str(dest),
               "--scenario", name, "--describe", sc["describe"], "--",
               "ip", "netns", "exec", S, sys.executable, me, "send", "--algo", algo, *sc["send"]]
        r = subprocess.run(cmd)
        try:
            recv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            recv.kill()
        if r.returncode != 0:
            raise SystemExit(f"record.py: {algo}/{name}: the recorder failed (exit {r.returncode})")
    finally:
        teardown()


def send(a):
    blackout = None
    if a.blackout:
        # tc reading commands from a pipe, started before the connection: under TCG a new
        # process takes seconds to start, so the blackout's two changes must not need one.
        # The first command shows the qdisc: its line on tc's (line-buffered) output says
        # tc is running, so the changes take effect when they are written.
        blackout = subprocess.Popen(["ip", "netns", "exec", M, "stdbuf", "-oL", "tc", "-batch", "-"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        blackout.stdin.write("qdisc show dev ccrec-mr\n")
        blackout.stdin.flush()
        if "netem" not in blackout.stdout.readline():
            raise SystemExit("record.py: tc -batch did not show the bottleneck's netem")
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.algo.encode())
    s.connect((ADDR_R, PORT))
    chunk = b"x" * 16384
    plan = [a.bytes] + ([a.then] if a.then else [])
    if blackout:
        at, length = a.blackout

        def cut():
            # the bottleneck (in the router's namespace) drops everything for a while
            change = "qdisc change dev ccrec-mr root netem "
            time.sleep(at)
            blackout.stdin.write(change + a.blackout_qdisc + "\n")
            blackout.stdin.flush()
            time.sleep(length)
            blackout.stdin.write(change + SCENARIOS["rto"]["fwd"] + "\n")
            blackout.stdin.close()

        threading.Thread(target=cut, daemon=True).start()
    for i, n in enumerate(plan):
        if i:
            # idle: everything acknowledged (SIOCOUTQ: bytes not yet acknowledged), then
            # silence longer than the RTO
            while struct.unpack("i", fcntl.ioctl(s, termios.TIOCOUTQ, b"\0" * 4))[0]:
                time.sleep(0.01)
            time.sleep(a.pause)
        while n > 0:
            n -= s.send(chunk[:min(n, len(chunk))])
    s.shutdown(socket.SHUT_WR)
    s.recv(1)          # the receiver closes when it has read everything
    s.close()
    if blackout and blackout.wait() != 0:
        raise SystemExit("record.py: the blackout's tc commands failed")


def recv(a):
    ls = socket.socket()
    if a.algo:   # DCTCP's receiver echoes every CE mark exactly: it runs DCTCP too
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.algo.encode())
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ADDR_R, PORT))
    ls.listen(1)
    ls.settimeout(900)   # the recorder loads and attaches first: slow in a loaded TCG guest
    c, _ = ls.accept()
    while c.recv(65536):
        pass
    c.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd")
    ps = sub.add_parser("send")
    ps.add_argument("--algo", required=True)
    ps.add_argument("--bytes", type=int, required=True)
    ps.add_argument("--pause", type=float, default=0.0)
    ps.add_argument("--then", type=int, default=0)
    ps.add_argument("--blackout", type=float, nargs=2)
    ps.add_argument("--blackout-qdisc", default="")
    pr = sub.add_parser("recv")
    pr.add_argument("--algo")
    p.add_argument("--out", type=Path, default=ROOT / "crates" / "cc-harness" / "traces")
    p.add_argument("--algos", default=",".join(ALGOS))
    p.add_argument("--scenarios", help="default: " + ", ".join(DEFAULT_SCENARIOS)
                   + " (and " + "; ".join(f"{', '.join(v)} for {k}" for k, v in EXTRA_SCENARIOS.items()) + ")")
    a = p.parse_args(argv)
    if a.cmd == "send":
        return send(a)
    if a.cmd == "recv":
        return recv(a)
    if os.geteuid() != 0:
        raise SystemExit("record.py: needs root (network namespaces, BPF)")
    if not RECORDER.is_file():
        raise SystemExit(f"record.py: {RECORDER} not built: cargo build --release -p ccarena-cc-record")
    for algo in a.algos.split(","):
        names = a.scenarios.split(",") if a.scenarios else \
            DEFAULT_SCENARIOS + EXTRA_SCENARIOS.get(algo, [])
        for name in names:
            if name not in SCENARIOS:
                raise SystemExit(f"record.py: --scenarios {name}: unknown (have {', '.join(SCENARIOS)})")
            print(f"record.py: {algo}/{name}", flush=True)
            record(algo, name, a.out)


if __name__ == "__main__":
    main()
