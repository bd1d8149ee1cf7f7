"""Results directories, for reading: ResultsDir (store.writer's Writer writes them; the
layout is store.layout's, the run manifest store.manifest's).

Every file is written atomically (store.atomic). Reading never trusts a summary that is
missing, unreadable or older than the runs: runs and flows are rebuilt from the run
directories; a damaged run file is named in `problems` and skipped, never fatal. The store
computes no statistics: cells.parquet is written by analysis.aggregates.

`open_results` also opens a single-file archive (store.bundle, `ccarena archive`): its
copy is extracted once into a cache and opened read-only (`readonly`, `source` = the
archive); a Writer of it then refuses with a StoreError.

In runs and flows, every swept factor (a dotted study key) also has an alias with
underscores (`bottleneck_buffer` beside `bottleneck.buffer`), so it can be used as an
attribute (`runs.bottleneck_buffer`), in `DataFrame.query` and unquoted in SQL."""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from functools import cached_property
from pathlib import Path

import pandas as pd

from ccarena.errors import CcarenaError, ResultsError
from ccarena.store import bundle as archive_mod
from ccarena.store import layout as L
from ccarena.store.tables import RUN_METRICS, RUN_TABLES

FORMAT_VERSION = 1
MARKER = L.MARKER


def _read_json(p: Path):
    return json.loads(p.read_text())


class ResultsDir:
    """One results directory, for reading (pandas): runs, flows, cells, table(name),
    run_tables(run_id), metas, factors, study, plan, environment, checks, status(). What
    writes into it is a Writer."""

    def __init__(self, path, readonly: bool = False, source: Path | None = None):
        self.path = Path(path)
        self.problems: list[str] = []    # damaged files met while reading (skipped)
        self.readonly = readonly         # an archive's copy: nothing may be written
        self.source = Path(source) if source else None   # the archive it came from

    def __repr__(self) -> str:
        return f"ResultsDir({str(self.source or self.path)!r})"

    @classmethod
    def open(cls, path) -> "ResultsDir":
        """A results directory, or a single-file archive of one (opened read-only)."""
        if archive_mod.is_archive(path):
            r = cls(archive_mod.extract(path), readonly=True, source=Path(path).absolute())
        else:
            r = cls(path)
        r.check_version()
        return r

    # -- reading ---------------------------------------------------------------------------
    def check_version(self) -> dict:
        m = self.path / MARKER
        if not self.path.is_dir():
            raise ResultsError(f"opening results {self.path}: no such directory")
        if not m.exists():
            raise ResultsError(f"{self.path}: not a ccarena results directory (no {MARKER})")
        try:
            meta = _read_json(m)
        except (OSError, ValueError) as e:
            raise ResultsError(f"{m}: unreadable ({e}); the directory cannot be "
                               "identified") from None
        v = meta.get("format_version", 0)
        if v > FORMAT_VERSION:
            raise ResultsError(f"{self.path}: results format {v} is newer than this ccarena "
                               f"reads ({FORMAT_VERSION}); upgrade ccarena to open it")
        return meta

    def run_dirs(self) -> list[Path]:
        """Complete runs only: meta.json exists and every file its manifest lists is there
        with its size (older results without a manifest: meta.json alone)."""
        return list(self._complete)

    @cached_property
    def _complete(self) -> dict[Path, dict]:
        out = {}
        for p in sorted((self.path / L.RUNS).glob(f"*/{L.RUN_MANIFEST}")):
            meta = self._meta(p)
            if meta is None:
                continue
            bad = missing_files(p.parent, meta)
            if bad:
                self._problem(f"{p.parent}: incomplete run (missing or truncated: "
                              f"{', '.join(bad)}); skipped")
                continue
            out[p.parent] = meta
        return out

    def incomplete_runs(self) -> list[Path]:
        """Run directories that were started and never completed (an interruption)."""
        done = set(self.run_dirs())
        return sorted(p for p in (self.path / L.RUNS).glob("*") if p.is_dir() and p not in done)

    def run_meta(self, run_dir: Path) -> dict:
        return _read_json(Path(run_dir) / L.RUN_MANIFEST)

    def _meta(self, p: Path) -> dict | None:
        try:
            return _read_json(p)
        except (OSError, ValueError) as e:
            self._problem(f"{p}: unreadable ({e}); the run is skipped")
            return None

    def _problem(self, msg: str) -> None:
        if msg not in self.problems:
            self.problems.append(msg)

    @property
    def metas(self) -> dict[str, dict]:
        """run_id -> meta.json of every complete run."""
        return {str(m.get("run_id") or d.name): m for d, m in self._complete.items()}

    @property
    def dirs(self) -> dict[str, Path]:
        """run_id -> its directory (named by label)."""
        return {str(m.get("run_id") or d.name): d for d, m in self._complete.items()}

    def label_dir(self, label: str) -> Path:
        """Where planned run `label` is stored (whether or not it is complete)."""
        return L.run_dir(self.path, label)

    def run_dir(self, run_id: str) -> Path:
        return self.dirs.get(str(run_id), L.run_dir(self.path, str(run_id)))

    def _parquet(self, p: Path) -> pd.DataFrame | None:
        try:
            return pd.read_parquet(p)
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001 — pyarrow raises many types for damaged files
            self._problem(f"{p}: unreadable ({str(e).splitlines()[0]}); skipped")
            return None

    def table(self, name: str) -> pd.DataFrame:
        """A per-run table of every complete run, concatenated (damaged files skipped)."""
        if name not in RUN_TABLES and name != RUN_METRICS:
            raise ResultsError(f"{self.path}: no per-run table {name!r}; known: "
                               + ", ".join(RUN_TABLES))
        parts = [df for d in self.run_dirs() if (df := self._parquet(d / f"{name}.parquet"))
                 is not None]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def run_tables(self, run_id: str) -> dict[str, pd.DataFrame]:
        """One run's per-run tables (an absent or damaged one: an empty frame)."""
        d = self.run_dir(run_id)
        out = {}
        for n in RUN_TABLES:
            df = self._parquet(d / f"{n}.parquet")
            out[n] = df if df is not None else pd.DataFrame()
        return out

    def _fresh(self, name: str) -> pd.DataFrame | None:
        """<name>.parquet if it is readable and not older than any complete run."""
        p = self.path / f"{name}.parquet"
        if not p.exists():
            return None
        newest = max((os.stat(d / L.RUN_MANIFEST).st_mtime for d in self.run_dirs()), default=0)
        if os.stat(p).st_mtime < newest:
            return None
        return self._parquet(p)

    @cached_property
    def _summaries(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        runs, flows = self._fresh("runs"), self._fresh("flows")
        ids = {str(m.get("run_id") or d.name) for d, m in self._complete.items()}
        # a summary is trusted only when it covers exactly the complete runs (a run
        # removed or added since leaves the mtimes unchanged or misleading)
        if runs is None or flows is None or "run_id" not in runs or \
                set(runs["run_id"].astype(str)) != ids or \
                ("run_id" in flows and not set(flows["run_id"].astype(str)) <= ids):
            runs, flows = self.summary_tables()
            self.__dict__["_stale"] = True
        return factor_aliases(runs), factor_aliases(flows)

    @property
    def runs(self) -> pd.DataFrame:
        return self._summaries[0]

    @property
    def flows(self) -> pd.DataFrame:
        return self._summaries[1]

    @property
    def cells(self) -> pd.DataFrame:
        """cells.parquet (analysis.aggregates writes it), if it is as new as the runs and
        the run summary it was made from is current."""
        self._summaries
        c = None if self.__dict__.get("_stale") else self._fresh("cells")
        return c if c is not None else pd.DataFrame()

    @cached_property
    def study(self) -> dict:
        """The study as run (study.json: the merged TOML)."""
        return self._json(L.STUDY_JSON)

    @property
    def study_source(self) -> str:
        """The stored study's file, as error messages about it name it."""
        return str(self.path / L.STUDY_JSON)

    @cached_property
    def resumes(self) -> list[dict]:
        """How often the study was resumed, and what each resume found (run/resume.py)."""
        v = self._json(L.RESUMES_JSON) if (self.path / L.RESUMES_JSON).exists() else []
        return v if isinstance(v, list) else []

    @cached_property
    def plan(self) -> dict:
        return self._json(L.PLAN_JSON)

    @cached_property
    def environment(self) -> dict:
        return self._json(L.ENVIRONMENT_JSON)

    @cached_property
    def preflight(self) -> dict:
        return self._json(L.PREFLIGHT_JSON)

    def _json(self, name: str) -> dict:
        p = self.path / name
        if not p.exists():
            return {}
        try:
            return _read_json(p)
        except (OSError, ValueError) as e:
            self._problem(f"{p}: unreadable ({e}); ignored")
            return {}

    @cached_property
    def checks(self) -> list[dict] | None:
        """The study's checks as last evaluated (checks.json, written by `ccarena run`,
        `ccarena check` and the API's run_study): one dict per check with ok, measured
        and the target; None when never evaluated."""
        if not (self.path / L.CHECKS_JSON).exists():
            return None
        v = self._json(L.CHECKS_JSON)
        return v if isinstance(v, list) else None

    @property
    def passed(self) -> bool | None:
        """True when every check passed, False when one failed, None when unevaluated."""
        c = self.checks
        return None if c is None else all(bool(r.get("ok")) for r in c)

    @property
    def outcome(self) -> str:
        """What the stored runs answer of the plan (status()):
        "complete"    every planned run is stored and every cell has a valid run;
        "incomplete"  planned runs are missing (interrupted: `--resume` completes it);
        "partial"     every planned run is stored, but a cell has no valid run;
        "failed"      no cell has a valid run (or nothing was planned and stored)."""
        st = self.status()
        if not len(st):
            return "failed"
        if st["state"].eq("missing").any():
            return "incomplete"
        answered = st.groupby("cell")["state"].agg(lambda s: s.eq("valid").any())
        return "complete" if answered.all() else "partial" if answered.any() else "failed"

    @property
    def name(self) -> str:
        st = self.study.get("study") if isinstance(self.study.get("study"), dict) else {}
        return st.get("name") or self.path.name

    @cached_property
    def factors(self) -> list[str]:
        """The swept factors (dotted study keys), in plan order."""
        out: list[str] = []
        for p in (self.plan.get("cells") or {}).values():
            out += [k for k in p if k not in out]
        for m in self.metas.values():
            out += [k for k in (m.get("cell_params") or {}) if k not in out]
        return out

    def status(self) -> pd.DataFrame:
        """One row per planned run: label, cell, rep, state (valid | invalid | missing) and
        the reasons of an invalid run. A run that was in flight when the study stopped is
        missing. Without plan.json: the stored runs only."""
        # by directory: a run is its label's directory, whatever its run id
        by_label = {m.get("label") or d.name: m for d, m in self._complete.items()}
        planned = self.plan.get("runs") or [{"label": m.get("label"), "cell": m.get("cell"),
                                             "rep": m.get("rep")} for m in by_label.values()]
        rows = []
        for r in planned:
            m = by_label.get(r["label"])
            state = "missing" if m is None else "valid" if m.get("valid", True) else "invalid"
            rows.append({"label": r["label"], "cell": r["cell"], "rep": r["rep"],
                         "state": state, "reasons": "; ".join((m or {}).get(
                             "invalid_reasons") or [])})
        return pd.DataFrame(rows, columns=["label", "cell", "rep", "state", "reasons"])

    # -- summaries (concatenations, no statistics) -----------------------------------------
    def summary_tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """runs (one row per complete run) and flows (per run, one row per flow with
        conn = -1, and one per connection of a flow with several, conn >= 0), from the run
        directories."""
        runs, flows = [], []
        for d, meta in self._complete.items():
            params = meta.get("cell_params", {})
            m = self._json_rel(d / L.RUN_METRICS_JSON)
            runs.append({"run_id": meta["run_id"], "label": meta["label"], "cell": meta["cell"],
                         "rep": meta["rep"], "index": meta.get("index"), **params,
                         **{k: v for k, v in m.items() if k not in ("run_id", "cell", "rep")},
                         "valid": meta.get("valid", True),
                         "invalid_reasons": "; ".join(meta.get("invalid_reasons", [])),
                         "cpu_busy_frac": meta.get("cpu", {}).get("busy_frac"),
                         "cpu_steal_frac": meta.get("cpu", {}).get("steal_frac"),
                         **worker_columns(meta), **anomaly_columns(meta),
                         **rerun_columns(meta)})
            f = self._parquet(d / f"{RUN_METRICS}.parquet")
            if f is not None:
                f = f.copy()
                f.insert(1, "cell", meta["cell"])
                f.insert(2, "rep", meta["rep"])
                for k, v in params.items():
                    f[k] = v
                f["valid"] = meta.get("valid", True)
                for k, v in worker_columns(meta).items():
                    f[k] = v
                flows.append(f)
        rdf = pd.DataFrame(runs)
        fdf = pd.concat(flows, ignore_index=True) if flows else pd.DataFrame()
        for df in (rdf, fdf):
            for c in df.columns:
                if df[c].dtype == object:
                    df[c] = df[c].map(lambda v: v if v is None or isinstance(v, (str, bool))
                                      else str(v))
        return factor_aliases(rdf), factor_aliases(fdf)

    def _json_rel(self, p: Path) -> dict:
        if not p.exists():
            return {}
        try:
            return _read_json(p)
        except (OSError, ValueError) as e:
            self._problem(f"{p}: unreadable ({e}); the run's metrics are missing")
            return {}

    def forget(self) -> None:
        """Drop what was read (after runs were added or changed)."""
        for k in ("_summaries", "_complete", "factors", "_stale"):
            self.__dict__.pop(k, None)


def missing_files(run_dir: Path, meta: dict) -> list[str]:
    """Files a run's manifest (meta["files"]) lists that are absent or of another size."""
    return [f for f, n in (meta.get("files") or {}).items()
            if not (run_dir / f).exists() or (run_dir / f).stat().st_size != n]


def worker_columns(meta: dict) -> dict:
    """Where a run ran (meta["worker"], run/environment.worker), as columns of runs and
    flows, so results from several machines can be grouped or compared by machine: the
    host, its kernel release and CPU model (None for a run that did not record them)."""
    w = meta.get("worker") or {}
    return {"worker_host": w.get("host"), "worker_kernel": w.get("kernel"),
            "worker_cpu_model": w.get("cpu_model")}


def anomaly_columns(meta: dict) -> dict:
    """A run's anomaly columns of runs.parquet (metrics/anomalies.py): how many, and what,
    one per line (a description may itself contain "; ")."""
    a = meta.get("anomalies") or []
    return {"anomalies": len(a), "anomaly_list": "\n".join(x.get("what", "") for x in a)}


def rerun_columns(meta: dict) -> dict:
    """A run's re-run columns of runs.parquet: how many attempts were set aside, and why."""
    aside = meta.get("superseded") or []
    return {"reruns": len(aside),
            "rerun_reasons": "; ".join(r for a in aside for r in a.get("invalid_reasons", []))}


def factor_aliases(df: pd.DataFrame) -> pd.DataFrame:
    """df with an underscore alias beside every dotted column (`bottleneck.buffer` ->
    `bottleneck_buffer`, same values) that does not exist yet, placed right after it."""
    dotted = [c for c in df.columns if isinstance(c, str) and "." in c]
    missing = [(c, c.replace(".", "_").replace("-", "_")) for c in dotted]
    missing = [(c, a) for c, a in missing if a not in df.columns]
    if not missing:
        return df
    df = df.copy()
    for c, a in missing:
        df.insert(df.columns.get_loc(c) + 1, a, df[c])
    return df


def open_results(path) -> ResultsDir:
    """Open a results directory, or a `.ccarena.tar.xz` archive of one (read-only), for
    reading: `.runs` and `.flows` (pandas), `.run_tables(run_id)`, `.metas`, `.factors`,
    `.study`, `.plan`, `.status()`."""
    return ResultsDir.open(path)


def default_report_path(res: ResultsDir) -> Path:
    """Where report.html goes by default: into the results directory, or for an archive
    beside it (<name>.report.html), since the archive's copy is read-only."""
    if res.source is not None:
        return res.source.parent / f"{archive_mod.stem(res.source)}.report.html"
    return res.path / L.REPORT_HTML


def list_results(base: Path | str = "results") -> list[ResultsDir]:
    base = Path(base)
    if not base.is_dir():
        return []
    return [ResultsDir(p.parent) for p in sorted(base.glob(f"*/{MARKER}"))]


def listing(base: Path | str = "results") -> list[dict]:
    """The stored studies under `base` (`ccarena ls`): one dict per results directory with
    its study, how many runs are planned, valid, invalid and missing, the same per cell,
    and when it was created; a directory that cannot be read has "error" instead."""
    rows = []
    for r in list_results(base):
        try:
            meta = r.check_version()
            status = r.status()
            st = status["state"].value_counts()
            rows.append({"results": r.path.name, "study": meta.get("study", ""),
                         "planned": int(st.sum()), "valid": int(st.get("valid", 0)),
                         "invalid": int(st.get("invalid", 0)),
                         "missing": int(st.get("missing", 0)),
                         "cells": _cell_counts(status), "created": meta.get("created", "")})
        except CcarenaError as e:
            rows.append({"results": r.path.name, "error": str(e)})
    return rows


def _cell_counts(status: pd.DataFrame) -> dict:
    """Per planned cell: how many of its runs are planned, valid, invalid and missing (the
    same status() that show, report and check count)."""
    out = {}
    for cell, g in status.groupby("cell", sort=True):
        n = g["state"].value_counts()
        out[str(cell)] = {"planned": int(len(g)), "valid": int(n.get("valid", 0)),
                          "invalid": int(n.get("invalid", 0)),
                          "missing": int(n.get("missing", 0))}
    return out
