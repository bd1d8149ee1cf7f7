"""Host resource limits through cgroups (v1 and v2): a CPU quota ("1, 2 or 3 vCPUs" as
cores of CPU time), a CPU set, and a memory limit, applied to every process ccarena starts
in a host (its flow engine and commands).

Groups are named ccarena-<run_id>-<host> so `ccarena cleanup` can find a crashed run's
groups. Teardown first lifts their CPU quota (`lift_cpu_limits`): a process killed in a
group of a few % of a core can take seconds to exit, because it closes its sockets after
it has left its network namespace (so waiting on the namespace does not see it) and is
throttled while it does. Then `remove` kills what is still in a group, waits for it to
leave and removes the group, and says what it could not remove. Note: a cgroup limits
the host's processes, i.e. TCP's work done in their system calls; softirq work (most of
receive processing) is not charged to any group."""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass, field

from ccarena.errors import TestbedError

ROOT = "/sys/fs/cgroup"
PERIOD_US = 100_000
PREFIX = "ccarena-"


def version() -> str | None:
    if os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        return "v2"
    if os.path.isdir(os.path.join(ROOT, "cpu")) or os.path.isdir(os.path.join(ROOT, "memory")):
        return "v1"
    return None


def _write(path: str, value: str):
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as e:
        raise TestbedError(f"write {value!r} to {path}: {e.strerror}") from None


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


@dataclass
class HostLimits:
    cpus: float | None = None        # cores of CPU time
    cpuset: str | None = None        # "0" or "0-1"
    memory: int | None = None        # bytes

    def __bool__(self):
        return any(v is not None for v in (self.cpus, self.cpuset, self.memory))


def parse_cpus(text: str) -> list[int]:
    """A CPU list as cpusets and the kernel write it ("0-2,5") -> [0, 1, 2, 5]."""
    out: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        a, dash, b = part.partition("-")
        if not a.isdigit() or (dash and (not b.isdigit() or int(b) < int(a))):
            raise ValueError(f"CPU list {text!r}: expected numbers and ranges like 0-2,5")
        out |= set(range(int(a), int(b or a) + 1))
    if not out:
        raise ValueError(f"CPU list {text!r}: no CPU")
    return sorted(out)


def format_cpus(cpus) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def within_share(host: str, lim: HostLimits, share: str) -> HostLimits:
    """A host's limits when its run may use only the CPUs `share` (parallel runs, docs/
    scale-out.md): its processes are held to those CPUs (a cpuset, so no process can move
    off them); a study's own cpuset must lie inside the share and its CPU quota fit it."""
    mine = parse_cpus(share)
    if lim.cpuset is not None and not set(parse_cpus(lim.cpuset)) <= set(mine):
        raise TestbedError(f"host {host}: cpuset {lim.cpuset} is outside this run's CPU "
                           f"share {share}; run the study with one run at a time")
    if lim.cpus is not None and lim.cpus > len(mine):
        raise TestbedError(f"host {host}: {lim.cpus:g} CPUs of time exceed this run's CPU "
                           f"share {share} ({len(mine)} CPUs); give each run more CPUs")
    return HostLimits(lim.cpus, lim.cpuset or share, lim.memory)


@dataclass
class HostCgroup:
    name: str
    dirs: list[str] = field(default_factory=list)   # one per v1 controller, or one for v2

    def procs_files(self) -> list[str]:
        return [os.path.join(d, "cgroup.procs") for d in self.dirs]

    def add_self(self) -> None:
        """Called in a child between fork and exec (preexec_fn): join every group."""
        pid = str(os.getpid())
        for p in self.procs_files():
            with open(p, "w") as f:
                f.write(pid)

    def applied(self) -> dict:
        out = {}
        for d in self.dirs:
            for fn in ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.max", "cpuset.cpus",
                       "memory.limit_in_bytes", "memory.max"):
                v = _read(os.path.join(d, fn))
                if v is not None:
                    out[fn] = v
        return out

    def lift_cpu_limits(self) -> None:
        """No CPU quota any more (the run is over): what is left in the group exits at
        full speed."""
        for d in self.dirs:
            for fn, unlimited in (("cpu.cfs_quota_us", "-1"), ("cpu.max", "max")):
                p = os.path.join(d, fn)
                if os.path.exists(p):
                    with contextlib.suppress(OSError), open(p, "w") as f:
                        f.write(unlimited)

    def pids(self) -> set[int]:
        out = set()
        for d in self.dirs:
            out |= _pids(d)
        return out

    def remove(self, timeout_s: float = 10.0) -> list[str]:
        """Remove the groups; returns each one that could not be removed, with why. Only
        processes this run started join its groups, so whatever is still in them is killed
        (cgroup v2: `cgroup.kill`; v1: SIGKILL to each process listed)."""
        self.lift_cpu_limits()
        deadline = time.monotonic() + timeout_s
        left = []
        for d in self.dirs:
            while True:
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    pids = _pids(d)
                    if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                        left.append(f"cgroup {d}: {e.strerror}"
                                    + (f" (processes {sorted(pids)} still in it)" if pids else ""))
                        break
                    _kill_all(d, pids)
                    time.sleep(0.02)
        return left


def _pids(d: str) -> set[int]:
    # a process of another PID namespace is listed as 0: never a target of kill()
    return {int(x) for x in (_read(os.path.join(d, "cgroup.procs")) or "").split()} - {0}


def _kill_all(d: str, pids: set[int]) -> None:
    kill_file = os.path.join(d, "cgroup.kill")       # v2, Linux >= 5.14: atomic, no pids
    if os.path.exists(kill_file):
        with contextlib.suppress(OSError), open(kill_file, "w") as f:
            f.write("1")
            return
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def create(run_id: str, host: str, lim: HostLimits) -> HostCgroup:
    v = version()
    if v is None:
        raise TestbedError("host limits need cgroups, and none are mounted at /sys/fs/cgroup")
    name = f"{PREFIX}{run_id}-{host}"
    cg = HostCgroup(name)
    try:
        if v == "v1":
            if lim.cpus is not None:
                d = _mk(os.path.join(ROOT, "cpu", name), cg)
                _write(os.path.join(d, "cpu.cfs_period_us"), str(PERIOD_US))
                _write(os.path.join(d, "cpu.cfs_quota_us"), str(int(lim.cpus * PERIOD_US)))
            if lim.cpuset is not None:
                d = _mk(os.path.join(ROOT, "cpuset", name), cg)
                _write(os.path.join(d, "cpuset.mems"), _read(os.path.join(ROOT, "cpuset",
                                                                          "cpuset.mems")) or "0")
                _write(os.path.join(d, "cpuset.cpus"), lim.cpuset)
            if lim.memory is not None:
                d = _mk(os.path.join(ROOT, "memory", name), cg)
                _write(os.path.join(d, "memory.limit_in_bytes"), str(lim.memory))
        else:
            need = {c for c, val in (("cpu", lim.cpus), ("cpuset", lim.cpuset),
                                     ("memory", lim.memory)) if val is not None}
            have = set((_read(os.path.join(ROOT, "cgroup.subtree_control")) or "").split())
            missing = need - have
            if missing:
                _write(os.path.join(ROOT, "cgroup.subtree_control"),
                       " ".join(f"+{c}" for c in sorted(missing)))
            d = _mk(os.path.join(ROOT, name), cg)
            if lim.cpus is not None:
                _write(os.path.join(d, "cpu.max"), f"{int(lim.cpus * PERIOD_US)} {PERIOD_US}")
            if lim.cpuset is not None:
                _write(os.path.join(d, "cpuset.cpus"), lim.cpuset)
            if lim.memory is not None:
                _write(os.path.join(d, "memory.max"), str(lim.memory))
    except BaseException:
        cg.remove()
        raise
    return cg


def _mk(d: str, cg: HostCgroup) -> str:
    try:
        os.mkdir(d)
    except FileExistsError:
        pass
    except OSError as e:
        raise TestbedError(f"create cgroup {d}: {e.strerror}") from None
    cg.dirs.append(d)
    return d


def cleanup_stale(live_run_ids: set[str], only: set[str] | None = None) -> list[str]:
    """Remove ccarena cgroups of runs that are not live (killing what is left in them);
    `only`: of these runs alone."""
    groups: dict[str, HostCgroup] = {}
    bases = [ROOT] + [os.path.join(ROOT, c) for c in ("cpu", "cpuset", "memory")]
    for b in bases:
        if not os.path.isdir(b):
            continue
        for n in os.listdir(b):
            rid = n[len(PREFIX):len(PREFIX) + 6]
            if n.startswith(PREFIX) and rid not in live_run_ids and (only is None or
                                                                      rid in only):
                groups.setdefault(n, HostCgroup(n)).dirs.append(os.path.join(b, n))
    removed = []
    for cg in groups.values():
        cg.remove(timeout_s=5.0)
        removed += [d for d in cg.dirs if not os.path.isdir(d)]
    return removed
