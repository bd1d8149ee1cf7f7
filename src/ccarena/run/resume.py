"""Resuming a study: run only what is missing or was in flight, with the same plan.

`resume_plan(results, study, ...)` rebuilds the plan from the seed, order and repetitions
recorded in the stored plan and refuses when the study is not the one that was planned
(every changed key named) or the plan it gives differs; the store's
`Writer.discard_in_flight()` clears what an interruption left, so nothing is ever
half-counted; `todo(results, plan)` is the planned runs without a complete run directory,
in plan order."""
from __future__ import annotations

import json
import time

from ccarena.errors import ResultsError
from ccarena.store.writer import Writer
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
        raise ResumeError(f"resuming {results.path}: it has no stored plan with runs, so "
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


def todo(results, plan: Plan) -> list[PlannedRun]:
    done = {m.get("label") for m in results.metas.values()}
    return [r for r in plan.runs if r.label not in done]


def record(results, done_before: int, discarded: list[str], environment: dict,
           executor: dict | None = None) -> None:
    """The study's resume record (ResultsDir.resumes): when it was resumed, what was kept
    and what discarded, on which machine and with which executor (None: one run at a
    time). A damaged record of earlier resumes reads as none: this one is still kept."""
    past = list(results.resumes)
    past.append({"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "complete_runs": done_before,
                 "discarded": discarded, "environment": environment,
                 "executor": executor})
    Writer(results).write_resumes(past)
