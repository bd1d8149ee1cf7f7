"""Writing files so that a crash, a full disk or Ctrl-C never leaves half a file.

Every file is written under a temporary name in its directory, flushed to the disk
(fsync), and renamed over its final name; the directory is then fsynced so the rename
itself survives a power cut. A failure removes the temporary file and raises StoreError
naming the path and what to do, so nothing half-written is ever claimed."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import secrets
import json
import os
from pathlib import Path

import pandas as pd

from ccarena.errors import ResultsError


class StoreError(ResultsError):
    """Writing the results failed (a full disk, a read-only or missing directory)."""


_REMEDY = {
    errno.ENOSPC: "the disk is full: free space, then resume with `ccarena run STUDY "
                  "--resume DIR`",
    errno.EDQUOT: "the disk quota is used up: free space, then resume",
    errno.EROFS: "the file system is read-only: give a writable --results directory",
    errno.EACCES: "permission denied: give a writable --results directory",
    errno.EPERM: "permission denied: give a writable --results directory",
    errno.ENOTDIR: "a part of the path is a file, not a directory: give another --results",
    errno.ENOENT: "the directory does not exist (removed while running?)",
}


# the remedy when nothing of the study was kept (no run had completed): no --resume
_AFRESH = {
    errno.ENOSPC: "the disk is full: free space, then run the study again (nothing of it "
                  "was kept)",
    errno.EDQUOT: "the disk quota is used up: free space, then run the study again "
                  "(nothing of it was kept)",
}


def storage_error(path, e: OSError, what: str = "writing", kept: bool = True) -> StoreError:
    """The one line for a failed write; `kept`: the study's results directory stays (so
    it can be resumed), else it was removed. The error carries (path, e, what) as
    `cause`, to be said again when that changes."""
    remedy = (None if kept else _AFRESH.get(e.errno)) or _REMEDY.get(e.errno,
                                                                     e.strerror or str(e))
    err = StoreError(f"{what} {path}: {e.strerror or e}; {remedy}")
    err.cause = (path, e, what)
    return err


def fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def stale_temporaries(directory: Path) -> list[Path]:
    """The temporary files under `directory` whose writer is gone (killed between
    creating and renaming one): never a file's content, safe to remove."""
    out = []
    for f in Path(directory).rglob(".*.tmp"):
        parts = f.name.split(".")
        pid = parts[-3] if len(parts) >= 5 else ""
        if pid.isdigit() and not _alive(int(pid)):
            out.append(f)
    return sorted(out)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: Path, writer) -> None:
    """writer(tmp_path) writes the content; then fsync and rename over `path`."""
    path = Path(path)
    # a name of this writer's own: two writers of one file never share a temporary
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        writer(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise storage_error(path, e) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    if hasattr(o, "__dataclass_fields__"):
        import dataclasses
        return dataclasses.asdict(o)
    raise TypeError(repr(o))


def write_json(path: Path, obj) -> None:
    text = json.dumps(obj, indent=1, default=json_default)
    _write(path, lambda tmp: Path(tmp).write_text(text))


def write_text(path: Path, text: str) -> None:
    _write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_parquet(path: Path, df: pd.DataFrame) -> None:
    _write(path, lambda tmp: df.to_parquet(tmp, index=False))


def copy_file(src: Path, dst: Path) -> None:
    data = Path(src).read_bytes()
    _write(dst, lambda tmp: Path(tmp).write_bytes(data))


class Busy(StoreError):
    """Another ccarena process is writing this results directory."""


@contextlib.contextmanager
def exclusive(directory: Path, what: str):
    """Hold the directory's writer lock (an flock on <directory>/.lock) for a study run,
    a resume or a rebuild of its summaries; a second writer is refused at once, naming
    what it wanted to do, rather than interleaving with the first."""
    lock = Path(directory) / ".lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise storage_error(lock, e, "locking") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"{what} {directory}: another ccarena process is writing it (a "
                       "study running or resuming); wait for it, or stop it first") from None
        yield
    finally:
        os.close(fd)


def mkdir(path: Path) -> Path:
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise storage_error(path, e, "creating") from None
    return Path(path)
