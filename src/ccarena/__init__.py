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

Exported: load_study, loads_study, parse_study, run_study, open_results, write_report,
archive, plot, plot_names, save, and the figure functions (timeseries, metric_vs_factor,
box, box_per_flow, cdf, heatmap, fairness_vs_flows, throughput_delay, convergence).
Heavy modules (pandas, matplotlib) load on first use.
"""
from ccarena.errors import CcarenaError, CommandError, SpecError  # noqa: F401
from ccarena.version import __version__  # noqa: F401

FIGURES = ("timeseries", "metric_vs_factor", "box", "box_per_flow", "cdf", "heatmap",
           "fairness_vs_flows", "throughput_delay", "convergence", "save")

__all__ = ["load_study", "loads_study", "parse_study", "run_study", "open_results",
           "write_report", "archive", "plot", "plot_names", *FIGURES, "CcarenaError",
           "SpecError", "CommandError", "__version__"]


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
