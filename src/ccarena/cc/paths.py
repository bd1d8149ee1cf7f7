"""Where the congestion-control pack finds its files.

- repository root: ``$CCARENA_ROOT``, else the checkout this package lives in
  (``src/ccarena/cc/`` → three levels up), else the current directory;
- build directory: ``$CCARENA_BUILD_DIR``, else ``<root>/build``; BPF objects in
  ``<build>/bpf/cc/<name>.bpf.o`` (``make bpf``), user objects in ``<build>/bpf/cc-extra/``;
- loader binary: ``$CCARENA_CC_LOADER``, else ``<root>/target/release/ccarena-cc``,
  else ``ccarena-cc`` on ``PATH``;
- extra algorithm directories (user ``*.bpf.c``): ``$CCARENA_CC_PATH`` (``:``-separated)
  plus ``~/.config/ccarena/cc`` plus what the caller passes (``extra_dirs``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def root() -> Path:
    env = os.environ.get("CCARENA_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[3]
    if (here / "bpf" / "cc").is_dir():
        return here
    return Path.cwd()


def build_dir() -> Path:
    env = os.environ.get("CCARENA_BUILD_DIR")
    return Path(env) if env else root() / "build"


def objects_dir() -> Path:
    return build_dir() / "bpf" / "cc"


def extra_objects_dir() -> Path:
    return build_dir() / "bpf" / "cc-extra"


def source_dir() -> Path:
    return root() / "bpf" / "cc"


def loader() -> Path | None:
    env = os.environ.get("CCARENA_CC_LOADER")
    if env:
        return Path(env)
    p = root() / "target" / "release" / "ccarena-cc"
    if p.is_file():
        return p
    w = shutil.which("ccarena-cc")
    return Path(w) if w else None


def extra_dirs(more: list[str | os.PathLike] | None = None) -> list[Path]:
    """Directories searched for user ``*.bpf.c``, in priority order, existing only."""
    dirs: list[Path] = [Path(d) for d in (more or [])]
    for d in os.environ.get("CCARENA_CC_PATH", "").split(os.pathsep):
        if d:
            dirs.append(Path(d))
    dirs.append(Path.home() / ".config" / "ccarena" / "cc")
    out: list[Path] = []
    for d in dirs:
        d = d.expanduser()
        if d.is_dir() and d.resolve() not in [o.resolve() for o in out]:
            out.append(d)
    return out
