"""Where the user-space link runs and where the endpoints' receive work goes."""
import os

import pytest

from ccarena.testbed import user_link


def test_cpu_mask_matches_the_kernels_cpumask_text():
    assert user_link.cpu_mask([0]) == "1"
    assert user_link.cpu_mask([1]) == "2"
    assert user_link.cpu_mask([0, 1, 2, 3]) == "f"
    # more than 32 CPUs: comma-separated 32-bit groups, most significant first
    assert user_link.cpu_mask([0, 33]) == "2,00000001"


def test_placement_gives_the_link_one_cpu_and_the_rest_to_rps(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.delenv("CCARENA_LINK_STEER", raising=False)
    monkeypatch.setattr(user_link, "_pinned_links", lambda: {})
    link, rps = user_link.placement()
    assert len(link) == 1 and link[0] not in rps
    assert sorted(link + rps) == [0, 1, 2]


def test_placement_avoids_cpus_other_runs_emulators_are_pinned_to(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.delenv("CCARENA_LINK_STEER", raising=False)
    monkeypatch.setattr(user_link, "_pinned_links", lambda: {})
    assert user_link.placement() == ([1], [0])
    monkeypatch.setattr(user_link, "_pinned_links", lambda: {1: 1})
    assert user_link.placement() == ([0], [1])


def test_placement_off_on_one_cpu_or_when_asked(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert user_link.placement() == ([], [])
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("CCARENA_LINK_STEER", "0")
    assert user_link.placement() == ([], [])


def test_placement_only_for_studies_that_send_traffic(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(user_link, "_pinned_links", lambda: {})
    monkeypatch.delenv("CCARENA_LINK_STEER", raising=False)
    assert user_link.placement(has_traffic=False) == ([], [])  # probes only: just delay
    assert user_link.placement(has_traffic=True) == ([1], [0])
    monkeypatch.setenv("CCARENA_LINK_STEER", "1")              # forced
    assert user_link.placement(has_traffic=False) == ([1], [0])
    monkeypatch.setenv("CCARENA_LINK_STEER", "pin")            # pinned, no RPS
    assert user_link.placement(has_traffic=True) == ([1], [])


def test_steering_is_best_effort(monkeypatch):
    from ccarena.errors import TestbedError
    from ccarena.testbed.topology import plan_dumbbell

    def refuse(ns, rel, value):
        raise TestbedError(f"write /sys/{rel} in namespace {ns}: Permission denied")
    monkeypatch.setattr(user_link.netns, "sysfs_write", refuse)
    topo = plan_dumbbell("abcdef", 1, "user")
    assert user_link.steer(topo, [0]) == []      # the run goes on, recorded as unsteered
    writes = []
    monkeypatch.setattr(user_link.netns, "sysfs_write", lambda *a: writes.append(a))
    assert user_link.steer(topo, [0, 2]) == [0, 2]
    assert sorted(w[0] for w in writes) == sorted(ns for ns, _ in topo.bottleneck_ports.values())
    assert all(w[2] == "5" for w in writes)


# -- packet I/O choice (docs/link.md "I/O design") ---------------------------------------
def test_link_io_defaults_to_auto_and_validates_the_variable(monkeypatch):
    from ccarena.testbed.user_link import link_io
    monkeypatch.delenv("CCARENA_LINK_IO", raising=False)
    assert link_io() == "auto"
    for v in ("packet", "xdp", "auto", " XDP "):
        monkeypatch.setenv("CCARENA_LINK_IO", v)
        assert link_io() == v.strip().lower()
    monkeypatch.setenv("CCARENA_LINK_IO", "dpdk")
    with pytest.raises(ValueError, match="CCARENA_LINK_IO='dpdk': accepted packet, xdp, auto"):
        link_io()


def test_a_study_with_offloads_gets_af_packet(monkeypatch):
    """With TSO on, veth hands frames past the XDP program: auto must not pick AF_XDP, and
    an explicit xdp is refused before the run."""
    from ccarena.testbed.user_link import link_io
    monkeypatch.setenv("CCARENA_LINK_IO", "auto")
    assert link_io(offloads=True) == "packet"
    monkeypatch.setenv("CCARENA_LINK_IO", "xdp")
    with pytest.raises(ValueError, match="offloads"):
        link_io(offloads=True)
