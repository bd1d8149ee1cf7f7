"""CPU busy and steal time during a run, from /proc/stat: of the whole machine, or of the
CPUs this process may use when it was given a share of them (parallel runs,
docs/scale-out.md), so one run is not judged by another's load.

A run whose machine was starved (steal, or busy near 100 % of all cores) may have been
limited by CPU rather than by the emulated network; the runner flags it."""
from __future__ import annotations

import os


def _share() -> set[int] | None:
    """The CPUs this process may use, when that is fewer than the machine's."""
    mine = os.sched_getaffinity(0)
    return mine if len(mine) < (os.cpu_count() or len(mine)) else None


def snapshot() -> list[int]:
    share = _share()
    total = [0] * 8
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if not parts or not parts[0].startswith("cpu"):
                break
            if parts[0] == "cpu":
                if share is None:
                    # user nice system idle iowait irq softirq steal guest guest_nice
                    return [int(x) for x in parts[1:9]]
                continue
            if int(parts[0][3:]) in share:
                total = [a + int(x) for a, x in zip(total, parts[1:9])]
    return total


def usage(before: list[int], after: list[int]) -> dict:
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle = d[3] + d[4]
    steal = d[7]
    share = _share()
    return {"busy_frac": (total - idle - steal) / total, "steal_frac": steal / total,
            "idle_frac": idle / total, "cores": len(share) if share else os.cpu_count()}
