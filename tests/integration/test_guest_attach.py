"""A VM host's tap bridged into its host's namespace and back (testbed/guest/attach.py),
without booting a guest: a tap made beside the testbed stands for QEMU's. The host's
veth keeps its place on the router's side and its qdiscs; the namespace's own stack
steps aside (no address, another MAC: the guest takes the host's); the tap leaves before
the namespace goes, so the guest keeps its NIC."""
import subprocess
import textwrap

import pytest

from ccarena.study.load import loads_study
from ccarena.testbed import leftovers, netns
from ccarena.testbed.build import Testbed
from ccarena.testbed.guest import attach, qemu
from ccarena.testbed.topology import plan_dumbbell

pytestmark = pytest.mark.root


class FakeGuest:
    def __init__(self, gid: str):
        self.gid, self.ns, self.tap = gid, f"cca{gid}-vm", qemu.tap_name(gid)


def _links(ns: str) -> dict:
    import json
    r = subprocess.run(["ip", "-n", ns, "-j", "-d", "link", "show"], capture_output=True,
                       text=True, check=True)
    return {d["ifname"]: d for d in json.loads(r.stdout)}


def _addrs(ns: str, dev: str) -> list:
    import json
    r = subprocess.run(["ip", "-n", ns, "-j", "addr", "show", "dev", dev],
                       capture_output=True, text=True, check=True)
    return [a["local"] for d in json.loads(r.stdout) for a in d.get("addr_info", [])]


def test_a_guests_tap_is_bridged_with_the_hosts_veth_and_given_back(no_leaks):
    study = loads_study(textwrap.dedent("""
        [study]
        name = "attach"
        duration = "5s"
        [bottleneck]
        rate = "10mbit"
        [hosts.r1]
        vm = { accel = "tcg" }
        [[flow]]
        from = "s1"
        to = "r1"
        """))
    import secrets
    rid, gid = secrets.token_hex(3), secrets.token_hex(3)
    topo = plan_dumbbell(rid, 1, "user")
    g = FakeGuest(gid)
    leftovers.register(gid, [g.ns], extra={"guest": "test"})
    try:
        netns.create(g.ns)
        subprocess.run(["ip", "-n", g.ns, "tuntap", "add", "mode", "tap", "name", g.tap],
                       check=True)
        with Testbed(topo, study) as tb:
            host_ns = topo.ns("r1")
            mac = _links(host_ns)["eth0"]["address"]
            attach.attach(tb, "r1", g)
            links = _links(host_ns)
            assert g.tap in links and g.tap not in _links(g.ns)
            assert links["eth0"]["master"] == attach.BRIDGE == links[g.tap]["master"]
            assert links[attach.BRIDGE]["linkinfo"]["info_data"]["stp_state"] == 0
            # the namespace's stack steps aside; the guest takes the host's MAC
            assert _addrs(host_ns, "eth0") == [] and links["eth0"]["address"] != mac
            assert links["eth0"]["address"] == attach.side_mac(mac)
            assert links[g.tap]["mtu"] == study.mtu
            assert attach.detach(tb, "r1", g) is True
            assert g.tap in _links(g.ns) and g.tap not in _links(host_ns)
            assert attach.detach(tb, "r1", g) is False      # already back
        # the testbed is gone; the tap survived it in the guest's namespace
        assert not netns.exists(host_ns) and g.tap in _links(g.ns)
    finally:
        netns.remove(g.ns)
        leftovers.unregister(gid)
