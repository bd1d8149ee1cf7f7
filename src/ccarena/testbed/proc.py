"""Child processes inside a namespace with the READY / GO / DONE handshake of the
flow engine and the link (docs/dev/contracts.md).

A child's stderr goes to a file in the run's raw directory so it is kept with the results;
its last lines are quoted in errors.

Every child dies with ccarena (`die_with_parent`, the preexec_fn of every process a run
starts): the kernel sends it SIGKILL when the thread that started it ends, so a ccarena
killed by SIGKILL leaves no link emulator, flow engine, ping or capture running into a dead
run's directory. The signal survives `ip netns exec` (which execs the program, so the
program's parent is ccarena itself) and the exec of ping (file capabilities, but root
gains nothing), not a program that changes its user (tcpdump: run with `-Z root`) nor
what a child forks (a command's own children: `ccarena cleanup` kills what is left in
the run's namespaces). Consequence: start children from the thread that waits for them
(the run's thread, or a thread that lives as long as its child)."""
from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from ccarena.testbed import netns
from ccarena.errors import RunError

PR_SET_PDEATHSIG = 1
# Signals by which something outside the run stops a process (a user, a supervisor, the
# OOM killer); a crash signal (SIGSEGV, SIGABRT, ...) is the program's own failure. A
# process that died of one of these while the run still needed it was killed, it did not
# fail: the run records it (meta["killed"]) and `--resume` runs the run again.
OUTSIDE_SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_libc = ctypes.CDLL(None, use_errno=True)    # loaded before any fork


def die_with_parent(then=None):
    """-> a preexec_fn: SIGKILL this child when its parent (thread) ends; exit at once if
    the parent is already gone; then call `then` (e.g. join a cgroup)."""
    parent = os.getpid()

    def preexec():
        _libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:        # it died between fork and prctl
            os._exit(1)
        if then is not None:
            then()
    return preexec


class NsProcess:
    def __init__(self, name: str, ns: str, argv: list[str], log_dir: Path, stdin=True,
                 cgroup=None):
        self.name = name
        self.argv = argv
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = log_dir / f"{name}.stderr"
        self._err = open(self.stderr_path, "wb")
        # ns None: the root namespace (the tracer, which watches the run's namespaces)
        full = netns.exec_argv(ns, argv) if ns else argv
        self.p = subprocess.Popen(full, stdin=subprocess.PIPE if stdin else
                                  subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err,
                                  start_new_session=True,
                                  preexec_fn=die_with_parent(cgroup.add_self if cgroup
                                                             else None))
        self._buf = b""
        self.lines: list[str] = []
        self._stopping = False      # ccarena asked it to stop (terminate)

    def stderr_tail(self, n: int = 5) -> str:
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def killed(self) -> dict | None:
        """{"process": name, "signal": "SIGKILL"} when the process ended by one of
        OUTSIDE_SIGNALS that ccarena did not send; else None (running, exited, crashed,
        or stopped by ccarena)."""
        rc = self.p.poll()
        if rc is None or rc >= 0 or self._stopping or -rc not in OUTSIDE_SIGNALS:
            return None
        return {"process": self.name, "signal": signal.Signals(-rc).name}

    def _fail(self, what: str, ended: bool = False):
        """Raise RunError naming the process, its exit and its last stderr lines; `ended`:
        it is known to be gone (its output or input closed), so its exit is awaited
        briefly to be named. The error carries `killed` (see killed())."""
        if ended and self.p.poll() is None:
            try:
                self.p.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
        rc = self.p.poll()
        tail = self.stderr_tail()
        e = RunError(f"{self.name}: {what}" + (f" (exit {rc})" if rc is not None else "")
                     + (f": {tail}" if tail else ""))
        e.killed = self.killed()
        raise e

    def wait_line(self, word: str, timeout_s: float) -> str:
        """Wait for a stdout line starting with `word`."""
        deadline = time.monotonic() + timeout_s
        fd = self.p.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                text = line.decode(errors="replace").strip()
                self.lines.append(text)
                if text.startswith(word):
                    return text
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"no {word} within {timeout_s:g} s")
            r, _, _ = select.select([fd], [], [], min(left, 0.2))
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._fail(f"exited before {word}", ended=True)
                self._buf += chunk
            elif self.p.poll() is not None and b"\n" not in self._buf:
                self._fail(f"exited before {word}", ended=True)

    def send(self, text: str):
        try:
            self.p.stdin.write(text.encode())
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail("closed its input", ended=True)

    def terminate(self, timeout_s: float = 5.0) -> int | None:
        if self.p.poll() is None:
            self._stopping = True
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()
        self.close()
        return self.p.returncode

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        for f in (self.p.stdin, self.p.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        self._err.close()
