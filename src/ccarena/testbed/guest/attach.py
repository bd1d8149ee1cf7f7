"""A guest in a run's testbed: its tap bridged where the host's namespace interface is.

    attach(testbed, host, guest)   the guest's tap into the host's namespace, on a bridge
                                   with the namespace's veth to the router
    detach(testbed, host, guest)   the tap back into the guest's own namespace

The host's namespace keeps its veth `eth0` to the router, with everything the testbed put
on it (offloads off, a per-host netem), so the bottleneck, the link emulator and
per-host delay and loss stay exactly as for a namespace host. The namespace's own stack
steps aside: eth0 loses its address and is given another MAC, since the router's
neighbour entry names the host's MAC, which the guest's NIC takes (agent.py, `net`).
A Linux bridge `br0` joins eth0 and the tap — virtio-net on a Linux bridge, as the
published KVM studies had their guests — with STP, forwarding delay and multicast
snooping off, so it forwards from the first frame on and adds nothing of its own.

The tap must leave the host's namespace before the testbed removes it (a tap is
destroyed with the namespace it is in, and QEMU's NIC with it): the run's guest part
detaches in its stop(), which runs before the teardown."""
from __future__ import annotations

from pyroute2 import IPRoute

from ccarena.testbed import netns

BRIDGE = "br0"
HOST_IFACE = "eth0"


def side_mac(host_mac: str) -> str:
    """The MAC the host namespace's veth takes while a guest plays the host: its own
    with another kind byte (02:cc:<kind>:...), unique within the run."""
    parts = host_mac.split(":")
    parts[2] = f"{0x10 | int(parts[2], 16):02x}"
    return ":".join(parts)


def _tap_index(ipr: IPRoute, tap: str) -> int | None:
    got = ipr.link_lookup(ifname=tap)
    return got[0] if got else None


def attach(tb, host: str, guest) -> None:
    """Bridge `guest`'s tap with `host`'s eth0 in the host's namespace (tb: the run's
    testbed.build.Testbed, whose netlink sockets this thread uses)."""
    topo = tb.topo
    ns = topo.ns(host)
    ipr = tb.ipr(ns)
    idx = tb.index(ns, HOST_IFACE)
    end = next(e for p in topo.veths for e in (p.a, p.b)
               if e.ns == ns and e.name == HOST_IFACE)
    if end.addr:
        ip, plen = end.addr.split("/")
        ipr.addr("del", index=idx, address=ip, prefixlen=int(plen))
    ipr.link("set", index=idx, address=side_mac(end.mac))
    ipr.link("add", ifname=BRIDGE, kind="bridge", br_stp_state=0, br_forward_delay=0,
             br_mcast_snooping=0)
    br = ipr.link_lookup(ifname=BRIDGE)[0]
    ipr.link("set", index=idx, master=br)
    with netns.enter(guest.ns):
        g = IPRoute()
    try:
        t = _tap_index(g, guest.tap)
        if t is None:
            raise LookupError(f"guest {guest.gid}: its tap {guest.tap} is not in "
                              f"{guest.ns} (QEMU gone?)")
        g.link("set", index=t, net_ns_fd=netns.path(ns))
    finally:
        g.close()
    t = _tap_index(ipr, guest.tap)
    ipr.link("set", index=t, master=br, state="up", mtu=tb.study.mtu)
    ipr.link("set", index=br, state="up")


def detach(tb, host: str, guest) -> bool:
    """Move the tap back into the guest's namespace; False when it is not in the host's
    namespace (never attached, or gone with QEMU)."""
    ns = tb.topo.ns(host)
    if not netns.exists(ns) or not netns.exists(guest.ns):
        return False
    ipr = tb.ipr(ns)
    t = _tap_index(ipr, guest.tap)
    if t is None:
        return False
    ipr.link("set", index=t, net_ns_fd=netns.path(guest.ns))
    return True
