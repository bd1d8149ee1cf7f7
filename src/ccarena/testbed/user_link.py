"""User-space link backend: ccarena-link in the link namespace (contract §3)."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import re
from pathlib import Path

import psutil
from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import TC_H_ROOT

from ccarena.testbed import netns
from ccarena import units
from ccarena.errors import TestbedError
from ccarena.paths import require_binary
from ccarena.testbed.proc import NsProcess
from ccarena.study.impair import BernoulliLoss, FourStateLoss, GilbertLoss
from ccarena.study.model import LinkSpec, Study
from ccarena.study.resolve import (ClassesParams, CodelParams, FqCodelParams, RedParams,
                                   StepParams, port_of)
from ccarena.testbed.topology import Topology

log = logging.getLogger(__name__)

IP_PROTOCOLS = {"icmp": 1, "tcp": 6, "udp": 17}


def late_tolerance_ns(study: Study) -> int:
    """How late a release may be before the link counts it as late: 5 % of the base RTT
    (the error it adds to that packet's RTT), or one frame's service time at the
    bottleneck (the spacing the rate imposes anyway), and at least 100 us. Measured here
    (2 vCPUs, shared): at 100 Mbit/s the median release is < 1 us late, p99 0.04-2.5 ms,
    with rare stalls of 5-30 ms that these limits still count."""
    frame_s = (study.mtu + 14) * 8 / study.bottleneck.rate_bps if study.bottleneck.rate_bps \
        else 0.0
    return int(max(100e-6, 0.05 * study.base_rtt_s, frame_s) * 1e9)


def _queue(link: LinkSpec, study: Study, topo: Topology) -> dict:
    """The resolved queue (LinkSpec.queue_params, study.resolve) -> the link's queue
    config (contract §3)."""
    qp = link.queue_params
    q: dict = {"kind": link.queue}
    if isinstance(qp, RedParams):
        q.update(unit=qp.unit, min_th=qp.min_th, max_th=qp.max_th, max_p=qp.max_p,
                 weight=qp.weight)
    elif isinstance(qp, (CodelParams, FqCodelParams)):
        q["target_ns"] = int(round(qp.target_s * 1e9))
        q["interval_ns"] = int(round(qp.interval_s * 1e9))
        if isinstance(qp, FqCodelParams):
            q["flows"] = qp.flows
            q["quantum"] = qp.quantum
    elif isinstance(qp, StepParams):
        q["k_packets" if qp.unit == "packets" else "k_bytes"] = qp.k
    elif isinstance(qp, ClassesParams):
        present = {f.name for f in study.flows}   # a disabled flow has no port
        q["classes"] = []
        for c in qp.classes:
            cls = {"ips": [topo.host_ip[h] for h in c.hosts],
                   "ports": [port_of(study, f) for f in c.flows if f in present]
                   + list(c.ports)}
            if c.protocols:
                cls["protocols"] = [IP_PROTOCOLS[p] for p in c.protocols]
            if c.buffer:
                cls["buffer"] = {c.buffer[0]: c.buffer[1]}
            q["classes"].append(cls)
        if "default" in link.aqm:
            q["default"] = qp.default
    return q


def _loss(model) -> dict | None:
    """A study loss model (study.impair) -> the link's loss config (contract §3)."""
    if isinstance(model, BernoulliLoss):
        return {"kind": "bernoulli", "p": model.p}
    if isinstance(model, GilbertLoss):
        return {"kind": "gilbert_elliott", "p": model.p, "r": model.r,
                "loss_bad": model.loss_bad, "loss_good": model.loss_good}
    if isinstance(model, FourStateLoss):
        return {"kind": "four_state", "p13": model.p13, "p31": model.p31, "p32": model.p32,
                "p23": model.p23, "p14": model.p14}
    return None


def _jitter(link: LinkSpec) -> dict | None:
    if link.jitter_s <= 0:
        return None
    ns = int(round(link.jitter_s * 1e9))
    j = {"kind": link.delay_distribution, **({"sd_ns": ns} if link.delay_distribution ==
                                             "normal" else {"ns": ns})}
    if link.delay_correlation > 0:
        j["correlation"] = link.delay_correlation
    return j


def _direction(link: LinkSpec, rate_bps, delay_s: float, loss: float, study: Study,
               topo: Topology, forward: bool) -> dict:
    """One direction's block; the loss model, reordering, duplication and corruption act
    on the forward (s->r) direction only, as in the kernel backend."""
    d = {
        "rate_bps": rate_bps,
        "rate_schedule": [{"t_ns": int(t * 1e9), "rate_bps": r} for t, r in link.rate_schedule]
        or None,
        "trace_file": link.trace, "delay_ns": int(round(delay_s * 1e9)),
        "jitter": _jitter(link),
        "loss": {"kind": "bernoulli", "p": loss} if loss > 0 else None,
        "buffer": {link.buffer.kind: link.buffer.size},
        "queue": _queue(link, study, topo), "ecn": link.ecn,
    }
    if forward:
        if link.loss_model is not None:
            d["loss"] = _loss(link.loss_model)
        for k in ("duplicate", "corrupt"):
            if getattr(link, k) > 0:
                d[k] = {"p": getattr(link, k), "correlation": getattr(link, f"{k}_correlation")}
        if link.reorder > 0:
            d["reorder"] = {"p": link.reorder, "correlation": link.reorder_correlation,
                            "gap": link.reorder_gap}
    return d


def cpu_mask(cpus) -> str:
    """The kernel's cpumask text: hex, 32-bit groups separated by commas, high first."""
    m = sum(1 << c for c in cpus)
    groups = []
    while True:
        groups.append(f"{m & 0xffffffff:08x}")
        m >>= 32
        if not m:
            break
    return ",".join(reversed(groups)).lstrip("0") or "0"


def _pinned_links() -> dict[int, int]:
    """CPU -> number of live ccarena-link threads pinned to it (other runs' emulators)."""
    counts: dict[int, int] = {}
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] != "ccarena-link":
            continue
        try:
            tids = [t.id for t in proc.threads()]
            for tid in tids:
                cpus = os.sched_getaffinity(tid)
                if len(cpus) == 1:
                    c = next(iter(cpus))
                    counts[c] = counts.get(c, 0) + 1
        except (psutil.Error, OSError):      # the process or thread ended meanwhile
            continue
    return counts


# Placement pays whenever the study sends traffic, and only then. Measured side by side
# on a 2-vCPU VM (the quickstart study: one flow, 100 Mbit/s, 20 ms, six 10 s runs per
# mode, two rounds): runs flagged for link lateness, unsteered 1/6 and 6/6, pinned without
# RPS 1/6 and 6/6, pinned+RPS 0/6 and 0/6; p99 lateness 0.2-13 ms unsteered against
# 18-420 us pinned+RPS. On this shared VM the emulator's thread loses whole milliseconds
# when it also runs the endpoints' TCP (pinning alone makes that worse: the work can no
# longer move). The price is a hand-off per packet to another CPU (an IPI, a VM exit
# here): an unloaded 20 ms ping through 100 Mbit/s read 20.3 ms steered against 20.2 ms
# unsteered (ping's 0.1 ms steps, 3 runs each). A study without flows has no endpoint work
# to move, so it is not steered and its probes keep the smaller delay.


def placement(has_traffic: bool = True) -> tuple[list[int], list[int]]:
    """CPUs for the emulator's thread and CPUs for the endpoints' receive work.

    A frame the emulator sends into a veth is received by the peer *in the sender's
    context*: without steering, the emulator's thread runs the routers' forwarding and
    the endpoints' TCP input and output for the packets it releases, and its release
    times suffer. Pinning the emulator to one CPU and enabling Receive Packet Steering on
    the routers' ports facing it, toward the other CPUs, queues that work to their
    backlog instead. The emulator takes the allowed CPU with the fewest other runs'
    emulators pinned to it (the last on a tie), so concurrent runs spread out.
    Applied when the study has traffic (see above), with >= 2 usable CPUs;
    CCARENA_LINK_STEER=1 applies it always, =0 never, =pin pins without RPS (for
    measuring the difference)."""
    allowed = sorted(os.sched_getaffinity(0))
    want = os.environ.get("CCARENA_LINK_STEER", "auto")
    if len(allowed) < 2 or want == "0" or (want == "auto" and not has_traffic):
        return [], []
    busy = _pinned_links()
    link = min(allowed, key=lambda c: (busy.get(c, 0), -c))
    if want == "pin":
        return [link], []
    return [link], [c for c in allowed if c != link]


def steer(topo: Topology, rps_cpus: list[int]) -> list[int]:
    """RPS on the routers' ports facing the emulator (packets the emulator sends).
    Best effort: where sysfs cannot be written (e.g. a container without the right to
    mount it) the run goes on unsteered, and the returned list — recorded with the
    link's config — is empty."""
    if not rps_cpus:
        return []
    try:
        for ns, dev in topo.bottleneck_ports.values():
            netns.sysfs_write(ns, f"class/net/{dev}/queues/rx-0/rps_cpus", cpu_mask(rps_cpus))
    except TestbedError as e:
        log.warning("link placement: receive steering not applied (%s)", e)
        return []
    return rps_cpus


LINK_IOS = ("packet", "xdp", "auto")
LINK_IO_DEFAULT = "auto"


def link_io(offloads: bool = False) -> str:
    """The emulator's packet I/O: CCARENA_LINK_IO, else the default. `auto` is AF_XDP
    where the kernel allows it and AF_PACKET otherwise (link.json's io_kind says which
    ran, io_fallback why). A study with `offloads = true` gets AF_PACKET under `auto`:
    with TSO on, veth hands frames past the XDP program."""
    v = os.environ.get("CCARENA_LINK_IO", LINK_IO_DEFAULT).strip().lower()
    if v not in LINK_IOS:
        raise ValueError(f"CCARENA_LINK_IO={v!r}: accepted {', '.join(LINK_IOS)}")
    if offloads and v != "packet":
        if v == "xdp":
            raise ValueError("CCARENA_LINK_IO=xdp cannot carry a study with offloads = true "
                             "(TSO frames bypass the XDP program); use packet or auto")
        return "packet"
    return v


def make_config(topo: Topology, study: Study, out_dir: Path, seed: int,
                event_log: bool = False, t0_ns: int | None = None,
                cpus: list[int] | None = None) -> dict:
    b = study.bottleneck
    hosts = []
    for h, hs in study.hosts.items():
        if hs.delay_s > 0 or hs.loss > 0:
            hosts.append({"ip": topo.host_ip[h], "delay_ns": int(round(hs.delay_s * 1e9)),
                          "loss": ({"kind": "bernoulli", "p": hs.loss} if hs.loss > 0 else None)})
    return {
        "ifaces": {"west": "lw", "east": "le"},
        "out_dir": str(out_dir),
        "stats_interval_ns": 10_000_000,
        "event_log": event_log,
        "seed": seed,
        "t0_ns": t0_ns,
        # SCHED_FIFO keeps the emulator's release times within tens of microseconds on a
        # busy machine; after each busy millisecond it runs ~80 us as an ordinary task
        # (rt_yield "fair", docs/link.md Scheduling) so the kernel's RT throttling never
        # stops it. The hosts' processes are not starved because the placement keeps
        # their receive work off its CPU (placement()) and the scheduler moves them.
        # CCARENA_LINK_RT_PRIORITY=0 turns it off.
        "rt_priority": int(os.environ.get("CCARENA_LINK_RT_PRIORITY", "10")),
        "cpus": cpus or [],
        # packet I/O (docs/link.md "I/O design"): CCARENA_LINK_IO=packet|xdp|auto
        "io": link_io(study.offloads),
        # lateness that matters is relative to the path (see late_tolerance_ns)
        "late_tolerance_ns": late_tolerance_ns(study),
        "w2e": _direction(b, b.rate_bps, b.delay_s, b.loss, study, topo, forward=True),
        "e2w": {**_direction(b, b.reverse_rate_bps, b.reverse_delay, 0.0, study, topo,
                             forward=False),
                "rate_schedule": None, "trace_file": None},
        "hosts": hosts,
    }


# Packets a router's bottleneck port may hold while the emulator's port is full.
HANDOFF_QDISC_LIMIT = 10000
# veth stops its queue on a full ring from Linux 6.16 (commit dc82a33297fc); a lost
# wake-up could leave it stopped for good until 5442a9da6978 (in 6.18, backported to
# late 6.17.y). The fifo goes on only where that fix is certain.
HANDOFF_MIN_KERNEL = (6, 18)


def kernel_version(release: str | None = None) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", release or platform.release())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def handoff_qdiscs(topo: Topology) -> bool:
    """A fifo on each router's bottleneck port (the peers of the emulator's ports), so a
    burst the emulator's ports cannot take at once waits instead of being dropped; returns
    whether it was put there. With AF_XDP the emulator's port is a veth in NAPI mode whose
    256-entry ring overflows when a router forwards a whole ACK-clocked burst inside one
    softirq, before that veth's NAPI poll runs; on a veth with a qdisc the kernel then
    stops the queue while the ring is full and the qdisc holds the packets. Measured here
    (6.18): 1 100-17 000 frames dropped per 8 s saturated flow without, 0 with.
    AF_PACKET's path (the receive backlog) has no such backpressure. The wait in the fifo
    is before the emulator stamps the frame's arrival, so it adds to the path's delay
    unmodelled; it happens only while the kernel's hand-off is behind, and its count is
    recorded (`ingress_counters`: requeues)."""
    if kernel_version() < HANDOFF_MIN_KERNEL:
        return False
    for ns, dev in topo.bottleneck_ports.values():
        add_handoff_fifo(ns, dev)
    return True


def add_handoff_fifo(ns: str, dev: str) -> None:
    """The hand-off fifo on one port (also used by the benchmarks' test bed)."""
    try:
        with _netlink(ns) as ipr:
            ipr.tc("replace", "pfifo", _index(ipr, dev), limit=HANDOFF_QDISC_LIMIT)
    except (NetlinkError, OSError, LookupError) as e:
        raise TestbedError(f"add a fifo to {dev} in {ns}: {e}") from None


def port_counters(ns: str, dev: str) -> dict[str, int]:
    """One port's losses on transmit: `dropped` = its veth TX drops + its hand-off
    fifo's drops; `requeues` = times the fifo held a packet back (0 without one)."""
    try:
        with _netlink(ns) as ipr:
            idx = _index(ipr, dev)
            link = next(iter(ipr.get_links(idx)))
            dropped = int(link.get_attr("IFLA_STATS64")["tx_dropped"])
            fifo = {}
            for q in ipr.get_qdiscs(index=idx):
                if q["parent"] == TC_H_ROOT and q.get_attr("TCA_KIND") == "pfifo":
                    fifo = q.get_attr("TCA_STATS2").get_attr("TCA_STATS_QUEUE")
    except (NetlinkError, OSError, LookupError, StopIteration, TypeError, AttributeError) as e:
        raise TestbedError(f"read the counters of {dev} in {ns}: {e!r}") from None
    return {"dropped": dropped + int(fifo.get("drops", 0)),
            "requeues": int(fifo.get("requeues", 0))}


@contextlib.contextmanager
def _netlink(ns: str):
    """A netlink socket inside namespace `ns`, used and closed in this thread: pyroute2
    (0.9) opens its socket in the namespace the thread is in at the first request, so
    every request stays inside the `enter`."""
    with netns.enter(ns):
        ipr = IPRoute()
        try:
            yield ipr
        finally:
            ipr.close()


def _index(ipr, dev: str) -> int:
    idx = ipr.link_lookup(ifname=dev)
    if not idx:
        raise LookupError(f"no device {dev}")
    return idx[0]


def ingress_counters(topo: Topology) -> dict[str, dict[str, int]]:
    """What the routers' bottleneck ports failed to hand to the emulator, by direction
    (rl:bn is w2e, rr:bn e2w): `dropped` = the veth's TX drops (its peer, the emulator's
    port, could not take the frame) + the hand-off fifo's drops (full); `requeues` = times
    the fifo had to hold a packet back. Those ports are veths whose peers are the
    emulator's ports, so such a frame never reaches the emulator and none of its own
    counters sees it. Read before and after a run; the difference is the run's."""
    return {d: port_counters(ns, dev) for d, (ns, dev) in topo.bottleneck_ports.items()}


def counter_delta(before: dict, after: dict) -> dict:
    return {d: {k: after[d][k] - before[d][k] for k in after[d]} for d in after}


def start(topo: Topology, study: Study, raw_dir: Path, seed: int,
          event_log: bool = False, t0_ns: int | None = None) -> NsProcess:
    out = raw_dir / "link"
    out.mkdir(parents=True, exist_ok=True)
    handoff = handoff_qdiscs(topo)
    link_cpus, rps_cpus = placement(has_traffic=bool(study.flows))
    rps_cpus = steer(topo, rps_cpus)
    cfg = make_config(topo, study, out, seed, event_log, t0_ns, link_cpus)
    cfg["rps_cpus"] = rps_cpus   # provenance only: the link ignores unknown top-level keys
    cfg["handoff_fifo"] = HANDOFF_QDISC_LIMIT if handoff else None
    cfg_path = out / "link.config.json"
    cfg_path.write_text(json.dumps(cfg, indent=1))
    binary = require_binary("ccarena-link", "the user-space link emulator")
    p = NsProcess("ccarena-link", topo.routers["ln"], [binary, "--config", str(cfg_path)],
                  raw_dir / "logs", stdin=False)
    p.wait_line("READY", 10.0)
    return p
