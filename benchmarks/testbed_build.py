"""Benchmark: build + teardown time of an N-pair dumbbell (goal: 32 pairs in <= 1 s).

Prints the median of several builds for 1, 8 and 32 pairs, both link backends' layouts,
and checks that each build's namespaces exist and are gone after teardown."""
from __future__ import annotations

import secrets
import statistics
import sys
import time

from ccarena.testbed import netns
from ccarena.study.load import loads_study
from ccarena.testbed.build import Testbed
from ccarena.testbed.topology import plan_dumbbell

STUDY = '''
[study]
name = "bench"
duration = "1s"
[topology]
pairs = {pairs}
[bottleneck]
rate = "100mbit"
[[flow]]
from = "s1"
to = "r1"
'''


def once(pairs: int, backend: str) -> tuple[float, float]:
    study = loads_study(STUDY.format(pairs=pairs))
    topo = plan_dumbbell(secrets.token_hex(3), pairs, backend)
    t0 = time.perf_counter()
    tb = Testbed(topo, study)
    tb.build()
    t1 = time.perf_counter()
    assert all(netns.exists(n) for n in topo.namespaces)
    tb.teardown()
    t2 = time.perf_counter()
    assert not any(netns.exists(n) for n in topo.namespaces)
    return t1 - t0, t2 - t1


def main() -> int:
    print(f"{'pairs':>5} {'backend':8} {'namespaces':>10} {'build s':>8} {'teardown s':>10} "
          f"{'total s':>8}")
    worst32 = 0.0
    for pairs in (1, 8, 32):
        for backend in ("kernel", "user"):
            res = [once(pairs, backend) for _ in range(5)]
            b = statistics.median(r[0] for r in res)
            t = statistics.median(r[1] for r in res)
            n = 2 * pairs + (3 if backend == "user" else 2)
            print(f"{pairs:5d} {backend:8} {n:10d} {b:8.3f} {t:10.3f} {b + t:8.3f}")
            if pairs == 32:
                worst32 = max(worst32, b + t)
    print(f"32-pair build+teardown: {worst32:.3f} s (goal <= 1.0 s): "
          f"{'met' if worst32 <= 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
