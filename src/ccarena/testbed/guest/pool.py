"""Booted guests kept between the runs of a study, so a run does not pay a boot.

    with study_pool() as p:             run/executor.py holds a study's runs in one
        p.ready(cell_study)             boot what the next run needs, before it starts
        p, owned = current()            (in the run) the study's pool, or a fresh one the
                                        caller owns
        guests = p.take({host: spec})   booted guests, reused where a spec matches, the rest
                                        booted in parallel
        p.give_back(guests)             after the run: kept if still usable

A guest serves any host whose VmSpec is the one it booted with (vCPUs, memory, kernel,
accelerator, NIC options); each run gives it its host's MAC and address and a fresh TCP
state. At most MAX_IDLE guests wait unused while a run runs (an idle guest still takes
a little CPU: timer ticks, under TCG emulated); the rest are shut down, least recently
used first. The executor asks the study's pool to be `ready` for each run before it
starts, so a boot is not the run's (its time stays out of the run's wall time and its
watchdog's bound); every guest is shut down at the end of the study — on success, error
or Ctrl-C. A run outside a study's pool (`--jobs`, a worker) boots its own guests."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import time

from ccarena.study.model import Cell, Study, VmSpec
from ccarena.testbed.guest.machine import BOOT_TIMEOUT_S, Guest

MAX_IDLE = int(os.environ.get("CCARENA_GUESTS_IDLE", "2"))


def resolved(spec: VmSpec, study: Study) -> VmSpec:
    """The spec a guest boots with: the NIC's offloads as the study's testbed has them
    unless the vm table says."""
    if spec.offloads is None:
        return dataclasses.replace(spec, offloads=study.offloads)
    return spec


def demand(study: Study) -> collections.Counter:
    """How many guests of each spec the study's busiest cell needs at once."""
    need: collections.Counter = collections.Counter()
    for c in study.cells or [Cell(0, {}, study)]:
        cell = collections.Counter(resolved(s, c.study) for s in c.study.vm_hosts.values())
        for spec, n in cell.items():
            need[spec] = max(need[spec], n)
    return need


class Pool:
    def __init__(self, log=None):
        self.idle: list[Guest] = []         # least recently used first
        self.busy: list[Guest] = []
        self.log = log

    def _say(self, msg: str) -> None:
        if self.log:
            self.log(msg)

    def take(self, wanted: dict[str, VmSpec]) -> dict[str, Guest]:
        """A booted guest for each host (specs resolved): idle ones first, the others
        booted in parallel. Raises GuestError (and keeps nothing half-booted)."""
        for g in [g for g in self.idle if not g.alive()]:
            self.idle.remove(g)
            g.kill()
        out: dict[str, Guest] = {}
        for host, spec in wanted.items():
            g = next((g for g in reversed(self.idle) if g.spec == spec), None)
            if g is not None:
                self.idle.remove(g)
                out[host] = g
        missing = {h: s for h, s in wanted.items() if h not in out}
        while len(self.idle) > MAX_IDLE:
            self.idle.pop(0).shutdown()
        try:
            out.update(self.boot(missing))
        except BaseException:
            self.idle.extend(out.values())
            raise
        self.busy.extend(out.values())
        return out

    def boot(self, specs: dict) -> dict:
        """{key: spec} -> {key: Guest}, booted in parallel (each launch returns at once;
        QEMU is started from this thread, so it dies with it: testbed/proc.py)."""
        if not specs:
            return {}
        self._say(f"booting {len(specs)} guest{'s' if len(specs) != 1 else ''}")
        started: dict = {}
        try:
            for k, spec in specs.items():
                started[k] = Guest(spec)
                started[k].launch()
            deadline = time.monotonic() + BOOT_TIMEOUT_S
            for g in started.values():
                g.wait_booted(deadline)
        except BaseException:
            for g in started.values():
                g.kill()
            raise
        for g in started.values():
            self._say(f"guest {g.gid}: {g.facts['kernel']} ({g.accel}), "
                      f"{g.spec.cpus} vCPUs, booted in {g.facts['boot_s']:.0f} s")
        return started

    def give_back(self, guests) -> None:
        for g in guests:
            if g in self.busy:
                self.busy.remove(g)
            if g.alive():
                g.runs += 1
                self.idle.append(g)
            else:
                g.kill()

    def ready(self, study: Study) -> None:
        """Boot what a run of `study` (a cell's) needs and no idle guest offers, before
        the run starts (a boot is not the run's: it stays out of its wall time and its
        watchdog's bound)."""
        need = demand(study)
        if not need:
            return
        have = collections.Counter(g.spec for g in self.idle if g.alive())
        missing = {}
        for spec, n in need.items():
            for i in range(max(0, n - have[spec])):
                missing[(spec, i)] = spec
        self.idle.extend(self.boot(missing).values())

    def close(self) -> None:
        """Every guest shut down: all asked at once, then each waited for and removed."""
        everyone = self.idle + self.busy
        self.idle, self.busy = [], []
        for g in everyone:
            if g.alive():
                with contextlib.suppress(Exception):
                    g.channel.send("shutdown")
        deadline = time.monotonic() + 30.0
        for g in everyone:
            if g.proc is not None:
                with contextlib.suppress(Exception):
                    g.proc.wait(max(0.1, deadline - time.monotonic()))
            g.kill()


_current: Pool | None = None


@contextlib.contextmanager
def study_pool(log=None):
    """The pool of a study's runs (nested: the outer one); its guests shut down at the
    end. `log(msg)` hears of boots."""
    global _current
    if _current is not None:
        yield _current
        return
    _current = Pool(log)
    try:
        yield _current
    finally:
        p, _current = _current, None
        p.close()


def current() -> tuple[Pool, bool]:
    """(the study's pool, False), or (a new pool the caller owns and closes, True)."""
    return (_current, False) if _current is not None else (Pool(), True)
