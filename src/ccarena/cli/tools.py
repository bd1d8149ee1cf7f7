"""The tool commands of the CLI: plot (figures by name, Flent-style), archive (one file
holding a results directory) and shell (a host of a study's testbed, Mininet-style).

Contract: `register(subparsers)` adds the three subcommands; each sets `func=cmd_<name>`,
a function `(args) -> int`. RESULTS arguments are resolved as in cli/analysis.py (a
directory, an archive, or a name prefix under --results). Errors are CcarenaError (one
line; the main CLI prints it).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ccarena.cli import exits
from ccarena.cli.analysis import resolve_results, results_opt
from ccarena.errors import CcarenaError


def cmd_plot(args) -> int:
    from ccarena.report import plotting
    if args.list and args.json:
        import json
        print(json.dumps(plotting.names(), indent=1))
        return exits.OK
    if args.list:
        from rich.table import Table

        from ccarena.report.summary import terminal
        t = Table("plot", "what it draws", title="ccarena plot RESULTS… NAME",
                  title_justify="left")
        for name, desc in plotting.names().items():
            t.add_row(name, desc)
        terminal().print(t)
        return exits.OK
    if not args.args or len(args.args) < 2:
        raise CcarenaError("plot: give one or more results and a plot name, e.g. "
                           "`ccarena plot results/quickstart-* box` (`--list` shows the names)")
    *dirs, name = args.args
    if name not in plotting.PLOTS:
        raise CcarenaError(f"plot: no figure {name!r}{plotting._near(name, plotting.PLOTS)}; "
                           f"known: {', '.join(plotting.PLOTS)} (the plot name comes last)")
    from ccarena.report.figbase import FORMATS, save
    out = Path(args.output or f"{name}.png")
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise CcarenaError(f"plot -o {out}: format {fmt!r}; use .png, .svg or .pdf")
    paths = [resolve_results(d, args.results) for d in dirs]
    try:
        fig = plotting.plot(paths, name, metric=args.metric, by=args.by, run=args.run,
                            labels=args.label or None)
    except ValueError as e:
        raise CcarenaError(str(e)) from None
    print(save(fig, out))
    return exits.OK


def cmd_archive(args) -> int:
    from ccarena.store.bundle import write_archive
    d = resolve_results(args.results_dir, args.results)
    if d.is_file():
        raise CcarenaError(f"archive {d}: this is a file already (an archive?); give a "
                           "results directory")
    out = write_archive(d, args.output)
    size = out.stat().st_size
    print(f"{out}  ({size / 2**20:.1f} MiB)")
    return exits.OK


class _CommandAfterDashes(argparse.ArgumentParser):
    """A parser whose arguments after the first `--` are a command line of their own
    (args.command), whatever options it holds: `shell STUDY --host s1 -- ping -c 2 X`."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        cmd: list[str] = []
        if "--" in args:
            i = args.index("--")
            args, cmd = args[:i], args[i + 1:]
        ns, extra = super().parse_known_args(args, namespace)
        ns.command = cmd
        return ns, extra


def cmd_shell(args) -> int:
    from ccarena.run.shell import open_shell
    from ccarena.study.catalog import resolve_study_path
    from ccarena.study.load import load_study
    argv = list(args.command or [])
    study = load_study(resolve_study_path(args.study))
    return open_shell(study, cell=args.cell, host=args.host, argv=argv or None,
                      force_cc=args.cc_source, say=lambda s: print(s, file=sys.stderr))


def register(subparsers) -> None:
    """Add plot, archive and shell to the main CLI's subparsers."""
    p = subparsers.add_parser(
        "plot", help="draw a figure by name from one or more stored studies",
        description="Draw the figure NAME from one or more results directories (or "
        "archives), each in its own colour and with its own label, and save it (-o: "
        ".png, .svg or .pdf; default NAME.png). `--list` names every figure.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  ccarena plot --list\n  ccarena plot results/bufferbloat-* "
        "box --metric rtt_p95_s --by buffer\n  ccarena plot A B throughput_delay -o td.pdf")
    p.add_argument("args", nargs="*", metavar="RESULTS… NAME",
                   help="results directories or archives (or name prefixes), then the plot")
    p.add_argument("--list", action="store_true", help="list the figures with one line each")
    p.add_argument("--json", action="store_true", help="with --list: as JSON (name -> what "
                   "it draws)")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write (.png, .svg, .pdf)")
    p.add_argument("--metric", help="the metric to draw (runs or flows column)")
    p.add_argument("--by", help="group or x-axis column; a swept factor may be named by "
                   "its short name (buffer, cc); heatmap: ROW,COL")
    p.add_argument("--run", help="for timeseries, rtt_cdf, convergence: a run label "
                   "(c000-r1) or factor values (cc=reno, or cc=reno,rep=2)")
    p.add_argument("--label", action="append",
                   help="label of each results directory, in order (repeatable)")
    results_opt(p)
    p.set_defaults(func=cmd_plot)

    p = subparsers.add_parser(
        "archive", help="pack a results directory into one file",
        description="Write a results directory (runs, raw data, summaries, study, report) "
        "into one xz-compressed tar file, <name>.ccarena.tar.xz. Every command that reads "
        "results (show, report, query, check, export, compare, plot) and "
        "ccarena.open_results() open the archive directly, read-only.")
    p.add_argument("results_dir", metavar="RESULTS", help="results directory or name prefix")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="archive path, or a directory to write it in (an existing one, or a "
                   "path ending in /; default: ./<name>.ccarena.tar.xz)")
    results_opt(p)
    p.set_defaults(func=cmd_archive)

    p = subparsers.add_parser(
        "shell", help="a shell (or a command) in a host of a study's testbed",
        description="Build the testbed of one cell of a study (namespaces, links, the link "
        "emulator or kernel qdiscs, its congestion controls), print its hosts and "
        "addresses, and open an interactive shell in a host, or run COMMAND there and "
        "exit with its status. Everything is torn down when the shell or command ends, "
        "on Ctrl-C of ccarena and on SIGTERM. Needs root.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  ccarena shell quickstart\n  ccarena shell bufferbloat --cell 1 "
        "--host s1 -- ping -c 3 10.2.1.2\n  ccarena shell quickstart --host r1 -- iperf3 -s -1\n"
        "After `--` comes the command to run in the host (default: an interactive shell).")
    p.add_argument("study", help="study file or built-in name")
    p.add_argument("--cell", default="0", help="which cell of the sweep (0, 1, … or c001; "
                   "`ccarena validate` lists them; default 0)")
    p.add_argument("--host", default="s1", help="host to enter: s1…sN, r1…rN, or the "
                   "routers rl, rr, ln (default s1)")
    p.add_argument("--cc-source", choices=("kernel", "bpf"),
                   help="force where algorithms come from")
    p.usage = "%(prog)s [-h] [--cell N] [--host HOST] [--cc-source {kernel,bpf}] STUDY " \
        "[-- COMMAND ...]"
    p.__class__ = _CommandAfterDashes     # everything after `--` is the command
    p.set_defaults(func=cmd_shell, command=[])
