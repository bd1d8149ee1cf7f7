"""A run directory as one archive (what a worker sends back), and its commit into the
study's results directory, laid out as a serial run's.

    pack(run_dir) -> bytes                         the worker's side
    staged = unpack(results, label, data)          into the run's staging directory
    adopt(results, label)                          a first attempt: staging -> runs/<label>
    Writer(results).supersede(label, attempt, old_meta)    a re-run: as in a serial study

The archive is extracted under the staging name the store uses for re-runs
(superseded/.<label>.next), checked against its manifest, written to the disk, and only
then renamed into runs/<label>: a reader or an interruption never sees part of a run, and
`--resume` discards a staged run like any other in-flight one."""
from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

from ccarena.store import atomic, manifest
from ccarena.store import layout as L
from ccarena.store.writer import Writer


class ArchiveError(atomic.StoreError):
    """A run's archive cannot be read or is incomplete."""


def pack(run_dir: Path) -> bytes:
    """The run's files as an uncompressed tar (Parquet is compressed already), paths
    relative to the run directory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for p in sorted(Path(run_dir).iterdir()):
            tar.add(p, arcname=p.name)
    return buf.getvalue()


def _fsync_tree(d: Path) -> None:
    for root, _dirs, files in os.walk(d):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        atomic.fsync_dir(Path(root))


def unpack(results, label: str, data: bytes, origin: str = "a worker") -> tuple[Path, dict]:
    """Extract a run's archive into its staging directory -> (that directory, its meta).
    Raises ArchiveError (and leaves nothing) when it is unreadable, is not run `label`, or
    lacks a file its manifest lists."""
    d = Writer(results).staging_dir(label)
    try:
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                tar.extractall(d, filter="data")
            meta = json.loads((d / L.RUN_MANIFEST).read_text())
        except (tarfile.TarError, OSError, ValueError) as e:
            raise ArchiveError(f"run {label} from {origin}: its archive is unreadable "
                               f"({e}); the run is not stored") from None
        if meta.get("label") != label:
            raise ArchiveError(f"run {label} from {origin}: the archive holds run "
                               f"{meta.get('label')!r}; not stored")
        bad = [f for f, n in (meta.get("files") or {}).items()
               if not (d / f).is_file() or (d / f).stat().st_size != n]
        if bad:
            raise ArchiveError(f"run {label} from {origin}: its archive lacks or truncates "
                               f"{', '.join(bad)}; not stored")
        # its files keep the worker's times; a summary written before it arrived must not
        # pass for newer than it (ResultsDir._fresh compares meta.json's mtime)
        os.utime(d / L.RUN_MANIFEST)
        _fsync_tree(d)
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return d, meta


def write_meta(staged: Path, meta: dict) -> None:
    """Rewrite a staged run's meta.json (what the submitter adds to it); it stays as new
    as the run for ResultsDir._fresh."""
    manifest.check(meta, str(Path(staged) / L.RUN_MANIFEST))
    atomic.write_json(Path(staged) / L.RUN_MANIFEST, meta)


def adopt(results, label: str) -> Path:
    """Move a staged first attempt into runs/<label> (what an interrupted attempt left
    there, never complete, is removed first)."""
    staged = L.staging_dir(results.path, label)
    run = L.run_dir(results.path, label)
    if run.exists():
        if (run / L.RUN_MANIFEST).exists():
            raise ArchiveError(f"run {label}: {run} is complete already; the copy from a "
                               "worker is not stored twice")
        shutil.rmtree(run)
    try:
        staged.rename(run)
    except OSError as e:
        raise atomic.storage_error(run, e, "storing") from None
    atomic.fsync_dir(run.parent)
    atomic.fsync_dir(staged.parent)
    results.forget()
    return run
