"""Preflight: everything that can be checked before anything is built.

`preflight(study) -> {"cells": {i: {"backend", "why", "io"?}}, "algorithms": {name:
{"source", "kernel_name", "why"}}}`; raises PreflightError naming what is missing (no
link backend for a cell, an algorithm this machine cannot run, a program or binary that
is not installed, host limits beyond this machine, a bottleneck buffer larger than the
memory the machine can give it, VM hosts this machine cannot boot); with VM hosts,
"guests" says which accelerator they get (testbed/guest/check.py)."""
from __future__ import annotations

import os
import shutil

from ccarena import cc as ccmod
from ccarena.errors import PreflightError
from ccarena.paths import require_binary
from ccarena.study.model import Cell, Study
from ccarena.testbed import backend as backend_mod
from ccarena.testbed import caps as caps_mod
from ccarena.testbed import cgroups
from ccarena.testbed.guest import check as guest_check
from ccarena.testbed.user_link import link_io
from ccarena.workload.commands import require_programs


def preflight(study: Study, force_cc: str | None = None) -> dict:
    """Everything that can be checked without building: -> {cell: {"backend","why"}, ...}."""
    caps = caps_mod.probe()
    if caps.get("error") and not caps.get("veth"):
        raise PreflightError(f"cannot build testbeds here: {caps['error']} "
                             "(run `ccarena doctor`)")
    out = {"cells": {}, "algorithms": {}}
    names = set()
    for i, cell in enumerate(c.study for c in (study.cells or [Cell(0, {}, study)])):
        b, why = backend_mod.choose(cell, caps)
        out["cells"][i] = {"backend": b, "why": why}
        if b == "user":
            try:
                out["cells"][i]["io"] = link_io(cell.offloads)
            except ValueError as e:
                raise PreflightError(str(e)) from None
        names |= cell.algorithms()
        require_programs(cell)
        require_host_limits(cell)
        require_buffer_memory(cell)
        require_probe_tools(cell)
        if any(f.kind != "command" for f in cell.flows):
            require_binary("ccarena-flow", "the flow engine")
    guests = guest_check.preflight(study)
    if guests:
        out["guests"] = guests
    missing = []
    for n in sorted(names):
        a = ccmod.resolve(n, force=force_cc)
        out["algorithms"][n] = {"source": a.source, "kernel_name": a.kernel_name, "why": a.why,
                                "variant": a.variant, "follows": a.follows}
        if a.source == "unavailable":
            missing.append(f"{n} ({a.why})")
    if missing:
        raise PreflightError(f"{study.path}: congestion control not available here: "
                             + "; ".join(missing) + " (see `ccarena cc list`)")
    return out


PACKET_FOOTPRINT = 2048    # bytes a queued packet occupies at least (the user-space link
                           # keeps each in a 2 KiB slot; the kernel's skb is as large)
DIRECTIONS = 2             # the bottleneck's buffer is there in each direction


def available_memory() -> int | None:
    """Bytes the machine can give without swapping (psutil: MemAvailable of /proc/meminfo,
    the kernel's own estimate)."""
    import psutil
    try:
        return int(psutil.virtual_memory().available)
    except (OSError, RuntimeError, ValueError):
        return None


def require_buffer_memory(study: Study, available: int | None = None) -> None:
    """A full bottleneck buffer must fit in memory: in each direction it can hold its
    packets (or bytes, as full-size frames) at PACKET_FOOTPRINT or the frame size each. A
    study asking for more is refused before anything is built (a buffer the machine
    cannot hold would swap or kill the emulator in mid-run, not emulate the queue)."""
    b = study.bottleneck.buffer
    per = max(PACKET_FOOTPRINT, study.mtu + 14)
    need = DIRECTIONS * b.packets(study.mtu) * per
    have = available_memory() if available is None else available
    if have is not None and need > have:
        what = f"{b.size}p" if b.kind == "packets" else f"{b.size} bytes"
        raise PreflightError(
            f"{study.path}: bottleneck.buffer: {what} needs {need / 2**30:.1f} GiB when full "
            f"({DIRECTIONS} directions x {b.packets(study.mtu)} packets x {per} bytes), more "
            f"than the {have / 2**30:.1f} GiB of memory this machine has available "
            "(MemAvailable); use a smaller buffer")


def require_probe_tools(study: Study) -> None:
    for p in study.probes:
        if p.kind == "pcap" and not shutil.which("tcpdump"):
            raise PreflightError(f"{study.path}: probe {p.name}: pcap needs tcpdump, which is "
                                 "not installed (apt-get install tcpdump)")
        if p.kind == "tcp_probe":
            require_binary("ccarena-trace", "the tcp_probe tracer")


def require_host_limits(study: Study) -> None:
    """CPU and memory limits must fit this machine and need cgroups."""
    ncpu = os.cpu_count() or 1
    allowed = os.sched_getaffinity(0)
    for h, hs in study.hosts.items():
        if hs.cpus is None and hs.cpuset is None and hs.memory is None:
            continue
        if cgroups.version() is None:
            raise PreflightError(f"{study.path}: hosts.{h}: CPU and memory limits need "
                                 "cgroups, and none are mounted at /sys/fs/cgroup")
        if hs.cpus is not None and hs.cpus > ncpu:
            raise PreflightError(f"{study.path}: hosts.{h}.cpus: {hs.cpus:g} CPUs is above "
                                 f"this machine's {ncpu}")
        if hs.cpuset is not None:
            want = set()
            for part in hs.cpuset.split(","):
                a, _, b = part.partition("-")
                want |= set(range(int(a), int(b or a) + 1))
            if not want <= allowed:
                raise PreflightError(f"{study.path}: hosts.{h}.cpuset: CPUs "
                                     f"{sorted(want - allowed)} do not exist here (have "
                                     f"{sorted(allowed)})")
        if hs.memory is not None:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            if hs.memory > total:
                raise PreflightError(f"{study.path}: hosts.{h}.memory: above this machine's "
                                     f"{total / 2**30:.1f} GiB")
