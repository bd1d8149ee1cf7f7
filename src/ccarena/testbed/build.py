"""Build a planned dumbbell through netlink inside its namespaces, and always tear it down.

    with Testbed(topology, study) as tb:   # builds; registers the run for `ccarena cleanup`
        ...                                # namespaces tb.topo.hosts[...]
    # torn down here on success, error, KeyboardInterrupt or SystemExit

Teardown kills every process left in the run's namespaces, then removes the namespaces
(their veths go with them). Nothing is created in the root namespace: each veth is created
inside its first namespace with its peer placed directly in the second."""
from __future__ import annotations

import contextlib
import logging
import threading

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from ccarena.testbed import netns
from ccarena.errors import TestbedError
from ccarena.study.model import Study
from ccarena.testbed import leftovers
from ccarena.testbed.topology import Topology

log = logging.getLogger(__name__)
NUD_PERMANENT = 0x80


class Testbed:
    __test__ = False

    def __init__(self, topo: Topology, study: Study, cpuset: str | None = None):
        self.topo = topo
        self.study = study
        self.cpuset = cpuset         # the run's CPU share (parallel runs), e.g. "2-3"
        self._ipr: dict[str, IPRoute] = {}
        self._ipr_thread = threading.get_ident()
        self.cgroups: dict = {}      # host -> cgroups.HostCgroup
        self.built = False

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "Testbed":
        try:
            self.build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    def ipr(self, ns: str) -> IPRoute:
        # pyroute2 (0.9) opens a netlink socket per thread, in the namespace that thread is
        # in when it first uses the object: from another thread these objects would talk
        # to the root namespace without any error (it once made every queue sample another
        # device's). Threads open their own (see QdiscSampler).
        if threading.get_ident() != self._ipr_thread:
            raise TestbedError(f"run {self.topo.run_id}: Testbed.ipr({ns!r}) called from thread "
                               f"{threading.current_thread().name!r}; its netlink sockets "
                               f"belong to the thread that created the testbed")
        if ns not in self._ipr:
            with netns.enter(ns):
                self._ipr[ns] = IPRoute()
        return self._ipr[ns]

    def build(self) -> None:
        t = self.topo
        leftovers.register(t.run_id, t.namespaces)
        for ns in t.namespaces:
            netns.create(ns)
        try:
            self._links()
            self._addresses_routes()
            self._sysctls()
            self._cgroups()
        except NetlinkError as e:
            raise TestbedError(f"build dumbbell of run {t.run_id}: netlink: {e}") from None
        self.built = True

    def teardown(self) -> None:
        for ipr in self._ipr.values():
            with contextlib.suppress(Exception):
                ipr.close()
        self._ipr.clear()
        errors = []
        # Sockets left after the processes died (orphans still retransmitting, TIME-WAIT)
        # would keep a dead namespace, and the congestion control they hold, alive for
        # minutes: destroy them (SOCK_DESTROY) before the namespaces go.
        import subprocess
        for cg in self.cgroups.values():
            cg.lift_cpu_limits()     # a throttled process would take seconds to die
        for ns in self.topo.hosts.values():
            if netns.exists(ns):
                netns.kill_all_in(ns)
                subprocess.run(["ss", "-N", ns, "-K", "-t", "state", "all"],
                               capture_output=True)
        for ns in reversed(self.topo.namespaces):
            try:
                netns.remove(ns)
            except Exception as e:  # keep going: remove everything we can
                errors.append(f"{ns}: {e}")
        for cg in self.cgroups.values():
            errors += cg.remove()    # after the namespaces' processes were killed above
        leftovers.unregister(self.topo.run_id)
        if errors:
            raise TestbedError("teardown left: " + "; ".join(errors))

    # -- steps -----------------------------------------------------------------------------
    def _links(self):
        mtu = self.study.mtu
        for pair in self.topo.veths:
            a, b = pair.a, pair.b
            self.ipr(a.ns).link("add", ifname=a.name, kind="veth", address=a.mac, mtu=mtu,
                                peer={"ifname": b.name, "net_ns_fd": netns.path(b.ns),
                                      "address": b.mac, "mtu": mtu})
        # one dump per namespace instead of a lookup per interface (each lookup is a dump)
        self._index = {}
        for ns in self.topo.namespaces:
            for link in self.ipr(ns).get_links():
                self._index[(ns, link.get_attr("IFLA_IFNAME"))] = link["index"]
        ln = self.topo.routers.get("ln")
        for pair in self.topo.veths:
            for end in (pair.a, pair.b):
                if end.emulated and not self.study.offloads:
                    netns.set_offloads(end.ns, end.name, False)
                kw = {"promiscuity": 1} if end.ns == ln else {}
                self.ipr(end.ns).link("set", index=self.index(end.ns, end.name), state="up",
                                      **kw)

    def index(self, ns: str, ifname: str) -> int:
        return self._index[(ns, ifname)]

    def _addresses_routes(self):
        for pair in self.topo.veths:
            for end in (pair.a, pair.b):
                if end.addr:
                    ip, plen = end.addr.split("/")
                    self.ipr(end.ns).addr("add", index=self.index(end.ns, end.name),
                                          address=ip, prefixlen=int(plen))
        hosts = set(self.topo.hosts.values())
        init = self.study.tcp.initcwnd
        for r in self.topo.routes:
            # a pinned initial window rides on the hosts' routes (as `ip route ... initcwnd`)
            extra = {"metrics": {"initcwnd": init}} if init and r.ns in hosts else {}
            self.ipr(r.ns).route("add", dst=r.dst, gateway=r.gateway, **extra)
        for n in self.topo.neighbours:
            self.ipr(n.ns).neigh("replace", dst=n.ip, lladdr=n.mac,
                                 ifindex=self.index(n.ns, n.dev), state=NUD_PERMANENT)

    def _sysctls(self):
        tcp = self.study.tcp.sysctls()
        for host, ns in self.topo.hosts.items():
            s = dict(tcp)
            hs = self.study.hosts.get(host)
            if hs:
                s.update(hs.sysctl)
            netns.sysctl_set(ns, s)
        for role in ("rl", "rr"):
            netns.sysctl_set(self.topo.routers[role], {"net.ipv4.conf.all.forwarding": "1"})

    def _cgroups(self):
        """Each host's limits; with a CPU share every host gets a cpuset group, so its
        processes stay on the run's CPUs (the emulator is placed within the share by
        user_link.placement, which reads this process's affinity)."""
        from ccarena.testbed.cgroups import HostLimits, create, within_share
        for host in self.topo.hosts:
            hs = self.study.hosts.get(host)
            lim = HostLimits(hs.cpus, hs.cpuset, hs.memory) if hs else HostLimits()
            if self.cpuset is not None:
                lim = within_share(host, lim, self.cpuset)
            if lim:
                self.cgroups[host] = create(self.topo.run_id, host, lim)

    def flush_tcp_metrics(self) -> None:
        """Forget cached per-destination TCP metrics (ssthresh, RTT) in every host."""
        import subprocess
        for ns in self.topo.hosts.values():
            subprocess.run(["ip", "-n", ns, "tcp_metrics", "flush", "all"],
                           capture_output=True)
