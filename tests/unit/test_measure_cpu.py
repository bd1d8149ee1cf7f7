"""The machine's CPU accounting through psutil: busy, steal and idle fractions of a run,
and the emulator threads pinned per CPU (user_link placement)."""
from collections import namedtuple

import pytest

from ccarena.measure import cpu

Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")


def test_usage_from_two_psutil_snapshots(monkeypatch):
    seq = iter([Times(10, 0, 5, 80, 5, 0, 0, 0, 0, 0),
                Times(40, 0, 15, 110, 5, 0, 0, 30, 0, 0)])
    monkeypatch.setattr(cpu.psutil, "cpu_times", lambda: next(seq))
    u = cpu.usage(cpu.snapshot(), cpu.snapshot())
    # deltas: user 30, system 10, idle 30, steal 30 of 100
    assert u["busy_frac"] == pytest.approx(0.4) and u["steal_frac"] == pytest.approx(0.3)
    assert u["idle_frac"] == pytest.approx(0.3)


def test_usage_of_this_machine_is_a_set_of_fractions():
    a = cpu.snapshot()
    sum(i * i for i in range(200_000))
    u = cpu.usage(a, cpu.snapshot())
    assert 0 <= u["busy_frac"] <= 1 and 0 <= u["steal_frac"] <= 1


def test_pinned_emulator_threads_are_found_through_psutil(monkeypatch):
    import os

    from ccarena.testbed import user_link

    class Proc:
        def __init__(self, name, tids):
            self.info = {"name": name}
            self._tids = tids

        def threads(self):
            Thread = namedtuple("Thread", "id user_time system_time")
            return [Thread(t, 0, 0) for t in self._tids]

    monkeypatch.setattr(user_link.psutil, "process_iter", lambda attrs: iter(
        [Proc("ccarena-link", [101, 102]), Proc("bash", [7]), Proc("ccarena-link", [103])]))
    aff = {101: {1}, 102: {0, 1}, 103: {1}, 7: {0}}
    monkeypatch.setattr(os, "sched_getaffinity", lambda tid: aff[tid])
    assert user_link._pinned_links() == {1: 2}


def test_a_share_is_summed_over_its_cpus_by_id_even_with_cpus_offline(monkeypatch):
    """CPU 1 offline: /proc/stat lists cpu0, cpu2, cpu3; a share of {2, 3} is those two
    lines, not the second and third (positional matching took cpu2 for CPU 1)."""
    import builtins
    import io
    import os
    stat = ("cpu  900 0 300 2000 0 0 0 60 0 0\n"
            "cpu0 100 0 100 1000 0 0 0 0 0 0\n"
            "cpu2 300 0 100 500 0 0 0 20 0 0\n"
            "cpu3 500 0 100 500 0 0 0 40 0 0\n"
            "intr 12345\n")
    assert cpu.per_cpu_times(stat, 100) == {
        0: [1.0, 0.0, 1.0, 10.0, 0.0, 0.0, 0.0, 0.0],
        2: [3.0, 0.0, 1.0, 5.0, 0.0, 0.0, 0.0, 0.2],
        3: [5.0, 0.0, 1.0, 5.0, 0.0, 0.0, 0.0, 0.4]}
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **kw: io.StringIO(stat)
                        if p == "/proc/stat" else real_open(p, *a, **kw))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3})
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sysconf", lambda name: 100)
    assert cpu.snapshot() == [8.0, 0.0, 2.0, 10.0, 0.0, 0.0, 0.0, pytest.approx(0.6)]
