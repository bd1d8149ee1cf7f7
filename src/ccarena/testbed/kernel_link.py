"""Kernel link backend: tc qdiscs on the bottleneck ports, and a sampler of their backlog.

Per direction (w2e on rl's `bn`, e2w on rr's `bn`):
    htb root (rate) -> leaf pfifo/bfifo (buffer) or a kernel AQM
Delay, jitter and netem's other impairments (where the kernel has netem) sit on the far
router's access ports, so the delay line does not count against the bottleneck buffer:
the ports towards the receivers carry the s->r direction (delay, and the loss model,
reordering, duplication and corruption, which act on s->r only), the ports towards the
senders the r->s direction (reverse_delay); jitter, its distribution and correlation act
on both. Each receiver's port has its own netem, so a loss model's chain or reordering's
gap counts that receiver's packets (the user-space link runs one per direction:
docs/link.md, "Impairments")."""
from __future__ import annotations

import math
import os
import socket
import struct
import subprocess
import threading
import time

import numpy as np

from ccarena.testbed import netns
from ccarena.errors import CommandError
from ccarena.study.impair import BernoulliLoss, FourStateLoss, GilbertLoss
from ccarena.study.model import LinkSpec, Study
from ccarena.study.resolve import CodelParams, FqCodelParams, RedParams
from ccarena.testbed.topology import Topology

STATS_DTYPE = np.dtype([("t_ns", "<u8"), ("dir", "u1"), ("qlen_pkts", "<u4"),
                        ("qlen_bytes", "<u8"), ("arrivals", "<u4"), ("departures", "<u4"),
                        ("drops", "<u4"), ("marks", "<u4"), ("bytes_out", "<u8")])


def _tc_batch(ns: str, lines: list[str]) -> None:
    if not lines:
        return
    argv = ["tc", "-n", ns, "-batch", "-"]
    r = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise CommandError(argv + ["<<", " ; ".join(lines)], r.returncode, r.stderr)


def bottleneck_lines(dev: str, link: LinkSpec, rate_bps: int | None, mtu: int) -> list[str]:
    buf = link.buffer
    leaf = (f"pfifo limit {buf.size}" if buf.kind == "packets" else f"bfifo limit {buf.size}")
    if link.queue in ("red", "codel", "fq_codel"):
        leaf = _aqm_leaf(link, mtu, rate_bps)
    if rate_bps is None:
        return [f"qdisc replace dev {dev} root handle 1: {leaf}"]
    # burst of two MTU frames keeps htb's token bucket from releasing bursts at line rate.
    burst = 2 * (mtu + 14)
    return [
        f"qdisc replace dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {rate_bps}bit ceil {rate_bps}bit "
        f"burst {burst} cburst {burst} quantum {mtu + 14}",
        f"qdisc add dev {dev} parent 1:1 handle 10: {leaf}",
    ]


def _aqm_leaf(link: LinkSpec, mtu: int, rate_bps: int | None = None) -> str:
    """The kernel qdisc for the resolved queue (LinkSpec.queue_params): the same
    parameters the user-space link gets, in tc's units."""
    qp = link.queue_params
    limit = link.buffer.packets(mtu)
    ecn = " ecn" if link.ecn else ""
    if isinstance(qp, CodelParams):
        return (f"codel limit {limit} target {qp.target_s * 1e6:.0f}us "
                f"interval {qp.interval_s * 1e6:.0f}us{ecn}")
    if isinstance(qp, FqCodelParams):
        return (f"fq_codel limit {limit} flows {qp.flows} quantum {qp.quantum} "
                f"target {qp.target_s * 1e6:.0f}us interval {qp.interval_s * 1e6:.0f}us{ecn}")
    if isinstance(qp, RedParams):
        frame = mtu + 14
        lo, hi = ((qp.min_th * frame, qp.max_th * frame) if qp.unit == "packets"
                  else (qp.min_th, qp.max_th))
        burst = red_burst(lo, frame, red_wlog(qp.weight))
        return (f"red limit {link.buffer.bytes(mtu)} min {lo} max {hi} avpkt {frame} "
                f"burst {burst} probability {qp.max_p} "
                f"bandwidth {rate_bps or link.rate_bps}bit{ecn}")
    raise ValueError(f"queue {link.queue!r} has no kernel qdisc")


def red_wlog(weight: float) -> int:
    """The kernel's RED averages with weight 2^-Wlog: the power of two nearest `weight`."""
    return max(1, min(31, round(math.log2(1 / weight))))


def red_burst(min_bytes: int, avpkt: int, wlog: int) -> int:
    """tc does not take RED's weight; it derives Wlog from `burst` (packets): the smallest
    w with  burst + 1 - min/avpkt <= (1 - (1 - 2^-w)^burst) / 2^-w  (Floyd & Jacobson
    1993, §9: a burst of that many packets arriving at an empty queue must not reach
    min_th). Returns the burst for which tc picks `wlog`, so both backends average alike;
    if none does (min_th below two packets), the burst whose Wlog comes closest."""
    def wlog_of(burst: int) -> int | None:
        a = burst + 1 - min_bytes / avpkt
        if a < 1:
            return None
        w = 1
        while w < 32:
            W = 2.0 ** -w
            if a <= (1 - (1 - W) ** burst) / W:
                return w
            w += 1
        return None
    best, best_d = 1, 99
    for burst in range(1, 20001):
        got = wlog_of(burst)
        if got is None:
            continue
        if got == wlog:
            return burst
        if abs(got - wlog) < best_d:
            best, best_d = burst, abs(got - wlog)
    return best


def _pct(p: float) -> str:
    return f"{p * 100:.6f}%"


def _chance(word: str, p: float, corr: float) -> str:
    return f" {word} {_pct(p)}" + (f" {_pct(corr)}" if corr > 0 else "") if p > 0 else ""


def netem_lines(dev: str, delay_s: float, jitter_s: float, loss: float, *,
                distribution: str = "uniform", delay_correlation: float = 0.0,
                loss_model=None, reorder: float = 0.0, reorder_correlation: float = 0.0,
                reorder_gap: int = 1, duplicate: float = 0.0,
                duplicate_correlation: float = 0.0, corrupt: float = 0.0,
                corrupt_correlation: float = 0.0) -> list[str]:
    """The netem qdisc of one access port, in tc-netem(8)'s words: `delay D J CORR
    distribution X`, `loss random P` (independent losses: Bernoulli) or `loss gemodel p r
    1-h 1-k` / `loss state p13 p31 p32 p23 p14`, `reorder P CORR gap G`, `duplicate P
    CORR`, `corrupt P CORR`. netem's uniform jitter needs no table; the others load
    tc's normal/pareto/paretonormal tables."""
    if loss > 0 and loss_model is not None:
        raise ValueError("netem takes one loss model per port: loss and loss_model together")
    if not (delay_s > 0 or jitter_s > 0 or loss > 0 or loss_model is not None or reorder > 0
            or duplicate > 0 or corrupt > 0):
        return []
    spec = f"netem limit 1000000 delay {delay_s * 1e6:.0f}us"
    if jitter_s > 0:
        spec += f" {jitter_s * 1e6:.0f}us"
        if delay_correlation > 0:
            spec += f" {_pct(delay_correlation)}"
        if distribution != "uniform":
            spec += f" distribution {distribution}"
    if loss > 0:
        spec += f" loss {_pct(loss)}"
    elif isinstance(loss_model, BernoulliLoss):
        spec += f" loss {_pct(loss_model.p)}"
    elif isinstance(loss_model, GilbertLoss):
        m = loss_model
        spec += (f" loss gemodel {_pct(m.p)} {_pct(m.r)} {_pct(m.loss_bad)} "
                 f"{_pct(m.loss_good)}")
    elif isinstance(loss_model, FourStateLoss):
        m = loss_model
        spec += (f" loss state {_pct(m.p13)} {_pct(m.p31)} {_pct(m.p32)} {_pct(m.p23)} "
                 f"{_pct(m.p14)}")
    spec += _chance("duplicate", duplicate, duplicate_correlation)
    spec += _chance("corrupt", corrupt, corrupt_correlation)
    if reorder > 0:
        spec += _chance("reorder", reorder, reorder_correlation) + f" gap {reorder_gap}"
    return [f"qdisc replace dev {dev} root {spec}"]


def access_netem(link: LinkSpec, towards_receiver: bool, extra_delay_s: float = 0.0,
                 extra_loss: float = 0.0) -> dict:
    """netem_lines' arguments for the port towards a receiver (the s->r direction and
    its impairments) or towards a sender (r->s: reverse_delay, jitter only), with that
    host's own extra delay and loss."""
    loss, model = (link.loss, link.loss_model) if towards_receiver else (0.0, None)
    if isinstance(model, BernoulliLoss):     # independent losses combine with the host's
        loss, model = model.p, None
    kw = dict(delay_s=(link.delay_s if towards_receiver else link.reverse_delay)
              + extra_delay_s, jitter_s=link.jitter_s, loss=_either(loss, extra_loss),
              distribution=link.delay_distribution,
              delay_correlation=link.delay_correlation)
    if towards_receiver:
        kw.update(loss_model=model, reorder=link.reorder,
                  reorder_correlation=link.reorder_correlation, reorder_gap=link.reorder_gap,
                  duplicate=link.duplicate, duplicate_correlation=link.duplicate_correlation,
                  corrupt=link.corrupt, corrupt_correlation=link.corrupt_correlation)
    return kw


def apply(topo: Topology, study: Study) -> None:
    b = study.bottleneck
    rl, rr = topo.routers["rl"], topo.routers["rr"]
    _tc_batch(rl, bottleneck_lines("bn", b, b.rate_bps, study.mtu))
    _tc_batch(rr, bottleneck_lines("bn", b, b.reverse_rate_bps, study.mtu))
    # One-way delay each way on the far side's access ports; the s->r impairments on the
    # receivers'. A host's own extra delay and loss apply to its access segment in both
    # directions, as in the user-space link (a rule matching the source or the
    # destination): on the router's port towards it, and on its own eth0 away from it.
    for host, (ns, dev) in topo.access_ports.items():
        hs = study.hosts.get(host)
        extra_d = hs.delay_s if hs else 0.0
        extra_l = hs.loss if hs else 0.0
        _tc_batch(ns, netem_lines(dev, **access_netem(b, host.startswith("r"), extra_d,
                                                      extra_l)))
        if extra_d > 0 or extra_l > 0:
            _tc_batch(topo.ns(host), netem_lines("eth0", extra_d, 0.0, extra_l))


def _either(p: float, q: float) -> float:
    """Lost by either of two independent losses."""
    return 1 - (1 - p) * (1 - q)


class QdiscSampler:
    """Polls the bottleneck qdiscs' backlog and counters every `interval_s` (like the
    bufferbloat lab's tc polling, but over one netlink socket per router, not a process
    per poll). Produces records in the link_stats layout of the user-space link."""

    def __init__(self, testbed, interval_s: float = 0.01):
        self.interval = interval_s
        self.rows: list[tuple] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="qdisc-sampler", daemon=True)
        self.error: str | None = None
        self.reads = 0               # netlink reads tried, and how many raised
        self.failed_reads = 0
        self.tick_ns: list[int] = []  # when each sampling tick began
        self.last_failure = ""
        self.where = [(0 if d == "w2e" else 1, ns, dev)
                      for d, (ns, dev) in sorted(testbed.topo.bottleneck_ports.items())]

    def start(self):
        self._thread.start()
        return self

    # more failed reads than this leaves holes a queue plot would hide: the run is invalid
    MAX_FAILED_FRACTION = 0.01

    def failures(self) -> str | None:
        """Why the samples cannot be trusted, or None."""
        if self.failed_reads > self.MAX_FAILED_FRACTION * max(self.reads, 1):
            return (f"qdisc sampler: {self.failed_reads} of {self.reads} reads failed "
                    f"(last: {self.last_failure})")
        return None

    def ticks(self, from_ns: int = 0, to_ns: int | None = None) -> tuple[int, int]:
        """(ticks taken, ticks missed) from `from_ns` to `to_ns` (the run: what happened
        while the run was built or torn down measured nothing). A tick that came more
        than two intervals after the one before was missed — a busy or stolen CPU —
        counted like the flow engines' sampling gaps: one per interval in the gap."""
        t = np.asarray(self.tick_ns, dtype=np.int64)
        t = t[(t >= from_ns) & (t <= (to_ns if to_ns is not None else np.iinfo(np.int64).max))]
        gaps = np.diff(t)
        step = self.interval * 1e9
        late = gaps[gaps > 2 * step]
        return int(len(t)), int((late // step - 1).sum())

    def stop(self) -> np.ndarray:
        self._stop.set()
        self._thread.join(timeout=2)
        return np.array(self.rows, dtype=STATS_DTYPE)

    def _open(self) -> list[tuple]:
        """A netlink socket per port, opened inside its router's namespace (a socket
        belongs to the namespace it was made in)."""
        ports = []
        for d, ns, dev in self.where:
            with netns.enter(ns):
                ports.append((d, RootQdiscStats(dev), None))
        return ports

    def _read(self, port, idx):
        return port.read()

    def _loop(self):
        try:
            ports = self._open()
        except Exception as e:   # reported with the run; the run itself goes on
            self.error = f"qdisc sampler: {e}"
            return
        try:
            self._sample(ports)
        finally:
            for _, port, _ in ports:
                try:
                    port.close()
                except Exception:
                    pass

    def _sample(self, ports):
        prev = {}
        while not self._stop.is_set():
            t = time.monotonic_ns()
            self.tick_ns.append(t)
            for d, ipr, idx in ports:
                self.reads += 1
                try:
                    r = self._read(ipr, idx)
                except Exception as e:   # a gap in the series; counted, judged by the run
                    self.failed_reads += 1
                    self.last_failure = str(e)
                    continue
                if r is None:   # no root qdisc, or one without statistics: also a gap
                    self.failed_reads += 1
                    self.last_failure = (f"no root qdisc statistics on port "
                                         f"{getattr(ipr, 'dev', idx)} "
                                         f"({'w2e' if d == 0 else 'e2w'})")
                    continue
                qlen, backlog, pkts, drops, nbytes = r
                p = prev.get(d, (pkts, drops, nbytes))
                self.rows.append((t, d, qlen, backlog, 0, pkts - p[0], drops - p[1], 0,
                                  nbytes - p[2]))
                prev[d] = (pkts, drops, nbytes)
            self._stop.wait(self.interval)


class RootQdiscStats:
    """The statistics of one device's root qdisc, read over a netlink socket of the
    namespace it is made in: one RTM_GETQDISC request for the root (NLM_F_ECHO: the kernel
    answers a qdisc "get" as a notification, sent to the asker only when it asks for the
    echo) and the two attributes needed picked out of the answer.

    The root accounts for the whole tree (htb sums its leaves' backlog and counts their
    drops), so one qdisc per port is read. pyroute2 decodes every attribute of a dump of
    the device's qdiscs: 0.6 ms a read on the host and tens of milliseconds in a guest
    under QEMU's TCG, where a sampler with two ports then missed nine ticks in ten; this
    reads in about 10 us on the host."""

    RTM_GETQDISC, RTM_NEWQDISC, NLMSG_ERROR = 38, 36, 2
    NLM_F_REQUEST, NLM_F_ECHO = 0x1, 0x8
    TC_H_ROOT = 0xFFFFFFFF
    TCA_STATS2, TCA_STATS_BASIC, TCA_STATS_QUEUE = 7, 1, 3
    NLMSG_HDR = struct.Struct("=IHHII")      # len, type, flags, seq, pid
    TCMSG = struct.Struct("=BxxxiIII")       # family, ifindex, handle, parent, info
    RTA = struct.Struct("=HH")               # len, type

    def __init__(self, dev: str):
        self.dev = dev
        self.ifindex = socket.if_nametoindex(dev)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)   # NETLINK_ROUTE
        self.sock.settimeout(1.0)
        self.sock.bind((0, 0))
        self.seq = 0

    def close(self):
        self.sock.close()

    def read(self) -> tuple | None:
        """-> (qlen, backlog bytes, packets, drops, bytes) of the root qdisc, or None if it
        has no statistics. Raises OSError when the kernel refuses the request."""
        self.seq += 1
        body = self.TCMSG.pack(socket.AF_UNSPEC, self.ifindex, 0, self.TC_H_ROOT, 0)
        self.sock.send(self.NLMSG_HDR.pack(self.NLMSG_HDR.size + len(body), self.RTM_GETQDISC,
                                           self.NLM_F_REQUEST | self.NLM_F_ECHO, self.seq, 0)
                       + body)
        while True:
            data = self.sock.recv(65536)
            off = 0
            while off + self.NLMSG_HDR.size <= len(data):
                ln, typ, _, seq, _ = self.NLMSG_HDR.unpack_from(data, off)
                if ln < self.NLMSG_HDR.size:
                    break
                if seq == self.seq:
                    if typ == self.NLMSG_ERROR:
                        err = -struct.unpack_from("=i", data, off + self.NLMSG_HDR.size)[0]
                        raise OSError(err, f"RTM_GETQDISC {self.dev}: {os.strerror(err)}")
                    if typ == self.RTM_NEWQDISC:
                        return self._stats(data, off + self.NLMSG_HDR.size + self.TCMSG.size,
                                           off + ln)
                off += (ln + 3) & ~3

    def _stats(self, data: bytes, off: int, end: int) -> tuple | None:
        for typ, a, b in self._attrs(data, off, end):
            if typ == self.TCA_STATS2:
                got = {t: (x, y) for t, x, y in self._attrs(data, a, b)}
                if self.TCA_STATS_BASIC not in got or self.TCA_STATS_QUEUE not in got:
                    return None
                nbytes, packets = struct.unpack_from("=QI", data, got[self.TCA_STATS_BASIC][0])
                qlen, backlog, drops = struct.unpack_from("=III", data,
                                                          got[self.TCA_STATS_QUEUE][0])
                return qlen, backlog, packets, drops, nbytes
        return None

    def _attrs(self, data: bytes, off: int, end: int):
        """(type, payload start, payload end) of each attribute in data[off:end]."""
        while off + self.RTA.size <= end:
            ln, typ = self.RTA.unpack_from(data, off)
            if ln < self.RTA.size:
                return
            yield typ & 0x3FFF, off + self.RTA.size, off + ln     # without NLA_F_NESTED
            off += (ln + 3) & ~3
