"""The `ccarena` command: a thin layer over the Python API.

Errors print one line (`ccarena: <what failed>`) and exit 1; `--debug` shows tracebacks.
Exit codes: 0 ok, 1 error, 2 bad usage, 3 a study's check failed or could not be
evaluated, 4 the study is incomplete (planned runs missing), 130 interrupted."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from ccarena import __version__
from ccarena.cli import exits
from ccarena.errors import CcarenaError

from ccarena.study.catalog import builtin_studies, resolve_study_path


def cmd_run(args) -> int:
    from ccarena.study.plan import make_plan
    from ccarena.study.load import load_study
    from ccarena.report.summary import render
    overrides = {}
    if args.duration:
        overrides.setdefault("study", {})["duration"] = args.duration
    scale = args.scale
    if args.resume and scale is None:     # the scale the study was planned with
        from ccarena.store.results import open_results
        scale = open_results(args.resume).plan.get("scale")
    study = load_study(resolve_study_path(args.study), overrides=overrides or None,
                       scale=scale)
    if args.dry_run:
        from ccarena.run.preflight import preflight
        plan = make_plan(study, seed=args.seed, shuffle=not args.no_shuffle if args.no_shuffle
                         else None, repetitions=args.repetitions, reruns=args.reruns)
        print(f"study {study.name}{f' (scale {study.scale})' if study.scale else ''}: "
              f"{len(plan.study.cells)} cells x "
              f"{args.repetitions or study.repetitions} repetitions = {len(plan.runs)} runs, "
              f"{'shuffled' if plan.shuffled else 'in order'} (seed {plan.seed}); "
              f"about {len(plan.runs) * (study.duration_s + 1):.0f} s")
        reruns = plan.reruns
        print(f"a run the machine's noise makes invalid is run again up to {reruns} "
              f"time{'s' if reruns != 1 else ''}" if reruns else
              "a run the machine's noise makes invalid is kept as it is (reruns = 0)")
        for r in plan.runs:
            params = ", ".join(f"{k} = {v}" for k, v in r.params.items())
            print(f"  {r.index:4d}  {r.label:10s} seed {r.seed:<11d} {params}")
        if os.geteuid() == 0:
            pf = preflight(study, args.cc_source)
            backends = {v["backend"] + ": " + v["why"] for v in pf["cells"].values()}
            print("link backend: " + "; ".join(sorted(backends)))
            for n, a in pf["algorithms"].items():
                print(f"algorithm {n}: {a['source']} ({a['kernel_name']})")
        return 0
    from ccarena.run.executor import run_study
    res = run_study(study, results_base=args.results, seed=args.seed,
                    shuffle=False if args.no_shuffle else None, repetitions=args.repetitions,
                    reruns=args.reruns, progress=not args.quiet, force_cc=args.cc_source,
                    event_log=args.event_log, resume=args.resume, jobs=args.jobs,
                    cluster=args.cluster)
    render(res)
    print(f"results: {res.path}")
    from ccarena.report.summary import print_checks
    ok = print_checks(res, study)
    if not args.no_report:
        from ccarena.report import write_report
        print(f"report: {write_report(res.path)}")
    return exits.OK if ok else exits.CHECKS


def _count(v: str) -> int:
    """--reruns: as study.reruns accepts."""
    from ccarena.study.schema import MAX_RERUNS
    if not v.isdigit() or int(v) > MAX_RERUNS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_RERUNS}, "
                                         f"got {v!r}")
    return int(v)


def _jobs(v: str) -> int:
    if not v.isdigit() or int(v) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {v!r}")
    return int(v)


def cmd_ls(args) -> int:
    from ccarena.store.results import list_results
    rs = list_results(args.results)
    if not rs:
        print(f"no results under {args.results}/")
        return 0
    for r in rs:
        try:
            meta = r.check_version()
            n = len(r.run_dirs())
            print(f"{r.path.name:45s} {n:5d} runs   {meta.get('created', '')}")
        except CcarenaError as e:
            print(f"{r.path.name:45s} unreadable: {e}")
    return 0


def cmd_show(args) -> int:
    from ccarena.store.results import list_results, open_results
    from ccarena.report.summary import render
    p = Path(args.results_dir)
    if not p.exists():
        cands = [r for r in list_results(args.results) if r.path.name.startswith(args.results_dir)]
        if not cands:
            raise CcarenaError(f"no results directory {args.results_dir!r}")
        p = cands[-1].path
    res = open_results(p)
    if args.rebuild:
        from ccarena.analysis import aggregates
        from ccarena.store.atomic import StoreError
        try:
            aggregates.refresh(res)
        except StoreError as e:     # a read-only copy: show what it holds, in memory
            print(f"ccarena: not rebuilt on disk: {e}", file=sys.stderr)
    if args.markdown:
        from ccarena.report.summary import markdown
        print(markdown(res))
        return 0
    render(res)
    return 0


def cmd_cleanup(args) -> int:
    from ccarena import cc
    from ccarena.testbed import leftovers
    removed = leftovers.cleanup(all_runs=args.all)
    for n in removed:      # namespace names, and cgroup directories (paths)
        print(f"removed {'cgroup' if n.startswith('/') else 'namespace'} {n}")
    for n in cc.cleanup_stale():
        print(f"unregistered congestion control {n}")
    if not removed:
        print("no leftover namespaces")
    return 0


def cmd_doctor(args) -> int:
    from ccarena.cli.doctor import doctor
    return doctor(args.study, as_json=args.json)


def cmd_cc_list(args) -> int:
    from ccarena import cc
    algs = cc.available()
    if args.json:
        print(json.dumps({n: {"source": a.source, "kernel_name": a.kernel_name, "why": a.why}
                          for n, a in algs.items()}, indent=1))
        return 0
    for n, a in sorted(algs.items()):
        print(f"{n:10s} {a.source:12s} {a.kernel_name or '':14s} {a.why or ''}")
    return 0


def cmd_studies(args) -> int:
    for name, desc in builtin_studies().items():
        print(f"{name:22s} {desc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ccarena", description="A laboratory for TCP "
                                 "congestion-control experiments on network namespaces.")
    ap.add_argument("--version", action="version", version=f"ccarena {__version__}")
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")

    r = sub.add_parser("run", help="run a study (a file, or a built-in study by name)")
    r.add_argument("study", help="study file or built-in name (see `ccarena studies`)")
    r.add_argument("--dry-run", action="store_true", help="list the runs; build nothing")
    r.add_argument("--seed", type=int, help="seed of the run order and per-run seeds")
    r.add_argument("--no-shuffle", action="store_true", help="run cells in order")
    r.add_argument("--repetitions", type=int, help="override study.repetitions")
    r.add_argument("--reruns", type=_count, help="override study.reruns: how often a run that "
                   "the machine's noise made invalid is run again (0: never)")
    r.add_argument("--duration", help="override study.duration (e.g. 5s)")
    r.add_argument("--scale", help="apply the study's [scale.<name>] table (quick, full, ...)")
    r.add_argument("--results", default="results", help="results base directory")
    r.add_argument("--resume", metavar="RESULTS_DIR", help="complete an interrupted study: "
                   "run only its missing and in-flight runs, same plan and seeds (the study "
                   "file must be unchanged)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--cc-source", choices=("kernel", "bpf"),
                   help="force where algorithms come from")
    r.add_argument("--no-report", action="store_true",
                   help="do not write report.html and its figures at the end")
    r.add_argument("--event-log", action="store_true",
                   help="keep the user-space link's per-packet event log")
    r.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="run N runs at once on this machine, each on its own share of the "
                   "CPUs (docs/scale-out.md; default 1)")
    r.add_argument("--cluster", metavar="tcp://HOST:8786",
                   help="run the runs on the workers of this Dask scheduler (started with "
                   "`ccarena worker`); results are stored here as usual")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("ls", help="list stored studies")
    s.add_argument("--results", default="results")
    s.set_defaults(func=cmd_ls)
    s = sub.add_parser("show", help="summary table of a stored study")
    s.add_argument("results_dir", help="results directory (or a prefix of its name)")
    s.add_argument("--results", default="results")
    s.add_argument("--rebuild", action="store_true", help="recompute the aggregates first")
    s.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("cleanup", help="remove what crashed runs left (namespaces, BPF)")
    s.add_argument("--all", action="store_true", help="also remove live runs' namespaces "
                   "and cgroups (killing what runs in them)")
    s.set_defaults(func=cmd_cleanup)
    s = sub.add_parser("doctor", help="what this machine offers and what a study will use")
    s.add_argument("study", nargs="?", help="also say how this study would run")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_doctor)
    s = sub.add_parser("cc", help="congestion-control algorithms")
    ccsub = s.add_subparsers(dest="cc_cmd", metavar="SUBCOMMAND")
    s2 = ccsub.add_parser("list", help="each algorithm and where it comes from")
    s2.add_argument("--json", action="store_true")
    s2.set_defaults(func=cmd_cc_list)
    s = sub.add_parser("studies", help="list the built-in studies")
    s.set_defaults(func=cmd_studies)
    from ccarena.cli import worker as cli_worker
    cli_worker.register(sub)
    try:
        from ccarena.cli import analysis as cli_analysis
        cli_analysis.register(sub)
    except ImportError:
        pass
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    # Ctrl-C must reach us even when started from a shell that ignores SIGINT in
    # background jobs: the runner turns it into a teardown.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("ccarena: interrupted; the current run was torn down, completed runs are kept",
              file=sys.stderr)
        return 130
    except CcarenaError as e:
        if args.debug:
            raise
        print(f"ccarena: {e}", file=sys.stderr)
        return exits.ERROR
    except OSError as e:
        # a storage failure outside the store's own writers (a tool's output, a log): the
        # same one line, naming the path and the remedy
        from ccarena.store.atomic import storage_error
        if args.debug or e.errno is None:
            raise
        print(f"ccarena: {storage_error(e.filename or '(a file)', e)}", file=sys.stderr)
        return exits.ERROR


if __name__ == "__main__":
    sys.exit(main())
