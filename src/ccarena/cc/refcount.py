"""Reference counts of BPF congestion controls across concurrent runs.

Contract: one directory per registered algorithm, ``<run_dir>/<kernel_name>/``
(``run_dir`` = ``$CCARENA_CC_RUN_DIR`` or ``/run/ccarena/cc``), holding

- ``<run_id>``: one file per run that holds the algorithm; first line
  ``<pid> <starttime> <count>`` (starttime = field 22 of ``/proc/<pid>/stat``, so a
  recycled pid is not mistaken for the holder; count = nested acquires by that run);
- ``holder.pid``: ``<pid> <starttime>`` of the ``ccarena-cc hold`` process that keeps
  the algorithm registered (see crates/cc/src/main.rs); ``holder.*`` files (also
  ``holder.log``, ``holder.repairs``) belong to it and are never run files;
- ``.lock``: every change is made under ``flock(.lock, LOCK_EX)``. ``cleanup_stale``
  removes an idle directory (lock file included) while holding the lock; a process
  that was waiting for that lock sees its file is gone and starts over, so two
  processes never hold "the" lock at once.

A run file whose process is gone (or a zombie) counts as released. The holder
process applies the same rule and exits — unregistering the algorithm — when no
live run file remains, so a crashed run cannot pin an algorithm for long.
This module is pure bookkeeping; it starts and stops nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

DEFAULT_RUN_DIR = "/run/ccarena/cc"
_SAFE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def run_dir() -> Path:
    return Path(os.environ.get("CCARENA_CC_RUN_DIR", DEFAULT_RUN_DIR))


def proc_start(pid: int) -> int | None:
    """starttime (clock ticks since boot) of a live, non-zombie process, else None.

    Read from /proc/<pid>/stat, not through psutil: the run files share this number with
    the Rust holder (crates/cc/src/hold.rs compares field 22 as an integer), and psutil
    offers it only as create_time(), seconds since the epoch through the boot time, which
    moves when the system clock is stepped; a recomputed tick count could then differ
    from the holder's and a live run would count as gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    rest = text[text.rfind(")") + 2 :].split()
    if not rest or rest[0] in ("Z", "X"):
        return None
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, start: int = 0) -> bool:
    st = proc_start(pid)
    return st is not None and (start == 0 or st == start)


@dataclass(frozen=True)
class Holder:
    run_id: str
    pid: int
    start: int
    count: int

    @property
    def alive(self) -> bool:
        return pid_alive(self.pid, self.start)


def _parse(text: str) -> tuple[int, int, int] | None:
    parts = text.split()
    if len(parts) < 2:
        return None  # not a run file of ours (those are "<pid> <starttime> <count>")
    try:
        pid = int(parts[0])
        start = int(parts[1])
        count = int(parts[2]) if len(parts) > 2 else 1
    except (IndexError, ValueError):
        return None
    return pid, start, count


class AlgoDir:
    """Bookkeeping directory of one registered algorithm (by kernel name)."""

    def __init__(self, kernel_name: str, base: Path | None = None):
        if not _SAFE.match(kernel_name):
            raise ValueError(f"kernel name {kernel_name!r}: only [A-Za-z0-9_.-] allowed")
        self.kernel_name = kernel_name
        self.path = (base or run_dir()) / kernel_name

    @contextlib.contextmanager
    def lock(self) -> Iterator["AlgoDir"]:
        """flock(.lock). If the directory was removed while we waited (remove_if_idle
        by a cleanup), the lock we got is on a deleted file: start over."""
        while True:
            self.path.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                continue  # the directory vanished between mkdir and open
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path / ".lock").st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            yield self
        finally:
            os.close(fd)  # closing drops the flock

    def remove_if_idle(self) -> bool:
        """Under lock: delete the directory when no run file and no holder remain
        (leave no trace); waiters on the old lock notice and start over."""
        if self.holders() or self.holder_alive():
            return False
        for p in self.path.iterdir():
            if p.name != ".lock":
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.path / ".lock").unlink()
        with contextlib.suppress(OSError):
            self.path.rmdir()
        return True

    # --- run files (call under lock) ---
    def holders(self) -> list[Holder]:
        out = []
        if not self.path.is_dir():
            return out
        for p in sorted(self.path.iterdir()):
            if p.name.startswith(".") or p.name.startswith("holder."):
                continue
            try:
                parsed = _parse(p.read_text())
            except OSError:
                continue
            if parsed is None:
                out.append(Holder(p.name, -1, 0, 0))
            else:
                out.append(Holder(p.name, *parsed))
        return out

    def live_holders(self) -> list[Holder]:
        return [h for h in self.holders() if h.alive]

    def prune(self) -> list[str]:
        """Remove run files whose process is gone; returns their run ids."""
        gone = [h.run_id for h in self.holders() if not h.alive]
        for run_id in gone:
            with contextlib.suppress(FileNotFoundError):
                (self.path / run_id).unlink()
        return gone

    def add(self, run_id: str, pid: int | None = None) -> int:
        """Record that `run_id` (process `pid`) holds the algorithm; returns its count."""
        if not _SAFE.match(run_id) or run_id.startswith(("holder.", ".")):
            raise ValueError(f"run id {run_id!r}: only [A-Za-z0-9_.-], not starting with '.' or 'holder.'")
        pid = os.getpid() if pid is None else pid
        start = proc_start(pid) or 0
        f = self.path / run_id
        count = 1
        try:
            parsed = _parse(f.read_text())
            if parsed and parsed[0] == pid and pid_alive(pid, parsed[1]):
                count = parsed[2] + 1
        except FileNotFoundError:
            pass
        tmp = self.path / f".{run_id}.tmp"
        tmp.write_text(f"{pid} {start} {count}\n")
        tmp.replace(f)
        return count

    def remove(self, run_id: str) -> int:
        """Drop one reference of `run_id`; returns how many live references remain
        (over all runs) afterwards."""
        f = self.path / run_id
        try:
            parsed = _parse(f.read_text())
        except FileNotFoundError:
            parsed = None
        if parsed and parsed[2] > 1:
            pid, start, count = parsed
            tmp = self.path / f".{run_id}.tmp"
            tmp.write_text(f"{pid} {start} {count - 1}\n")
            tmp.replace(f)
        else:
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
        return sum(h.count for h in self.live_holders())

    # --- the holder process record ---
    def holder_process(self) -> tuple[int, int] | None:
        try:
            parsed = _parse((self.path / "holder.pid").read_text())
        except FileNotFoundError:
            return None
        return (parsed[0], parsed[1]) if parsed else None

    def holder_alive(self) -> bool:
        hp = self.holder_process()
        return hp is not None and pid_alive(*hp)

    def set_holder(self, pid: int) -> None:
        start = proc_start(pid) or 0
        (self.path / "holder.pid").write_text(f"{pid} {start}\n")

    def clear_holder(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.path / "holder.pid").unlink()


def algo_dirs(base: Path | None = None) -> list[AlgoDir]:
    base = base or run_dir()
    if not base.is_dir():
        return []
    return [AlgoDir(p.name, base) for p in sorted(base.iterdir()) if p.is_dir() and _SAFE.match(p.name)]
