"""run.shares and the cpuset helpers of testbed.cgroups: how one machine's CPUs are
divided between runs that run at once (docs/scale-out.md)."""
import textwrap

import pytest

from ccarena.errors import TestbedError
from ccarena.run.scaleout import shares
from ccarena.study.load import loads_study
from ccarena.testbed.cgroups import HostLimits, format_cpus, parse_cpus, within_share


@pytest.mark.parametrize("text, cpus", [("0", [0]), ("0-3", [0, 1, 2, 3]),
                                        ("0-1,4,6-7", [0, 1, 4, 6, 7]), ("3,1", [1, 3])])
def test_cpu_lists_read_and_written_as_the_kernel_does(text, cpus):
    assert parse_cpus(text) == cpus
    assert parse_cpus(format_cpus(cpus)) == cpus


def test_format_collapses_ranges():
    assert format_cpus([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"


@pytest.mark.parametrize("bad", ["", "a", "3-1", "1-", ","])
def test_a_malformed_cpu_list_is_refused(bad):
    with pytest.raises(ValueError, match="CPU list"):
        parse_cpus(bad)


def test_equal_shares_in_order():
    assert shares.partition(range(8), 2, core=lambda c: (0, c)) == ["0-3", "4-7"]
    assert shares.partition(range(8), 4, core=lambda c: (0, c)) == ["0-1", "2-3", "4-5", "6-7"]


def test_hyperthread_siblings_stay_in_one_share():
    # CPUs n and n+4 are the two threads of core n (a common numbering)
    core = lambda c: (0, c % 4)  # noqa: E731
    assert shares.partition(range(8), 4, core=core) == ["0,4", "1,5", "2,6", "3,7"]
    assert shares.partition(range(8), 2, core=core) == ["0-1,4-5", "2-3,6-7"]


def test_left_over_cpus_stay_out_of_every_share():
    got = shares.partition(range(7), 3, core=lambda c: (0, c))
    assert got == ["0-1", "2-3", "4-5"]
    flat = [c for s in got for c in parse_cpus(s)]
    assert len(flat) == len(set(flat))       # no CPU in two shares


def test_more_runs_than_cpus_is_refused_naming_the_limit():
    with pytest.raises(shares.ShareError, match="at most 2 at once"):
        shares.partition([0, 1], 3)
    with pytest.raises(shares.ShareError, match="give 1 or more"):
        shares.partition([0, 1], 0)


def test_one_slot_on_the_whole_machine_is_no_share():
    assert shares.worker_shares(1) == [None]


def test_worker_cpus_must_be_this_machines():
    mine = shares.usable_cpus()
    assert shares.worker_shares(1, str(mine[0])) == [str(mine[0])]
    with pytest.raises(shares.ShareError, match="not this machine's"):
        shares.worker_shares(1, str(max(mine) + 100))
    with pytest.raises(shares.ShareError, match="--cpus"):
        shares.worker_shares(1, "x")


def test_a_host_is_held_to_the_share_and_its_own_limits_must_fit():
    assert within_share("s1", HostLimits(), "2-3") == HostLimits(None, "2-3", None)
    assert within_share("s1", HostLimits(1.5, None, 2**20), "2-3") == \
        HostLimits(1.5, "2-3", 2**20)
    assert within_share("s1", HostLimits(None, "3", None), "2-3").cpuset == "3"
    with pytest.raises(TestbedError, match="host s1: cpuset 0 is outside"):
        within_share("s1", HostLimits(None, "0", None), "2-3")
    with pytest.raises(TestbedError, match="3 CPUs of time exceed"):
        within_share("s1", HostLimits(3, None, None), "2-3")


def _study(hosts: str):
    return loads_study(textwrap.dedent('''
        [study]
        name = "t"
        duration = "2s"
        [bottleneck]
        rate = "10mbit"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        ''') + textwrap.dedent(hosts), path="t.toml")


def test_a_study_that_cannot_keep_its_host_limits_on_a_share_is_refused_before_running():
    shares.check_study(_study(""), "0")
    shares.check_study(_study('[hosts.s1]\ncpus = 1\n'), "0")
    with pytest.raises(shares.ShareError, match=r"t.toml: hosts.s1.cpus = 2 is more"):
        shares.check_study(_study('[hosts.s1]\ncpus = 2\n'), "0")
    with pytest.raises(shares.ShareError, match=r"hosts.s1.cpuset = '1' is outside"):
        shares.check_study(_study('[hosts.s1]\ncpuset = "1"\n'), "0")
    shares.check_study(_study('[hosts.s1]\ncpuset = "1"\n'), None)   # serial: as it is
