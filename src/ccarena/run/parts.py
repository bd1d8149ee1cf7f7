"""The parts of one run, each with the same five steps, so execute_run is a loop.

    prepare(ctx)   build or start what must be ready before t0 is fixed (the flow engines
                   start and wait for GO; the tracer attaches; captures open)
    start(ctx)     t0 is fixed: start what runs from t0 on its own clock (the link, whose
                   rate schedule starts at t0; ping)
    go(ctx)        release the workload at t0
    finish(ctx)    after the run's end: wait for outputs, read them into ctx.tables and
                   ctx.meta, add what went wrong to ctx.reasons (failures) or ctx.noise
                   (the machine's noise, validity.py)
    stop()         tear down; always called, also after an error or Ctrl-C; idempotent

`parts_for` gives the order of prepare/start/go (stop runs in reverse, like nested `with`
blocks) and the order of finish (the workload first: the engines wait for the run's end).
A part that needs nothing at a step leaves the default."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ccarena.measure import cpu
from ccarena.measure.pcap import Pcap
from ccarena.measure.ping import PingProbe
from ccarena.measure.tracer import Tracer
from ccarena.run import environment, interrupt
from ccarena.run.guest_hosts import GuestHosts
from ccarena.measure import validity
from ccarena.study.model import Study
from ccarena.testbed import kernel_link, user_link
from ccarena.testbed.topology import Topology
from ccarena.workload.commands import Commands
from ccarena.workload.engine import Engines, host_configs

START_LEAD_S = 0.3      # t0 is this far after the parts are prepared
# ... and this far when the user-space link follows a rate schedule or trace: the link
# counts them from t0, which it must know when it starts, and starting it can take a
# second or more on a busy machine (later, the run's flows would lag its schedule)
TIMED_LINK_LEAD_S = 2.0
WAIT_MARGIN_S = 15.0    # how long past its end a run's processes may take to finish


@dataclass
class RunContext:
    """What the parts of one run share."""
    study: Study
    topo: Topology
    testbed: object                 # testbed.build.Testbed
    raw: Path                       # the run's raw/ directory
    seed: int
    kernel_names: dict              # study algorithm name -> kernel name
    event_log: bool = False
    t0_ns: int = 0
    meta: dict = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)   # failures: the run is invalid
    noise: list[str] = field(default_factory=list)     # the machine's noise (re-run)

    @property
    def end_ns(self) -> int:
        return self.t0_ns + int(self.study.duration_s * 1e9)

    @property
    def wait_s(self) -> float:
        return self.study.duration_s + START_LEAD_S + WAIT_MARGIN_S


class Part:
    def prepare(self, ctx: RunContext) -> None:
        pass

    def start(self, ctx: RunContext) -> None:
        pass

    def go(self, ctx: RunContext) -> None:
        pass

    def finish(self, ctx: RunContext) -> None:
        pass

    def stop(self) -> None:
        pass


class HostState(Part):
    """The sysctls and offloads of every host, and the cgroup limits applied."""

    def prepare(self, ctx):
        ctx.meta["host_state"] = environment.host_state(ctx.topo)
        ctx.meta["host_limits"] = {h: cg.applied() for h, cg in ctx.testbed.cgroups.items()}


class KernelLink(Part):
    """tc qdiscs on the bottleneck ports, and the sampler of their backlog."""

    def __init__(self):
        self.sampler = None

    def prepare(self, ctx):
        kernel_link.apply(ctx.topo, ctx.study)
        # every sample_interval, as the study says (a guest under TCG cannot wake a
        # Python thread every 10 ms; a study for one samples every 20 ms)
        self.sampler = kernel_link.QdiscSampler(
            ctx.testbed, interval_s=ctx.study.sample_interval_s).start()

    def finish(self, ctx):
        s, self.sampler = self.sampler, None
        stats = pd.DataFrame(s.stop())
        ctx.tables["link_stats"] = stats
        failed = s.failures()
        if s.error or stats.empty or failed:
            ctx.reasons.append(s.error or failed or "qdisc sampler recorded nothing")
        # judged over the run (from t0 to its end), as the flow engines sample it
        ticks, missed = s.ticks(ctx.t0_ns, ctx.end_ns) if ctx.t0_ns else s.ticks()
        ctx.meta["qdisc_sampler"] = {"reads": s.reads, "failed": s.failed_reads,
                                     "ticks": ticks, "missed_ticks": missed}
        ctx.noise.extend(validity.judge_sampler("kernel qdisc sampler", ticks, missed))
        b = ctx.study.bottleneck
        ctx.meta["shaper"] = validity.shaper_delivery(stats, {0: b.rate_bps,
                                                              1: b.reverse_rate_bps})
        ctx.noise.extend(validity.judge_shaper(ctx.meta["shaper"]))

    def stop(self):
        if self.sampler is not None:
            with contextlib.suppress(Exception):
                self.sampler.stop()
            self.sampler = None


def note_killed(meta: dict, killed: dict | None) -> None:
    """Record in meta["killed"] a process of the run that something outside killed
    (testbed/proc.NsProcess.killed): the run was not measured, and `--resume` runs it
    again (run/resume.py)."""
    if killed and killed not in meta.setdefault("killed", []):
        meta["killed"].append(killed)


class FlowEngines(Part):
    """One ccarena-flow per namespace host with flows; they wait for GO at t0. (A VM
    host's runs in its guest: run/guest_hosts.py.)"""

    def __init__(self):
        self.engines = None
        self.rcs: dict = {}

    def prepare(self, ctx):
        cfgs = {h: c for h, c in host_configs(ctx.study, ctx.topo, ctx.raw, ctx.kernel_names,
                                              ctx.seed).items()
                if h not in ctx.study.vm_hosts}
        self.engines = Engines(ctx.topo, cfgs, ctx.raw, ctx.testbed.cgroups)
        self.engines.start()

    def go(self, ctx):
        self.engines.go_at(ctx.t0_ns)

    def finish(self, ctx):
        # the run's measurement: only a wait, which a signal cuts short (run/interrupt.py)
        with interrupt.interruptible():
            self.rcs = self.engines.wait(ctx.wait_s)
            # no engine (probes only) or an early exit: the run still lasts its duration
            while time.monotonic_ns() < ctx.end_ns:
                time.sleep(min(0.1, (ctx.end_ns - time.monotonic_ns()) / 1e9))

    def stop(self):
        if self.engines:
            self.engines.stop()

    def failures(self) -> list[str]:
        return self.engines.failures(self.rcs) if self.engines else []


class CommandFlows(Part):
    """`kind = "command"` flows: any program in a host, started at its time after t0."""

    def __init__(self):
        self.cmds = None

    def prepare(self, ctx):
        self.cmds = Commands(ctx.study, ctx.topo, ctx.raw, ctx.testbed.cgroups)

    def go(self, ctx):
        self.cmds.start(ctx.t0_ns)

    def finish(self, ctx):
        self.cmds.finish(timeout_s=ctx.wait_s)
        if self.cmds:
            ctx.tables["commands"] = self.cmds.table()

    def stop(self):
        if self.cmds:
            self.cmds.stop()


class CpuUsage(Part):
    """The machine's CPU busy and steal time from t0 to the end of the workload."""

    def go(self, ctx):
        self.c0 = cpu.snapshot()

    def finish(self, ctx):
        ctx.meta["cpu"] = cpu.usage(self.c0, cpu.snapshot())


class WorkloadOutcome(Part):
    """After the workload and the CPU reading: what the engines and commands say failed.
    (A part of its own so the CPU is read before the engines are stopped.)"""

    def __init__(self, engines: FlowEngines, commands: CommandFlows):
        self.engines, self.commands = engines, commands

    def finish(self, ctx):
        ctx.reasons.extend(self.engines.failures())
        ctx.reasons.extend(self.commands.cmds.failures() if self.commands.cmds else [])
        for proc in (self.engines.engines.procs.values() if self.engines.engines else []):
            note_killed(ctx.meta, proc.killed())
        self.engines.stop()


class UserLink(Part):
    """ccarena-link in the link namespace, started with t0 so a rate schedule or trace
    starts with the run."""

    def __init__(self):
        self.proc = None
        self.ingress0 = None

    def start(self, ctx):
        self.proc = user_link.start(ctx.topo, ctx.study, ctx.raw, ctx.seed,
                                    event_log=ctx.event_log, t0_ns=ctx.t0_ns)
        self.ingress0 = user_link.ingress_counters(ctx.topo)

    def finish(self, ctx):
        p, self.proc = self.proc, None
        note_killed(ctx.meta, p.killed())
        rc = p.terminate(timeout_s=10)
        if rc != 0:
            ctx.reasons.append(f"ccarena-link exit {rc}: {p.stderr_tail(3)}")
        ctx.meta["link_ingress"] = user_link.counter_delta(
            self.ingress0, user_link.ingress_counters(ctx.topo))

    def stop(self):
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.terminate(timeout_s=10)
            self.proc = None


class Captures(Part):
    """`kind = "pcap"` probes: tcpdump per host."""

    def __init__(self):
        self.caps: list[Pcap] = []

    def prepare(self, ctx):
        for p in ctx.study.probes:
            if p.kind == "pcap":
                for h in p.hosts:
                    self.caps.append(Pcap(h, ctx.topo.ns(h), ctx.raw, p.snaplen))
                    self.caps[-1].ready()

    def finish(self, ctx):
        self.stop()

    def stop(self):
        for c in self.caps:
            with contextlib.suppress(Exception):
                c.stop()


class AckTracer(Part):
    """`kind = "tcp_probe"` probes: one ccarena-trace for all traced hosts."""

    def __init__(self):
        self.tracer = None

    def prepare(self, ctx):
        traced = sorted({h for p in ctx.study.probes if p.kind == "tcp_probe"
                         for h in p.hosts} - set(ctx.study.vm_hosts))
        if traced:
            self.tracer = Tracer([ctx.topo.ns(h) for h in traced], ctx.raw)

    def finish(self, ctx):
        if self.tracer is None:
            return
        t, self.tracer = self.tracer, None
        ctx.meta["trace"] = t.stop()
        lost = ctx.meta["trace"].get("lost", 0) or 0
        if lost:
            ctx.noise.append(f"tcp_probe tracer lost {lost} events")

    def stop(self):
        if self.tracer is not None:
            with contextlib.suppress(Exception):
                self.tracer.stop()
            self.tracer = None


class Pings(Part):
    """`kind = "ping"` probes: ping(8) from a host, for the whole run."""

    def __init__(self):
        self.pings: list[PingProbe] = []

    def start(self, ctx):
        for p in ctx.study.probes:
            if p.kind == "ping":
                self.pings.append(PingProbe(p.name, ctx.topo.ns(p.src),
                                            ctx.topo.host_ip[p.dst], p.interval_s,
                                            (ctx.end_ns - time.monotonic_ns()) / 1e9,
                                            ctx.raw / "logs"))

    def finish(self, ctx):
        got = [p.finish(timeout_s=2.0) for p in self.pings]
        self.pings = []
        if got:
            ctx.tables["ping"] = pd.concat(got, ignore_index=True)

    def stop(self):
        for p in self.pings:
            with contextlib.suppress(Exception):
                p.proc.terminate(1)


class GuestTraces(Part):
    """The guests' per-ACK records beside the host tracer's (after it wrote them)."""

    def __init__(self, guests: GuestHosts):
        self.guests = guests

    def finish(self, ctx):
        self.guests.merge_traces(ctx)


def parts_for(study: Study, backend: str) -> tuple[list[Part], list[Part]]:
    """-> (parts in prepare/start/go order, the same parts in finish order)."""
    link = [KernelLink()] if backend == "kernel" else [UserLink()] if backend == "user" \
        else []
    engines, commands, cpu_part = FlowEngines(), CommandFlows(), CpuUsage()
    tracer, captures, pings = AckTracer(), Captures(), Pings()
    outcome = WorkloadOutcome(engines, commands)
    guests = GuestHosts(study)
    order = [*link, HostState(), guests, captures, tracer, commands, engines, pings, cpu_part,
             outcome]
    # the workload ends (engines in namespaces, then in guests, then commands), the CPU is
    # read, the outcome judged; then the measurements are stopped and read, the link last
    # (it carried them)
    finish = [engines, guests, commands, cpu_part, outcome, tracer, GuestTraces(guests),
              captures, pings, *link]
    return order, finish
