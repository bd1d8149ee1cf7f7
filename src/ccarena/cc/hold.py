"""Make congestion controls usable for a run, reference-counted across runs.

``acquire(names, run_id, force=None)`` is a context manager returning
``{name: kernel_name}`` (the string a socket passes to ``TCP_CONGESTION``; a BPF
algorithm is registered as ``cca_<name>``, globally — every network namespace
sees it). On exit each BPF algorithm is released; the last release unregisters
it. ``cleanup_stale()`` undoes what crashed runs left (``ccarena cleanup``).
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterable, Iterator, Mapping, NamedTuple

from ccarena.cc import loader
from ccarena.cc.errors import CCError
from ccarena.cc.refcount import AlgoDir, algo_dirs, run_dir
from ccarena.cc.catalog import PREFIX, Algo, resolve


def _modprobe(algo: Algo) -> None:
    if algo.module and algo.name not in loader.registered():
        r = subprocess.run(["modprobe", algo.module], capture_output=True, text=True)
        if r.returncode != 0:
            raise CCError(f"modprobe {algo.module}: exit {r.returncode}: {r.stderr.strip()}")


def acquire_bpf(algo: Algo, run_id: str, pid: int | None = None, base: Path | None = None) -> None:
    """Take one reference on a BPF algorithm, registering it if nobody holds it."""
    assert algo.source == "bpf" and algo.kernel_name and algo.bpf_object
    d = AlgoDir(algo.kernel_name, base)
    with d.lock():
        d.prune()
        d.add(run_id, pid)
        try:
            if d.holder_alive() and algo.kernel_name in loader.registered():
                return
            hp = d.holder_process()
            if hp:  # a holder that is alive but lost its registration: replace it
                loader.stop_holder(*hp)
                d.clear_holder()
            if algo.kernel_name in loader.registered():
                _unregister_orphan(algo.kernel_name)
            pid_h = loader.start_holder(algo.bpf_object, algo.kernel_name, d.path)
            d.set_holder(pid_h)
        except BaseException:
            d.remove(run_id)
            raise


def release_bpf(kernel_name: str, run_id: str, base: Path | None = None) -> bool:
    """Drop one reference; unregister when it was the last. True if unregistered."""
    d = AlgoDir(kernel_name, base)
    with d.lock():
        left = d.remove(run_id)
        d.prune()
        if left > 0:
            return False
        hp = d.holder_process()
        if hp:
            loader.stop_holder(*hp)
        d.clear_holder()
        if not loader.wait_unregistered(kernel_name):
            _unregister_orphan(kernel_name)
        d.remove_if_idle()
        return True


def _unregister_orphan(kernel_name: str) -> None:
    """An algorithm registered under our prefix that no holder of ours keeps:
    stop any holder process registering it, else unregister the plain struct_ops."""
    for pid, name in loader.holder_processes():
        if name == kernel_name:
            loader.stop_holder(pid)
    if loader.wait_unregistered(kernel_name, timeout=1.0):
        return
    for so in loader.tcp_struct_ops():
        if so["name"] == kernel_name:
            loader.unregister_struct_ops(so["id"])
    if not loader.wait_unregistered(kernel_name, timeout=1.0):
        raise CCError(f"unregister {kernel_name}: still listed in "
                      f"/proc/sys/net/ipv4/tcp_available_congestion_control after stopping its "
                      f"holders and `bpftool struct_ops unregister`")


@contextlib.contextmanager
def acquire(names: Iterable[str], run_id: str, force: str | None | Mapping[str, str | None] = None,
            *, extra_dirs=None) -> Iterator[dict[str, str]]:
    """Make every named algorithm usable; yield ``{name: kernel_name}``; release on exit.

    `force` is None, "kernel", "bpf", or a mapping name → one of those."""
    names = list(dict.fromkeys(names))
    algos: dict[str, Algo] = {}
    for n in names:
        f = force.get(n) if isinstance(force, Mapping) else force
        algos[n] = resolve(n, f, extra_dirs=extra_dirs, strict=True)
    held: list[str] = []
    out: dict[str, str] = {}
    try:
        for n, a in algos.items():
            if a.source == "kernel":
                _modprobe(a)
            else:
                acquire_bpf(a, run_id)
                held.append(a.kernel_name)
            out[n] = a.kernel_name
        yield out
    finally:
        errors = []
        for k in reversed(list(dict.fromkeys(held))):
            for _ in range(held.count(k)):
                try:
                    release_bpf(k, run_id)
                except Exception as e:  # release the others all the same
                    errors.append(e)
        if errors:
            raise errors[0]


class GuardCounts(NamedTuple):
    """What an algorithm's guard did in one network namespace (bpf/cc/cca_common.h;
    docs/algorithms.md, "Known issue"): `late`: corrupted values that may have acted (a
    run that met one is invalid); `at_entry`: skipped ssthresh ops redone before any
    use, at the state change or at the start of the ACK's cong_control (the connection
    went on as if the op had run)."""
    late: int
    at_entry: int
    # what the late repairs found, and the CA states they were made in (bit s: state s;
    # 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss); 0 from a holder older than these
    late_ssthresh: int = 0
    late_cwnd: int = 0
    late_states: int = 0


def guard_counts(kernel_name: str, base: Path | None = None) -> dict[int, GuardCounts] | None:
    """The holder's published guard counts, {network namespace inode: GuardCounts} (lines
    "<inode> <late> <at_entry> [<late_ssthresh> <late_cwnd> <late_states>]" in
    holder.repairs, which the holder writes as soon as it has registered the algorithm).
    A run reads them at start and end and adds up its own namespaces. None when the
    algorithm is not registered by ccarena."""
    try:
        text = (AlgoDir(kernel_name, base).path / "holder.repairs").read_text()
    except OSError:
        return None
    out: dict[int, GuardCounts] = {}
    for line in text.splitlines():
        try:
            ino, *counts = (int(w) for w in line.split())
        except ValueError:
            continue        # torn: not a count
        if not 2 <= len(counts) <= len(GuardCounts._fields):
            continue        # a line of another format: not a count
        out[ino] = GuardCounts(*counts)
    return out


def run_guard_counts(kernel_name: str, inodes) -> GuardCounts | None:
    """The guard's counts summed over the network namespaces `inodes` (a run's)."""
    g = guard_counts(kernel_name)
    if g is None:
        return None
    mine = [g[i] for i in inodes if i in g]
    # counts add up; the state mask is a set of bits, so it is OR-ed (by name, whatever
    # the field order)
    total = {f: sum(getattr(c, f) for c in mine) for f in GuardCounts._fields}
    total["late_states"] = 0
    for c in mine:
        total["late_states"] |= c.late_states
    return GuardCounts(**total)


def cleanup_stale(base: Path | None = None) -> list[str]:
    """Unregister every ccarena algorithm no live run holds; returns their kernel names."""
    cleaned: list[str] = []
    kept: set[str] = set()
    for d in algo_dirs(base):
        with d.lock():
            d.prune()
            if d.live_holders():
                kept.add(d.kernel_name)
                continue
            hp = d.holder_process()
            if hp:
                loader.stop_holder(*hp)
                cleaned.append(d.kernel_name)
            d.clear_holder()
            d.remove_if_idle()
    if base is None or base == run_dir():
        for name in sorted(loader.registered()):
            if name.startswith(PREFIX) and name not in kept:
                try:
                    _unregister_orphan(name)
                except CCError:
                    continue
                if name not in cleaned:
                    cleaned.append(name)
    return cleaned
