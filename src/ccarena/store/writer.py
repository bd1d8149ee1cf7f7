"""Writing a results directory: Writer, the only writer of a study's stored results (a
ResultsDir itself only reads). Layout: store.layout; the run manifest: store.manifest."""
from __future__ import annotations

import contextlib
import json
import shutil
import signal
import time
from pathlib import Path

import pandas as pd

from ccarena.store import atomic
from ccarena.store import layout as L
from ccarena.store import manifest
from ccarena.store.results import FORMAT_VERSION, ResultsDir, missing_files
from ccarena.store.tables import RUN_METRICS
from ccarena.version import __version__


class Writer:
    """What the runner (run/) and the analysis write into a results directory; a
    ResultsDir itself only reads. `Writer.create(name, base)` makes a new directory,
    `Writer(results)` writes into an opened one (an archive's copy refuses: StoreError).

    Study: write_study (write_study_raw), write_preflight, write_environment,
    write_resumes, write_checks, write_table, rebuild_summaries. Runs: new_run (or
    staging_dir for a re-run), write_run (meta.json last), update_meta, aside_record and
    supersede."""

    def __init__(self, results: ResultsDir):
        self.results = results
        self.path = results.path

    def _writable(self) -> None:
        r = self.results
        if r.readonly:
            raise atomic.StoreError(f"{r.source or r.path}: a results archive is "
                                    "read-only (extract it with `tar -xJf` to change it)")

    @classmethod
    def create(cls, study_name: str, base: Path | str = "results") -> "Writer":
        """A new results directory <base>/<study>-<YYYYmmdd-HHMMSS>, with its marker."""
        base = Path(base).absolute()
        if base.exists() and not base.is_dir():
            raise atomic.StoreError(f"creating results under {base}: it is a file, not a "
                                    "directory; give another --results")
        atomic.mkdir(base)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        n = 1
        while True:     # mkdir is the test: two studies started in one second get two
            p = base / (f"{study_name}-{stamp}" + (f"-{n}" if n > 1 else ""))
            try:
                p.mkdir()
                break
            except FileExistsError:
                n += 1
            except OSError as e:
                raise atomic.storage_error(p, e, "creating", kept=False) from None
        try:
            return cls._init(p, study_name)
        except BaseException as e:      # a full disk: no stub that looks like a study
            shutil.rmtree(p, ignore_errors=True)
            cause = getattr(e, "cause", None)
            if cause is not None:
                raise atomic.storage_error(*cause, kept=False) from None
            raise

    @classmethod
    def create_at(cls, path: Path | str, study_name: str) -> "Writer":
        """A new results directory at `path` (for tools and tests that choose the name)."""
        p = Path(path).absolute()
        if p.exists() and any(p.iterdir()):
            raise atomic.StoreError(f"creating results at {p}: the directory is not empty")
        atomic.mkdir(p)
        return cls._init(p, study_name)

    @classmethod
    def _init(cls, p: Path, study_name: str) -> "Writer":
        atomic.mkdir(p / L.RUNS)
        atomic.write_json(p / L.MARKER, {"format_version": FORMAT_VERSION, "ccarena": __version__,
                                         "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                         "study": study_name})
        return cls(ResultsDir(p))

    def write_study(self, study, plan, source_path: str | None) -> None:
        self._writable()
        if source_path and Path(source_path).is_file():
            atomic.copy_file(Path(source_path), self.path / L.STUDY_TOML)
        self.write_study_raw(study.raw, plan.to_json())

    def write_study_raw(self, raw: dict, plan: dict) -> None:
        """The study as run (the merged TOML as a dict) and its plan as JSON."""
        self._writable()
        atomic.write_json(self.path / L.STUDY_JSON, raw)
        atomic.write_json(self.path / L.PLAN_JSON, plan)

    def write_preflight(self, pf: dict) -> None:
        self._json(L.PREFLIGHT_JSON, pf)

    def write_environment(self, env: dict) -> None:
        self._json(L.ENVIRONMENT_JSON, env)

    def write_resumes(self, resumes: list[dict]) -> None:
        self._json(L.RESUMES_JSON, resumes)
        self.results.__dict__.pop("resumes", None)

    def write_checks(self, checks: list[dict]) -> None:
        """The study's checks as evaluated (analysis.checks.record)."""
        self._json(L.CHECKS_JSON, checks)
        self.results.__dict__.pop("checks", None)

    def _json(self, name: str, obj) -> None:
        self._writable()
        atomic.write_json(self.path / name, obj)

    def write_table(self, name: str, df: pd.DataFrame) -> None:
        """A study-level table (runs, flows, cells) as <name>.parquet."""
        self._writable()
        atomic.write_parquet(self.path / f"{name}.parquet", df)

    def new_run(self, label: str) -> Path:
        """An empty directory for run `label` (what an interrupted attempt left is removed:
        a run without its meta.json was never complete)."""
        self._writable()
        d = L.run_dir(self.path, label)
        if d.exists() and not (d / L.RUN_MANIFEST).exists():
            shutil.rmtree(d)
        return atomic.mkdir(d)

    # A run that the machine's noise made invalid is run again (run.executor): the new
    # attempt is written to staging_dir(label) and, once complete, supersede() moves the
    # old one to superseded/<label>.<attempt>/ and the new one to runs/<label>/.
    def staging_dir(self, label: str) -> Path:
        self._writable()
        d = L.staging_dir(self.path, label)
        if d.exists():
            shutil.rmtree(d)
        return atomic.mkdir(d)

    def aside_record(self, label: str, attempt: int, meta: dict) -> dict:
        """What the next attempt records of the one it supersedes."""
        return {"attempt": attempt, "dir": L.aside_name(label, attempt),
                "run_id": meta["run_id"], "invalid_reasons": meta.get("invalid_reasons", [])}

    def update_meta(self, label: str, meta: dict) -> None:
        self._writable()
        where = L.run_dir(self.path, label) / L.RUN_MANIFEST
        manifest.check(meta, str(where))
        atomic.write_json(where, meta)

    def supersede(self, label: str, attempt: int, old_meta: dict) -> None:
        self._writable()
        run = L.run_dir(self.path, label)
        aside = L.aside_dir(self.path, label, attempt)
        k = 1
        while aside.exists():       # left by an interrupted earlier swap: keep both
            k += 1
            aside = L.aside_dir(self.path, label, attempt, k)
        # Ctrl-C or SIGTERM between the two renames would leave the run in no table: they
        # wait until both are done
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            run.rename(aside)
            L.staging_dir(self.path, label).rename(run)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        atomic.fsync_dir(self.path / L.RUNS)
        atomic.write_json(aside / L.RUN_MANIFEST, {**old_meta, "superseded_by_rerun": True})

    def write_run(self, rd: Path, tables: dict, flows: pd.DataFrame | None,
                  run: dict | None, meta: dict) -> None:
        """Store one run: every table, its metrics, and meta.json last with the manifest
        of what was written ({file: bytes}), which is what makes the run complete."""
        self._writable()
        files = {}
        for k, df in tables.items():
            atomic.write_parquet(rd / f"{k}.parquet", df)
            files[f"{k}.parquet"] = (rd / f"{k}.parquet").stat().st_size
        if flows is not None:
            atomic.write_parquet(rd / f"{RUN_METRICS}.parquet", flows)
            files[f"{RUN_METRICS}.parquet"] = (rd / f"{RUN_METRICS}.parquet").stat().st_size
        if run is not None:
            atomic.write_json(rd / L.RUN_METRICS_JSON, run)
            files[L.RUN_METRICS_JSON] = (rd / L.RUN_METRICS_JSON).stat().st_size
        meta["files"] = files
        manifest.check(meta, str(rd / L.RUN_MANIFEST))
        atomic.write_json(rd / L.RUN_MANIFEST, meta)

    def rebuild_summaries(self) -> None:
        """Write runs.parquet and flows.parquet anew from the run directories."""
        self._writable()
        self.results.forget()
        runs, flows = self.results.summary_tables()
        self.write_table("runs", runs)
        self.write_table("flows", flows)
        self.results.__dict__["_summaries"] = (runs, flows)

    def discard_in_flight(self) -> list[str]:
        """Clear what an interruption left; -> what was done, one entry per directory.

        - a run directory without meta.json and without the files a run stores once it is
          measured (STORED) was in flight: removed (it is run again);
        - one whose meta.json is unreadable, absent beside stored files, or whose files do
          not match its manifest was complete once and damaged since: moved whole to
          superseded/<label>.damaged, never deleted, and run again;
        - a complete run one of whose processes something outside killed (meta["killed"]:
          the link emulator or a flow engine ended by SIGKILL, SIGTERM, ...; run/parts.py)
          was cut short like an interrupted one: moved whole to
          superseded/<label>.interrupted and run again;
        - a complete run that ccarena itself failed before it was measured or in its
          metrics (meta["unmeasured"]: run/one_run.py) is no result: moved whole to
          superseded/<label>.unmeasured and run again;
        - a staged re-run (superseded/.<label>.next): adopted as the run when the swap was
          cut between its two renames (runs/<label> gone, the staged attempt complete),
          removed otherwise;
        - temporary files of writers that are gone (store/atomic.py) are removed."""
        self._writable()
        results = self.results
        done = []
        staged_dir = results.path / L.SUPERSEDED

        def aside(d, why: str, suffix: str) -> None:
            to = _free(staged_dir / f"{d.name}.{suffix}")
            staged_dir.mkdir(exist_ok=True)
            d.rename(to)
            done.append(f"{d.name} ({why}: moved to superseded/{to.name})")

        for d in results.incomplete_runs():
            if (d / L.RUN_MANIFEST).exists():
                aside(d, "damaged", "damaged")
            elif any((d / f).exists() for f in STORED):
                aside(d, "damaged: no meta.json beside its stored files", "damaged")
            else:
                shutil.rmtree(d)
                done.append(d.name)
        dirs = results.dirs
        for rid, meta in list(results.metas.items()):
            d = dirs[rid]
            if meta.get("killed"):
                who = ", ".join(f"{k.get('process')} {k.get('signal')}" for k in meta["killed"])
                aside(d, f"interrupted: {who}", "interrupted")
            elif meta.get("unmeasured"):
                u = meta["unmeasured"]
                aside(d, f"not measured: ccarena failed in its {u.get('stage')}",
                      "unmeasured")
        for d in sorted(staged_dir.glob(".*.next")) if staged_dir.is_dir() else []:
            label = d.name[1:-len(".next")]
            run = L.run_dir(results.path, label)
            if not run.exists() and _complete(d):
                d.rename(run)
                done.append(f"{label} (its completed re-run adopted)")
            else:
                shutil.rmtree(d)
                done.append(f"{label} (re-run)")
        for f in atomic.stale_temporaries(results.path):
            with contextlib.suppress(OSError):
                f.unlink()
        results.forget()
        return done

    def remove_if_no_run(self) -> bool:
        """Remove the whole directory when no run of it completed (a study that died
        before its first run leaves nothing); -> whether it was removed."""
        self._writable()
        if any((self.path / L.RUNS).glob(f"*/{L.RUN_MANIFEST}")):
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        return True


# written by a run only after it was measured (write_run): a directory holding one of them
# without its manifest lost the manifest rather than being in flight
STORED = (f"{RUN_METRICS}.parquet", L.RUN_METRICS_JSON)


def _complete(d) -> bool:
    try:
        meta = json.loads((d / L.RUN_MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return not missing_files(d, meta)


def _free(p):
    k, q = 1, p
    while q.exists():
        k += 1
        q = p.with_name(f"{p.name}-{k}")
    return q
