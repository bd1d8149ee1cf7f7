"""Resuming a study: run only what is missing or was in flight, with the same plan.

`resume_plan(results, study, ...)` rebuilds the plan from the seed, order and repetitions
recorded in plan.json and refuses when the study is not the one that was planned (every
changed key named) or the plan it gives differs; `discard_in_flight(results)` removes what
an interruption left half-written (a run directory without its complete manifest, a
re-run being staged), so nothing is ever half-counted; `todo(results, plan)` is the
planned runs without a complete run directory, in plan order."""
from __future__ import annotations

import json
import shutil
import time

from ccarena.errors import ResultsError
from ccarena.store.results import Writer, missing_files
from ccarena.study.plan import Plan, PlannedRun, make_plan


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

    - a run directory without meta.json was in flight: removed (it is run again);
    - one whose meta.json is unreadable or whose files do not match its manifest was
      complete once and damaged since: moved whole to superseded/<label>.damaged, never
      deleted, and run again;
    - a staged re-run (superseded/.<label>.next): adopted as the run when the swap was
      cut between its two renames (runs/<label> gone, the staged attempt complete),
      removed otherwise."""
    done = []
    staged_dir = results.path / "superseded"
    for d in results.incomplete_runs():
        if (d / "meta.json").exists():
            aside = _free(staged_dir / f"{d.name}.damaged")
            staged_dir.mkdir(exist_ok=True)
            d.rename(aside)
            done.append(f"{d.name} (damaged: moved to superseded/{aside.name})")
        else:
            shutil.rmtree(d)
            done.append(d.name)
    for d in sorted(staged_dir.glob(".*.next")) if staged_dir.is_dir() else []:
        label = d.name[1:-len(".next")]
        run = results.path / "runs" / label
        if not run.exists() and _complete(d):
            d.rename(run)
            done.append(f"{label} (its completed re-run adopted)")
        else:
            shutil.rmtree(d)
            done.append(f"{label} (re-run)")
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


def record(results, done_before: int, discarded: list[str], environment: dict) -> None:
    """resumes.json: when the study was resumed, what was kept and what discarded."""
    path = results.path / "resumes.json"
    past = json.loads(path.read_text()) if path.exists() else []
    past.append({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "complete_runs": done_before,
                 "discarded": discarded, "environment": environment})
    Writer(results).write_json("resumes.json", past)
