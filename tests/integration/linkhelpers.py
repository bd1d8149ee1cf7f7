"""Helpers for the user-space link tests (test_link_*.py): inline studies through
`ccarena-link`, and the link's own counters and tables of a finished study."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

MSS = 1448                 # TCP payload of a full segment (1500 MTU, timestamps on)
FRAME = 1514               # the Ethernet frame that carries it; the link's rate counts these
PAYLOAD_SHARE = MSS / FRAME


def failed_parts(meta: dict) -> list[str]:
    """The reasons a run is invalid other than the machine's noise (late link releases,
    CPU steal, sampling gaps...: the runner lists those in meta["noise_reasons"])."""
    noise = set(meta.get("noise_reasons") or [])
    return [r for r in meta.get("invalid_reasons") or [] if r not in noise]


def dumbbell(bottleneck: str, *, flows: int = 0, cc: str = "cubic", duration="5s",
             warmup="2s", ping: str | None = None, tcp: str = "", sweep: str = "",
             name: str = "link-acc", backend: str = "user") -> str:
    """Study text: one pair, a link with `bottleneck` (TOML lines) — the user-space link,
    or with `backend` the kernel's (tests/vm) — `flows` bulk flows s1 -> r1, and
    optionally a ping s1 -> r1 every `ping`."""
    text = textwrap.dedent(f'''
        [study]
        name = "{name}"
        duration = "{duration}"
        warmup = "{warmup}"
        repetitions = 1
        seed = 11
        [bottleneck]
        backend = "{backend}"
        ''') + textwrap.dedent(bottleneck).strip() + "\n"
    if tcp:
        text += "[tcp]\n" + textwrap.dedent(tcp).strip() + "\n"
    for i in range(flows):
        text += textwrap.dedent(f'''
            [[flow]]
            name = "bulk{i}"
            from = "s1"
            to = "r1"
            cc = "{cc}"
            ''')
    if ping:
        text += textwrap.dedent(f'''
            [[probe]]
            kind = "ping"
            from = "s1"
            to = "r1"
            interval = "{ping}"
            ''')
    if sweep:
        text += "[sweep]\n" + textwrap.dedent(sweep).strip() + "\n"
    return text


def run(text: str, tmp_path: Path, event_log: bool = False):
    """Load and run a study; fail the test if a part failed (machine noise is tolerated:
    the physics assertions carry their own tolerances)."""
    res = run_study(loads_study(text), results_base=tmp_path, progress=False,
                    event_log=event_log)
    dirs = res.run_dirs()
    assert dirs, "no completed run"
    for d in dirs:
        meta = res.run_meta(d)
        assert "error" not in meta, meta["error"]
        assert not failed_parts(meta), failed_parts(meta)
        assert "link" in meta, "the user-space link wrote no link.json"
    return res


def runs(res) -> list[tuple[dict, Path]]:
    """(meta, run_dir) of every completed run."""
    return [(res.run_meta(d), d) for d in res.run_dirs()]


def run_table(run_dir: Path, name: str) -> pd.DataFrame:
    p = run_dir / f"{name}.parquet"
    return pd.read_parquet(p) if p.exists() else pd.DataFrame()


def steady(df: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """Rows in the run's steady-state window (warmup, duration]."""
    return df[(df["t"] > meta["warmup_s"]) & (df["t"] <= meta["duration_s"])]


def late_allowance_s(meta: dict) -> float:
    """How far a round trip through the user-space link may exceed a physical bound: the
    worst lateness the link itself reports, once per direction (a stall of this VM, e.g.
    28 ms seen in CI, delays whatever is due meanwhile; the run stays valid while such
    packets are rare, validity.LATE_MAX)."""
    return 2 * meta["link"]["max_late_ns"] / 1e9


def noise(meta: dict) -> str:
    """The machine-noise context of a run, for assertion messages."""
    ln = meta.get("link", {})
    cpu = meta.get("cpu", {})
    return (f"[link late {ln.get('late_packets')}/{ln.get('forwarded')} pkts, max "
            f"{(ln.get('max_late_ns') or 0) / 1e6:.1f} ms, ring drops {ln.get('rx_ring_drops')};"
            f" realtime {ln.get('realtime')}; cpu busy "
            f"{cpu.get('busy_frac', float('nan')):.2f} steal "
            f"{cpu.get('steal_frac', float('nan')):.2f}]")
