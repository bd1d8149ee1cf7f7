"""Where ccarena's own files, binaries and built objects live: the one place that knows.

- the source tree: $CCARENA_ROOT, else the checkout this package is installed from
  (editable install: src/ccarena -> two levels up);
- the build directory: $CCARENA_BUILD_DIR, else <root>/build (BPF objects, caches);
- a binary: $CCARENA_BIN_DIR, then <root>/target/release (the Makefile builds there),
  then $PATH;
and what a file is: file_sha256 (archives name themselves by it, downloads are checked
against it)."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from ccarena.errors import PreflightError

_HERE = Path(__file__).resolve().parents[2]


def repo_root() -> Path:
    return Path(os.environ.get("CCARENA_ROOT", _HERE))


def find_binary(name: str) -> str | None:
    env = os.environ.get("CCARENA_BIN_DIR")
    for d in ([Path(env)] if env else []) + [repo_root() / "target" / "release"]:
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return shutil.which(name)


def require_binary(name: str, why: str) -> str:
    p = find_binary(name)
    if not p:
        raise PreflightError(f"{name} not found ({why}); build it with `make build` "
                             f"(or set CCARENA_BIN_DIR)")
    return p


def build_dir() -> Path:
    return Path(os.environ.get("CCARENA_BUILD_DIR", repo_root() / "build"))


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
