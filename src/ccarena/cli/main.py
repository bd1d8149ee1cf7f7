"""The `ccarena` command: a thin layer over the Python API.

Errors print one line (`ccarena: <what failed>`) and exit 1; `--debug` shows tracebacks.
Exit codes (cli/exits.py): 0 ok, 1 error, 2 bad usage, 3 a study's check failed or could
not be evaluated, 4 the study is incomplete (planned runs missing), 5 partial (a cell has
no valid run), 6 failed (no cell has a valid run), 130 interrupted."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from ccarena.version import __version__
from ccarena.cli import exits
from ccarena.cli.analysis import results_opt
from ccarena.errors import CcarenaError

from ccarena.study.catalog import builtin_studies, resolve_study_path


def cmd_run(args) -> int:
    from ccarena.study.load import load_study
    from ccarena.report.summary import render
    # paths the user gave are resolved here, once: every process a run starts works with
    # them wherever its own working directory is
    args.results = str(Path(args.results).resolve())
    if args.resume:
        args.resume = str(Path(args.resume).resolve())
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
        return _dry_run(study, args)
    import ccarena
    vm = None
    if args.vm:     # the same run, in the reference kernel (docs/vm.md)
        from ccarena.cli.vm import vm_config
        vm = vm_config(args)
    res = ccarena.run_study(study, results_base=args.results, seed=args.seed,
                            shuffle=False if args.no_shuffle else None,
                            repetitions=args.repetitions, reruns=args.reruns,
                            resume=args.resume, jobs=args.jobs, cluster=args.cluster, vm=vm,
                            force_cc=args.cc_source, event_log=args.event_log,
                            progress=not (args.quiet or args.json),
                            report=not args.no_report)
    if args.json:
        from ccarena.report.summary import as_dict
        print(json.dumps({**as_dict(res, res.checks), "outcome": res.outcome}, indent=1))
        return exits.of_study(res, res.passed)
    render(res)
    print(f"results: {res.path}")
    from ccarena.report.summary import print_checks
    print_checks(res.checks)
    if res.report:
        print(f"report: {res.report}")
    lacks = exits.outcome_line(res)
    if lacks:
        print(f"ccarena: {lacks}", file=sys.stderr)
    return exits.of_study(res, res.passed)


def _dry_run(study, args) -> int:
    import ccarena
    from ccarena.run import dryrun
    plan = ccarena.plan(study, seed=args.seed, shuffle=False if args.no_shuffle else None,
                        repetitions=args.repetitions, reruns=args.reruns,
                        force_cc=args.cc_source, jobs=args.jobs, cluster=args.cluster,
                        vm=args.vm)
    guest = here = None
    if args.vm:     # the guest's kernel, not this machine's, runs the study
        from ccarena.cli.vm import guest_lines
        from ccarena.study.tcp_reference import REFERENCE_TCP
        guest, here = guest_lines(args, study), dict(REFERENCE_TCP)
    if args.json:
        print(json.dumps(dryrun.as_dict(study, plan, plan.preflight, plan.capacity, here,
                                        guest), indent=1))
        return exits.OK
    for line in dryrun.describe(study, plan, plan.preflight, plan.capacity, here, guest):
        print(line)
    return exits.OK


def cmd_validate(args) -> int:
    """`ccarena validate STUDY`: the dry run under the name people look for."""
    args.dry_run = True
    return cmd_run(args)


def _count(v: str) -> int:
    """--reruns: as study.reruns accepts."""
    from ccarena.study.keys import MAX_RERUNS
    if not v.isdigit() or int(v) > MAX_RERUNS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_RERUNS}, "
                                         f"got {v!r}")
    return int(v)


def _repetitions(v: str) -> int:
    """--repetitions: as study.repetitions accepts."""
    from ccarena.study.keys import STUDY_KEYS
    try:
        return STUDY_KEYS["repetitions"](int(v))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 100000, got "
                                         f"{v!r}" if not v.lstrip("-").isdigit() else str(e))


def _seed(v: str) -> int:
    """--seed: as study.seed accepts (a whole number, 0 or more)."""
    if not v.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, got {v!r}")
    return int(v)


def _cluster(v: str) -> str:
    """--cluster: a Dask scheduler's address, [tcp|tls|ws|wss|ucx]://HOST:PORT or HOST:PORT."""
    import re
    if not re.match(r"^((tcp|tls|ws|wss|ucx)://)?[A-Za-z0-9_.\-]+:\d{1,5}$|^"
                    r"((tcp|tls|ws|wss|ucx)://)?\[[0-9A-Fa-f:.]+\]:\d{1,5}$", v):
        raise argparse.ArgumentTypeError(f"expected a Dask scheduler's address such as "
                                         f"tcp://HOST:8786 (or HOST:PORT), got {v!r}")
    return v


def _jobs(v: str) -> int:
    if not v.isdigit() or int(v) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {v!r}")
    return int(v)


def cmd_ls(args) -> int:
    from rich.table import Table

    import ccarena
    rows = ccarena.ls(args.results)
    if args.json:
        print(json.dumps(rows, indent=1))
        return exits.OK
    if not rows:
        print(f"no results under {args.results}/")
        return exits.OK
    from rich import box
    from rich.table import Column
    # a listing, as ls -l: no rules but the header's; the directory name carries the time
    # it was created (JSON has it as "created")
    t = Table(Column("results", no_wrap=True), *[Column(h, justify="right") for h in
                                                 ("planned", "valid", "invalid", "missing")],
              title=f"results under {args.results}/", title_justify="left",
              box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    bad = []
    for row in rows:
        if "error" in row:
            bad.append(f"{row['results']}: unreadable: {row['error']}")
            continue
        t.add_row(row["results"], str(row["planned"]), str(row["valid"]),
                  f"[yellow]{_in_cells(row, 'invalid')}[/yellow]" if row["invalid"] else "0",
                  f"[red]{_in_cells(row, 'missing')}[/red]" if row["missing"] else "0")
    con = _console()
    con.print(t)
    for line in bad:
        con.print(line, markup=False, highlight=False)
    return exits.OK


def _in_cells(row: dict, state: str) -> str:
    """'3 (c001, c004)': a count and the cells it falls in (their number past three)."""
    cells = [c for c, n in row["cells"].items() if n[state]]
    where = ", ".join(cells) if len(cells) <= 3 else f"{len(cells)} cells"
    return f"{row[state]} ({where})"


def cmd_show(args) -> int:
    from ccarena.store.results import list_results, open_results
    from ccarena.report.summary import render
    p = Path(args.results_dir)
    if not p.exists():
        cands = [r for r in list_results(args.results) if r.path.name.startswith(args.results_dir)]
        if not cands:
            raise CcarenaError(f"no results directory {args.results_dir!r}")
        exact = [r for r in cands if r.path.name == args.results_dir]
        cands = exact or cands
        if len(cands) > 1:      # a prefix names one directory, or the user chooses
            raise CcarenaError(f"{args.results_dir!r} names {len(cands)} results "
                               f"directories under {args.results}/: "
                               + ", ".join(r.path.name for r in cands) + "; give one")
        p = cands[0].path
    res = open_results(p)
    if args.rebuild:
        from ccarena.analysis import aggregates
        from ccarena.store.atomic import StoreError
        from ccarena.store.atomic import exclusive
        try:
            with exclusive(res.path, "rebuilding the summaries of"):
                aggregates.refresh(res)
        except StoreError as e:     # a read-only copy: show what it holds, in memory
            print(f"ccarena: not rebuilt on disk: {e}", file=sys.stderr)
    if args.json:
        from ccarena.report.summary import as_dict
        print(json.dumps(as_dict(res), indent=1))
        return exits.OK
    if args.markdown:
        from ccarena.report.summary import markdown
        print(markdown(res))
        return exits.OK
    render(res)
    return exits.OK


def cmd_cleanup(args) -> int:
    from ccarena import cc
    from ccarena.testbed import leftovers
    from ccarena.testbed.cgroups import ROOT as CGROUPS
    removed = leftovers.cleanup(all_runs=args.all, only=set(args.run) if args.run else None)
    for n in removed:      # namespace names, cgroup directories, a guest's folders
        what = "namespace" if not n.startswith("/") else "cgroup" if n.startswith(CGROUPS) \
            else "folder"
        print(f"removed {what} {n}")
    for n in (cc.cleanup_stale() if not args.run else []):
        print(f"unregistered congestion control {n}")
    if not args.run:
        # a Dask worker killed before its run process could remove its task directory
        from ccarena.run.scaleout.remote import cleanup_stale_tasks
        for n in cleanup_stale_tasks():
            removed.append(n)
            print(f"removed folder {n}")
    if not removed:
        print("no leftover namespaces")
    return 0


def cmd_doctor(args) -> int:
    from ccarena.cli.doctor import doctor
    if args.measure:
        import tempfile

        from ccarena import units
        from ccarena.run import capacity
        with tempfile.TemporaryDirectory(prefix="ccarena-capacity-") as tmp:
            g = capacity.measure(tmp)
        print(f"this machine carries {units.format_rate(g)} through the user-space link "
              "(one cubic flow, 10 ms one-way delay, no rate limit); kept for dry runs")
    return doctor(args.study, as_json=args.json)


def cmd_cc_list(args) -> int:
    from rich.table import Table

    import ccarena
    algs = ccarena.cc_list()
    if args.json:
        print(json.dumps(algs, indent=1))
        return 0
    t = Table("algorithm", "source", "kernel name", "variants (cc_variant)", "why",
              title_justify="left")
    for n, a in algs.items():
        t.add_row(n, a["source"], a["kernel_name"] or "", a["variants"], a["why"] or "")
    _console().print(t)
    return 0


def cmd_schema(args) -> int:
    from ccarena.study import reference
    if args.markdown:
        print(reference.markdown(), end="")
    else:
        print(json.dumps(reference.json_schema(), indent=1))
    return 0


def cmd_studies(args) -> int:
    from rich.table import Table
    if args.json:
        print(json.dumps(builtin_studies(), indent=1))
        return exits.OK
    t = Table("study", "what it shows", title_justify="left")
    for name, desc in builtin_studies().items():
        t.add_row(name, desc)
    _console().print(t)
    return exits.OK


def _console():
    """The console of tables: the terminal's width, else COLUMNS, else 80 (rich folds a
    table to fit it)."""
    from ccarena.report.summary import terminal
    return terminal()


def _run_arguments(r) -> None:
    r.add_argument("study", help="study file or built-in name (see `ccarena studies`)")
    r.add_argument("--dry-run", action="store_true", help="list the runs; build nothing")
    r.add_argument("--seed", type=_seed, help="seed of the run order and per-run seeds")
    r.add_argument("--no-shuffle", action="store_true", help="run cells in order")
    r.add_argument("--repetitions", type=_repetitions, help="override study.repetitions")
    r.add_argument("--reruns", type=_count, help="override study.reruns: how often a run that "
                   "the machine's noise made invalid is run again (0: never)")
    r.add_argument("--duration", help="override study.duration (e.g. 5s)")
    r.add_argument("--scale", help="apply the study's [scale.<name>] table (quick, full, ...)")
    results_opt(r, "where the results directory is made")
    r.add_argument("--resume", metavar="RESULTS_DIR", help="complete an interrupted study: "
                   "run only its missing and in-flight runs, same plan and seeds (the study "
                   "file must be unchanged)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--json", action="store_true", help="print the outcome as JSON (no "
                   "progress bar): runs, cells with their statistics, anomalies, checks")
    r.add_argument("--cc-source", choices=("kernel", "bpf"),
                   help="force where algorithms come from")
    r.add_argument("--no-report", action="store_true",
                   help="do not write report.html and its figures at the end")
    r.add_argument("--event-log", action="store_true",
                   help="keep the user-space link's per-packet event log")
    r.add_argument("--vm", action="store_true", help="run the study in a VM with the "
                   "reference kernel (make vm; docs/vm.md); results land here as usual")
    from ccarena.cli.vm import add_vm_options
    add_vm_options(r)
    r.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="run N runs at once on this machine, each on its own share of the "
                   "CPUs (docs/scale-out.md; default 1)")
    r.add_argument("--cluster", metavar="tcp://HOST:8786", type=_cluster,
                   help="run the runs on the workers of this Dask scheduler (started with "
                   "`ccarena worker`); results are stored here as usual")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ccarena", description="A laboratory for TCP "
                                 "congestion-control experiments on network namespaces.")
    ap.add_argument("--version", action="version", version=f"ccarena {__version__}")
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")

    r = sub.add_parser("run", help="run a study (a file, or a built-in study by name)")
    _run_arguments(r)
    r.set_defaults(func=cmd_run)
    v = sub.add_parser("validate", help="check a study and show what it would build and run",
                       description="Validate a study and print the resolved setup of every "
                       "cell, the runs with their seeds, the total time and warnings; builds "
                       "nothing (the same as `ccarena run STUDY --dry-run`).")
    _run_arguments(v)
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("ls", help="list stored studies")
    results_opt(s)
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_ls)
    s = sub.add_parser("show", help="summary table of a stored study")
    s.add_argument("results_dir", help="results directory (or a prefix of its name)")
    results_opt(s)
    s.add_argument("--rebuild", action="store_true", help="recompute the aggregates first")
    s.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("cleanup", help="remove what crashed runs left (namespaces, BPF)")
    s.add_argument("--all", action="store_true", help="also remove live runs' namespaces "
                   "and cgroups (killing what runs in them)")
    s.add_argument("--run", action="append", metavar="ID", help="only what this crashed "
                   "run (or VM host's guest) left: its 6-digit id, as namespaces cca<ID>-* "
                   "show it (repeatable)")
    s.set_defaults(func=cmd_cleanup)
    s = sub.add_parser("doctor", help="what this machine offers and what a study will use")
    s.add_argument("study", nargs="?", help="also say how this study would run")
    s.add_argument("--json", action="store_true")
    s.add_argument("--measure", action="store_true", help="measure what the user-space link "
                   "carries on this machine (about 20 s) and keep it for dry runs' warnings")
    s.set_defaults(func=cmd_doctor)
    s = sub.add_parser("cc", help="congestion-control algorithms")
    ccsub = s.add_subparsers(dest="cc_cmd", metavar="SUBCOMMAND")
    s2 = ccsub.add_parser("list", help="each algorithm and where it comes from")
    s2.add_argument("--json", action="store_true")
    s2.set_defaults(func=cmd_cc_list)
    s = sub.add_parser("schema", help="the JSON Schema of study files (for editors)",
                       description="Print the JSON Schema of a study file. Editors that check "
                       "TOML against JSON Schema (Taplo, Even Better TOML) complete keys with "
                       "it: save it and start a study with `#:schema ./study.schema.json`.")
    s.add_argument("--markdown", action="store_true",
                   help="print the key reference (docs/study-keys.md) instead")
    s.set_defaults(func=cmd_schema)
    s = sub.add_parser("studies", help="list the built-in studies")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_studies)
    from ccarena.cli import analysis as cli_analysis
    from ccarena.cli import vm as cli_vm
    from ccarena.cli import worker as cli_worker
    cli_analysis.register(sub)
    cli_vm.register(sub)
    cli_worker.register(sub)
    from ccarena.cli import tools as cli_tools
    cli_tools.register(sub)
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
    except BrokenPipeError:
        # `ccarena ... | head`: the reader is gone; say nothing more (and let Python not
        # complain while it flushes stdout at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.OK
    except KeyboardInterrupt as e:
        how = signal.Signals(e.signum).name if getattr(e, "signum", None) else "SIGINT"
        print(f"ccarena: interrupted ({how}); the current run was torn down, completed "
              "runs are kept", file=sys.stderr)
        return exits.INTERRUPTED
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
