"""A results directory packed into one file (`ccarena archive`) and opened again, read-only,
by every command and `open_results` as if it were the directory.

    write_archive(results_dir, out=None) -> Path    # <dir name>.ccarena.tar.xz
    is_archive(path) -> bool
    extract(path) -> Path                           # the results directory inside it

Format: a tar stream compressed with xz (Python's own tarfile and lzma: nothing to
install, readable by any `tar -xJf`). The directory goes in whole under its own name
(runs with their raw data and logs, summaries, study, plan, report) with every file's
modification time, which the store compares to decide whether a summary is current.
xz because the raw logs and JSON it holds compress several-fold while the Parquet
tables (already compressed) pass through; a zip would compress each member alone and
keep modification times only to 2 s.

Opening extracts once into a cache directory named by the archive's SHA-256
($CCARENA_CACHE, else $XDG_CACHE_HOME/ccarena, else ~/.cache/ccarena; under
`archives/`), so opening the same archive again costs one hash, and a changed archive
never meets a stale copy. Extraction goes to a temporary name and is renamed into place
when complete; members are extracted with tarfile's "data" filter (no absolute paths,
links out of the tree or device files). Entries not used for KEEP_DAYS are removed
whenever an archive is opened. The store opens the extracted copy read-only
(store.results.ResultsDir: every writer refuses)."""
from __future__ import annotations

import os
import shutil
import tarfile
import time
from pathlib import Path

from ccarena.errors import ResultsError
from ccarena.paths import file_sha256
from ccarena.store import layout as L

SUFFIX = ".ccarena.tar.xz"
KEEP_DAYS = 14
_DONE = ".complete"


def cache_dir() -> Path:
    """Where archives are extracted."""
    base = os.environ.get("CCARENA_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        base = os.path.join(xdg, "ccarena")
    return Path(base) / "archives"


def is_archive(path) -> bool:
    """True for a file that is a tar archive (compressed or not)."""
    p = Path(path)
    return p.is_file() and tarfile.is_tarfile(p)


def stem(path) -> str:
    """The archive's name without its suffix ("quickstart-20260101-120000")."""
    name = Path(path).name
    for suf in (SUFFIX, ".tar.xz", ".txz", ".tar"):
        if name.endswith(suf):
            return name[: -len(suf)]
    return Path(name).stem


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # who owned the files on the machine that ran the study means nothing elsewhere
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(results_dir, out=None, preset: int = 6) -> Path:
    """Write the whole results directory into one xz-compressed tar file and return its
    path (default: <dir name>.ccarena.tar.xz in the current directory; `out` an existing
    directory, or a path ending in "/", is the directory to write it in, made if need
    be). Written to a temporary name first, so a half-written archive never carries the
    final name."""
    src = Path(results_dir).resolve()
    if not (src / L.MARKER).is_file():
        raise ResultsError(f"archiving {src}: not a ccarena results directory (no {L.MARKER})")
    into = out is not None and str(out).endswith((os.sep, "/"))
    out = Path(out) if out else Path.cwd() / (src.name + SUFFIX)
    if into or out.is_dir():
        out = out / (src.name + SUFFIX)
    if out.resolve().is_relative_to(src):
        raise ResultsError(f"archiving {src}: the archive {out} would be inside the "
                           "directory it holds; write it elsewhere (-o)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
    try:
        with tarfile.open(tmp, "w:xz", preset=preset) as tar:
            tar.add(src, arcname=src.name, filter=_normalise)   # directories sorted
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out



def _results_in(d: Path) -> Path:
    tops = [p for p in d.iterdir() if p.is_dir() and (p / L.MARKER).is_file()]
    if len(tops) != 1:
        raise ResultsError(f"{d}: the archive holds {len(tops)} results directories; "
                           "expected exactly one")
    return tops[0]


def extract(path) -> Path:
    """The results directory held by archive `path`, extracted into the cache (once per
    archive content) and returned."""
    path = Path(path)
    base = cache_dir()
    digest = file_sha256(path)[:24]
    dest = base / digest
    if (dest / _DONE).exists():
        os.utime(dest / _DONE)          # in use: keeps it from pruning
        return _results_in(dest)
    base.mkdir(parents=True, exist_ok=True)
    prune(base)
    tmp = base / f".{digest}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        with tarfile.open(path, "r:*") as tar:
            tar.extractall(tmp, filter="data")
        _results_in(tmp)
        (tmp / _DONE).write_text(str(path.resolve()) + "\n")
        try:
            os.rename(tmp, dest)
        except OSError:                 # another process extracted it meanwhile
            if not (dest / _DONE).exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except (tarfile.TarError, EOFError, OSError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ResultsError(f"opening archive {path}: {e}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _results_in(dest)


def prune(base: Path | None = None, keep_days: float = KEEP_DAYS) -> list[Path]:
    """Remove extracted archives not opened for `keep_days` (and leftovers of
    interrupted extractions older than a day); returns what was removed."""
    base = base or cache_dir()
    if not base.is_dir():
        return []
    now = time.time()
    gone = []
    for d in base.iterdir():
        done = d / _DONE
        try:
            age = now - (done.stat().st_mtime if done.exists() else d.stat().st_mtime)
        except OSError:
            continue
        limit = keep_days * 86400 if done.exists() else 86400
        if age > limit:
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone
