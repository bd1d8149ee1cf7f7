"""Signals during a study (run/interrupt.py): recorded when they arrive, acted on at the
next checkpoint or at once inside a declared wait, never lost -- not even when one arrives
inside an at-fork hook, where Python discards a raised exception -- and acted on once."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ccarena.run import interrupt

_fire = []


def _fire_in_fork_hook():
    """After a fork, in the parent, inside the at-fork hooks: where a handler's exception
    is reported as "Exception ignored" and dropped."""
    if _fire:
        os.kill(os.getpid(), _fire.pop())


os.register_at_fork(after_in_parent=_fire_in_fork_hook)


def fork_with_signal(sig) -> None:
    _fire.append(sig)
    # a preexec_fn makes subprocess fork with the at-fork hooks, as every run's process
    subprocess.run(["true"], preexec_fn=lambda: None, check=True)


def test_a_signal_inside_a_fork_hook_is_lost_with_a_raising_handler(monkeypatch):
    """Why signals are only recorded: a handler that raises runs inside the hook, and
    Python drops its exception there ("Exception ignored in ...")."""
    ran, dropped = [], []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))

    def raising(signum, frame):
        ran.append(signum)
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, raising)
    try:
        fork_with_signal(signal.SIGTERM)        # no KeyboardInterrupt comes out here
    finally:
        signal.signal(signal.SIGTERM, old)
    assert ran == [signal.SIGTERM] and dropped == [KeyboardInterrupt]


@pytest.mark.parametrize("sig", interrupt.STUDY_SIGNALS)
def test_a_signal_inside_a_fork_hook_is_acted_on_at_the_next_checkpoint(sig):
    with pytest.raises(interrupt.Interrupted) as e:
        with interrupt.handled():
            fork_with_signal(sig)
            assert interrupt.pending() == sig       # recorded, not raised in the hook
            interrupt.checkpoint()
            pytest.fail("the checkpoint did not act")
    assert e.value.signum == sig and isinstance(e.value, KeyboardInterrupt)


def test_a_signal_is_acted_on_once_and_the_handlers_are_restored():
    before = {s: signal.getsignal(s) for s in interrupt.STUDY_SIGNALS}
    with pytest.raises(interrupt.Interrupted):
        with interrupt.handled():
            os.kill(os.getpid(), signal.SIGINT)
            try:
                interrupt.checkpoint()
            except interrupt.Interrupted:
                # the teardown: a second Ctrl-C and SIGTERM do not cut it short
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGTERM)
                interrupt.checkpoint()
                assert interrupt.pending() == signal.SIGINT
                raise
    assert {s: signal.getsignal(s) for s in interrupt.STUDY_SIGNALS} == before


def test_a_signal_recorded_after_the_last_checkpoint_is_acted_on_when_the_study_ends():
    with pytest.raises(interrupt.Interrupted):
        with interrupt.handled():
            os.kill(os.getpid(), signal.SIGHUP)
    with interrupt.handled():       # a new study starts with nothing recorded
        interrupt.checkpoint()


def test_a_wait_declared_interruptible_is_cut_short_at_once():
    t = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    start = time.monotonic()
    with pytest.raises(interrupt.Interrupted):
        with interrupt.handled():
            t.start()
            with interrupt.interruptible():
                time.sleep(10)
    assert time.monotonic() - start < 2


def test_outside_a_wait_nothing_is_raised_where_the_signal_lands():
    with pytest.raises(interrupt.Interrupted):
        with interrupt.handled():
            os.kill(os.getpid(), signal.SIGTERM)
            done = sum(range(1000))             # arbitrary code goes on
            assert done == 499500
            interrupt.checkpoint()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_dropped_inside_a_wait_is_acted_on_at_the_next_checkpoint():
    """Inside a wait the handler raises; should that land where Python drops it (a fork
    hook), the signal is still pending and the next checkpoint acts on it."""
    with pytest.raises(interrupt.Interrupted):
        with interrupt.handled():
            with interrupt.interruptible():
                fork_with_signal(signal.SIGTERM)
            interrupt.checkpoint()
