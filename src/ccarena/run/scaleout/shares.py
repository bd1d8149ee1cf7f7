"""The CPUs of one machine divided between runs that run at once (docs/scale-out.md).

    partition([0, 1, 2, 3], 2) -> ["0-1", "2-3"]

Each share is a CPU list; a run given one is held to it: the process that runs it sets
its affinity to the share (which every child inherits, and within which the user-space
link places its emulator thread and its receive steering, testbed/user_link.placement),
and its hosts' processes are put in cpuset groups of the share (testbed/build.py), so
runs do not take each other's CPUs. Shares are equal in size; hyperthread siblings are
kept together where the size allows; CPUs left over (the count does not divide) stay
with ccarena itself. A share too small for its run shows in the run's own validity
checks (the link's late packets, the engines' sampling gaps)."""
from __future__ import annotations

import os
from pathlib import Path

from ccarena.errors import PreflightError
from ccarena.study.model import Study
from ccarena.testbed.cgroups import format_cpus, parse_cpus


class ShareError(PreflightError):
    """The machine's CPUs cannot be divided as asked, or a study cannot run on a share."""


def usable_cpus() -> list[int]:
    """The CPUs this process may use."""
    return sorted(os.sched_getaffinity(0))


def core_of(cpu: int, sysfs: Path = Path("/sys/devices/system/cpu")) -> tuple[int, int]:
    """(package, core) of a CPU; hyperthread siblings share it."""
    t = sysfs / f"cpu{cpu}" / "topology"
    try:
        return (int((t / "physical_package_id").read_text()), int((t / "core_id").read_text()))
    except (OSError, ValueError):
        return (0, cpu)


def partition(cpus, n: int, core=core_of) -> list[str]:
    """`n` equal shares of `cpus` (CPU lists), siblings of one core side by side so a
    share of an even size holds whole cores."""
    cpus = sorted(set(cpus))
    if n < 1:
        raise ShareError(f"dividing CPUs {format_cpus(cpus)}: {n} shares asked; give 1 or more")
    if n > len(cpus):
        raise ShareError(f"dividing CPUs {format_cpus(cpus)} between {n} runs: each run needs "
                         f"at least one CPU and there are {len(cpus)}; run at most {len(cpus)} "
                         "at once")
    ordered = sorted(cpus, key=lambda c: (core(c), c))
    per = len(cpus) // n
    return [format_cpus(ordered[i * per:(i + 1) * per]) for i in range(n)]


def worker_shares(slots: int, cpus: str | None = None) -> list[str | None]:
    """The shares of a machine that runs `slots` runs at once, out of `cpus` (a CPU list;
    default: every CPU this process may use). One slot on every CPU: no share (None), the
    run is placed as a serial one."""
    mine = usable_cpus()
    if cpus is None and slots == 1:
        return [None]
    want = mine
    if cpus is not None:
        try:
            want = parse_cpus(cpus)
        except ValueError as e:
            raise ShareError(f"--cpus: {e}") from None
        if not set(want) <= set(mine):
            raise ShareError(f"--cpus {cpus}: CPUs {format_cpus(set(want) - set(mine))} are "
                             f"not this machine's (it has {format_cpus(mine)})")
    return partition(want, slots)


def check_study(study: Study, share: str | None) -> None:
    """Refuse, before anything is built, a study whose hosts cannot keep their limits on
    `share`: a host pinned to CPUs (its own cpuset) outside the share, or a CPU quota
    larger than the share."""
    if share is None:
        return
    mine = parse_cpus(share)
    for cell in [c.study for c in study.cells] or [study]:
        for h, hs in cell.hosts.items():
            if hs.cpuset is not None and not set(parse_cpus(hs.cpuset)) <= set(mine):
                raise ShareError(f"{study.path}: hosts.{h}.cpuset = {hs.cpuset!r} is outside "
                                 f"a run's CPU share {share}; runs that share the machine "
                                 "cannot each have those CPUs: run one at a time (--jobs 1, "
                                 "or workers with --slots 1)")
            if hs.cpus is not None and hs.cpus > len(mine):
                raise ShareError(f"{study.path}: hosts.{h}.cpus = {hs.cpus:g} is more than a "
                                 f"run's CPU share {share} ({len(mine)} CPUs); run fewer "
                                 "at once")


def apply(share: str | None) -> None:
    """Hold this process (and every process it starts) to `share`."""
    if share is not None:
        os.sched_setaffinity(0, parse_cpus(share))
