"""The run watchdog: an overrun becomes an error with the stacks written, not a hang."""
import time

import pytest

from ccarena.run import watchdog


def test_an_overrun_raises_and_leaves_the_stacks(tmp_path):
    stacks = tmp_path / "logs" / "stacks.txt"
    t = time.monotonic()
    with pytest.raises(watchdog.RunOverrun, match="did not finish within 0.3 s"):
        with watchdog.bounded(0.3, stacks):
            time.sleep(30)          # a blocked call: interrupted, not waited out
    assert time.monotonic() - t < 10
    text = stacks.read_text()
    assert "test_an_overrun_raises_and_leaves_the_stacks" in text, text


def test_a_run_in_time_leaves_nothing_behind(tmp_path):
    stacks = tmp_path / "stacks.txt"
    with watchdog.bounded(0.5, stacks):
        time.sleep(0.05)
    assert not stacks.exists()
    time.sleep(1.0)     # the alarm was cancelled: nothing fires after the block
