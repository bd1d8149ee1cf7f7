"""A run that does not finish in time is stopped and recorded, not waited for forever.

Every step of a run waits with its own bound (the flow engines, the probes, the link), but
a blocked system call — a netlink request, a namespace that will not go — has none, and a
study of hours would hang on it. `bounded` limits a run as a whole: when the run overruns,
every Python thread's stack goes to a file in the run's logs (what a bug report needs),
and RunOverrun is raised in the main thread, where the runner treats it like any other
failure: the run is torn down and stored as invalid with the reason, and the study goes on.

It uses SIGALRM, so it works only in the main thread; elsewhere it does nothing."""
from __future__ import annotations

import contextlib
import faulthandler
import signal
import threading
from pathlib import Path

from ccarena.errors import RunError

# room for building the testbed, starting and stopping its parts and reading their output,
# beyond the run's own duration; a large study (64 namespaces, cgroups) builds in ~30 s
SLACK_S = 300.0


class RunOverrun(RunError):
    """The run as a whole took longer than its bound."""


def limit_s(duration_s: float) -> float:
    return duration_s + SLACK_S


@contextlib.contextmanager
def bounded(seconds: float, stacks_path: Path):
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stacks_path.parent.mkdir(parents=True, exist_ok=True)
    f = open(stacks_path, "w")
    fired = []

    def overrun(signum, frame):
        fired.append(True)
        raise RunOverrun(f"the run did not finish within {seconds:g} s; the stacks of its "
                         f"threads at that moment are in {stacks_path}")
    # the stacks are written just before the exception, so they show where it was stuck
    faulthandler.dump_traceback_later(seconds, exit=False, file=f)
    old = signal.signal(signal.SIGALRM, overrun)
    signal.setitimer(signal.ITIMER_REAL, seconds + 0.2)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        faulthandler.cancel_dump_traceback_later()
        f.close()
        if not fired and stacks_path.stat().st_size == 0:
            stacks_path.unlink()
