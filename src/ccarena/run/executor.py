"""Run a study's plan: preflight, the plan, then each planned run in plan order, storing
each as it completes (run/study.py adds the checks and the report on top).

    run_plan(study) -> ResultsDir

Preflight raises before anything is built (no backend, a missing algorithm or binary).
SIGINT, SIGTERM and SIGHUP are recorded and acted on at the next safe point (run/
interrupt.py): the current run is torn down, completed runs stay stored, and
interrupt.Interrupted (a KeyboardInterrupt) is raised."""
from __future__ import annotations

import contextlib
import secrets

from ccarena import cc as ccmod
from ccarena.analysis import aggregates
from ccarena.errors import PreflightError
from ccarena.run import environment, interrupt
from ccarena.run.scaleout import shares
from ccarena.measure import validity
from ccarena.run import resume as resume_mod
from ccarena.run.one_run import execute_run
from ccarena.run.preflight import preflight
from ccarena.run.progress import Progress
from ccarena.store import atomic
from ccarena.store.results import ResultsDir
from ccarena.store.writer import Writer
from ccarena.study.model import Study
from ccarena.testbed import leftovers
from ccarena.testbed.guest import pool as guest_pool
from ccarena.study.plan import PlannedRun, make_plan


def run_plan(study: Study, *, results_base="results", seed=None, shuffle=None,
              repetitions=None, reruns=None, progress=True, force_cc=None, event_log=False,
              on_run=None, on_testbed=None, resume=None, jobs: int = 1,
              cluster: str | None = None) -> ResultsDir:
    """Run the study's plan and return its results directory.

    jobs: run this many runs at once on this machine, each held to its own share of the
    CPUs (run/scaleout/shares.py); cluster: the address of a Dask scheduler whose workers
    (`ccarena worker`) run the runs. Either way the plan, seeds and stored layout are a
    serial study's (run/scaleout/cluster.py); on_testbed is not called for runs that run elsewhere.

    resume: a results directory of this study; only its planned runs that are missing or
    were in flight are run (same plan, same seeds), after checking that the study is the
    one planned (resume.py).
    on_run(planned_run, meta) after each run; on_testbed(topology) once each run's
    network is built (tests and tools that watch a run from outside use it).

    A run that only the machine's noise made invalid (validity.noise_only) is run again,
    up to `reruns` (default study.reruns) times, with the same seed; each attempt set aside
    is kept under superseded/ and listed in the final attempt's meta["superseded"]. Once
    a cell's re-runs ended invalid all the same, its noise is taken for its own (e.g. a
    workload that saturates the CPU) and its later runs are not re-run."""
    if jobs < 1 or (cluster and jobs != 1):
        raise PreflightError(f"--jobs {jobs}" + (" with --cluster: the cluster's workers "
                             "decide how many runs run at once (ccarena worker --slots)"
                             if cluster else ": give 1 or more"))
    with interrupt.handled():
        # a cluster's submitter need not be a test bed: each worker checks its own machine
        pf = preflight(study, force_cc) if not cluster else None
        cpu_shares = shares.partition(shares.usable_cpus(), jobs) if jobs > 1 else None
        for share in cpu_shares or []:
            shares.check_study(study, share)
        executor = None if jobs == 1 and not cluster else \
            {"kind": "cluster", "scheduler": cluster} if cluster else \
            {"kind": "local", "jobs": jobs, "cpu_shares": cpu_shares}
        if resume is not None:
            results = ResultsDir.open(resume)
        else:
            results = Writer.create(study.name, results_base).results
        try:
            # one writer per results directory: a second `run --resume` or a rebuild
            # while this study runs would discard its run in flight or interleave with
            # its files
            with atomic.exclusive(results.path,
                                  "resuming" if resume is not None else "running"):
                return _run_in(results, study, resume, pf, executor, cpu_shares, seed=seed,
                               shuffle=shuffle, repetitions=repetitions, reruns=reruns,
                               progress=progress, force_cc=force_cc, event_log=event_log,
                               on_run=on_run, on_testbed=on_testbed, cluster=cluster)
        except BaseException as e:
            if resume is None:
                _leave_nothing(results, e)
            raise


def _leave_nothing(results: ResultsDir, e: BaseException) -> None:
    """A new study that stops (an error, a full disk, a signal) before any of its runs
    completed leaves nothing: its directory is removed, since there is nothing to resume
    (without a stored plan, nothing could be). A storage failure is then said again
    without advising --resume."""
    try:
        removed = Writer(results).remove_if_no_run()
    except OSError:
        return
    if not removed:
        return
    cause = getattr(e, "cause", None) if isinstance(e, atomic.StoreError) else \
        (e.filename or str(results.path), e, "writing") \
        if isinstance(e, OSError) and e.errno is not None else None
    if cause is not None:
        raise atomic.storage_error(*cause, kept=False) from None


def _run_in(results, study, resume, pf, executor, cpu_shares, *, seed, shuffle,
            repetitions, reruns, progress, force_cc, event_log, on_run, on_testbed,
            cluster) -> ResultsDir:
    if resume is not None:
        plan = resume_mod.resume_plan(results, study, seed=seed, shuffle=shuffle,
                                      repetitions=repetitions, reruns=reruns)
        done_before = len(results.metas)
        discarded = Writer(results).discard_in_flight()
        # a killed ccarena left its namespaces and algorithm holds: remove what no live
        # process owns (other studies running now keep theirs)
        if not cluster:
            leftovers.cleanup()
            ccmod.cleanup_stale()
        resume_mod.record(results, done_before, discarded, environment.machine(), executor)
    else:
        plan = make_plan(study, seed=seed, shuffle=shuffle, repetitions=repetitions,
                         reruns=reruns)
        w = Writer(results)
        w.write_study(study, plan, study.path)
        if pf is not None:
            w.write_preflight(pf)
        w.write_environment({**environment.machine(), **(
            {"executor": executor} if executor else {})})
    todo = resume_mod.todo(results, plan)
    if executor:
        _run_parallel(study, plan, results, todo, pf, cluster=cluster, cpu_shares=cpu_shares,
                      force_cc=force_cc, event_log=event_log, progress=progress,
                      on_run=on_run)
        return results
    cell_index = {r.cell: int(r.cell[1:]) for r in plan.runs}
    reruns = plan.reruns        # recorded in plan.json
    unhelped: set[str] = set()      # cells whose re-runs were invalid all the same
    bar = Progress(len(todo), study.name) if progress else None
    with ccmod.acquire(sorted(pf["algorithms"]), _study_token(),
                       force=force_cc) as kernel_names, \
            guest_pool.study_pool(log=(lambda m: bar.p.console.print(f"  {m}", markup=False))
                                  if bar else None) as guests:      # VM hosts' guests
        try:
            for r in todo:
                interrupt.checkpoint()
                backend = pf["cells"][cell_index[r.cell]]["backend"]
                if bar:
                    bar.update(r)
                guests.ready(r.study)       # booted before the run, not in it
                meta = _measure(r, results, reruns, unhelped, lambda **kw: execute_run(
                    r, results, backend, kernel_names, pf, event_log=event_log,
                    on_testbed=on_testbed, worker=environment.worker(), **kw), bar)
                aggregates.refresh(results)
                if bar:
                    bar.finished(r, meta)
                if on_run:
                    on_run(r, meta)
        finally:
            if bar:
                bar.close()
    if not todo:
        aggregates.refresh(results)
    return results


def _run_parallel(study: Study, plan, results: ResultsDir, todo: list[PlannedRun], pf,
                  *, cluster, cpu_shares, force_cc, event_log, progress, on_run) -> None:
    """The runs through Dask (run/scaleout/cluster.py): an in-process cluster of one worker per
    CPU share, or the workers of the scheduler at `cluster`. Locally the study holds its
    algorithms throughout, as a serial one does, so each run's own hold is a count."""
    from ccarena.run.scaleout import cluster as cl
    from ccarena.run.scaleout import remote
    bar = Progress(len(todo), study.name) if progress else None
    holds = contextlib.nullcontext() if cluster else \
        ccmod.acquire(sorted(pf["algorithms"]), _study_token(), force=force_cc)
    try:
        with holds, \
                (cl.remote_client(cluster) if cluster else cl.local_client(cpu_shares)) as client:
            if cluster and todo and not cl.testbed_slots(client):
                cl.note(f"no worker of {cluster} offers a test bed yet; the runs wait for "
                        "one (start workers with `ccarena worker " + cluster + "`)")
            d = cl.Dispatcher(client, study, plan, results, force_cc=force_cc,
                              event_log=event_log, bar=bar, on_run=on_run,
                              merge_preflight=bool(cluster))
            try:
                d.run(todo)
            except BaseException:
                if not cluster:     # this process's runs: torn down before it goes on
                    remote.stop_all()
                raise
    finally:
        if bar:
            bar.close()
    aggregates.refresh(results)


def _measure(r: PlannedRun, results: ResultsDir, reruns: int, unhelped: set, execute,
             bar) -> dict:
    """Run `r` (execute(**kw) -> meta), and again while only the machine's noise made it
    invalid, up to `reruns` times. The new attempt is staged: until it is complete, the
    one it would replace stays the run's (an interruption loses neither). `unhelped`:
    cells whose last re-runs were invalid for noise all the same, not re-run until one of
    their runs is valid (updated here)."""
    meta = execute()
    if reruns and r.cell in unhelped and validity.noise_only(meta):
        meta["rerun_skipped"] = ("an earlier run of this cell was run again and was "
                                 "invalid all the same")
        Writer(results).update_meta(r.label, meta)
        return meta
    set_aside: list[dict] = []
    while not meta["valid"] and len(set_aside) < reruns and validity.noise_only(meta):
        aside = Writer(results).aside_record(r.label, len(set_aside) + 1, meta)
        if bar:
            bar.rerun(r, aside["attempt"])
        new = execute(superseded=set_aside + [aside], staged=True)
        Writer(results).supersede(r.label, aside["attempt"], meta)
        set_aside.append(aside)
        meta = new
    if set_aside and validity.noise_only(meta):
        unhelped.add(r.cell)
    elif meta["valid"]:
        unhelped.discard(r.cell)    # the noise was passing after all
    return meta


def _study_token() -> str:
    return "s" + secrets.token_hex(3)
