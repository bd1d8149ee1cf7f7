"""SIGINT, SIGTERM and SIGHUP while a study runs: recorded when they arrive, acted on at
the next safe point, never lost.

A handler that raises does so wherever the main thread happens to be, and Python discards
an exception raised in some of those places: an at-fork hook (logging registers one; every
subprocess started with a preexec_fn, as each of a run's processes is, runs them), a
__del__, a weakref callback ("Exception ignored in: ..."). The signal would be lost and
the study would go on to its end. So the handler here only records the signal, and it is
acted on -- Interrupted raised, which tears the run down like any exception -- at:

- `checkpoint()`: a place where stopping is safe (between runs, once the testbed is
  built, between the steps of a run's parts), and
- the waits declared `interruptible()`: code that only waits (for processes, a deadline,
  Dask's results), forks nothing and leaves nothing half-changed, so a long wait is cut
  short at once; and the stretch before a run builds anything (imports, preflight),
  where there is nothing to tear down.

A study acts on the first signal only: the teardown that follows is never cut short by a
second Ctrl-C. SIGHUP (a closed terminal or SSH session) is taken as SIGTERM.

    with interrupt.handled():          # the study's handlers, the previous ones restored
        interrupt.checkpoint()
        with interrupt.interruptible():
            proc.wait()

Outside the main thread (a notebook's worker thread) no handler can be installed: the
process keeps its own, and checkpoints find nothing recorded."""
from __future__ import annotations

import contextlib
import signal
import threading

STUDY_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A study's signal, acted on; `signum` is the signal."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class _State:
    pending: int | None = None     # the first signal recorded
    acted = False                   # Interrupted was raised for it
    waiting = 0                     # depth of interruptible() regions


_state = _State()


def _record(signum, frame) -> None:
    if _state.pending is None:
        _state.pending = signum
    if _state.waiting and not _state.acted:
        # marked acted on only once it leaves the wait (interruptible): raised where
        # Python drops it, it is acted on at the next checkpoint all the same
        raise Interrupted(_state.pending)


def checkpoint() -> None:
    """Raise Interrupted if a signal was recorded and not yet acted on."""
    if _state.pending is not None and not _state.acted:
        _state.acted = True
        raise Interrupted(_state.pending)


def pending() -> int | None:
    """The signal recorded, if any (acted on or not)."""
    return _state.pending


@contextlib.contextmanager
def interruptible():
    """A wait that a signal may cut short where it stands (or a stretch before anything
    that needs tearing down exists)."""
    checkpoint()
    _state.waiting += 1
    try:
        checkpoint()        # arrived between the first check and the count
        yield
    except Interrupted:
        _state.acted = True
        raise
    finally:
        _state.waiting -= 1


@contextlib.contextmanager
def handled(signals=STUDY_SIGNALS):
    """Record `signals` while the block runs (see the module's doc); on leaving it
    normally, a signal recorded and not yet acted on is acted on. The handlers before it
    are restored; nested uses share one record."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = any(signal.getsignal(s) is _record for s in signals)
    if not outer:
        _state.pending, _state.acted, _state.waiting = None, False, 0
    old = {s: signal.signal(s, _record) for s in signals}
    try:
        yield
    except BaseException:
        _restore(old)
        raise
    _restore(old)
    checkpoint()


def _restore(old: dict) -> None:
    for s, h in old.items():
        signal.signal(s, h)
