"""The guest's side of ccarena.vm: what a run inside the VM records about it, and the
entry point that runs a study there.

    run.environment.vm_record()      from CCARENA_VM, which the host hands the guest
    python -m ccarena.vm.guest run-study   runs the study in $CCARENA_VM_JOB (JSON)

The job carries the study already resolved on the host (extends, scale, overrides:
study.raw), so the guest runs exactly what the host validated."""
from __future__ import annotations

import json
import os
import sys

from ccarena.run.environment import vm_record  # noqa: F401 (the guest's record)

JOB_ENV = "CCARENA_VM_JOB"
RESULT_PREFIX = "ccarena-vm-results: "


def run_study_job(job: dict) -> str:
    """Run the job's study here; -> the results directory."""
    from ccarena.run.executor import run_plan
    from ccarena.study.load import parse_study
    study = parse_study(job["raw"], job["path"])
    study.scale = job.get("scale")
    total = [0]

    def on_run(r, meta):
        total[0] += 1
        state = "valid" if meta.get("valid") else \
            "invalid: " + "; ".join(meta.get("invalid_reasons") or [])
        print(f"  run {total[0]} {r.label} {r.cell} rep {r.rep}: {state}", flush=True)

    res = run_plan(study, on_run=on_run if job.get("progress", True) else None,
                    progress=False, **job.get("kwargs", {}))
    return str(res.path)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] != ["run-study"]:
        print("usage: python -m ccarena.vm.guest run-study  (job in $CCARENA_VM_JOB)",
              file=sys.stderr)
        return 2
    from ccarena.errors import CcarenaError
    try:
        path = run_study_job(json.loads(os.environ[JOB_ENV]))
    except KeyboardInterrupt:
        return 130
    except CcarenaError as e:
        print(f"ccarena: {e}", file=sys.stderr)
        return 1
    # on stderr, which the host keeps, so the user's output has only the run lines
    print(RESULT_PREFIX + path, file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
