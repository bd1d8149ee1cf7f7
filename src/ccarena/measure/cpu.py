"""CPU busy and steal time of the whole machine during a run, from /proc/stat.

A run whose machine was starved (steal, or busy near 100 % of all cores) may have been
limited by CPU rather than by the emulated network; the runner flags it."""
from __future__ import annotations

import os


def snapshot() -> list[int]:
    with open("/proc/stat") as f:
        parts = f.readline().split()
    # user nice system idle iowait irq softirq steal guest guest_nice
    return [int(x) for x in parts[1:9]]


def usage(before: list[int], after: list[int]) -> dict:
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle = d[3] + d[4]
    steal = d[7]
    return {"busy_frac": (total - idle - steal) / total, "steal_frac": steal / total,
            "idle_frac": idle / total, "cores": os.cpu_count()}
