"""The built-in studies (studies/*.toml in the source tree) and how a name finds one.

A study argument is a path when it exists, ends in .toml or contains a slash; otherwise it
is looked up as studies/<name>.toml, so `ccarena run quickstart` and
`load_study("quickstart")` mean the same file."""
from __future__ import annotations

import tomllib
from pathlib import Path

from ccarena.paths import repo_root


def studies_dir() -> Path:
    return repo_root() / "studies"


def resolve_study_path(name) -> Path:
    p = Path(name)
    if p.exists() or p.suffix == ".toml" or "/" in str(name):
        return p
    cand = studies_dir() / f"{name}.toml"
    return cand if cand.exists() else p


def builtin_studies() -> dict[str, str]:
    """{name: first line of its description} for every built-in study."""
    out = {}
    for p in sorted(studies_dir().glob("*.toml")):
        try:
            d = tomllib.loads(p.read_text()).get("study", {})
        except (OSError, tomllib.TOMLDecodeError):
            d = {}
        desc = d.get("description", "") if isinstance(d, dict) else ""
        out[p.stem] = desc.strip().splitlines()[0] if desc.strip() else ""
    return out
