"""Names and addresses of a dumbbell, computed without touching the system.

    s_i --(eth0 | s<i>)-- rl ==(bn)== rr --(r<i> | eth0)-- r_i
    user backend: rl(bn) -- (lw) ln (le) -- (bn)rr, ccarena-link bridging lw<->le

Namespaces are `cca<run_id>-<role>` so concurrent runs never collide and a crashed run's
leftovers are recognisable. MACs are fixed (02:cc:..) so neighbour entries can be
pre-installed and no ARP crosses the emulated link."""
from __future__ import annotations

from dataclasses import dataclass, field

from ccarena.study.keys import MAX_PAIRS

PREFIX = "cca"


@dataclass
class Iface:
    ns: str
    name: str
    mac: str
    addr: str | None = None     # "10.1.1.2/24"
    emulated: bool = True       # on the emulated path: offloads off unless asked


@dataclass
class VethPair:
    a: Iface
    b: Iface


@dataclass
class Route:
    ns: str
    dst: str
    gateway: str


@dataclass
class Neighbour:
    ns: str
    dev: str
    ip: str
    mac: str


@dataclass
class Topology:
    run_id: str
    pairs: int
    backend: str                         # "kernel" | "user"
    hosts: dict[str, str] = field(default_factory=dict)       # host -> namespace
    host_ip: dict[str, str] = field(default_factory=dict)     # host -> address (no prefix)
    routers: dict[str, str] = field(default_factory=dict)     # rl/rr/ln -> namespace
    veths: list[VethPair] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    neighbours: list[Neighbour] = field(default_factory=list)
    # the bottleneck's egress ports: (namespace, ifname) for w2e (senders->receivers) and e2w
    bottleneck_ports: dict[str, tuple[str, str]] = field(default_factory=dict)
    # access ports toward hosts on the routers: host -> (namespace, ifname)
    access_ports: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def namespaces(self) -> list[str]:
        return list(self.hosts.values()) + list(self.routers.values())

    def ns(self, host: str) -> str:
        return self.hosts[host]


def ns_name(run_id: str, role: str) -> str:
    return f"{PREFIX}{run_id}-{role}"


def _mac(kind: int, idx: int, end: int) -> str:
    return f"02:cc:{kind:02x}:{idx >> 8:02x}:{idx & 0xff:02x}:{end:02x}"


def plan_dumbbell(run_id: str, pairs: int, backend: str) -> Topology:
    if not 1 <= pairs <= MAX_PAIRS:
        raise ValueError(f"pairs must be 1..{MAX_PAIRS}")
    t = Topology(run_id=run_id, pairs=pairs, backend=backend)
    rl, rr = ns_name(run_id, "rl"), ns_name(run_id, "rr")
    t.routers = {"rl": rl, "rr": rr}
    for side, router, net, kind in (("s", rl, 1, 1), ("r", rr, 2, 2)):
        for i in range(1, pairs + 1):
            host = f"{side}{i}"
            ns = ns_name(run_id, host)
            t.hosts[host] = ns
            ip, gw = f"10.{net}.{i}.2", f"10.{net}.{i}.1"
            t.host_ip[host] = ip
            h = Iface(ns, "eth0", _mac(kind, i, 2), f"{ip}/24")
            r = Iface(router, host, _mac(kind, i, 1), f"{gw}/24")
            t.veths.append(VethPair(h, r))
            t.routes.append(Route(ns, "0.0.0.0/0", gw))
            t.neighbours += [Neighbour(ns, "eth0", gw, r.mac), Neighbour(router, host, ip, h.mac)]
            t.access_ports[host] = (router, host)
    bl = Iface(rl, "bn", _mac(3, 0, 1), "10.0.0.1/30")
    br = Iface(rr, "bn", _mac(3, 0, 2), "10.0.0.2/30")
    if backend == "user":
        ln = ns_name(run_id, "ln")
        t.routers["ln"] = ln
        t.veths.append(VethPair(bl, Iface(ln, "lw", _mac(3, 1, 1))))
        t.veths.append(VethPair(Iface(ln, "le", _mac(3, 1, 2)), br))
    else:
        t.veths.append(VethPair(bl, br))
    t.routes += [Route(rl, "10.2.0.0/16", "10.0.0.2"), Route(rr, "10.1.0.0/16", "10.0.0.1")]
    t.neighbours += [Neighbour(rl, "bn", "10.0.0.2", br.mac), Neighbour(rr, "bn", "10.0.0.1", bl.mac)]
    t.bottleneck_ports = {"w2e": (rl, "bn"), "e2w": (rr, "bn")}
    return t
