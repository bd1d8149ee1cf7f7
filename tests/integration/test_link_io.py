"""The emulator's two packet I/O paths (docs/link.md, "I/O design"): AF_PACKET and AF_XDP
carry the same frames with the same timing, `auto` falls back to AF_PACKET where AF_XDP
cannot be set up and says why, an explicit `xdp` that cannot be set up fails before
forwarding with an error naming the port, and nothing (namespace, XDP program) stays.

These drive ccarena-link directly between two bare namespaces (west host - link - east
host), as a user of the binary would; the study-level tests exercise the orchestrator's
default I/O."""
import json
import os
import re
import subprocess
import time

import pytest

from ccarena.paths import find_binary

pytestmark = pytest.mark.root

DELAY_NS = 5_000_000          # one way; ping RTT floor 10 ms
RATE = 20_000_000


def sh(*a, check=True):
    r = subprocess.run(a, capture_output=True, text=True)
    if check and r.returncode:
        raise AssertionError(f"{' '.join(a)}: {r.stderr}")
    return r


def xdp_programs() -> int:
    out = sh("bpftool", "prog", "list", check=False).stdout
    return sum(" name cca_xsk " in line + " " for line in out.splitlines())


@pytest.fixture
def bed(tmp_path, no_leaks):
    """ccaxio<pid>{a,l,b}: a:eth0 (10.77.0.1) - lw [link ns] le - b:eth0 (10.77.0.2)."""
    names = [f"ccaxio{os.getpid()}{x}" for x in "alb"]
    a, l, b = names
    made = []
    try:
        for n in names:
            sh("ip", "netns", "add", n)
            made.append(n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        # the link's namespace sends nothing of its own (no IPv6 autoconfiguration on its
        # ports): every frame the hosts receive is one the link forwarded
        sh("ip", "netns", "exec", l, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "-n", l, "link", "add", "lw", "type", "veth", "peer", "name", "eth0", "netns", a)
        sh("ip", "-n", l, "link", "add", "le", "type", "veth", "peer", "name", "eth0", "netns", b)
        for ns, dev in ((l, "lw"), (l, "le"), (a, "eth0"), (b, "eth0")):
            # contracts §1: no segmentation offloads, MTU-sized frames at the link
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", a, "addr", "add", "10.77.0.1/24", "dev", "eth0")
        sh("ip", "-n", b, "addr", "add", "10.77.0.2/24", "dev", "eth0")
        yield {"a": a, "l": l, "b": b, "tmp": tmp_path}
    finally:
        for n in made:
            sh("ip", "netns", "del", n, check=False)


def set_mtu(bed, mtu):
    for ns, dev in ((bed["l"], "lw"), (bed["l"], "le"), (bed["a"], "eth0"), (bed["b"], "eth0")):
        sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu))


def start_link(bed, io, tag, rate=RATE, delay_ns=DELAY_NS, **top):
    out = bed["tmp"] / tag
    d = {"rate_bps": rate, "delay_ns": delay_ns, "buffer": {"packets": 1000 if rate is None else 100},
         "queue": {"kind": "droptail"}}
    cfg = {"ifaces": {"west": "lw", "east": "le"}, "out_dir": str(out), "io": io,
           "w2e": d, "e2w": d, "seed": 1, **top}
    path = bed["tmp"] / f"{tag}.json"
    path.write_text(json.dumps(cfg))
    p = subprocess.Popen(["ip", "netns", "exec", bed["l"], find_binary("ccarena-link"),
                          "--config", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline().strip()
    if first != "READY":
        p.kill()
        _, err = p.communicate(timeout=20)
        first = f"{first} {err}"
    return p, first, out


def stop_link(p, out):
    p.terminate()
    so, se = p.communicate(timeout=20)
    assert p.returncode == 0 and "DONE" in so, se
    return json.loads((out / "link.json").read_text())


def ping(bed, n=40, size=56):
    r = sh("ip", "netns", "exec", bed["a"], "ping", "-n", "-q", "-c", str(n), "-i", "0.02",
           "-s", str(size), "10.77.0.2", check=False)
    got = int(re.search(r"(\d+) received", r.stdout).group(1))
    m = re.search(r"= ([\d.]+)/", r.stdout)
    return got, (float(m.group(1)) if m else None)


def tcp_bytes(bed, nbytes=2_000_000):
    """Send `nbytes` over TCP west to east -> bytes received. On the AF_XDP path the
    kernel finishes the payload checksums on request: a missing request makes the
    receiver drop every data segment (the test of this was done by hand: the transfer
    stalls)."""
    srv = subprocess.Popen(["ip", "netns", "exec", bed["b"], "python3", "-c",
                            "import socket,sys\n"
                            "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                            "s.bind(('10.77.0.2',7071)); s.listen(1); s.settimeout(60)\n"
                            "print('ready', flush=True)\n"
                            "c,_=s.accept(); c.settimeout(60); n=0\n"
                            "while True:\n"
                            "    d=c.recv(1<<20)\n"
                            "    if not d: break\n"
                            "    n+=len(d)\n"
                            "print(n)\n"],
                           stdout=subprocess.PIPE, text=True)
    assert srv.stdout.readline().strip() == "ready"
    sh("ip", "netns", "exec", bed["a"], "python3", "-c",
       "import socket\n"
       "c=socket.create_connection(('10.77.0.2',7071),timeout=60)\n"
       f"c.sendall(b'x'*{nbytes}); c.close()\n")
    out, _ = srv.communicate(timeout=90)
    return int(out.strip() or 0)


def rx_packets(bed, host) -> int:
    j = json.loads(sh("ip", "-n", bed[host], "-s", "-j", "link", "show", "eth0").stdout)
    return j[0]["stats64"]["rx"]["packets"]


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_both_io_paths_carry_ping_and_tcp_with_the_configured_delay(bed, io):
    p, first, out = start_link(bed, io, io)
    try:
        assert first == "READY", first
        if io == "xdp":
            assert xdp_programs() >= 2          # one per port, attached while it runs
        got, rtt_min = ping(bed)
        n = tcp_bytes(bed)
    finally:
        j = stop_link(p, out)
    assert j["io_kind"] == io and j["io_fallback"] is None
    assert got >= 38, f"{got} of 40 pings answered through io={io}"
    # the emulated delay is a floor: no reply comes back in less than twice the delay
    assert rtt_min >= 2 * DELAY_NS / 1e6, rtt_min
    assert n == 2_000_000, f"TCP delivered {n} of 2000000 bytes through io={io}"
    # every frame the link forwarded it had received, and none was lost on its own paths
    assert 0 < j["forwarded"] <= j["rx_packets"]
    assert j["rx_ring_drops"] == 0 and j["tx_errors"] == 0
    if io == "xdp":
        assert set(j["xdp"]) == {"lw", "le"}


@pytest.mark.parametrize("how", ["fair", "sleep"])
def test_a_busy_realtime_thread_gives_time_back_the_way_asked(bed, how):
    """docs/link.md, Scheduling: a SCHED_FIFO thread busy for rt_busy_ns gives rt_nap_ns
    back to ordinary tasks, as an ordinary task itself ("fair") or asleep ("sleep").
    rt_busy_ns = 1 makes every wake-up a busy stretch, as every millisecond is at high
    rates, so each ping the link carries exercises the switch."""
    p, first, out = start_link(bed, "xdp", how, rt_priority=10, rt_busy_ns=1,
                               rt_nap_ns=20_000, rt_yield=how)
    try:
        assert first == "READY", first
        got, rtt_min = ping(bed, n=20)
    finally:
        j = stop_link(p, out)
    assert j["rt_yield"] == how
    if not j["realtime"] and j["fair_phases"] == 0 and j["naps"] == 0:
        pytest.skip("SCHED_FIFO refused here (e.g. a cgroup without RT time)")
    # SCHED_FIFO granted, and after every ordinary-task phase granted again
    assert j["realtime"] is True
    assert j["fair_phase_ns"] >= 20_000
    if how == "fair":
        assert j["fair_phases"] > 0 and j["naps"] == 0, (j["fair_phases"], j["naps"])
    else:
        assert j["naps"] > 0 and j["fair_phases"] == 0, (j["fair_phases"], j["naps"])
    assert got >= 19 and rtt_min >= 2 * DELAY_NS / 1e6, (got, rtt_min)


def test_auto_falls_back_where_af_xdp_cannot_carry_the_mtu_and_xdp_refuses(bed):
    # 9000-byte frames do not fit a 4 KiB AF_XDP chunk in copy mode
    set_mtu(bed, 9000)
    p, first, out = start_link(bed, "auto", "auto")
    try:
        assert first == "READY", first
        got, _ = ping(bed, n=20, size=8000)          # jumbo frames go through AF_PACKET
    finally:
        j = stop_link(p, out)
    assert j["io_kind"] == "packet"
    assert "4 KiB" in j["io_fallback"] and "lw" in j["io_fallback"], j["io_fallback"]
    assert got >= 19
    p, first, out = start_link(bed, "xdp", "xdp9000")
    so, se = p.communicate(timeout=20)
    assert p.returncode == 1 and first != "READY"
    assert "AF_XDP" in se and "lw" in se, se
    assert not (out / "link.json").exists()


@pytest.fixture
def tiny_backlog():
    """net.core.netdev_max_backlog (machine-wide) at 8 for the test: the receiving CPU's
    queue overflows at once, so the link's sends are refused often."""
    path = "/proc/sys/net/core/netdev_max_backlog"
    old = open(path).read().strip()
    with open(path, "w") as f:
        f.write("8")
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(old)


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_sends_the_receiver_refuses_are_retried_not_lost(bed, tiny_backlog, io):
    """The orchestrator's placement (link on CPU 0, the hosts' receive work steered to the
    others by RPS) with an 8-deep backlog and no rate limit: the kernel refuses many of
    the link's sends (ENOBUFS on AF_PACKET, EBUSY on AF_XDP). The link sends those frames
    again after a pause, and its books balance exactly: every frame it reports forwarded
    is one a host's interface received, and every frame its core released is either
    forwarded or counted in tx_errors (a frame it gives up on after 5 ms of refusals, as
    a long stall of the receiving CPU could make it, is counted, never silent)."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("RPS needs a second CPU to steer to")
    mask = format(((1 << os.cpu_count()) - 1) & ~1, "x")
    for h in ("a", "b"):
        sh("ip", "netns", "exec", bed[h], "sh", "-c",
           f"echo {mask} > /sys/class/net/eth0/queues/rx-0/rps_cpus")
    rx0 = rx_packets(bed, "a") + rx_packets(bed, "b")
    p, first, out = start_link(bed, io, "refused" + io, rate=None, delay_ns=1_000_000,
                               cpus=[0])
    try:
        assert first == "READY", first
        n = tcp_bytes(bed, 60_000_000)
    finally:
        j = stop_link(p, out)
    delivered = rx_packets(bed, "a") + rx_packets(bed, "b") - rx0
    assert j["io_kind"] == io
    assert n == 60_000_000
    assert j["tx_waits"] > 0, "no send was refused: the test did not reach its case"
    if io == "xdp":
        assert sum(x["tx_refused"] for x in j["xdp"].values()) > 0, j["xdp"]
    assert j["forwarded"] == delivered, (
        f"link says {j['forwarded']} frames forwarded, hosts received {delivered}")
    released = j["w2e"]["released"] + j["e2w"]["released"]
    assert released == j["forwarded"] + j["tx_errors"], (released, j["forwarded"], j["tx_errors"])
