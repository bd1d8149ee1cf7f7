"""The one path from a study to its stored answer.

    run_study(study, ...) -> ResultsDir with .checks, .passed and .report

1. the plan's runs: here (run/executor.py: serially, `jobs` at once, or on a `cluster`'s
   workers), or by a `runner` that runs them elsewhere and stores them here (the
   reference kernel's VM: ccarena.vm.run_plan);
2. the study's checks ([[expect]]) evaluated on the stored runs and stored (checks.json);
3. report.html, when asked.

The public API (ccarena.run_study) and `ccarena run` (text, --json, --vm, --jobs,
--cluster) call this; nothing else runs these steps, so every way of running a study
stores the same answer."""
from __future__ import annotations

from ccarena.analysis import check_spec
from ccarena.analysis.checks import record
from ccarena.run.executor import run_plan
from ccarena.store.results import ResultsDir
from ccarena.study.model import Study


def run_study(study: Study, *, results_base="results", seed: int | None = None,
              shuffle: bool | None = None, repetitions: int | None = None,
              reruns: int | None = None, resume=None, jobs: int = 1,
              cluster: str | None = None, force_cc: str | None = None,
              event_log: bool = False, progress: bool = True, report: bool = False,
              runner=None, on_run=None, on_testbed=None) -> ResultsDir:
    """Run the study and store its answer; -> its results directory, with `checks` (one
    dict per check), `passed` (True, False, or None without checks) and `report` (the
    path of report.html, or None).

    runner(study, results_base=, seed=, shuffle=, repetitions=, reruns=, force_cc=,
    event_log=, progress=) -> ResultsDir runs the plan somewhere else (callbacks, resume,
    jobs and cluster are this machine's: a runner takes none of them)."""
    check_spec.check(study)     # a check that names no metric fails before the first run
    if runner is None:
        res = run_plan(study, results_base=results_base, seed=seed, shuffle=shuffle,
                       repetitions=repetitions, reruns=reruns, resume=resume, jobs=jobs,
                       cluster=cluster, force_cc=force_cc, event_log=event_log,
                       progress=progress, on_run=on_run, on_testbed=on_testbed)
    else:
        res = runner(study, results_base=results_base, seed=seed, shuffle=shuffle,
                     repetitions=repetitions, reruns=reruns, force_cc=force_cc,
                     event_log=event_log, progress=progress)
    return conclude(res, study, report=report)


def conclude(results: ResultsDir, study: Study, *, report: bool) -> ResultsDir:
    """Steps 2 and 3 on a results directory whose runs are stored."""
    record(results, study)
    results.report = None
    if report:
        from ccarena.report import write_report
        results.report = write_report(results.path)
    return results
