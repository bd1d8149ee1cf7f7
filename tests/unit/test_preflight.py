"""Preflight refuses, before anything is built, what this machine cannot run."""
import textwrap

import pytest

from ccarena.errors import PreflightError
from ccarena.run import preflight
from ccarena.study.load import loads_study


def _study(buffer: str):
    return loads_study(textwrap.dedent(f'''
        [study]
        name = "buf"
        duration = "5s"
        [bottleneck]
        rate = "10gbit"
        buffer = "{buffer}"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        '''))


def test_a_buffer_larger_than_the_memory_available_is_refused():
    gib = 2**30
    # 100 000 packets: 2 directions x 100 000 x 2 KiB = 0.38 GiB
    preflight.require_buffer_memory(_study("100000p"), available=1 * gib)
    with pytest.raises(PreflightError) as e:
        preflight.require_buffer_memory(_study("100000p"), available=gib // 4)
    msg = str(e.value)
    assert "bottleneck.buffer: 100000p needs 0.4 GiB" in msg, msg
    assert "2 directions x 100000 packets x 2048 bytes" in msg, msg
    assert "the 0.2 GiB of memory this machine has available" in msg, msg
    # a byte buffer holds full-size frames
    with pytest.raises(PreflightError, match=r"bottleneck.buffer: 1000000000 bytes needs 2.5 GiB"):
        preflight.require_buffer_memory(_study("1000000000B"), available=2 * gib)


def test_the_machines_available_memory_is_read():
    m = preflight.available_memory()
    assert m is None or m > 0
