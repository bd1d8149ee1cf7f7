"""Resuming a study: run only what is missing or was in flight, with the same plan.

`resume_plan(results, study, ...)` rebuilds the plan from the seed, order and repetitions
recorded in plan.json and refuses when the study is not the one that was planned (every
changed key named) or the plan it gives differs; `discard_in_flight(results)` clears what
an interruption left (a run directory without its complete manifest, a re-run being
staged, a run one of whose processes was killed from outside, temporary files of dead
writers), so nothing is ever half-counted; `todo(results, plan)` is the planned runs
without a complete run directory, in plan order."""
from __future__ import annotations

import contextlib
import json
import shutil
import time

from ccarena.errors import ResultsError
from ccarena.store import atomic
from ccarena.store.results import Writer, missing_files
from ccarena.store.tables import RUN_METRICS
from ccarena.study.plan import Plan, PlannedRun, make_plan


# written by a run only after it was measured (store.results.write_run): a directory
# holding one of them without meta.json lost its manifest rather than being in flight
STORED = (f"{RUN_METRICS}.parquet", "metrics.json")


class ResumeError(ResultsError):
    """The results directory cannot be resumed with this study."""


def differences(a, b, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two raw study dicts."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            key = f"{prefix}.{k}" if prefix else str(k)
            if k not in a:
                out.append(f"{key} (added)")
            elif k not in b:
                out.append(f"{key} (removed)")
            else:
                out += differences(a[k], b[k], key)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{prefix}[{i}]")
        return out
    return [] if a == b else [prefix or "(the whole study)"]


def resume_plan(results, study, seed=None, shuffle=None, repetitions=None,
                reruns=None) -> Plan:
    stored = results.plan
    if not stored.get("runs"):
        raise ResumeError(f"resuming {results.path}: it has no plan.json with runs, so "
                          "there is nothing to resume")
    diff = differences(_plain(results.study), _plain(study.raw))
    if diff:
        shown = ", ".join(diff[:8]) + (f" and {len(diff) - 8} more" if len(diff) > 8 else "")
        raise ResumeError(f"resuming {results.path} with {study.path}: the study changed "
                          f"since the plan was made: {shown} (give the same file, --scale "
                          "and --duration as the first run, or start a new study)")
    fixed = {"seed": (seed, stored.get("seed")), "repetitions":
             (repetitions, stored.get("repetitions")), "reruns": (reruns, stored.get("reruns"))}
    for k, (given, was) in fixed.items():
        if given is not None and was is not None and given != was:
            raise ResumeError(f"resuming {results.path}: --{k} {given} differs from the "
                              f"planned {was}")
    if shuffle is not None and shuffle != stored.get("shuffled"):
        raise ResumeError(f"resuming {results.path}: the planned order was "
                          f"{'shuffled' if stored.get('shuffled') else 'in order'}")
    reps = stored.get("repetitions") or max(r["rep"] for r in stored["runs"])
    plan = make_plan(study, seed=stored["seed"], shuffle=stored["shuffled"],
                     repetitions=reps, reruns=stored.get("reruns"))
    again = _plain(plan.to_json())
    if again["runs"] != stored["runs"] or again["cells"] != stored.get("cells", again["cells"]):
        raise ResumeError(f"resuming {results.path}: the study gives another plan than the "
                          "stored one (another ccarena version?); start a new study")
    return plan


def _plain(x):
    """As it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(x, default=str))


def discard_in_flight(results) -> list[str]:
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
    - a staged re-run (superseded/.<label>.next): adopted as the run when the swap was
      cut between its two renames (runs/<label> gone, the staged attempt complete),
      removed otherwise;
    - temporary files of writers that are gone (store/atomic.py) are removed."""
    done = []
    staged_dir = results.path / "superseded"

    def aside(d, why: str, suffix: str) -> None:
        to = _free(staged_dir / f"{d.name}.{suffix}")
        staged_dir.mkdir(exist_ok=True)
        d.rename(to)
        done.append(f"{d.name} ({why}: moved to superseded/{to.name})")

    for d in results.incomplete_runs():
        if (d / "meta.json").exists():
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
    for d in sorted(staged_dir.glob(".*.next")) if staged_dir.is_dir() else []:
        label = d.name[1:-len(".next")]
        run = results.path / "runs" / label
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


def _complete(d) -> bool:
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (OSError, ValueError):
        return False
    return not missing_files(d, meta)


def _free(p):
    k, q = 1, p
    while q.exists():
        k += 1
        q = p.with_name(f"{p.name}-{k}")
    return q


def todo(results, plan: Plan) -> list[PlannedRun]:
    done = {m.get("label") for m in results.metas.values()}
    return [r for r in plan.runs if r.label not in done]


def record(results, done_before: int, discarded: list[str], environment: dict,
           executor: dict | None = None) -> None:
    """resumes.json: when the study was resumed, what was kept and what discarded, on
    which machine and with which executor (None: one run at a time)."""
    path = results.path / "resumes.json"
    try:
        past = json.loads(path.read_text()) if path.exists() else []
    except (OSError, ValueError):
        past = []       # a damaged record of earlier resumes: this one is still kept
    past.append({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "complete_runs": done_before,
                 "discarded": discarded, "environment": environment,
                 "executor": executor})
    Writer(results).write_json("resumes.json", past)
