"""Where the congestion-control pack finds its files (the tree, build directory and
binaries as ccarena.paths says):

- BPF objects in ``<build>/bpf/cc/<name>.bpf.o`` (``make bpf``), their paper variants in
  ``<build>/bpf/cc/paper/<name>.bpf.o``, user objects in
  ``<build>/bpf/cc-extra/``; sources in ``<root>/bpf/cc``;
- loader binary: ``$CCARENA_CC_LOADER``, else ccarena-cc found like every binary;
- extra algorithm directories (user ``*.bpf.c``): ``$CCARENA_CC_PATH`` (``:``-separated)
  plus ``~/.config/ccarena/cc`` plus what the caller passes (``extra_dirs``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ccarena import paths as ccarena_paths


def root() -> Path:
    return ccarena_paths.repo_root()


def build_dir() -> Path:
    return ccarena_paths.build_dir()


def objects_dir() -> Path:
    return build_dir() / "bpf" / "cc"


def paper_objects_dir() -> Path:
    """The paper variants (-DCCA_PAPER) of the algorithms whose paper differs from Linux."""
    return objects_dir() / "paper"


def extra_objects_dir() -> Path:
    return build_dir() / "bpf" / "cc-extra"


def source_dir() -> Path:
    return root() / "bpf" / "cc"


def loader() -> Path | None:
    env = os.environ.get("CCARENA_CC_LOADER")
    if env:
        return Path(env)
    p = ccarena_paths.find_binary("ccarena-cc")
    return Path(p) if p else None


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
