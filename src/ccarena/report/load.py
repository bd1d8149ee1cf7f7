"""Read a stored study directory with pandas, independent of ccarena.store.

Contract: `load_results(study_dir) -> Results` reads study.json, plan.json, runs.parquet,
flows.parquet, cells.parquet, environment.json, preflight.json and every
runs/*/meta.json that exist (a missing file gives an
empty frame or dict). When runs.parquet is missing but per-run tables exist, the run and
flow metrics are recomputed from them (re-analysis without re-running). Swept factors are
taken from the runs' `cell_params` and joined onto `runs` when the store did not already.
`Results.run_tables(run_id)` loads one run's per-run tables on demand.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ccarena.errors import ResultsError
from ccarena.metrics import run_metrics
from ccarena.store.results import rerun_columns

RUN_TABLES = ("tcpinfo", "rx", "conns", "rr", "ping", "link_stats")


def _read_json(p: Path):
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ResultsError(f"reading {p}: {e}") from e


def _read_parquet(p: Path) -> pd.DataFrame:
    if not p.exists():
        return pd.DataFrame()
    try:
        return pd.read_parquet(p)
    except Exception as e:  # pyarrow raises several types for damaged files
        raise ResultsError(f"reading {p}: {e}") from e


@dataclass
class Results:
    path: Path
    study: dict
    plan: dict
    runs: pd.DataFrame
    flows: pd.DataFrame
    cells: pd.DataFrame
    metas: dict = field(default_factory=dict)
    factors: list = field(default_factory=list)
    dirs: dict = field(default_factory=dict)  # run_id -> run directory (named by label)
    environment: dict = field(default_factory=dict)  # environment.json (kernel, tools)
    preflight: dict = field(default_factory=dict)  # preflight.json (backend, cc sources)

    @property
    def name(self) -> str:
        st = self.study.get("study") if isinstance(self.study.get("study"), dict) else {}
        return st.get("name") or self.study.get("name") or self.path.name

    def run_dir(self, run_id: str) -> Path:
        return self.dirs.get(str(run_id), self.path / "runs" / str(run_id))

    def run_tables(self, run_id: str) -> dict:
        d = self.run_dir(run_id)
        return {n: _read_parquet(d / f"{n}.parquet") for n in RUN_TABLES}


def load_results(study_dir) -> Results:
    d = Path(study_dir)
    if not d.is_dir():
        raise ResultsError(f"opening results {d}: not a directory")
    metas, dirs = {}, {}
    for p in sorted((d / "runs").glob("*/meta.json")):
        m = _read_json(p)
        rid = str(m.get("run_id") or p.parent.name)
        metas[rid], dirs[rid] = m, p.parent
    runs = _read_parquet(d / "runs.parquet")
    flows = _read_parquet(d / "flows.parquet")
    if runs.empty and metas:
        runs, flows = _recompute(dirs, metas)
    if runs.empty and not metas:
        raise ResultsError(f"opening results {d}: no runs.parquet and no runs/*/meta.json")
    factors = []
    for m in metas.values():
        factors += [k for k in (m.get("cell_params") or {}) if k not in factors]
    if "run_id" in runs:
        for k in factors:
            if k not in runs:
                runs[k] = runs["run_id"].astype(str).map(
                    lambda r, k=k: (metas.get(r, {}).get("cell_params") or {}).get(k))
    factors += [c for c in runs.columns if "." in str(c) and c not in factors]
    return Results(d, _read_json(d / "study.json"), _read_json(d / "plan.json"), runs, flows,
                   _read_parquet(d / "cells.parquet"), metas, factors, dirs,
                   _read_json(d / "environment.json"), _read_json(d / "preflight.json"))


def _recompute(dirs: dict, metas: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, fl = [], []
    for rid, meta in metas.items():
        tables = {n: _read_parquet(dirs[rid] / f"{n}.parquet") for n in RUN_TABLES}
        f, r = run_metrics(tables, meta)
        rows.append({**(meta.get("cell_params") or {}), **r, **rerun_columns(meta)})
        fl.append(f.assign(cell=meta.get("cell"), rep=meta.get("rep")))
    return pd.DataFrame(rows), (pd.concat(fl, ignore_index=True) if fl else pd.DataFrame())
