"""The kernel backend's qdisc sampler counts the reads that fail instead of hiding them."""
import threading
from types import SimpleNamespace

from ccarena.testbed.kernel_link import QdiscSampler


def sampler(fail_port, how="raise"):
    tb = SimpleNamespace(topo=SimpleNamespace(bottleneck_ports={"w2e": ("r1", "a"),
                                                                "e2w": ("r2", "b")}))
    s = QdiscSampler(tb, interval_s=0.001)

    def read(ipr, idx):
        if idx == fail_port:
            if how == "none":
                return None          # the port has no root qdisc statistics
            raise OSError("netlink: no buffer space")
        return (1, 1500, 10, 0, 15000)
    s._read = read
    return s


def run_briefly(s):
    t = threading.Thread(target=s._sample, args=([(0, None, 1), (1, None, 2)],))
    t.start()
    threading.Event().wait(0.05)
    s._stop.set()
    t.join()


def test_a_port_whose_reads_fail_makes_the_samples_untrusted():
    s = sampler(fail_port=2)
    run_briefly(s)
    assert s.reads >= 2 and s.failed_reads * 2 == s.reads
    why = s.failures()
    assert why and "no buffer space" in why and f"{s.failed_reads} of {s.reads}" in why
    assert {r[1] for r in s.rows} == {0}          # only the good port left rows


def test_clean_reads_and_a_rare_failure_are_trusted():
    s = sampler(fail_port=None)
    run_briefly(s)
    assert s.reads > 0 and s.failed_reads == 0 and s.failures() is None
    s.failed_reads, s.reads = 1, 1000             # under 1 %: a gap, not a broken series
    assert s.failures() is None


def test_a_port_without_statistics_is_a_gap_too():
    s = sampler(fail_port=2, how="none")
    run_briefly(s)
    assert s.reads >= 2 and s.failed_reads * 2 == s.reads
    why = s.failures()
    assert why and "no root qdisc statistics" in why and "e2w" in why
    assert {r[1] for r in s.rows} == {0}


def test_missed_ticks_are_counted_over_the_run_only():
    """Ticks come every interval; a gap of more than two intervals missed one per
    interval in it; gaps while the run was built or torn down (before t0, after its end)
    are not the run's."""
    s = sampler(fail_port=None)           # interval 1 ms
    ms = 1_000_000
    s.tick_ns = [0, 50 * ms,                                   # setup: a 50 ms gap
                 100 * ms, 101 * ms, 102 * ms, 107 * ms, 108 * ms,   # the run: 5 ms gap
                 300 * ms]                                     # teardown
    assert s.ticks(100 * ms, 110 * ms) == (5, 4)
    assert s.ticks(100 * ms, 102 * ms) == (3, 0)
    assert s.ticks() == (8, 49 + 49 + 4 + 191)
