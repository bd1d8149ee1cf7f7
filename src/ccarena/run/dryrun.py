"""What a study will build and run, before anything is built (`ccarena run --dry-run`,
`ccarena validate`).

    describe(study, plan, preflight=None, capacity=None, here=None, guest=None)
                                                    -> list[str]   lines to print
    as_dict(...)  (the same arguments)              -> the same as JSON-ready data
    warnings(study, plan, capacity=None, pf=None) -> list[str]

Per cell: rate, one-way delay and base RTT, BDP, buffer in packets and in BDPs, loss,
per-host differences, queue, and (with a preflight, which needs root) the link backend and
where each algorithm comes from. The TCP settings the study leaves to the host that differ
on this machine from the reference kernel's. Then the plan's run order and seeds, the total
time, and warnings for settings that are legal but rarely meant."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ccarena import units
from ccarena.study import impair
from ccarena.study.model import Cell
from ccarena.testbed.guest import check as guest_check

RUN_OVERHEAD_S = 3.0        # building, starting and tearing down a run, measured here
SLOW_LINK_BPS = 1e6
LONG_STUDY_S = 4 * 3600
# What one core carries through the user-space link without a measurement of this machine:
# one flow up to 100 Mbit/s per core a run has (docs/scale-out.md, "How many cores a run
# needs", benchmarks/scale_out.py)
CORE_CARRIES_BPS = 100e6
# "10mbps": tc's bytes per second, easily meant as megabits
_BYTES_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)bps\s*$", re.I)


@dataclass(frozen=True)
class Capacity:
    """What this machine carries: measured (`ccarena doctor --measure`, run/capacity.py)
    or, without a measurement, the documented rule for `cpus` cores shared by `jobs` runs
    at once."""
    measured_bps: float | None = None
    cpus: int = 1
    jobs: int = 1

    def limit_bps(self) -> tuple[float, str]:
        """(the rate beyond which runs will be CPU-limited, where that figure comes from)"""
        if self.measured_bps:
            return 0.8 * self.measured_bps, (
                f"beyond what this machine carried when measured ("
                f"{units.format_rate(self.measured_bps)}: `ccarena doctor --measure`)")
        cores = max(1, self.cpus // max(1, self.jobs))
        est = CORE_CARRIES_BPS * cores
        return est, (f"beyond what {cores} core{'s' if cores != 1 else ''} per run carry "
                     f"(about {units.format_rate(CORE_CARRIES_BPS)} each, docs/scale-out.md; "
                     "`ccarena doctor --measure` measures this machine)")


def _capacity(c) -> Capacity | None:
    """None: nothing is known of the machine that will run the study (a cluster's
    workers), so nothing is claimed; a number: a measured capacity."""
    return c if isinstance(c, Capacity) or c is None else Capacity(measured_bps=c)


def bytes_rates(raw: dict) -> list[str]:
    """Warnings for rates written in tc's bytes per second ("10mbps" = 80 Mbit/s)."""
    bn = raw.get("bottleneck") if isinstance(raw.get("bottleneck"), dict) else {}
    found = [(f"bottleneck.{k}", bn[k]) for k in ("rate", "reverse_rate") if k in bn]
    for step in bn.get("rate_schedule") or []:
        if isinstance(step, list) and len(step) == 2:
            found.append(("bottleneck.rate_schedule", step[1]))
    out = []
    for key, v in found:
        m = _BYTES_RATE.match(v) if isinstance(v, str) else None
        if m:
            bps = units.parse_rate(v)
            out.append(f"{key} = {v!r} is {units.format_number(bps / 8 / 1e6, 4)} MB/s = "
                       f"{units.format_rate(bps)} (bps is bytes per second, as tc reads it); "
                       f"did you mean \"{m.group(1)}{m.group(2).lower()}bit\"?")
    return out


def hmm(seconds: float) -> str:
    m = int(round(seconds / 60))
    return f"{m // 60}:{m % 60:02d}"


def total_s(study, plan) -> float:
    return sum(r.study.duration_s + RUN_OVERHEAD_S for r in plan.runs)


def cell_lines(cell) -> list[str]:
    s = cell.study
    b = s.bottleneck
    frame = s.mtu + 14
    out = []
    rate = units.format_rate(b.rate_bps) if b.rate_bps else "unlimited"
    rev = "" if b.reverse_rate_bps == b.rate_bps or not b.reverse_rate_bps else \
        f" (r->s {units.format_rate(b.reverse_rate_bps)})"
    rdel = "" if b.reverse_delay == b.delay_s else \
        f" (r->s {units.format_time(b.reverse_delay)})"
    out.append(f"rate {rate}{rev}; one-way delay {units.format_time(b.delay_s)}{rdel}, base RTT "
               f"{units.format_time(s.base_rtt_s)}"
               + (f", jitter ±{units.format_time(b.jitter_s)}" if b.jitter_s and not
                  impair.describe_jitter(b) else ""))
    buf_pk = b.buffer.packets(s.mtu)
    if b.rate_bps and s.base_rtt_s > 0:
        bdp = b.rate_bps * s.base_rtt_s / 8
        out.append(f"BDP {bdp / 1e3:.1f} kB = {bdp / frame:.0f} packets; buffer "
                   f"{buf_pk} packets = {b.buffer.bytes(s.mtu) / bdp:.2f} BDP; queue {b.queue}"
                   + (" with ECN" if b.ecn else ""))
    else:
        out.append(f"buffer {buf_pk} packets; queue {b.queue}")
    if b.queue_params is not None:
        out.append(f"queue parameters: {_params(b.queue_params)}")
    if b.loss:
        out.append(f"loss {b.loss:.4%} (s->r)")
    out += impair.describe(b)
    for h, hs in sorted(s.hosts.items()):
        extra = [x for x in (f"+{units.format_time(hs.delay_s)} delay" if hs.delay_s else "",
                             f"+{hs.loss:.2%} loss" if hs.loss else "",
                             f"cc {hs.cc}" if hs.cc else "",
                             f"{hs.cpus:g} CPUs" if hs.cpus else "",
                             f"CPUs {hs.cpuset}" if hs.cpuset else "",
                             f"{hs.memory / 2**20:.0f} MiB" if hs.memory else "",
                             _vm(hs.vm, s) if hs.vm else "") if x]
        if extra:
            out.append(f"host {h}: " + ", ".join(extra))
    for f in s.flows:
        if f.kind == "command":
            out.append(f"flow {f.name}: command on {f.src}: {f.run}")
            continue
        what = {"download": f"downloads of {f.size} B" + (f" every {f.every_s:g} s"
                                                          if f.every_s else ""),
                "parallel": f"{f.conns} connections"}.get(f.kind, f.kind)
        out.append(f"flow {f.name}: {f.src} -> {f.dst}, {what}, cc {f.cc} (receiver "
                   f"{f.receiver_cc}), {f.start_s:g}-{f.stop_s if f.stop_s else s.duration_s:g} s")
    return out


def _vm(vm, s) -> str:
    off = vm.offloads if vm.offloads is not None else s.offloads
    return (f"VM guest: {vm.cpus} vCPU{'s' if vm.cpus != 1 else ''}, "
            f"{vm.memory / 2**20:.0f} MiB, {vm.kernel or 'the reference kernel'}, "
            f"accelerator {vm.accel}, virtio-net {vm.queues} queue"
            f"{'s' if vm.queues != 1 else ''}, offloads {'on' if off else 'off'}, "
            f"vhost {vm.vhost}")


def _params(qp) -> str:
    d = {k: v for k, v in vars(qp).items()}
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in d.items())


def warnings(study, plan, capacity=None, pf: dict | None = None) -> list[str]:
    out = guest_check.advice(study, (pf or {}).get("guests"))
    cells = study.cells or [Cell(0, {}, study)]
    cap = _capacity(capacity)
    limit, why = cap.limit_bps() if cap else (float("inf"), "")
    for c in cells:
        s, b = c.study, c.study.bottleneck
        where = ", ".join(f"{k}={v}" for k, v in c.params.items())
        at = f" [{where}]" if where else ""
        out += [w + at for w in bytes_rates(s.raw or study.raw)]
        if b.rate_bps and b.rate_bps < SLOW_LINK_BPS:
            out.append(f"the bottleneck runs at {units.format_rate(b.rate_bps)}, below 1 "
                       f"Mbit/s{at}: is the unit right?")
        if s.base_rtt_s >= s.duration_s:
            out.append(f"the base RTT {units.format_time(s.base_rtt_s)} is not shorter than "
                       f"the run ({units.format_time(s.duration_s)}){at}")
        if b.loss >= 1.0:
            out.append(f"the loss is 100 %: no packet gets through{at}")
        if b.rate_bps and b.rate_bps > limit:
            out.append(f"{units.format_rate(b.rate_bps)} is {why}{at}: runs will be "
                       "CPU-limited and flagged invalid")
        backend = _cell_backend(pf, c).get("backend") or b.backend
        if b.delay_correlation and b.jitter_s and backend == "kernel":
            # sch_netem's tabledist keeps the low bits of its correlated draw (modulo the
            # jitter's span or the table's size), where the correlation is not
            out.append(f"delay_correlation has no measurable effect on the kernel backend{at}: "
                       "netem's delays come out uncorrelated (docs/link.md, \"Measured "
                       "against netem\"); the user-space link (backend = \"user\") gives it")
    t = total_s(study, plan)
    if t > LONG_STUDY_S:
        out.append(f"the study takes about {hmm(t)} (h:mm); a smaller --scale, or --jobs / "
                   "--cluster (docs/scale-out.md), may be meant")
    return list(dict.fromkeys(out))


def host_dependent(study, here: dict | None = None) -> list[str]:
    """The TCP settings the study leaves to the host whose value on this machine differs
    from the reference kernel's (study/tcp_reference.py): what could make a result here
    differ from one on another machine. `here`: the values read on this machine (default:
    read now, as a run's host would get them)."""
    from ccarena.study.tcp_reference import REFERENCE_KERNEL, format_rows, left_to_host
    if here is None:
        from ccarena.run.environment import tcp_settings_here
        here = tcp_settings_here()
    rows = left_to_host(study, here)
    if not rows:
        return [f"TCP settings: those the study leaves to the host are as the reference "
                f"kernel ({REFERENCE_KERNEL}) sets them"]
    return [f"TCP settings the study leaves to the host that differ here from the reference "
            f"kernel ({REFERENCE_KERNEL}), so a result may depend on this machine (pin them "
            "in [tcp] or [hosts.*].sysctl):"] + ["  " + x for x in format_rows(rows)]


def _cells(study) -> tuple[list, dict]:
    cells = study.cells or [Cell(0, {}, study)]
    return cells, {c.index: f"c{c.index:0{max(3, len(str(len(cells) - 1)))}d}" for c in cells}


def _cell_backend(pf: dict | None, c) -> dict:
    return (pf["cells"].get(c.index) or pf["cells"].get(str(c.index)) or {}) if pf else {}


def _sources(pf: dict | None, guest: list[str] | None) -> list[str]:
    """Where the link and the algorithms come from: the guest's kernel, the preflight's
    answer (root), or a note that root would say."""
    if guest:
        return list(guest)
    if not pf:
        return ["(link backend and algorithm sources: run as root to see them)"]
    lines = guest_check.describe(pf.get("guests"))
    for n, a in sorted(pf["algorithms"].items()):
        lines.append(f"algorithm {n}: {a['source']} ({a['kernel_name']})"
                     + (f", {a['variant']} variant following {a['follows']}"
                        if a.get("variant") else "")
                     + (f": {a['why']}" if a.get("why") else ""))
    return lines


def describe(study, plan, pf: dict | None = None, capacity=None, here: dict | None = None,
             guest: list[str] | None = None) -> list[str]:
    """`guest`: lines saying which guest runs the study (`--vm`) instead of this machine;
    `here`: the TCP settings of the kernel that runs it (default: this machine's)."""
    cells, labels = _cells(study)
    lines = [f"study {study.name}" + (f" (scale {study.scale})" if study.scale else "")
             + f": {len(cells)} cell{'s' if len(cells) != 1 else ''} x {plan.repetitions} "
             f"repetition{'s' if plan.repetitions != 1 else ''} = {len(plan.runs)} runs of "
             f"{units.format_time(study.duration_s)}, "
             f"{'shuffled' if plan.shuffled else 'in order'} (seed {plan.seed}); about "
             f"{hmm(total_s(study, plan))} (h:mm)"]
    lines.append(f"a run the machine's noise makes invalid is run again up to {plan.reruns} "
                 f"time{'s' if plan.reruns != 1 else ''}" if plan.reruns else
                 "a run the machine's noise makes invalid is kept as it is (reruns = 0)")
    for c in cells:
        params = ", ".join(f"{k} = {v}" for k, v in c.params.items())
        lines.append(f"cell {labels[c.index]}" + (f" ({params})" if params else "") + ":")
        lines += ["  " + x for x in cell_lines(c)]
        b = _cell_backend(pf, c)
        if b:
            lines.append(f"  link backend {b['backend']} ({b['why']})"
                         + (f", packet I/O {b['io']}" if b.get("io") else ""))
    lines += _sources(pf, guest)
    lines += host_dependent(study, here)
    lines.append("runs, in order:")
    for r in plan.runs:
        params = ", ".join(f"{k} = {v}" for k, v in r.params.items())
        lines.append(f"  {r.index:4d}  {r.label:10s} seed {r.seed:<11d} {params}")
    for w in warnings(study, plan, capacity, pf):
        lines.append(f"warning: {w}")
    return lines


def as_dict(study, plan, pf: dict | None = None, capacity=None, here: dict | None = None,
            guest: list[str] | None = None) -> dict:
    """describe()'s content as data (`ccarena validate --json`)."""
    cells, labels = _cells(study)
    return {
        "study": study.name, "path": study.path, "scale": study.scale,
        "seed": plan.seed, "shuffled": plan.shuffled, "repetitions": plan.repetitions,
        "reruns": plan.reruns, "duration_s": study.duration_s,
        "total_s": total_s(study, plan),
        "cells": [{"cell": labels[c.index], "params": c.params, "setup": cell_lines(c),
                   **({"link_backend": _cell_backend(pf, c)} if _cell_backend(pf, c) else {})}
                  for c in cells],
        "sources": _sources(pf, guest),
        "host_dependent": host_dependent(study, here),
        "runs": [{"index": r.index, "label": r.label, "seed": r.seed, "params": r.params}
                 for r in plan.runs],
        "warnings": warnings(study, plan, capacity, pf),
    }
