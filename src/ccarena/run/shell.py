"""One cell's testbed for interactive use (`ccarena shell`, as Mininet's CLI): build its
network, run a shell or a command in one of its hosts, tear everything down after.

    open_shell(study, cell=0, host="s1", argv=None, force_cc=None, say=print) -> int

Builds what a run of the cell builds before its workload starts (run/one_run.py): the
dumbbell's namespaces, veths, addresses and routes (testbed.build.Testbed), the link
(the user-space emulator, or the kernel's qdiscs), host cgroups, and the cell's
congestion controls (cc.acquire); each host's default algorithm
(net.ipv4.tcp_congestion_control) is the one its flows send with, so `iperf3` or `curl`
started in the shell uses it. Then it runs `argv` (default: an interactive shell) in the
host's namespace and returns its exit status. Ctrl-C goes to the program in the host (as
in any shell); SIGTERM or SIGHUP (the terminal closed) ends the program and the
testbed. Everything is torn down when the program ends, on error, on Ctrl-C and on
SIGTERM or SIGHUP, and registered for `ccarena cleanup` meanwhile. No flow, probe or
measurement runs and nothing is stored."""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ccarena import cc as ccmod
from ccarena import units
from ccarena.errors import CcarenaError, TestbedError
from ccarena.run import interrupt
from ccarena.run.preflight import preflight
from ccarena.study.model import Cell, Study
from ccarena.study.plan import make_plan
from ccarena.testbed import kernel_link, netns, user_link
from ccarena.testbed.build import Testbed
from ccarena.testbed.topology import Topology, plan_dumbbell

ROUTER_ROLES = {"rl": "left router", "rr": "right router", "ln": "link emulator"}


def pick_cell(study: Study, cell) -> int:
    """A cell index from 0, 3, "3" or "c003"."""
    n = len(study.cells or [Cell(0, {}, study)])
    s = str(cell).lower().lstrip("c") or "0"
    if not s.isdigit() or not 0 <= int(s) < n:
        raise CcarenaError(f"{study.path}: no cell {cell!r}; the study has {n} cell"
                           f"{'s' if n != 1 else ''} (0 to {n - 1}, see `ccarena validate`)")
    return int(s)


def namespace_of(topo: Topology, host: str) -> str:
    """The namespace of a host (s1, r2) or router (rl, rr, ln)."""
    ns = {**topo.hosts, **topo.routers}
    if host not in ns:
        raise CcarenaError(f"no host {host!r} in this testbed; hosts: "
                           + ", ".join([*topo.hosts, *topo.routers]))
    return ns[host]


def host_algorithms(study: Study) -> dict[str, str]:
    """host -> the algorithm its flows send with (its [hosts.X] cc, else the first flow
    it sends or receives, with the flow's sender or receiver algorithm)."""
    out: dict[str, str] = {}
    for f in study.flows:
        if f.kind == "command":
            continue
        out.setdefault(f.src, f.cc)
        if f.receiver_cc:
            out.setdefault(f.dst, f.receiver_cc)
    for h, hs in study.hosts.items():
        if hs.cc:
            out[h] = hs.cc
    return out


def describe(study: Study, topo: Topology, backend: str, cell_label: str,
             algs: dict[str, str]) -> list[str]:
    """The lines printed before the shell starts: the path, hosts and addresses."""
    b = study.bottleneck
    buf = f"{b.buffer.size}{'p' if b.buffer.kind == 'packets' else ' bytes'}"
    lines = [f"study {study.name}, cell {cell_label}, run id {topo.run_id}, {backend} link",
             f"bottleneck {units.format_rate(b.rate_bps) if b.rate_bps else 'unlimited'}, "
             f"{b.delay_s * 1e3:g} ms one-way (base RTT {study.base_rtt_s * 1e3:g} ms), "
             f"buffer {buf}, {b.queue}",
             f"{'host':6s} {'address':12s} {'cc':10s} namespace"]
    for h, ns in topo.hosts.items():
        lines.append(f"{h:6s} {topo.host_ip[h]:12s} {algs.get(h, '-'):10s} {ns}")
    for r, ns in topo.routers.items():
        lines.append(f"{r:6s} {'':12s} {'':10s} {ns}  ({ROUTER_ROLES.get(r, 'router')})")
    return lines


def _argv(ns: str, host: str, argv: list[str] | None) -> tuple[list[str], dict]:
    env = {**os.environ, "CCARENA_HOST": host, "CCARENA_NAMESPACE": ns}
    if argv:
        return ["ip", "netns", "exec", ns, *argv], env
    sh = os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"
    if os.path.basename(sh) == "bash":
        env["PS1"] = f"[ccarena {host}] \\w\\$ "
        return ["ip", "netns", "exec", ns, sh, "--norc", "-i"], env
    env["PS1"] = f"[ccarena {host}] $ "
    return ["ip", "netns", "exec", ns, sh, "-i"], env


def _default_algorithms(topo: Topology, algs: dict[str, str], names: dict) -> list[str]:
    """Make each host's default algorithm its flows' (best effort: a namespace other than
    the root one may only default to an algorithm the machine's
    net.ipv4.tcp_allowed_congestion_control lists, which ccarena leaves alone; a program
    can still choose any loaded one per socket, e.g. `iperf3 -C`). -> notes to print."""
    notes = []
    for h, a in algs.items():
        if h not in topo.hosts:
            continue
        k = names.get(a, a)
        try:
            netns.sysctl_set(topo.hosts[h], {"net.ipv4.tcp_congestion_control": k})
        except TestbedError:
            notes.append(f"note: {h} keeps its default algorithm; {a} ({k}) is not in "
                         "net.ipv4.tcp_allowed_congestion_control, so choose it per socket "
                         f"(iperf3 -C {k}, setsockopt TCP_CONGESTION)")
    return notes


def _run_in(ns: str, host: str, argv: list[str] | None, cgroup=None) -> int:
    """Run the program in the namespace and wait for it. Ctrl-C is the program's (the
    handler here only keeps this process waiting; a handler, unlike SIG_IGN, is reset
    by exec); SIGTERM or SIGHUP ends the program, then the testbed (run/interrupt.py)."""
    cmd, env = _argv(ns, host, argv)
    old_int = signal.signal(signal.SIGINT, lambda s, f: None)
    child = None
    try:
        child = subprocess.Popen(cmd, env=env,
                                 preexec_fn=cgroup.add_self if cgroup is not None else None)
        with interrupt.interruptible():
            return child.wait()
    finally:
        if child is not None and child.poll() is None:
            # an interactive shell ignores SIGTERM: hang it up, then kill
            for sig in (signal.SIGHUP, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=2)
                    break
        signal.signal(signal.SIGINT, old_int)


def open_shell(study: Study, cell=0, host: str = "s1", argv: list[str] | None = None,
               force_cc: str | None = None, say=print) -> int:
    """Build cell `cell` of the study, run `argv` (default an interactive shell) in
    `host` and return its exit status; everything is torn down afterwards."""
    if os.geteuid() != 0:
        raise CcarenaError("ccarena shell needs root (network namespaces)")
    i = pick_cell(study, cell)
    plan = make_plan(study, seed=study.seed or 1, shuffle=False, repetitions=1, reruns=0)
    r = plan.runs[i]
    cstudy = r.study
    pf = preflight(study, force_cc)
    backend = pf["cells"][i]["backend"]
    run_id = secrets.token_hex(3)
    topo = plan_dumbbell(run_id, cstudy.pairs, backend)
    ns = namespace_of(topo, host)
    algs = host_algorithms(cstudy)
    label = r.cell + (" (" + ", ".join(f"{k}={v}" for k, v in r.params.items()) + ")"
                      if r.params else "")
    with interrupt.handled(), \
            ccmod.acquire(sorted(cstudy.algorithms()), run_id, force=force_cc) as names, \
            tempfile.TemporaryDirectory(prefix=f"ccarena-shell-{run_id}-") as raw, \
            Testbed(topo, cstudy) as tb:
        link = None
        try:
            interrupt.checkpoint()      # a signal during the build: torn down now
            if backend == "kernel":
                kernel_link.apply(topo, cstudy)
            elif backend == "user":
                link = user_link.start(topo, cstudy, Path(raw), r.seed)
            interrupt.checkpoint()
            notes = _default_algorithms(topo, algs, names)
            for line in describe(cstudy, topo, backend, label, algs) + notes:
                say(line)
            say(f"running {' '.join(argv) if argv else 'a shell'} in {host}; "
                "the testbed is torn down when it ends")
            return _run_in(ns, host, argv, tb.cgroups.get(host))
        finally:
            if link is not None:
                with contextlib.suppress(Exception):
                    link.terminate(timeout_s=10)
