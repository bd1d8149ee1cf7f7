"""Helpers for integration tests: small studies written on the fly."""
from __future__ import annotations

import textwrap

from ccarena.study.load import loads_study


def bulk_study(name="it", rate="100mbit", delay=None, buffer="100p", cc="cubic",
               duration="6s", warmup="2s", backend="auto", extra="", pairs=1):
    d = f'delay = "{delay}"\n' if delay else ""
    return loads_study(textwrap.dedent(f'''
        [study]
        name = "{name}"
        duration = "{duration}"
        warmup = "{warmup}"
        repetitions = 1
        seed = 7
        [topology]
        pairs = {pairs}
        [bottleneck]
        rate = "{rate}"
        buffer = "{buffer}"
        backend = "{backend}"
        ''') + d + textwrap.dedent(f'''
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        cc = "{cc}"
        ''') + extra)
