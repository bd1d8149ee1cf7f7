"""The user-space link's netlink parts: the routers' hand-off fifo and the ingress
counters (testbed/user_link.py: set and read through pyroute2) agree with iproute2's own
view of the same kernel objects, and count a frame the emulator's side of a veth could
not take; the capability probe (testbed/caps.py) finds namespaces, veths and pfifo."""
import json
import secrets
import subprocess

import pytest

from ccarena.testbed import caps, netns
from ccarena.testbed.user_link import HANDOFF_QDISC_LIMIT, add_handoff_fifo, port_counters

pytestmark = pytest.mark.root

A_IP, B_IP = "10.79.0.1", "10.79.0.2"


def sh(*argv) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def pair():
    """Namespaces a and b joined by a veth, eth0 in each; b's MTU (1000) below a's (1500),
    so a frame a may send and b may not receive exists."""
    tag = secrets.token_hex(3)
    a, b = f"ccactr{tag}a", f"ccactr{tag}b"
    try:
        netns.create(a)
        netns.create(b)
        sh("ip", "-n", a, "link", "add", "eth0", "mtu", "1500", "type", "veth", "peer", "name",
           "eth0", "mtu", "1000", "netns", b)
        for ns, ip in ((a, A_IP), (b, B_IP)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
        yield a, b
    finally:
        for ns in (a, b):
            netns.remove(ns)
        assert not netns.exists(a) and not netns.exists(b)


def iproute2_counters(ns: str, dev: str) -> dict[str, int]:
    """The same counters as `ip -s -j link` and `tc -s -j qdisc` print them."""
    link = json.loads(sh("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev))[0]
    root = [q for q in json.loads(sh("tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev))
            if q.get("root")]
    fifo = root[0] if root and root[0].get("kind") == "pfifo" else {}
    return {"dropped": int(link["stats64"]["tx"]["dropped"]) + int(fifo.get("drops", 0)),
            "requeues": int(fifo.get("requeues", 0))}


def test_the_handoff_fifo_and_the_port_counters_match_iproute2(pair):
    a, _ = pair
    assert port_counters(a, "eth0") == iproute2_counters(a, "eth0")     # no fifo yet
    add_handoff_fifo(a, "eth0")
    root = [q for q in json.loads(sh("tc", "-n", a, "-j", "qdisc", "show", "dev", "eth0"))
            if q.get("root")]
    assert [(q["kind"], q["options"]["limit"]) for q in root] == [("pfifo", HANDOFF_QDISC_LIMIT)]
    add_handoff_fifo(a, "eth0")                   # replaces, as a second run's setup would
    before = port_counters(a, "eth0")
    assert before == iproute2_counters(a, "eth0")
    # Echo requests of 1428-byte packets leave a (MTU 1500) but do not fit b (MTU 1000):
    # the veth drops each on transmit, as it drops what a full emulator port cannot take.
    n = 3
    subprocess.run(netns.exec_argv(a, ["ping", "-n", "-q", "-c", str(n), "-i", "0.2", "-W", "1",
                                       "-s", "1400", B_IP]), capture_output=True)
    after = port_counters(a, "eth0")
    assert after == iproute2_counters(a, "eth0")
    assert after["dropped"] - before["dropped"] >= n, (before, after)


def test_a_missing_device_is_one_line_naming_it(pair):
    from ccarena.errors import TestbedError
    a, _ = pair
    with pytest.raises(TestbedError, match=r"read the counters of nope0 in ccactr"):
        port_counters(a, "nope0")
    with pytest.raises(TestbedError, match=r"add a fifo to nope0 in ccactr"):
        add_handoff_fifo(a, "nope0")


def test_the_probe_finds_namespaces_veths_and_pfifo():
    caps.probe.cache_clear()
    try:
        c = caps.probe()
    finally:
        caps.probe.cache_clear()
    assert c["error"] is None, c["error"]
    assert c["netns"] and c["veth"] and c["qdiscs"]["pfifo"], c
