"""`kind = "command"` flows: any program inside a host namespace (curl, wget, iperf3, a
user's own server), started at t0 + start through `sh -c`, stopped at `stop` or the run's
end. Its stdout and stderr are kept in raw/commands/, its timing and exit code in the
`commands` table. A non-zero exit (with check = true) makes the run invalid.

Placeholders in `run`: {s1}, {r2}, ... a host's address; {port.<flow>} a flow's listener
port; {duration} the run's duration in seconds."""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd

from ccarena.testbed import netns
from ccarena.testbed.proc import die_with_parent
from ccarena.errors import PreflightError
from ccarena.study.model import FlowSpec, Study
from ccarena.study.resolve import port_of

from ccarena.study.schema import PLACEHOLDER as _PLACEHOLDER  # noqa: E402
SHELL_WORDS = {"exec", "env", "timeout", "nice", "for", "while", "if", "{", "(", "set"}


def expand(run: str, study: Study, host_ip: dict[str, str]) -> str:
    def sub(m):
        head, arg = m.group(1), m.group(2)
        if head == "port":
            return str(port_of(study, arg))
        if head == "duration":
            return f"{study.duration_s:g}"
        return host_ip[head]
    return _PLACEHOLDER.sub(sub, run)


def require_programs(study: Study) -> None:
    """Preflight: the program of every command exists (namespaces share the filesystem)."""
    for f in study.flows:
        if f.kind != "command":
            continue
        try:
            words = shlex.split(f.run)
        except ValueError as e:
            raise PreflightError(f"{study.path}: flow.{f.name}.run: cannot parse: {e}") from None
        prog = next((w for w in words if "=" not in w.split("/")[0]), None)
        if prog is None or prog in SHELL_WORDS:
            continue
        if not (shutil.which(prog) or (os.path.isabs(prog) and os.access(prog, os.X_OK))):
            raise PreflightError(f"{study.path}: flow.{f.name}.run: program {prog!r} not found "
                                 "on this machine")


class Commands:
    def __init__(self, study: Study, topo, raw_dir: Path, cgroups: dict | None = None):
        self.cgroups = cgroups or {}
        self.study, self.topo = study, topo
        self.dir = raw_dir / "commands"
        self.flows = [(i, f) for i, f in enumerate(study.flows) if f.kind == "command"]
        self.rows: dict[str, dict] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._cancel = threading.Event()

    def __bool__(self):
        return bool(self.flows)

    def start(self, t0_ns: int) -> None:
        if not self.flows:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        for i, f in self.flows:
            th = threading.Thread(target=self._run_one, args=(i, f, t0_ns), daemon=True,
                                  name=f"command-{f.name}")
            th.start()
            self._threads.append(th)

    def _run_one(self, i: int, f: FlowSpec, t0_ns: int) -> None:
        cmd = expand(f.run, self.study, self.topo.host_ip)
        due = t0_ns + int(f.start_s * 1e9)
        while not self._cancel.is_set() and time.monotonic_ns() < due:
            time.sleep(min(0.05, max(0.0, (due - time.monotonic_ns()) / 1e9)))
        if self._cancel.is_set():
            return
        out = open(self.dir / f"{f.name}.out", "wb")
        err = open(self.dir / f"{f.name}.err", "wb")
        start = time.monotonic_ns()
        p = subprocess.Popen(netns.exec_argv(self.topo.ns(f.src), ["sh", "-c", cmd]),
                             stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             start_new_session=True,
                             # dies with this thread, which waits for it (testbed/proc.py)
                             preexec_fn=die_with_parent(self.cgroups[f.src].add_self
                                                        if f.src in self.cgroups else None))
        with self._lock:
            self._procs[f.name] = p
            self.rows[f.name] = {"flow": i, "name": f.name, "host": f.src, "command": cmd,
                                 "start_ns": start, "end_ns": None, "rc": None,
                                 "killed": False, "check": f.check}
        stop = f.stop_s if f.stop_s is not None else self.study.duration_s
        deadline = t0_ns + int(stop * 1e9)
        while p.poll() is None and time.monotonic_ns() < deadline and not self._cancel.is_set():
            time.sleep(0.005)
        killed = p.poll() is None
        if killed:
            _kill(p)
        with self._lock:
            self.rows[f.name].update(end_ns=time.monotonic_ns(), rc=p.returncode, killed=killed)
        out.close()
        err.close()

    def finish(self, timeout_s: float = 5.0) -> None:
        for th in self._threads:
            th.join(timeout=timeout_s)
        self.stop()

    def stop(self) -> None:
        self._cancel.set()
        with self._lock:
            for p in self._procs.values():
                if p.poll() is None:
                    _kill(p)
        for th in self._threads:
            th.join(timeout=2)

    def table(self) -> pd.DataFrame:
        rows = []
        for name, r in self.rows.items():
            r = dict(r)
            try:
                r["stdout"] = (self.dir / f"{name}.out").read_text(errors="replace")[-4000:]
                r["stderr"] = (self.dir / f"{name}.err").read_text(errors="replace")[-4000:]
            except OSError:
                r["stdout"] = r["stderr"] = ""
            rows.append(r)
        return pd.DataFrame(rows)

    def failures(self) -> list[str]:
        out = []
        names = {f.name for _, f in self.flows}
        for name in sorted(names):
            r = self.rows.get(name)
            if r is None:
                out.append(f"command {name} never started")
                continue
            if r["killed"] or not r["check"]:
                continue  # stopped by the run's end (a server), or failures tolerated
            if r["rc"] != 0:
                tail = ""
                try:
                    tail = (self.dir / f"{name}.err").read_text(errors="replace").strip()
                    tail = " | ".join(tail.splitlines()[-2:])
                except OSError:
                    pass
                what = "not found" if r["rc"] == 127 else f"exit {r['rc']}"
                out.append(f"command {name} ({r['command']}) failed: {what}"
                           + (f": {tail}" if tail else ""))
        return out


def _kill(p: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=1.0)
            return
        except subprocess.TimeoutExpired:
            continue
