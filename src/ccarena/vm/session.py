"""Running a command or a study in the reference kernel: the API behind ccarena.vm."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ccarena.testbed.guest import accel as accel_mod
from ccarena.vm import boot as _boot
from ccarena.vm.boot import VmConfig, VmError, VmResult


def config_from_env(**over) -> VmConfig:
    """VmConfig with CCARENA_VM_ACCEL, CCARENA_VM_CPUS, CCARENA_VM_MEMORY as defaults."""
    c = VmConfig(accel=os.environ.get("CCARENA_VM_ACCEL", "auto"),
                 cpus=int(os.environ.get("CCARENA_VM_CPUS", "2")),
                 memory=os.environ.get("CCARENA_VM_MEMORY", "2G"))
    for k, v in over.items():
        if v is not None:
            setattr(c, k, v)
    return c


def run(argv: list[str], config: VmConfig | None = None, *, capture: bool = False,
        log=None, **kw) -> VmResult:
    """Run `argv` as root in the reference kernel; -> VmResult (rc, output if captured,
    accelerator, boot time)."""
    return _boot.boot(list(argv), config or config_from_env(), capture=capture, log=log, **kw)


def plan_runner(config: VmConfig | None = None, log=None):
    """A runner for ccarena.run.study.run_study: the study's plan run in the VM."""
    def runner(study, **kw):
        return run_plan(study, config=config, log=log, **kw)
    return runner


def run_plan(study, *, results_base="results", config: VmConfig | None = None,
             progress: bool = True, log=None, **kwargs):
    """Run `study`'s plan (a loaded Study) inside the VM; -> the ResultsDir on the host,
    laid out as any run's (the checks and the report are the host's: run/study.py).
    kwargs are executor.run_plan's (seed, shuffle, repetitions, reruns, force_cc,
    event_log); callbacks cannot cross into the VM.

    If the VM fails or is interrupted, the runs it completed are kept (as after Ctrl-C on
    the host), the one it was in is removed, and VmError says what happened."""
    from ccarena.store.results import open_results
    from ccarena.vm.guest import JOB_ENV, RESULT_PREFIX
    bad = {"on_run", "on_testbed"} & set(kwargs)
    if bad:
        raise TypeError(f"run_plan in a VM takes no callbacks ({', '.join(sorted(bad))})")
    if any(c.study.vm_hosts for c in study.cells) or study.vm_hosts:
        raise VmError(f"{study.path}: the study has VM hosts ([hosts.<host>] vm): their "
                      "guests boot the reference kernel themselves; run it without --vm")
    base = Path(results_base).absolute()
    base.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in base.iterdir()}
    job = {"raw": study.raw, "path": str(study.path), "scale": getattr(study, "scale", None),
           "progress": progress, "kwargs": {**kwargs, "results_base": str(base)}}
    config = config or config_from_env()
    if log:
        accel, _ = _boot.accel_for(config, _boot.image_mod.locate())
        advice = tcg_advice(study, accel)
        if advice:
            log(advice)
    config.rwdirs = tuple(config.rwdirs) + (str(base),)
    config.env = {**config.env, JOB_ENV: json.dumps(job)}
    sink = sys.stdout if progress else None
    res = None
    try:
        res = _boot.boot([sys.executable, "-m", "ccarena.vm.guest", "run-study"], config,
                   capture=True, stdout=sink if sink else _Null(), stderr=_Null(), log=log)
    finally:
        new = sorted(p for p in base.iterdir() if p.name not in before and p.is_dir())
        if res is None or res.rc != 0:
            for p in new:
                _drop_incomplete(p)
    lines = res.stderr.splitlines()
    paths = [ln[len(RESULT_PREFIX):] for ln in lines if ln.startswith(RESULT_PREFIX)]
    rest = [ln for ln in lines if ln.strip() and not ln.startswith(RESULT_PREFIX)]
    if res.rc != 0 or not paths:
        why = rest[-1] if rest else f"exit {res.rc}"
        raise VmError(why[len("ccarena: "):] if why.startswith("ccarena: ") else
                      f"running {study.name} in the VM failed: {why}")
    if rest and progress:       # the guest's warnings, now that it went well
        print("\n".join(rest), file=sys.stderr)
    return open_results(paths[-1])


# what a guest under TCG carries (testbed/guest/accel.py, docs/vm.md, Limits)
TCG_RATE_BPS = accel_mod.TCG_RATE_BPS
TCG_SAMPLE_S = accel_mod.TCG_SAMPLE_S


def tcg_advice(study, accel: str) -> str | None:
    """A warning for a study a TCG guest is too slow for (its runs will be flagged
    invalid, not shown as results), or None."""
    if accel != "tcg":
        return None
    cells = [c.study for c in study.cells] or [study]
    rates = [r for c in cells for r in (c.bottleneck.rate_bps, c.bottleneck.reverse_rate_bps)
             if r]
    fast = max(rates) if rates else None
    sample = min(c.sample_interval_s for c in cells)
    why = []
    if fast is None or fast > TCG_RATE_BPS:
        why.append("an unlimited bottleneck" if fast is None
                   else f"a {fast / 1e6:g} Mbit/s bottleneck")
    if sample < TCG_SAMPLE_S:
        why.append(f"samples every {sample * 1e3:g} ms")
    if not why:
        return None
    return ("vm: warning: under TCG (no KVM) a guest carries about 2 Mbit/s of TCP with its "
            f"samples intact, sampled every {TCG_SAMPLE_S * 1e3:g} ms (docs/vm.md, Limits); "
            f"this study has {' and '.join(why)}: expect its runs to be flagged invalid")


def _drop_incomplete(results_dir: Path) -> None:
    """After a VM that died: the run it was in and any staged re-run are discarded, as a
    resume would; a results directory with no completed run is removed whole."""
    from ccarena.analysis import aggregates
    from ccarena.store.results import ResultsDir
    from ccarena.store.writer import Writer
    try:
        w = Writer(ResultsDir.open(results_dir))
        w.discard_in_flight()
        if w.remove_if_no_run():
            return
        aggregates.refresh(w.results)
    except Exception:  # noqa: BLE001 — the completed runs stay readable; summaries rebuild
        pass


class _Null:
    def write(self, s):
        return len(s)

    def flush(self):
        pass
