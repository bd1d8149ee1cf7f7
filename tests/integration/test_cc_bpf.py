"""Integration tests of the BPF congestion-control pack (root; network namespaces).

Each built algorithm is registered through ccarena.cc.acquire, carries a TCP flow
between two namespaces made here (prefix ``ccacctest``) over an htb-limited veth,
is seen by ``ss -tin`` in the sender namespace, and is gone after release
(``bpftool struct_ops list`` shows none of ours). Namespaces are deleted and
struct_ops released in ``finally`` blocks, also when a check fails.

Also a by-hand sanity tool (not a test): ::

    python3 tests/integration/test_cc_bpf.py trace scalable [--secs 8] [--rate 50mbit]

prints the cwnd trace summary and the cwnd ratio after each reduction.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

import ccarena.cc as cc  # noqa: E402
from ccarena.cc import loader
from ccarena.cc import catalog as registry  # noqa: E402

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)"),
    pytest.mark.skipif(registry.paths.loader() is None, reason="ccarena-cc not built (make bpf)"),
]

PORT = 5201

# Sender: connect, set TCP_CONGESTION, read it back, send for `secs`, sample TCP_INFO
# every `interval` s; print one JSON object per sample and a final summary line.
SENDER = textwrap.dedent(r'''
    import json, socket, struct, sys, threading, time
    dst, port, cca, secs, interval = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
    got = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    s.connect((dst, port))
    options = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)[5]   # tcpi_options
    stop = time.monotonic() + secs
    sent = 0
    samples = []
    def sample():
        t0 = time.monotonic()
        while time.monotonic() < stop:
            b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
            ca_state = b[1]
            rtt, rttvar, ssthresh, cwnd = struct.unpack_from("<4I", b, 68)
            total_retrans = struct.unpack_from("<I", b, 100)[0]
            samples.append((round(time.monotonic() - t0, 4), cwnd, ssthresh, rtt, total_retrans, ca_state))
            time.sleep(interval)
    th = threading.Thread(target=sample, daemon=True); th.start()
    buf = b"x" * 65536
    while time.monotonic() < stop:
        sent += s.send(buf)
    th.join()
    s.close()
    print(json.dumps({"cc": got, "options": options, "sent": sent, "secs": secs, "samples": samples}))
''')

# Receiver: accept one connection (its socket uses the same algorithm: DCTCP needs
# both ends), read to EOF, print bytes received.
RECEIVER = textwrap.dedent(r'''
    import socket, sys, time
    ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if len(sys.argv) > 2:
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[2].encode())
    ls.bind(("0.0.0.0", int(sys.argv[1]))); ls.listen(1)
    print("READY", flush=True)
    c, _ = ls.accept(); n = 0; t0 = None
    while True:
        d = c.recv(1 << 20)
        if not d: break
        if t0 is None: t0 = time.monotonic()
        n += len(d)
    print(n, time.monotonic() - t0 if t0 else 0.0, flush=True)
''')


def testaid() -> Path:
    """The loader's test aid (`mark`), built beside the loader with the `testing` feature;
    the shipped ccarena-cc has no test subcommands."""
    return registry.paths.loader().with_name("ccarena-cc-testaid")


def sh(*argv, check=True, **kw):
    return subprocess.run([str(a) for a in argv], check=check, capture_output=True, text=True, **kw)


class NsPair:
    """sender ──veth── router ──veth── receiver, three namespaces of our own.

    The router's port toward the receiver is shaped (htb rate + bfifo buffer), so
    the bottleneck queue and its drops are in another namespace than the sender:
    losses are real losses (fast retransmit, recovery), not local-qdisc
    congestion signals (tcp_enter_cwr), and TSQ does not see the queue."""

    def __init__(self, tag: str | None = None, rate: str | None = "50mbit", limit_bytes: int = 60000,
                 ce_per_mille: int = 0):
        tag = tag or uuid.uuid4().hex[:6]
        self.rate, self.limit_bytes, self.ce_per_mille = rate, limit_bytes, ce_per_mille
        self.marker: subprocess.Popen | None = None
        self.s, self.g, self.r = f"ccacctest{tag}s", f"ccacctest{tag}g", f"ccacctest{tag}r"
        self.tag = tag
        self.saddr, self.raddr = "10.231.1.1", "10.231.2.2"

    def _veth(self, a_ns, b_ns, n, a_if, b_if):
        va, vb = f"ccact{self.tag}{n}a", f"ccact{self.tag}{n}b"
        sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
        sh("ip", "link", "set", va, "netns", a_ns, "name", a_if)
        sh("ip", "link", "set", vb, "netns", b_ns, "name", b_if)

    def up(self):
        rate, limit_bytes = self.rate, self.limit_bytes
        for ns in (self.s, self.g, self.r):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        self._veth(self.s, self.g, 1, "eth0", "west")
        self._veth(self.g, self.r, 2, "east", "eth0")
        for ns, dev, addr in ((self.s, "eth0", "10.231.1.1/24"), (self.g, "west", "10.231.1.2/24"),
                              (self.g, "east", "10.231.2.1/24"), (self.r, "eth0", "10.231.2.2/24")):
            sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
               check=False)
        sh("ip", "-n", self.s, "route", "add", "default", "via", "10.231.1.2")
        sh("ip", "-n", self.r, "route", "add", "default", "via", "10.231.2.1")
        sh("ip", "netns", "exec", self.g, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        if rate:
            sh("tc", "-n", self.g, "qdisc", "add", "dev", "east", "root", "handle", "1:", "htb", "default", "1")
            sh("tc", "-n", self.g, "class", "add", "dev", "east", "parent", "1:", "classid", "1:1",
               "htb", "rate", rate)
            sh("tc", "-n", self.g, "qdisc", "add", "dev", "east", "parent", "1:1", "bfifo",
               "limit", str(limit_bytes))
        if self.ce_per_mille:
            # this kernel has no ECN-marking qdisc: a tcx program marks CE at random
            obj = registry.paths.build_dir() / "bpf" / "test" / "ce_mark.bpf.o"
            self.marker = subprocess.Popen(
                [str(testaid()), "mark", "--obj", str(obj), "--netns", self.g,
                 "--dev", "east", "--per-mille", str(self.ce_per_mille)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = self.marker.stdout.readline().strip()
            assert line == "READY", self.marker.stderr.read()
        return self

    def down(self):
        if self.marker is not None:
            if self.marker.poll() is None:
                self.marker.send_signal(signal.SIGTERM)
            self.marker.wait(timeout=10)
            self.marker = None
        for ns in (self.s, self.g, self.r):
            sh("ip", "netns", "del", ns, check=False)

    def __enter__(self):
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc):
        self.down()

    def flow(self, cca: str, secs: float = 2.0, interval: float = 0.02, ss_at: float | None = None,
             rx_cca: str | None = None):
        """Run one bulk flow sender→receiver; returns (sender summary, ss -tin text).
        The receiver's socket uses `rx_cca` (default: the sender's algorithm)."""
        rx = subprocess.Popen(["ip", "netns", "exec", self.r, sys.executable, "-c", RECEIVER, str(PORT), rx_cca or cca],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert rx.stdout.readline().strip() == "READY", rx.stderr.read()
            tx = subprocess.Popen(["ip", "netns", "exec", self.s, sys.executable, "-c", SENDER,
                                   self.raddr, str(PORT), cca, str(secs), str(interval)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ss = ""
            if ss_at is not None:
                time.sleep(ss_at)
                ss = sh("ip", "netns", "exec", self.s, "ss", "-tin", "dst", self.raddr).stdout
            out, err = tx.communicate(timeout=secs + 30)
            assert tx.returncode == 0, f"sender failed: {err.strip()}"
            res = json.loads(out)
            rx_out, _ = rx.communicate(timeout=10)
            res["received"] = int(rx_out.split()[-2])
            res["rx_secs"] = float(rx_out.split()[-1])  # first byte to EOF
            return res, ss
        finally:
            if rx.poll() is None:
                rx.kill()
                rx.wait()


def ours_registered() -> list[str]:
    return [n for n in loader.registered() if n.startswith(registry.PREFIX)]


def ours_struct_ops() -> list[dict]:
    return [so for so in loader.tcp_struct_ops() if (so["name"] or "").startswith(registry.PREFIX)]


def built() -> list[str]:
    return sorted(registry.builtin_objects())


def run_id() -> str:
    return "t" + uuid.uuid4().hex[:6]


@pytest.fixture(autouse=True)
def no_leftovers():
    """Nothing of ours may outlive a test. Algorithms that other live runs on this
    (shared) machine held before the test started are theirs, not leaks."""
    before = set(ours_registered())
    before_ids = {so["id"] for so in ours_struct_ops()}
    yield
    cc.cleanup_stale()
    assert set(ours_registered()) <= before
    assert {so["id"] for so in ours_struct_ops()} <= before_ids
    leftover = [l for l in sh("ip", "netns", "list").stdout.splitlines() if l.startswith("ccacctest")]
    for l in leftover:
        sh("ip", "netns", "del", l.split()[0], check=False)
    assert leftover == []


def reductions(samples) -> list[float]:
    """ssthresh chosen at each entry into CWR/Recovery/Loss, relative to the largest
    cwnd of the 5 samples before it (samples: t, cwnd, ssthresh, rtt, retrans, ca_state)."""
    out = []
    for i in range(1, len(samples)):
        if samples[i][5] >= 2 and samples[i - 1][5] < 2 and samples[i][2] < 0x7FFFFFFF:
            before = max(s[1] for s in samples[max(0, i - 5):i])
            if before > 4:
                out.append(samples[i][2] / before)
    return out


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("name", built() or ["reno"])
def test_cc_carries_traffic(name):
    """Register cca_<name>, run a flow between two namespaces, see it in ss -tin."""
    if name not in registry.builtin_objects():
        pytest.skip("no BPF objects built (make bpf)")
    rid = run_id()
    with NsPair() as ns:
        with cc.acquire([name], rid, force="bpf") as m:
            kname = m[name]
            assert kname == f"cca_{name}"
            # global list: visible from inside a namespace created after registration
            avail = sh("ip", "netns", "exec", ns.s, "cat", registry.AVAILABLE_FILE).stdout.split()
            assert kname in avail
            res, ss = ns.flow(kname, secs=2.0, ss_at=1.0)
            assert cc.guard_counts(kname) is not None  # the holder reports its guard counts
        assert res["cc"] == kname
        assert kname in ss, ss
        rate_bps = 50e6
        assert res["received"] > 0
        # receiver's view, first byte to EOF (the send buffer drains after the sender stops)
        goodput = res["received"] * 8 / res["rx_secs"]
        assert goodput <= rate_bps * 1.1, f"goodput {goodput / 1e6:.1f} Mbit/s over a 50 Mbit/s htb"
        cw = [s[1] for s in res["samples"]]
        assert max(cw) >= 2
        # a corrupted window (docs/algorithms.md, "Known issue") is repaired by the guard
        # at the next ACK: never two 20-ms samples in a row
        assert not any(a > 1 << 20 and b > 1 << 20 for a, b in zip(cw, cw[1:])), max(cw)
    assert kname not in loader.registered()
    assert all(so["name"] != kname for so in ours_struct_ops())


TCPI_OPT_ECN = 8


def test_cc_dctcp_reacts_to_ce_marks():
    """DCTCP negotiates ECN and, with 10 % of packets CE-marked at the bottleneck,
    cuts cwnd by alpha/2 (small steps), not by half; Reno-style halving would give
    ratios near 0.5. Marks come from bpf/test/ce_mark.bpf.c (this kernel has no
    ECN-marking qdisc)."""
    if "dctcp" not in registry.builtin_objects():
        pytest.skip("cca_dctcp not built")
    if not (registry.paths.build_dir() / "bpf" / "test" / "ce_mark.bpf.o").is_file():
        pytest.skip("ce_mark.bpf.o not built (make bpf)")
    if not testaid().is_file():
        pytest.skip("ccarena-cc-testaid not built (cargo build --release -p ccarena-cc --features testing)")
    with NsPair(ce_per_mille=100) as ns:
        with cc.acquire(["dctcp"], run_id(), force="bpf") as m:
            res, _ = ns.flow(m["dctcp"], secs=4.0, interval=0.01)
    assert res["options"] & TCPI_OPT_ECN, "ECN was not negotiated"
    smp = res["samples"]
    cw = sorted(s[1] for s in smp[len(smp) // 2:])
    red = reductions(smp)
    assert red, "no reduction seen"
    # median cwnd reduction well above Reno's 0.5 (alpha ~ 0.1 -> ~0.95)
    assert sorted(red)[len(red) // 2] > 0.75, red
    # and the marks keep cwnd below the loss-driven range (~20-40 segments here)
    assert cw[len(cw) // 2] < 30, cw


def test_cc_refcount_two_runs():
    name = (built() or pytest.skip("no BPF objects built"))[0]
    k = f"cca_{name}"
    a, b = run_id(), run_id()
    with cc.acquire([name], a, force="bpf"):
        with cc.acquire([name], b, force="bpf"):
            assert k in loader.registered()
        assert k in loader.registered(), "released by the second run while the first holds it"
    assert k not in loader.registered()


def test_cc_concurrent_runs_share_one_registration():
    """Four processes acquire and release the same algorithm in random order: each
    sees it registered while it holds it, and nothing is left at the end."""
    name = (built() or pytest.skip("no BPF objects built"))[0]
    code = textwrap.dedent(f'''
        import random, sys, time; sys.path.insert(0, {str(ROOT / "src")!r})
        import ccarena.cc as cc
        from ccarena.cc import loader
        random.seed(int(sys.argv[1]))
        for i in range(4):
            with cc.acquire([{name!r}], "conc" + sys.argv[1], force="bpf") as m:
                assert m[{name!r}] in loader.registered(), "not registered while held"
                time.sleep(random.uniform(0, 0.3))
                assert m[{name!r}] in loader.registered(), "unregistered under a holder"
            time.sleep(random.uniform(0, 0.2))
        print("OK")
    ''')
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "OK", err
    assert f"cca_{name}" not in loader.registered()


def test_cc_crashed_run_is_released():
    """A run killed with SIGKILL: its holder notices and unregisters (crash-safe)."""
    name = (built() or pytest.skip("no BPF objects built"))[0]
    k = f"cca_{name}"
    code = textwrap.dedent(f'''
        import sys, time; sys.path.insert(0, {str(ROOT / "src")!r})
        import ccarena.cc as cc
        with cc.acquire([{name!r}], "crash1", force="bpf"):
            print("HELD", flush=True); time.sleep(60)
    ''')
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "HELD"
        assert k in loader.registered()
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 10
        while k in loader.registered() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert k not in loader.registered(), "holder did not release after its run died"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_cc_cleanup_stale_kills_orphan_holder():
    """cleanup_stale unregisters an algorithm whose only holder is dead."""
    name = (built() or pytest.skip("no BPF objects built"))[0]
    k = f"cca_{name}"
    algo = cc.resolve(name, "bpf")
    from ccarena.cc.hold import acquire_bpf
    from ccarena.cc.refcount import AlgoDir
    # a holder file of a process that is already dead
    dead = subprocess.Popen(["true"])
    dead.wait()
    acquire_bpf(algo, "orphan1", pid=os.getpid())
    d = AlgoDir(k)
    with d.lock():
        d.add("orphan2", pid=dead.pid)
        d.remove("orphan1")
    assert k in loader.registered()
    assert k in cc.cleanup_stale()
    assert k not in loader.registered()


def test_cc_unprivileged_socket_not_allowed():
    """Only names in net.ipv4.tcp_allowed_congestion_control may be set without
    CAP_NET_ADMIN: a cca_ algorithm is not in that list, so an unprivileged socket
    gets EPERM (we run as root, so the flow engine is fine)."""
    name = (built() or pytest.skip("no BPF objects built"))[0]
    code = textwrap.dedent('''
        import os, socket, sys
        os.setgid(65534); os.setuid(65534)
        s = socket.socket()
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode()); print("OK")
        except OSError as e:
            print("ERR", e.errno)
    ''')
    with cc.acquire([name], run_id(), force="bpf") as m:
        allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
        out = sh(sys.executable, "-c", code, m[name]).stdout.split()
    assert m[name] not in allowed
    assert out == ["ERR", "1"], out  # EPERM


USER_CC = textwrap.dedent('''
    /* a user algorithm: Reno with a gentler decrease (0.7), as docs/algorithms.md shows */
    #include "cca_common.h"

    static __always_inline u32 mine_ssthresh_for(struct sock *sk, u32 cwnd)
    {
        return cca_max(cwnd * 7 / 10, 2);
    }
    SEC("struct_ops")
    u32 BPF_PROG(mine_ssthresh, struct sock *sk)
    {
        return mine_ssthresh_for(sk, tcp_sk(sk)->snd_cwnd);
    }
    static __always_inline void mine_cong_avoid(struct sock *sk, u32 ack, u32 acked)
    {
        struct tcp_sock *tp = tcp_sk(sk);

        if (!cca_is_cwnd_limited(sk))
            return;
        if (cca_in_slow_start(tp) && !(acked = cca_slow_start(tp, acked)))
            return;
        cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
    }
    SEC("struct_ops")
    u32 BPF_PROG(mine_undo, struct sock *sk)
    {
        return cca_max(tcp_sk(sk)->snd_cwnd, tcp_sk(sk)->prior_cwnd);
    }
    CCA_CONG_CONTROL_OP(mine, mine_ssthresh_for, mine_cong_avoid)
    CCA_STATE_GUARD_OP(mine, mine_ssthresh_for)
    CCA_OPS(mine) = {
        .ssthresh = (void *)mine_ssthresh, .cong_control = (void *)mine_cong_control,
        .undo_cwnd = (void *)mine_undo, .set_state = (void *)mine_state_guard,
        .name = "cca_mine",
    };
''')


def test_cc_user_algorithm_from_cc_path(tmp_path, monkeypatch):
    """A *.bpf.c dropped in a CCARENA_CC_PATH directory is compiled, registered as
    cca_<file name> and carries traffic."""
    (tmp_path / "mine.bpf.c").write_text(USER_CC)
    monkeypatch.setenv("CCARENA_CC_PATH", str(tmp_path))
    a = cc.available()["mine"]
    assert (a.source, a.kernel_name) == ("bpf", "cca_mine"), a.why
    with NsPair() as ns:
        with cc.acquire(["mine"], run_id()) as m:
            res, ss = ns.flow(m["mine"], secs=2.0, ss_at=1.0)
    assert res["cc"] == "cca_mine" and "cca_mine" in ss
    assert res["received"] > 0
    assert "cca_mine" not in loader.registered()


def test_cc_load_failure_names_file_errno_and_log(tmp_path, monkeypatch):
    """A verifier rejection comes back as LoadError with file, errno and log tail."""
    src = tmp_path / "badcc.bpf.c"
    src.write_text(textwrap.dedent('''
        #include "cca_common.h"
        SEC("struct_ops")
        u32 BPF_PROG(bad_ssthresh, struct sock *sk)
        {
            struct tcp_sock *tp = tcp_sk(sk);
            tp->rcv_nxt = 0;          /* not writable from a tcp_congestion_ops program */
            return 2;
        }
        SEC("struct_ops")
        void BPF_PROG(bad_cong_avoid, struct sock *sk, u32 ack, u32 acked) {}
        SEC("struct_ops")
        u32 BPF_PROG(bad_undo, struct sock *sk) { return tcp_sk(sk)->snd_cwnd; }
        CCA_OPS(badcc) = {
            .ssthresh = (void *)bad_ssthresh, .cong_avoid = (void *)bad_cong_avoid,
            .undo_cwnd = (void *)bad_undo, .name = "cca_badcc",
        };
    '''))
    monkeypatch.setenv("CCARENA_CC_PATH", str(tmp_path))
    a = cc.resolve("badcc")
    assert a.source == "bpf"
    with pytest.raises(cc.LoadError) as ei:
        with cc.acquire(["badcc"], run_id()):
            pass
    e = ei.value
    assert e.file.endswith(".bpf.o")
    assert e.errno is not None and e.errno > 0
    assert e.log_tail, str(e)
    assert "cca_badcc" not in loader.registered()


# --------------------------------------------------------------------------- by hand

def trace(name: str, secs: float, rate: str, limit: int, force: str | None, ce: int = 0) -> dict:
    with NsPair(rate=rate, limit_bytes=limit, ce_per_mille=ce) as ns:
        with cc.acquire([name], run_id(), force=force) as m:
            res, ss = ns.flow(m[name], secs=secs, interval=0.01, ss_at=secs / 2)
    smp = res["samples"]
    red = reductions(smp)
    cw = [s[1] for s in smp]
    half = cw[len(cw) // 2:]
    return {
        "cc": res["cc"], "goodput_mbit": round(res["received"] * 8 / res["rx_secs"] / 1e6, 2),
        "cwnd_max": max(cw), "cwnd_mean_2nd_half": round(sum(half) / len(half), 1),
        "cwnd_min_2nd_half": min(half), "reductions": len(red),
        "md_ratio_median": round(sorted(red)[len(red) // 2], 3) if red else None,
        "retrans": smp[-1][4], "rtt_ms_last": smp[-1][3] / 1000,
        "ss_line": next((l.strip() for l in ss.splitlines() if m[name] in l), ""),
        "cwnd_every_100ms": cw[::10],
    }


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["trace"])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--secs", type=float, default=8.0)
    ap.add_argument("--rate", default="50mbit")
    ap.add_argument("--limit", type=int, default=60000)
    ap.add_argument("--force", default="bpf")
    ap.add_argument("--ce", type=int, default=0, help="CE-mark this many per mille at the bottleneck")
    args = ap.parse_args()
    try:
        for n in args.names:
            print(json.dumps({n: trace(n, args.secs, args.rate, args.limit,
                                       None if args.force == "auto" else args.force, args.ce)}))
    finally:
        cc.cleanup_stale()
