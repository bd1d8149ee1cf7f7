"""ccarena: a laboratory for TCP congestion-control experiments.

The Python API does what the CLI does:

    import ccarena
    study = ccarena.load_study("quickstart")          # a file or a built-in name
    res = ccarena.run_study(study, report=True)       # needs root; -> results directory
    res.passed, res.checks                            # the study's [[expect]] checks
    runs = res.runs                                   # pandas, one row per run
    runs.groupby("bottleneck_buffer").goodput_bps.mean()
    fig = ccarena.plot(res, "throughput_delay")       # a matplotlib Figure
    ccarena.save(fig, "td.pdf")
    res = ccarena.open_results("quickstart-20260101-120000.ccarena.tar.xz")

What the other commands do, as functions:

    p = ccarena.plan(study)            # the dry run: p.cells(), p.runs, p.warnings
    checks = ccarena.check(res)        # `ccarena check`: the evaluated checks, .passed
    ccarena.ls("results")              # `ccarena ls`: one dict per stored study
    ccarena.compare(res_a, res_b)      # `ccarena compare`: a DataFrame, SI units
    ccarena.doctor()                   # `ccarena doctor`: what this machine offers
    ccarena.cc_list()                  # `ccarena cc list`: every algorithm, its source

Exported: load_study, loads_study, parse_study, plan, run_study, open_results, check,
ls, compare, doctor, cc_list, write_report, archive, plot, plot_names, save, and the
figure functions (timeseries, metric_vs_factor, box, box_per_flow, cdf, heatmap,
fairness_vs_flows, throughput_delay, convergence). Heavy modules (pandas, matplotlib)
load on first use.
"""
from ccarena.errors import CcarenaError, CommandError, SpecError  # noqa: F401
from ccarena.version import __version__  # noqa: F401

FIGURES = ("timeseries", "metric_vs_factor", "box", "box_per_flow", "cdf", "heatmap",
           "fairness_vs_flows", "throughput_delay", "convergence", "save")

__all__ = ["load_study", "loads_study", "parse_study", "plan", "run_study", "open_results",
           "check", "ls", "compare", "doctor", "cc_list", "write_report", "archive", "plot",
           "plot_names", *FIGURES, "CcarenaError", "SpecError", "CommandError",
           "__version__"]


def load_study(path, **kw):
    """Load a study from a TOML file or a built-in study's name ("quickstart"; `ccarena
    studies` lists them), resolved and validated. kw: overrides (dict merged over the
    file), scale (a [scale.<name>] table). Raises SpecError naming file, key and what
    would be accepted."""
    from ccarena.study.catalog import resolve_study_path
    from ccarena.study.load import load_study as _load
    return _load(resolve_study_path(str(path)), **kw)


def loads_study(text: str, name: str = "<string>"):
    """Load a study from TOML text (e.g. written in a notebook); `name` stands for the
    file in error messages."""
    from ccarena.study.load import loads_study as _loads
    return _loads(text, name)


def parse_study(raw: dict, path: str = "<dict>"):
    """A study from a dict shaped like the TOML file (e.g. a stored study.json)."""
    from ccarena.study.load import parse_study as _parse
    return _parse(raw, path)


def _study(study):
    """A Study as given, or loaded from a file or a built-in study's name."""
    return load_study(study) if isinstance(study, (str, bytes)) or hasattr(
        study, "__fspath__") else study


def plan(study, *, seed=None, shuffle=None, repetitions=None, reruns=None, force_cc=None,
         jobs: int = 1, cluster=None, vm=None):
    """What `ccarena validate` shows, building nothing: the study's plan (a Study, a
    file or a built-in name) with `.cells()` (cell label -> its factor values), `.runs`
    (PlannedRun: label, cell, rep, params, seed, in the order they would run), `.seed`,
    and `.warnings` (settings that are legal but rarely meant, and rates beyond what
    this machine carries: `.capacity`). As root, `.preflight` says each cell's link
    backend and each algorithm's source (else None; not with vm, whose guest decides).
    A check that could only fail after the runs (an unknown metric, an unreadable
    bound) raises SpecError. seed, shuffle, repetitions, reruns, jobs, cluster, vm: as
    run_study's; force_cc: "kernel" or "bpf"."""
    import os

    from ccarena.analysis import check_spec
    from ccarena.run import capacity, dryrun
    from ccarena.study.plan import make_plan
    study = _study(study)
    check_spec.check(study)
    p = make_plan(study, seed=seed, shuffle=shuffle, repetitions=repetitions, reruns=reruns)
    if os.geteuid() == 0 and not vm:
        from ccarena.run.preflight import preflight
        p.preflight = preflight(study, force_cc)
    # what this machine carries, unless the runs go to a cluster's workers
    p.capacity = None if cluster else \
        dryrun.Capacity(capacity.load(), len(os.sched_getaffinity(0)), jobs)
    p.warnings = dryrun.warnings(study, p, p.capacity, p.preflight)
    return p


def run_study(study, *, results_base="results", seed=None, shuffle=None, repetitions=None,
              reruns=None, resume=None, jobs: int = 1, cluster=None, vm=None,
              force_cc=None, event_log: bool = False, progress: bool = True,
              report: bool = False, on_run=None, on_testbed=None):
    """Run a study (needs root) and return its results directory, as `ccarena run` does:
    the study's checks are evaluated and stored (checks.json) and given as
    `results.checks` (one dict per check) and `results.passed` (True, False, or None
    without checks), and `results.outcome` says what the runs answer: "complete",
    "incomplete" (planned runs missing), "partial" (a cell has no valid run) or "failed"
    (no cell has one); with report=True, report.html is written (`results.report`).
    Ctrl-C, SIGTERM and SIGHUP tear the current run down and raise KeyboardInterrupt.

    results_base: where the results directory is made; seed, shuffle, repetitions,
    reruns: override the study's plan; resume: a results directory of this study to
    complete; jobs: runs at once on this machine; cluster: a Dask scheduler's address;
    vm: run in the reference kernel (True, or a ccarena.vm.VmConfig); force_cc: "kernel"
    or "bpf"; event_log: keep the user-space link's per-packet log; on_run(planned_run,
    meta) after each run and on_testbed(topology) once each run's network is built (not
    with vm or cluster)."""
    from pathlib import Path

    from ccarena.run.study import run_study as _run
    # the caller's paths, resolved once: the runs' processes need absolute ones
    results_base = Path(results_base).resolve()
    if resume is not None:
        resume = Path(resume).resolve()
    runner = None
    if vm is not None and vm is not False:
        from ccarena.errors import CcarenaError
        from ccarena.vm import config_from_env, plan_runner
        if resume is not None:
            raise CcarenaError("resume with vm: resume a study on the machine that ran it "
                               "(run the resume itself in the VM: ccarena vm -- ccarena run "
                               "...)")
        if jobs != 1 or cluster or on_run or on_testbed:
            raise CcarenaError("vm: jobs, cluster and callbacks run on this machine, not "
                               "in the VM")
        import sys
        log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
        runner = plan_runner(config_from_env() if vm is True else vm, log=log)
    return _run(study, results_base=results_base, seed=seed, shuffle=shuffle,
                repetitions=repetitions, reruns=reruns, resume=resume, jobs=jobs,
                cluster=cluster, force_cc=force_cc, event_log=event_log, progress=progress,
                report=report, runner=runner, on_run=on_run, on_testbed=on_testbed)


def open_results(path):
    """Open stored results for reading: a results directory or a `.ccarena.tar.xz`
    archive (read-only). -> ResultsDir with .runs and .flows (pandas; swept factors
    also under underscore names, e.g. bottleneck_buffer), .run_tables(run_id), .metas,
    .factors, .study, .plan, .status(), .checks, .passed."""
    from ccarena.store.results import open_results as _open
    return _open(path)


def _opened(results):
    from ccarena.store.results import ResultsDir
    return results if isinstance(results, ResultsDir) else open_results(results)


def check(results, study=None):
    """Evaluate a study's checks ([[expect]]) on stored results without re-running, as
    `ccarena check` does -> a list of dicts (what, cell, ok, measured, min, max, why,
    runs), with `.passed` (True, False, or None without checks), `.stored` and `.note`.
    study None: the results' own checks, also stored (checks.json; not into a read-only
    archive); a Study, file or built-in name: its checks, only evaluated."""
    from ccarena.analysis.checks import check as _check
    res = _opened(results)
    if study is not None and (isinstance(study, (str, bytes)) or hasattr(study, "__fspath__")):
        # a study file or name: its checks at the scale the results were run at, where it
        # has that scale (a scale may replace or add checks)
        study = _study_at_scale(study, (res.plan or {}).get("scale"))
    return _check(res, None if study is None else _study(study))


def _study_at_scale(study, scale):
    from ccarena.study.load import resolve_extends, resolve_study_path
    if scale and scale in (resolve_extends(resolve_study_path(study)).get("scale") or {}):
        return load_study(study, scale=scale)
    return load_study(study)


def ls(results_base="results") -> list:
    """The stored studies under `results_base`, as `ccarena ls --json`: one dict each with
    results (the directory's name), study, planned, valid, invalid, missing, cells (the
    same per cell) and created; an unreadable directory has "error" instead."""
    from ccarena.store.results import listing
    return listing(results_base)


def compare(a, b, *, metrics=None, by=None, alpha: float = 0.05):
    """Compare two stored studies cell by cell, as `ccarena compare` (paths, archives or
    ResultsDir objects) -> a pandas DataFrame, SI units: per common cell (matched on
    `by`, default the swept factors both share) and metric (default the key run metrics)
    mean_a/b, median_a/b, ci_low/high_a/b, n_a/b, diff (A − B) with diff_ci_low/high, p,
    q (Benjamini-Hochberg over the table), significant (q < alpha), cohen_d; `.attrs`
    holds by, alpha and host_differences (TCP settings the two studies' hosts had
    differently)."""
    from ccarena.analysis.comparison import compare_results
    return compare_results(_opened(a), _opened(b), metrics=metrics, by=by, alpha=alpha)


def doctor(study=None) -> dict:
    """What this machine offers, probed (kernel, root, namespaces, veth, qdiscs, netem,
    cgroup, tracefs, binaries, algorithms, AF_XDP), "essential_missing" (what it lacks
    to run any study, one line each) and with a study (a Study, file or built-in name)
    "study": each cell's link backend and each algorithm's source, as `ccarena doctor`."""
    from ccarena.run.doctor import report
    return report(None if study is None else _study(study))


def cc_list() -> dict:
    """Every congestion-control algorithm, as `ccarena cc list --json`: name -> source
    ("kernel", "bpf" or "unavailable"), kernel_name, why, variant, follows, variants."""
    from ccarena.cc.catalog import listing
    return listing()


def write_report(results, out=None, **kw):
    """Write report.html for stored results (a path, an archive or a ResultsDir) and
    return its path; kw: max_timeseries, figure_format ("png" or "svg")."""
    from ccarena.report import write_report as _write
    return _write(getattr(results, "source", None) or getattr(results, "path", results),
                  out=out, **kw)


def archive(results, out=None):
    """Pack a results directory into one `.ccarena.tar.xz` file; returns its path."""
    from ccarena.store.bundle import write_archive
    return write_archive(getattr(results, "path", results), out)


def plot(results, name: str, **kw):
    """The figure `name` (plot_names() lists them) of one or several stored studies
    (paths, archives or ResultsDir objects; several are overlaid, one colour each), as
    a matplotlib Figure. kw: metric, by, run, labels."""
    from ccarena.report.plotting import plot as _plot
    return _plot(results, name, **kw)


def plot_names() -> dict:
    """Names of the figures `plot` draws, with one line each."""
    from ccarena.report.plotting import names
    return names()


def __getattr__(name):
    # the figure functions, imported on first use (matplotlib is heavy)
    if name in FIGURES:
        from ccarena.report import figures
        return getattr(figures, name)
    raise AttributeError(f"module 'ccarena' has no attribute {name!r}")
