"""CPU busy and steal time during a run (psutil.cpu_times, the kernel's accounting in
/proc/stat): of the whole machine, or of the CPUs this process may use when it was given a
share of them (parallel runs, docs/scale-out.md), so one run is not judged by another's
load.

A run whose machine was starved (steal, or busy near 100 % of all cores) may have been
limited by CPU rather than by the emulated network; the runner flags it."""
from __future__ import annotations

import os

import psutil

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _share() -> set[int] | None:
    """The CPUs this process may use, when that is fewer than the machine's."""
    mine = os.sched_getaffinity(0)
    return mine if len(mine) < (os.cpu_count() or len(mine)) else None


def _fields(t) -> list[float]:
    return [float(getattr(t, f, 0.0)) for f in FIELDS]


def snapshot() -> list[float]:
    """CPU time so far, in seconds, per state (FIELDS order): the machine's, or summed
    over this process's share of the CPUs."""
    share = _share()
    if share is None:
        return _fields(psutil.cpu_times())
    with open("/proc/stat") as f:
        per_cpu = per_cpu_times(f.read(), os.sysconf("SC_CLK_TCK"))
    total = [0.0] * len(FIELDS)
    for cpu in share:
        total = [a + b for a, b in zip(total, per_cpu.get(cpu, [0.0] * len(FIELDS)))]
    return total


def per_cpu_times(stat: str, ticks_per_s: int) -> dict[int, list[float]]:
    """/proc/stat's per-CPU lines by CPU id (`cpu3 ...` is CPU 3), in seconds per state
    (FIELDS order). By name, not by position: an offline CPU has no line, so the n-th
    line is not CPU n (psutil's per-CPU list is positional)."""
    out = {}
    for line in stat.splitlines():
        head, _, rest = line.partition(" ")
        if head.startswith("cpu") and head[3:].isdigit():
            vals = [int(x) / ticks_per_s for x in rest.split()[:len(FIELDS)]]
            out[int(head[3:])] = vals + [0.0] * (len(FIELDS) - len(vals))
    return out


def usage(before: list[float], after: list[float]) -> dict:
    """Fractions of the CPU time between two snapshots: busy (neither idle, waiting for
    I/O nor stolen), steal (taken by the hypervisor), idle (idle + iowait)."""
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle = d[3] + d[4]
    steal = d[7]
    share = _share()
    return {"busy_frac": (total - idle - steal) / total, "steal_frac": steal / total,
            "idle_frac": idle / total, "cores": len(share) if share else os.cpu_count()}
