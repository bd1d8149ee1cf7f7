"""Results directories: results/<study>-<YYYYmmdd-HHMMSS>/ with versioned metadata,
per-run Parquet tables and study-level aggregates.

Each run is written completely (tables, metrics, meta.json last) as soon as it ends, and
the aggregates are rebuilt from the run directories, so an interrupted study keeps every
completed run and `ccarena show` can rebuild what the interruption cut short."""
from __future__ import annotations

import json
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ccarena import __version__
from ccarena.errors import ResultsError

FORMAT_VERSION = 1
MARKER = "ccarena-results.json"
RUN_TABLES = ("tcpinfo", "rx", "conns", "rr", "ping", "udp", "tcpprobe", "link_stats",
              "link_events", "commands")


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set):
        return sorted(o)
    raise TypeError(repr(o))


def write_json(path: Path, obj) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_json_default))
    tmp.replace(path)


@dataclass
class ResultsDir:
    path: Path

    # -- creation --------------------------------------------------------------------------
    @classmethod
    def create(cls, study_name: str, base: Path | str = "results") -> "ResultsDir":
        base = Path(base).absolute()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        p = base / f"{study_name}-{stamp}"
        n = 1
        while p.exists():
            n += 1
            p = base / f"{study_name}-{stamp}-{n}"
        (p / "runs").mkdir(parents=True)
        write_json(p / MARKER, {"format_version": FORMAT_VERSION, "ccarena": __version__,
                                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                "study": study_name})
        return cls(p)

    def write_study(self, study, plan, source_path: str | None) -> None:
        if source_path and Path(source_path).is_file():
            shutil.copyfile(source_path, self.path / "study.toml")
        write_json(self.path / "study.json", study.raw)
        write_json(self.path / "plan.json", plan.to_json())

    def run_dir(self, label: str) -> Path:
        d = self.path / "runs" / label
        d.mkdir(parents=True, exist_ok=True)
        return d

    # A run that the machine's noise made invalid is run again (runner.run_study): the new
    # attempt is written to staging_dir(label) and, once complete, supersede() moves the
    # old one to superseded/<label>.<attempt>/ and the new one to runs/<label>/.
    def staging_dir(self, label: str) -> Path:
        d = self.path / "superseded" / f".{label}.next"
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def aside_record(self, label: str, attempt: int, meta: dict) -> dict:
        """What the next attempt records of the one it supersedes."""
        return {"attempt": attempt, "dir": f"superseded/{label}.{attempt}",
                "run_id": meta["run_id"], "invalid_reasons": meta.get("invalid_reasons", [])}

    def update_meta(self, label: str, meta: dict) -> None:
        write_json(self.path / "runs" / label / "meta.json", meta)

    def supersede(self, label: str, attempt: int, old_meta: dict) -> None:
        run, aside = self.path / "runs" / label, self.path / "superseded" / f"{label}.{attempt}"
        # Ctrl-C or SIGTERM between the two renames would leave the run in no table: they
        # wait until both are done
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            run.rename(aside)
            (self.path / "superseded" / f".{label}.next").rename(run)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        write_json(aside / "meta.json", {**old_meta, "superseded_by_rerun": True})

    # -- reading ---------------------------------------------------------------------------
    def check_version(self) -> dict:
        m = self.path / MARKER
        if not m.exists():
            raise ResultsError(f"{self.path}: not a ccarena results directory (no {MARKER})")
        meta = json.loads(m.read_text())
        v = meta.get("format_version", 0)
        if v > FORMAT_VERSION:
            raise ResultsError(f"{self.path}: results format {v} is newer than this ccarena "
                               f"reads ({FORMAT_VERSION}); upgrade ccarena to open it")
        return meta

    def run_dirs(self) -> list[Path]:
        """Completed runs only: a run is complete when its meta.json exists."""
        return sorted(p.parent for p in (self.path / "runs").glob("*/meta.json"))

    def run_meta(self, run_dir: Path) -> dict:
        return json.loads((run_dir / "meta.json").read_text())

    def table(self, name: str) -> pd.DataFrame:
        """A per-run table of every completed run, concatenated."""
        parts = [pd.read_parquet(d / f"{name}.parquet") for d in self.run_dirs()
                 if (d / f"{name}.parquet").exists()]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    @property
    def runs(self) -> pd.DataFrame:
        p = self.path / "runs.parquet"
        return pd.read_parquet(p) if p.exists() else pd.DataFrame()

    @property
    def flows(self) -> pd.DataFrame:
        p = self.path / "flows.parquet"
        return pd.read_parquet(p) if p.exists() else pd.DataFrame()

    @property
    def cells(self) -> pd.DataFrame:
        p = self.path / "cells.parquet"
        return pd.read_parquet(p) if p.exists() else pd.DataFrame()

    def study_json(self) -> dict:
        return json.loads((self.path / "study.json").read_text())

    def plan_json(self) -> dict:
        return json.loads((self.path / "plan.json").read_text())

    # -- aggregates ------------------------------------------------------------------------
    def rebuild_aggregates(self) -> None:
        """runs.parquet, flows.parquet and cells.parquet from the completed run dirs."""
        from ccarena.analysis import cell_stats
        runs, flows = [], []
        for d in self.run_dirs():
            meta = self.run_meta(d)
            params = meta.get("cell_params", {})
            m = json.loads((d / "metrics.json").read_text()) if (d / "metrics.json").exists() \
                else {}
            row = {"run_id": meta["run_id"], "label": meta["label"], "cell": meta["cell"],
                   "rep": meta["rep"], "index": meta.get("index"), **params,
                   **{k: v for k, v in m.items() if k not in ("run_id", "cell", "rep")},
                   "valid": meta.get("valid", True),
                   "invalid_reasons": "; ".join(meta.get("invalid_reasons", [])),
                   "cpu_busy_frac": meta.get("cpu", {}).get("busy_frac"),
                   "cpu_steal_frac": meta.get("cpu", {}).get("steal_frac"),
                   **rerun_columns(meta)}
            runs.append(row)
            fp = d / "flow_metrics.parquet"
            if fp.exists():
                f = pd.read_parquet(fp)
                f.insert(1, "cell", meta["cell"])
                f.insert(2, "rep", meta["rep"])
                for k, v in params.items():
                    f[k] = v
                f["valid"] = meta.get("valid", True)
                flows.append(f)
        rdf = pd.DataFrame(runs)
        fdf = pd.concat(flows, ignore_index=True) if flows else pd.DataFrame()
        for df in (rdf, fdf):
            for c in df.columns:
                if df[c].dtype == object:
                    df[c] = df[c].map(lambda v: v if v is None or isinstance(v, (str, bool))
                                      else str(v))
        rdf.to_parquet(self.path / "runs.parquet", index=False)
        fdf.to_parquet(self.path / "flows.parquet", index=False)
        if len(fdf):
            params = [k for k in self.plan_json().get("cells", {}).get(
                rdf["cell"].iloc[0], {}) ] if len(rdf) else []
            top = fdf[fdf["conn"] == -1] if "conn" in fdf else fdf
            metrics = [c for c in ("goodput_bps", "rtt_mean_s", "rtt_p95_s", "retrans_ratio",
                                   "fct_s") if c in top.columns]
            cs = cell_stats(top, by=["cell", *params, "name", "cc"], metrics=metrics)
            cs.to_parquet(self.path / "cells.parquet", index=False)


def rerun_columns(meta: dict) -> dict:
    """A run's re-run columns of runs.parquet: how many attempts were set aside, and why."""
    aside = meta.get("superseded") or []
    return {"reruns": len(aside),
            "rerun_reasons": "; ".join(r for a in aside for r in a.get("invalid_reasons", []))}


def open_results(path) -> ResultsDir:
    r = ResultsDir(Path(path))
    r.check_version()
    return r


def list_results(base: Path | str = "results") -> list[ResultsDir]:
    base = Path(base)
    if not base.is_dir():
        return []
    return [ResultsDir(p.parent) for p in sorted(base.glob(f"*/{MARKER}"))]
