"""One planned run as a task that any machine can run, and the process that runs it.

    payload = make_payload(study, plan, planned_run, ...)    the submitter's side
    r = planned_run(payload)                                  the worker rebuilds the plan
    python -m ccarena.run.scaleout.task DIR                            the run process

A payload is plain data (JSON): the study as run (study.json's dict) and its path, the
plan's seed, order, repetitions and re-runs, the run's label and seed, and the options.
The worker rebuilds the plan from them exactly as `--resume` does and refuses a label
whose seed differs, so a run is the same run on every machine.

The run process reads DIR/payload.json (with the CPU share the worker gives it), holds
itself to that share, runs preflight for the run's cell, makes its algorithms usable,
runs it with execute_run into DIR/results/ and writes DIR/result.json (the run's meta,
the cell's preflight); or DIR/error.txt, one line, and exits non-zero. It runs in the
main thread of its own process, so the watchdog, signals and teardown work as in a serial
study. SIGTERM (also when its parent dies: PR_SET_PDEATHSIG), SIGINT or SIGHUP tears the
run down at its next safe point (run/interrupt.py), and further signals are ignored until
it is down; a run process whose parent is gone removes DIR itself."""
from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import sys
import traceback
from pathlib import Path

from ccarena.version import __version__
from ccarena.errors import CcarenaError, RunError
from ccarena.study.plan import Plan, PlannedRun, make_plan
from ccarena.study.model import Study

PAYLOAD_VERSION = 1
PR_SET_PDEATHSIG = 1


class TaskError(RunError):
    """A task cannot be run as given (another plan, another format)."""


def make_payload(study: Study, plan: Plan, r: PlannedRun, *, force_cc=None,
                 event_log: bool = False, superseded: list[dict] | None = None) -> dict:
    return {"version": PAYLOAD_VERSION, "ccarena": __version__,
            "study": study.raw, "study_path": str(study.path), "scale": study.scale,
            "plan": {"seed": plan.seed, "shuffled": plan.shuffled,
                     "repetitions": plan.repetitions, "reruns": plan.reruns},
            "label": r.label, "cell": r.cell, "seed": r.seed, "index": r.index,
            "force_cc": force_cc, "event_log": bool(event_log),
            "superseded": list(superseded or [])}


def planned_run(payload: dict) -> PlannedRun:
    """The payload's run, from the plan rebuilt here; TaskError if it is not the same."""
    from ccarena.study.load import parse_study
    label = payload.get("label")
    if payload.get("version") != PAYLOAD_VERSION:
        raise TaskError(f"run {label}: task format {payload.get('version')} is not this "
                        f"ccarena's ({PAYLOAD_VERSION}); run the same ccarena everywhere "
                        f"(submitter {payload.get('ccarena')}, worker {__version__})")
    study = parse_study(payload["study"], payload["study_path"])
    study.scale = payload.get("scale")
    p = payload["plan"]
    plan = make_plan(study, seed=p["seed"], shuffle=p["shuffled"],
                     repetitions=p["repetitions"], reruns=p["reruns"])
    for r in plan.runs:
        if r.label == label:
            if r.seed != payload["seed"] or r.cell != payload["cell"]:
                raise TaskError(f"run {label}: this worker's plan gives seed {r.seed} "
                                f"({r.cell}) where the submitter's gives {payload['seed']} "
                                f"({payload['cell']}); run the same ccarena and Python "
                                "everywhere")
            return r
    raise TaskError(f"run {label}: not in the plan this worker rebuilt from the study "
                    f"({len(plan.runs)} runs); run the same ccarena everywhere")


# -- the run process ---------------------------------------------------------------------

def die_with_parent(parent: int) -> None:
    """SIGTERM this process when its parent dies (the run is then torn down)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:      # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def run(d: Path) -> int:
    from ccarena.run import interrupt
    # until the run builds something, a signal stops it at once: importing and checking
    # this machine take seconds on a busy one, and nothing needs tearing down yet
    with interrupt.interruptible():
        from ccarena import cc as ccmod
        from ccarena.run import environment
        from ccarena.run.scaleout import shares
        from ccarena.run.one_run import execute_run
        from ccarena.run.preflight import preflight
        from ccarena.store.atomic import write_json
        from ccarena.store.writer import Writer
        payload = json.loads((d / "payload.json").read_text())
        share = payload.get("cpuset")
        shares.apply(share)
        r = planned_run(payload)
        shares.check_study(r.study, share)
        pf = preflight(r.study, payload.get("force_cc"))
        backend = pf["cells"][0]["backend"]
        results = Writer.create(r.study.name, d / "results").results
        worker = {**environment.worker(), **(payload.get("worker") or {})}
    with ccmod.acquire(sorted(r.study.algorithms()), "t" + secrets.token_hex(3),
                       force=payload.get("force_cc")) as kernel_names:
        meta = execute_run(r, results, backend, kernel_names, pf,
                           event_log=payload.get("event_log", False),
                           superseded=payload.get("superseded") or None, cpuset=share,
                           worker=worker)
    write_json(d / "result.json", {"meta": meta, "preflight": pf,
                                   "run_dir": str(results.label_dir(r.label))})
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    d = Path(argv[0])
    parent = int(argv[1]) if len(argv) > 1 else os.getppid()
    from ccarena.run import interrupt
    try:
        # the first signal tears the run down at its next safe point; later ones (a
        # parent with threads makes the kernel send PR_SET_PDEATHSIG as each of its
        # threads exits, so one worker's death may come as several SIGTERMs) never cut
        # that teardown short
        with interrupt.handled():
            die_with_parent(parent)
            return run(d)
    except KeyboardInterrupt:
        _error(d, "interrupted: the run was torn down")
        return 143
    except CcarenaError as e:
        _error(d, str(e))
        return 1
    except Exception as e:  # noqa: BLE001 — a bug: one line for the submitter, the trace here
        traceback.print_exc()
        _error(d, f"{type(e).__name__}: {e}")
        return 1
    finally:
        # no second signal may stop the cleanup half-way
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        if os.getppid() != parent or not _alive(parent):      # nobody will collect it
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended: nobody will collect from it)."""
    import psutil
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def _error(d: Path, text: str) -> None:
    try:
        (d / "error.txt").write_text(" ".join(text.split()))
    except OSError:
        pass


if __name__ == "__main__":
    code = main()
    # everything it writes is flushed and renamed (store/atomic.py) and its run torn down:
    # skip the interpreter's teardown of pandas, pyarrow & co., which takes seconds on a
    # busy machine, so a stopped run's process is gone as soon as its run is
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
