"""What this machine can carry through the user-space link, measured once and kept, so a
dry run can warn about rates the CPU cannot emulate (`ccarena doctor --measure`).

The measurement is a short study: one cubic flow through the user-space link with 10 ms of
one-way delay and no rate limit; its goodput is the ceiling of any emulated link here (the
CPU is the limit). Kept in ~/.cache/ccarena/capacity.json per machine and kernel."""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path

MEASURE_STUDY = """
[study]
name = "capacity"
duration = "6s"
warmup = "2s"
reruns = 0
[bottleneck]
delay = "10ms"
buffer = "4000p"
backend = "user"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "cubic"
"""


def _file() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ccarena" / \
        "capacity.json"


def _key() -> str:
    return f"{platform.node()} {platform.release()} {os.cpu_count()}cpu"


def load() -> float | None:
    """The measured capacity of this machine and kernel in bit/s, or None."""
    try:
        return float(json.loads(_file().read_text())[_key()]["goodput_bps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def measure(results_base) -> float:
    from ccarena.run.executor import run_plan as run_study
    from ccarena.study.load import loads_study
    res = run_study(loads_study(MEASURE_STUDY, "<capacity>"), results_base=results_base,
                    progress=False)
    g = float(res.runs["goodput_bps"].iloc[0])
    p = _file()
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        data = {}
    data[_key()] = {"goodput_bps": g, "valid": bool(res.runs["valid"].iloc[0]),
                    "results": str(res.path)}
    p.write_text(json.dumps(data, indent=1))
    return g
