"""The layout of a results directory: every file and folder name, declared once. Only the
store (results, writer, archive, bundle) builds paths from these; everything else asks
the store for what it holds.

    <study>-<YYYYmmdd-HHMMSS>/
        ccarena-results.json    MARKER: format marker and version (checked on every open)
        study.toml study.json   the study as written, and as run (the merged TOML)
        plan.json               cells x repetitions, seeds, order
        preflight.json environment.json resumes.json checks.json
        runs/<label>/           one run: raw/, <table>.parquet, flow_metrics.parquet,
                                metrics.json, meta.json (the run's manifest, written last)
        superseded/<label>.<n>/ attempts set aside for the machine's noise;
                   .<label>.next/  a re-run being written
        runs.parquet flows.parquet cells.parquet   summaries over the complete runs
        report.html"""
from __future__ import annotations

from pathlib import Path

MARKER = "ccarena-results.json"
STUDY_TOML = "study.toml"
STUDY_JSON = "study.json"
PLAN_JSON = "plan.json"
PREFLIGHT_JSON = "preflight.json"
ENVIRONMENT_JSON = "environment.json"
RESUMES_JSON = "resumes.json"
CHECKS_JSON = "checks.json"
REPORT_HTML = "report.html"
RUNS = "runs"
SUPERSEDED = "superseded"
RUN_MANIFEST = "meta.json"        # runs/<label>/meta.json: store.manifest
RUN_METRICS_JSON = "metrics.json"  # runs/<label>/metrics.json: the run-level metrics
RUN_RAW = "raw"                    # runs/<label>/raw/: what the run's processes wrote


def run_dir(root: Path, label: str) -> Path:
    return Path(root) / RUNS / label


def staging_dir(root: Path, label: str) -> Path:
    """Where a re-run of `label` is written until it replaces the run (Writer.supersede)."""
    return Path(root) / SUPERSEDED / f".{label}.next"


def aside_dir(root: Path, label: str, attempt: int, k: int = 1) -> Path:
    return Path(root) / SUPERSEDED / (f"{label}.{attempt}" + (f"-{k}" if k > 1 else ""))


def aside_name(label: str, attempt: int) -> str:
    """aside_dir relative to the results directory (what a run's manifest records)."""
    return f"{SUPERSEDED}/{label}.{attempt}"
