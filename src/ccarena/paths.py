"""Where ccarena's own binaries and built objects live.

Looked up in order: $CCARENA_BIN_DIR, the source tree's target/release (the Makefile builds
there; the package is installed editable), then $PATH."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ccarena.errors import PreflightError

REPO_ROOT = Path(__file__).resolve().parents[2]


def find_binary(name: str) -> str | None:
    env = os.environ.get("CCARENA_BIN_DIR")
    for d in ([Path(env)] if env else []) + [REPO_ROOT / "target" / "release"]:
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
    return Path(os.environ.get("CCARENA_BUILD_DIR", REPO_ROOT / "build"))
