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
    with pytest.raises(ValueError, match=r"^pairs must be 1\.\.250$"):
        plan_dumbbell("abc123", 0, "kernel")


def test_the_pairs_a_study_may_ask_for_are_the_pairs_the_address_plan_builds(tmp_path):
    """One limit: a study with one pair too many is refused at validation, naming the
    key, and the largest accepted one has a plan (a study that passes validation never
    fails at run time for its number of pairs)."""
    import pytest

    from ccarena.errors import SpecError
    from ccarena.study.keys import MAX_PAIRS
    from ccarena.study.load import loads_study
    from ccarena.testbed.topology import plan_dumbbell
    body = '[study]\nname = "p"\nduration = "2s"\n[topology]\npairs = {}\n[[flow]]\nname = "f"\n' \
           'from = "s1"\nto = "r1"\n'
    assert plan_dumbbell("abc123", MAX_PAIRS, "user").pairs == MAX_PAIRS
    assert loads_study(body.format(MAX_PAIRS), "p.toml").pairs == MAX_PAIRS
    with pytest.raises(SpecError, match=r"p\.toml: topology\.pairs: .*250"):
        loads_study(body.format(MAX_PAIRS + 1), "p.toml")
