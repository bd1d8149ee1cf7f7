"""CPU busy and steal time of the whole machine during a run (psutil.cpu_times, which
reads the kernel's accounting in /proc/stat).

A run whose machine was starved (steal, or busy near 100 % of all cores) may have been
limited by CPU rather than by the emulated network; the runner flags it."""
from __future__ import annotations

import os

import psutil

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def snapshot() -> list[float]:
    """The machine's CPU time so far, in seconds, per state (FIELDS order)."""
    t = psutil.cpu_times()
    return [float(getattr(t, f, 0.0)) for f in FIELDS]


def usage(before: list[float], after: list[float]) -> dict:
    """Fractions of the CPU time between two snapshots: busy (neither idle, waiting for
    I/O nor stolen), steal (taken by the hypervisor), idle (idle + iowait)."""
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle = d[3] + d[4]
    steal = d[7]
    return {"busy_frac": (total - idle - steal) / total, "steal_frac": steal / total,
            "idle_frac": idle / total, "cores": os.cpu_count()}
