"""The emulator's two packet I/O paths (docs/link.md, "I/O design"): AF_PACKET and AF_XDP
carry the same frames with the same timing, `auto` falls back to AF_PACKET where AF_XDP
cannot be set up and says why, an explicit `xdp` that cannot be set up fails before
forwarding with an error naming the port, and nothing (namespace, XDP program) stays.

These drive ccarena-link directly between two bare namespaces (west host - link - east
host), as a user of the binary would; the study-level tests exercise the orchestrator's
default I/O."""
import json
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
    """ccaxio{a,l,b}: a:eth0 (10.77.0.1) - lw [link ns] le - b:eth0 (10.77.0.2)."""
    names = [f"ccaxio{x}" for x in "alb"]
    a, l, b = names
    try:
        for n in names:
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
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
        for n in names:
            sh("ip", "netns", "del", n, check=False)


def set_mtu(bed, mtu):
    for ns, dev in ((bed["l"], "lw"), (bed["l"], "le"), (bed["a"], "eth0"), (bed["b"], "eth0")):
        sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu))


def start_link(bed, io, tag):
    out = bed["tmp"] / tag
    d = {"rate_bps": RATE, "delay_ns": DELAY_NS, "buffer": {"packets": 100},
         "queue": {"kind": "droptail"}}
    cfg = {"ifaces": {"west": "lw", "east": "le"}, "out_dir": str(out), "io": io,
           "w2e": d, "e2w": d, "seed": 1}
    path = bed["tmp"] / f"{tag}.json"
    path.write_text(json.dumps(cfg))
    p = subprocess.Popen(["ip", "netns", "exec", bed["l"], find_binary("ccarena-link"),
                          "--config", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline().strip()
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
    """Send `nbytes` over TCP west to east (payload checksums are the kernel's to finish on
    the AF_XDP path: a bad one would stall the transfer) -> bytes received."""
    srv = subprocess.Popen(["ip", "netns", "exec", bed["b"], "python3", "-c",
                            "import socket,sys\n"
                            "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
                            "s.bind(('10.77.0.2',7071)); s.listen(1); s.settimeout(20)\n"
                            "c,_=s.accept(); c.settimeout(20); n=0\n"
                            "while True:\n"
                            "    d=c.recv(65536)\n"
                            "    if not d: break\n"
                            "    n+=len(d)\n"
                            "print(n)\n"],
                           stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    sh("ip", "netns", "exec", bed["a"], "python3", "-c",
       "import socket\n"
       "c=socket.create_connection(('10.77.0.2',7071),timeout=20)\n"
       f"c.sendall(b'x'*{nbytes}); c.close()\n")
    out, _ = srv.communicate(timeout=30)
    return int(out.strip() or 0)


@pytest.mark.parametrize("io", ["packet", "xdp"])
def test_both_io_paths_carry_ping_and_tcp_with_the_configured_delay(bed, io):
    p, first, out = start_link(bed, io, io)
    try:
        assert first == "READY", p.stderr.read()
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


def test_auto_falls_back_where_af_xdp_cannot_carry_the_mtu_and_xdp_refuses(bed):
    # 9000-byte frames do not fit a 4 KiB AF_XDP chunk in copy mode
    set_mtu(bed, 9000)
    p, first, out = start_link(bed, "auto", "auto")
    try:
        assert first == "READY", p.stderr.read()
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
