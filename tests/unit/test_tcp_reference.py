"""The TCP settings a study leaves to the host, against the reference kernel's defaults
(study/tcp_reference.py), as `validate` lists them."""
from ccarena.run.dryrun import host_dependent
from ccarena.run.environment import initcwnd_of
from ccarena.study.load import loads_study
from ccarena.study.tcp_reference import INITCWND, REFERENCE_TCP, left_to_host, pinned

BASE = '''
[study]
name = "t"
duration = "5s"
[[flow]]
name = "f"
from = "s1"
to = "r1"
'''


def here(**changes):
    """This machine's values: the reference's, with some changed."""
    v = dict(REFERENCE_TCP)
    v.update({k.replace("__", "."): val for k, val in changes.items()})
    return v


def test_a_machine_like_the_reference_leaves_nothing_to_list():
    s = loads_study(BASE)
    assert left_to_host(s, here()) == []
    assert host_dependent(s, here())[0].startswith("TCP settings: those the study leaves "
                                                   "to the host are as the reference")


def test_a_setting_left_to_the_host_and_different_here_is_listed_with_both_values():
    s = loads_study(BASE)
    v = here(**{"net__ipv4__tcp_rmem": "4096 131072 33554432"})
    assert left_to_host(s, v) == [("net.ipv4.tcp_rmem", "s1, r1", "4096 131072 33554432",
                                   "4096 131072 6291456")]
    lines = host_dependent(s, v)
    assert "differ here from the reference kernel (6.12.95+deb12-amd64)" in lines[0]
    assert lines[1] == ("  net.ipv4.tcp_rmem = 4096 131072 33554432 here, reference "
                        "4096 131072 6291456 (s1, r1)")


def test_what_the_study_pins_is_never_listed():
    v = here(**{"net__ipv4__tcp_rmem": "1 2 3", "net__ipv4__tcp_wmem": "1 2 3",
                "net__ipv4__tcp_slow_start_after_idle": "0"})
    s = loads_study(BASE + '[tcp]\nrmem = ["4KiB", "128KiB", "6MiB"]\n'
                    'sysctl = { "net.ipv4.tcp_slow_start_after_idle" = 1 }\n'
                    '[hosts.s1]\nsysctl = { "net.ipv4.tcp_wmem" = "4096 16384 65536" }\n')
    rows = left_to_host(s, v)
    # wmem pinned on s1 only: r1 still takes the machine's
    assert rows == [("net.ipv4.tcp_wmem", "r1", "1 2 3", "4096 16384 4194304")]
    assert "net.ipv4.tcp_no_metrics_save" in pinned(s)["s1"]     # ccarena always sets it


def test_a_setting_this_kernel_lacks_is_listed_as_absent():
    v = here()
    v["net.ipv4.tcp_tso_rtt_log"] = None
    rows = left_to_host(loads_study(BASE), v)
    assert rows == [("net.ipv4.tcp_tso_rtt_log", "s1, r1", "absent", "9")]


def test_initcwnd_is_pinned_by_the_study_or_the_kernels():
    v = here(**{"route initcwnd": "4"})
    assert [r[0] for r in left_to_host(loads_study(BASE), v)] == [INITCWND]
    assert left_to_host(loads_study(BASE + "[tcp]\ninitcwnd = 4\n"), v) == []
    assert initcwnd_of(["default via 10.1.1.1 dev eth0 proto static initcwnd 4",
                        "10.1.1.0/24 dev eth0 scope link"]) == "4"
    assert initcwnd_of(["default via 10.1.1.1 dev eth0"]) == "10"


def test_a_swept_setting_is_pinned_in_every_cell():
    v = here(**{"net__ipv4__tcp_rmem": "1 2 3"})
    s = loads_study(BASE + '[sweep]\n"tcp.rmem" = [["4KiB", "128KiB", "6MiB"], '
                    '["4KiB", "128KiB", "32MiB"]]\n')
    assert left_to_host(s, v) == []


def meta(**sysctls):
    return {"host_state": {"sysctls": {"s1": dict(sysctls), "r1": dict(sysctls)}}}


def test_two_studies_whose_hosts_had_different_settings_are_told_apart():
    from ccarena.analysis.host_settings import differences, recorded
    a = recorded({"x": meta(**{"net.ipv4.tcp_rmem": "4096 131072 6291456",
                               "net.ipv4.tcp_sack": "1"})})
    b = recorded({"y": meta(**{"net.ipv4.tcp_rmem": "4096  131072 33554432",
                               "net.ipv4.tcp_sack": "1"}),
                  "z": meta(**{"net.ipv4.tcp_rmem": "4096 131072 6291456",
                               "net.ipv4.tcp_sack": "1"})})
    assert differences(a, a) == []
    assert differences(a, b) == [
        "r1 net.ipv4.tcp_rmem: A 4096 131072 6291456, B 4096 131072 33554432 | "
        "4096 131072 6291456",
        "s1 net.ipv4.tcp_rmem: A 4096 131072 6291456, B 4096 131072 33554432 | "
        "4096 131072 6291456"]
    # a setting only one side recorded (an older run) is named, not compared
    c = recorded({"x": meta(**{"net.ipv4.tcp_rmem": "4096 131072 6291456"})})
    assert differences(a, c) == ["recorded by only one of them: net.ipv4.tcp_sack"]


def test_the_runs_record_shows_what_the_study_left_to_the_host():
    from ccarena.analysis.host_settings import against_reference, recorded
    rec = recorded({"x": meta(**{**REFERENCE_TCP,
                                 "net.ipv4.tcp_rmem": "4096 131072 33554432"})})
    assert against_reference(rec, loads_study(BASE)) == [
        "net.ipv4.tcp_rmem = 4096 131072 33554432 in the runs, reference 4096 131072 "
        "6291456 (s1, r1)"]
