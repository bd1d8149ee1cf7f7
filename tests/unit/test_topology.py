import pytest

from ccarena.testbed.topology import plan_dumbbell


def test_dumbbell_names_carry_the_run_id_and_addresses_are_unique():
    t = plan_dumbbell("abc123", 3, "user")
    assert all(ns.startswith("ccaabc123-") for ns in t.namespaces)
    assert len(set(t.namespaces)) == len(t.namespaces) == 3 * 2 + 3
    ips = list(t.host_ip.values())
    assert len(set(ips)) == 6
    assert t.host_ip["s2"] == "10.1.2.2" and t.host_ip["r3"] == "10.2.3.2"
    macs = [e.mac for v in t.veths for e in (v.a, v.b)]
    assert len(set(macs)) == len(macs)


def test_kernel_backend_has_no_link_namespace():
    t = plan_dumbbell("abc123", 1, "kernel")
    assert "ln" not in t.routers
    assert t.bottleneck_ports["w2e"] == ("ccaabc123-rl", "bn")


def test_pairs_are_bounded():
    with pytest.raises(ValueError):
        plan_dumbbell("abc123", 0, "kernel")
