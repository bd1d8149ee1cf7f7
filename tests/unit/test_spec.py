"""Study files: valid ones load with the right numbers; each kind of bad input is one clear
error naming the file, the key and what is accepted."""
import textwrap
from pathlib import Path

import pytest

from ccarena.errors import SpecError
from ccarena.study.load import load_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"

BASE = """
[study]
name = "t"
duration = "10s"
warmup = "2s"
repetitions = 3
[topology]
pairs = 2
[bottleneck]
rate = "10mbit"
delay = "10ms"
buffer = "100p"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
cc = "reno"
[[flow]]
name = "web"
from = "r2"
to = "s2"
kind = "download"
size = "174KiB"
every = "2s"
[[probe]]
kind = "ping"
from = "s1"
to = "r1"
interval = "100ms"
"""


def write(tmp_path, text, name="study.toml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_valid_study_in_si_units(tmp_path):
    s = load_study(write(tmp_path, BASE))
    assert s.duration_s == 10 and s.warmup_s == 2 and s.repetitions == 3
    assert s.bottleneck.rate_bps == 10_000_000
    assert s.bottleneck.delay_s == pytest.approx(0.01)
    assert s.base_rtt_s == pytest.approx(0.02)
    assert s.bottleneck.buffer.kind == "packets" and s.bottleneck.buffer.size == 100
    web = s.flows[1]
    assert (web.kind, web.size, web.src, web.dst) == ("download", 174 * 1024, "r2", "s2")
    assert s.probes[0].interval_s == pytest.approx(0.1)
    assert len(s.cells) == 1


def expect_error(tmp_path, text, key, *needles):
    p = write(tmp_path, text)
    with pytest.raises(SpecError) as e:
        load_study(p)
    msg = str(e.value)
    assert str(p) in msg, msg
    assert key in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


def test_unknown_key(tmp_path):
    expect_error(tmp_path, BASE.replace('delay = "10ms"', 'delay = "10ms"\nspeed = 3'),
                 "bottleneck.speed", "unknown key", "accepted here", "rate")


def test_unknown_table(tmp_path):
    expect_error(tmp_path, BASE + "\n[network]\nx = 1\n", "network", "unknown table")


def test_unknown_unit(tmp_path):
    expect_error(tmp_path, BASE.replace('"10ms"', '"10 parsecs"'), "bottleneck.delay",
                 "unknown time unit 'parsecs'", "ms")


def test_unknown_algorithm(tmp_path):
    expect_error(tmp_path, BASE.replace('cc = "reno"', 'cc = "warp"'), "flow.bulk.cc",
                 "unknown congestion control 'warp'", "cubic")


def test_flow_between_hosts_that_do_not_exist(tmp_path):
    expect_error(tmp_path, BASE.replace('to = "r1"\ncc', 'to = "r9"\ncc'), "flow.bulk.to",
                 "no such host 'r9'", "s1, s2, r1, r2")


def test_sweep_over_a_key_that_does_not_exist(tmp_path):
    expect_error(tmp_path, BASE + '\n[sweep]\n"bottleneck.colour" = ["red"]\n',
                 'sweep."bottleneck.colour"', "no setting 'colour'", "buffer")
    expect_error(tmp_path, BASE + '\n[sweep]\n"flow.nope.cc" = ["reno"]\n',
                 'sweep."flow.nope.cc"', "no flow named 'nope'", "bulk")


def test_bad_value_inside_a_sweep_cell_names_the_cell(tmp_path):
    expect_error(tmp_path, BASE + '\n[sweep]\n"bottleneck.buffer" = ["20p", "lots"]\n',
                 "bottleneck.buffer", "sweep cell", "lots")


def test_missing_required(tmp_path):
    expect_error(tmp_path, BASE.replace('duration = "10s"\n', ''), "study.duration",
                 "is required")


def test_download_that_cannot_finish(tmp_path):
    expect_error(tmp_path, BASE.replace('every = "2s"', 'every = "2s"\ncount = 9'),
                 "flow.web.count", "cannot all start")


def test_key_of_another_kind(tmp_path):
    expect_error(tmp_path, BASE.replace('cc = "reno"', 'cc = "reno"\nsize = "1MB"'),
                 "flow.bulk.size", "does not apply to kind 'bulk'")


def test_not_toml(tmp_path):
    expect_error(tmp_path, "[study\nname=", "", "not valid TOML")


def test_sweeps_are_cartesian_and_generated(tmp_path):
    s = load_study(write(tmp_path, BASE + textwrap.dedent('''
        [sweep]
        "bottleneck.buffer" = ["20p", "100p"]
        "flow.bulk.cc" = ["reno", "cubic", "bbr"]
        ''')))
    assert len(s.cells) == 6
    combos = {(p["bottleneck.buffer"], p["flow.bulk.cc"]) for p in (c.params for c in s.cells)}
    assert ("20p", "bbr") in combos and ("100p", "reno") in combos
    cell = {(c.params["bottleneck.buffer"], c.params["flow.bulk.cc"]): c.study for c in s.cells}
    assert cell[("20p", "bbr")].bottleneck.buffer.size == 20
    assert cell[("20p", "bbr")].flows[0].cc == "bbr"


@pytest.mark.parametrize("gen,extra,values", [
    ("linear", 'unit = "5ms", until = "20ms"', [0, 5, 10, 15, 20]),
    ("quadratic", 'unit = "1ms", from = 1, until = "64ms"', [1, 4, 9, 16, 25, 36, 49, 64]),
    ("exponential", 'unit = "1ms", until = "64ms"', [1, 2, 4, 8, 16, 32, 64]),
])
def test_generated_sequences(tmp_path, gen, extra, values):
    s = load_study(write(tmp_path, BASE + f'\n[sweep]\n"bottleneck.delay" = '
                         f'{{ generate = "{gen}", {extra} }}\n'))
    got = [round(c.bottleneck.delay_s * 1000, 6) for c in (x.study for x in s.cells)]
    assert got == values


def test_extends_merges_tables_and_replaces_flows(tmp_path):
    write(tmp_path, BASE, "base.toml")
    child = write(tmp_path, '''
        [study]
        extends = "base.toml"
        name = "child"
        [bottleneck]
        rate = "50mbit"
        ''', "child.toml")
    s = load_study(child)
    assert s.name == "child" and s.bottleneck.rate_bps == 50_000_000
    assert s.bottleneck.delay_s == pytest.approx(0.01)   # inherited
    assert [f.name for f in s.flows] == ["bulk", "web"]


def test_every_shipped_study_loads():
    from pathlib import Path
    studies = sorted((Path(__file__).resolve().parents[2] / "studies").glob("*.toml"))
    assert studies, "no studies shipped"
    for p in studies:
        s = load_study(p)
        assert s.cells


SCALED = BASE + textwrap.dedent('''
    [sweep]
    "flow.bulk.cc" = ["reno", "cubic", "bbr"]
    "bottleneck.buffer" = ["20p", "100p"]
    [scale.quick]
    study = { duration = "3s", repetitions = 1 }
    sweep = { "flow.bulk.cc" = ["reno"] }
    ''')


def test_scales_override_the_study(tmp_path):
    p = write(tmp_path, SCALED)
    full = load_study(p)
    assert full.scale is None and len(full.cells) == 6 and full.duration_s == 10
    quick = load_study(p, scale="quick")
    assert quick.scale == "quick" and quick.duration_s == 3 and quick.repetitions == 1
    # the scale replaced one sweep key and kept the other
    assert sorted(c["flow.bulk.cc"] + c["bottleneck.buffer"] for c in (x.params for x in quick.cells)) == \
        ["reno100p", "reno20p"]
    assert load_study(p, scale="full").scale == "full"
    with pytest.raises(SpecError, match="no scale 'huge'; this study has: quick"):
        load_study(p, scale="huge")
    # a study extending a scaled one may make "full" (the study as written) its default
    child = tmp_path / "child.toml"
    child.write_text(f'[study]\nextends = "{p}"\ndefault_scale = "full"\n')
    s = load_study(child)
    assert s.scale == "full" and len(s.cells) == 6 and s.duration_s == 10


CHECKED = BASE + textwrap.dedent('''
    [[expect]]
    name = "fair"
    metric = "jain"
    min = 0.9
    [[expect]]
    name = "under the rate"
    metric = "goodput_bps"
    max = "100%rate"
    ''')


def test_a_scale_replaces_a_check_by_name_and_adds_others(tmp_path):
    p = write(tmp_path, CHECKED + textwrap.dedent('''
        [[scale.quick.expect]]
        replaces = "fair"
        name = "not grossly unfair"
        metric = "jain"
        min = 0.5
        [[scale.quick.expect]]
        name = "some goodput"
        metric = "goodput_bps"
        min = 1e6
        '''))
    assert [e["name"] for e in load_study(p).expect] == ["fair", "under the rate"]
    quick = load_study(p, scale="quick").expect
    assert [(e["name"], e.get("min")) for e in quick] == [
        ("not grossly unfair", 0.5), ("under the rate", None), ("some goodput", 1e6)]
    assert not any("replaces" in e for e in quick)


@pytest.mark.parametrize("entry, key, says", [
    ('replaces = "fiar"\nname = "x"\nmetric = "jain"', "scale.quick.expect[0].replaces",
     "no check named 'fiar'; its checks: 'fair', 'under the rate'"),
    ('name = "fair"\nmetric = "jain"', "scale.quick.expect[0].name",
     "write replaces = 'fair'"),
])
def test_a_scale_check_naming_the_wrong_check_is_refused(tmp_path, entry, key, says):
    p = write(tmp_path, CHECKED + "\n[[scale.quick.expect]]\n" + entry + "\n")
    for scale in ("quick", None):   # every scale is checked, not only the one used
        with pytest.raises(SpecError) as e:
            load_study(p, scale=scale)
        assert e.value.key == key and says in e.value.reason and str(p) in str(e.value)


def test_parallel_tcp_quick_weakens_only_the_fairness_check():
    full = load_study(STUDIES / "parallel-tcp.toml")
    quick = load_study(STUDIES / "parallel-tcp.toml", scale="quick")
    jain = [e for e in quick.expect if e["metric"] == "jain_conns"]
    assert len(quick.expect) == len(full.expect) and [e["min"] for e in jain] == [0.5]
    others = [e for e in full.expect if e["metric"] != "jain_conns"]
    assert [e for e in quick.expect if e["metric"] != "jain_conns"] == others
    for scale in ("medium", "grid"):
        s = load_study(STUDIES / "parallel-tcp.toml", scale=scale)
        assert [e["min"] for e in s.expect if e["metric"] == "jain_conns"] == [0.8]


def test_disabled_flows_vanish_and_can_be_swept(tmp_path):
    p = write(tmp_path, BASE + '\n[sweep]\n"flow.web.enabled" = [true, false]\n')
    s = load_study(p)
    names = sorted(tuple(f.name for f in c.flows) for c in (x.study for x in s.cells))
    assert names == [("bulk",), ("bulk", "web")]


def test_each_pair_replicates_a_flow_per_pair(tmp_path):
    text = BASE.replace('from = "s1"\nto = "r1"\ncc = "reno"',
                        'from = "s"\nto = "r"\ncc = "reno"\neach_pair = true')
    s = load_study(write(tmp_path, text + '\n[sweep]\n"topology.pairs" = [2, 3]\n'))
    by_pairs = {c.pairs: [(f.name, f.src, f.dst) for f in c.flows if f.kind == "bulk"]
                for c in (x.study for x in s.cells)}
    assert by_pairs[2] == [("bulk.1", "s1", "r1"), ("bulk.2", "s2", "r2")]
    assert by_pairs[3] == [("bulk.1", "s1", "r1"), ("bulk.2", "s2", "r2"),
                           ("bulk.3", "s3", "r3")]


def test_first_pair_leaves_the_lower_pairs_to_other_flows(tmp_path):
    text = BASE.replace('from = "s1"\nto = "r1"\ncc = "reno"',
                        'from = "s"\nto = "r"\ncc = "reno"\neach_pair = true\nfirst_pair = 2')
    s = load_study(write(tmp_path, text + '\n[sweep]\n"topology.pairs" = [2, 4]\n'))
    by_pairs = {c.pairs: [f.name for f in c.flows if f.kind == "bulk"] for c in (x.study for x in s.cells)}
    assert by_pairs == {2: ["bulk.2"], 4: ["bulk.2", "bulk.3", "bulk.4"]}
    expect_error(tmp_path, text.replace("first_pair = 2", "first_pair = 3"),
                 "flow.bulk.first_pair", "from 1 to topology.pairs = 2, got 3")
    expect_error(tmp_path, BASE.replace('cc = "reno"', 'cc = "reno"\nfirst_pair = 2', 1),
                 "first_pair", "only with each_pair")


def test_rtt_is_split_over_both_directions(tmp_path):
    s = load_study(write(tmp_path, BASE.replace('delay = "10ms"', 'rtt = "30ms"')))
    assert s.bottleneck.delay_s == pytest.approx(0.015) and s.base_rtt_s == pytest.approx(0.03)
    expect_error(tmp_path, BASE.replace('delay = "10ms"', 'delay = "10ms"\nrtt = "30ms"'),
                 "bottleneck.rtt", "not both")


@pytest.mark.parametrize("aqm,queue,key,needle", [
    ('{ min = "30p", max = "10p" }', "red", "bottleneck.aqm.max", "out of order"),
    ('{ mn = "30p" }', "red", "bottleneck.aqm.mn", "not a parameter of any queue"),
    ('{ max_p = 2 }', "red", "bottleneck.aqm.max_p", "(0, 1]"),
    ('{ k = "0p" }', "step", "bottleneck.aqm", "at least 1"),
    ('{ colour = "red" }', "droptail", "bottleneck.aqm.colour", "takes: none"),
    ('{ classes = [ { flow = ["bulk"] } ] }', "classes", "classes[0].flow", "unknown key"),
])
def test_aqm_parameters_are_checked_per_queue(tmp_path, aqm, queue, key, needle):
    text = BASE.replace('buffer = "100p"', f'buffer = "100p"\nqueue = "{queue}"\naqm = {aqm}')
    expect_error(tmp_path, text, key, needle)


def test_negative_delay_says_so(tmp_path):
    expect_error(tmp_path, BASE.replace('"10ms"', '"-10ms"'), "bottleneck.delay",
                 "must not be negative")


def test_probe_to_a_host_that_does_not_exist(tmp_path):
    expect_error(tmp_path, BASE.replace('kind = "ping"\nfrom = "s1"\nto = "r1"',
                                        'kind = "ping"\nfrom = "s1"\nto = "r5"'),
                 "probe[0].to", "no such host 'r5'")


def test_a_bad_key_in_a_scale_check_is_named_where_it_is_written(tmp_path):
    p = write(tmp_path, CHECKED + '\n[[scale.quick.expect]]\nreplace = "fair"\nmetric = "jain"\n')
    with pytest.raises(SpecError) as e:
        load_study(p, scale="quick")
    assert e.value.key == "scale.quick.expect[0].replace"
    assert "accepted here" in e.value.reason and "replaces" in e.value.reason


def test_the_quickstart_repeats_its_runs_enough_for_an_interval():
    """With 2 runs a 95 % CI is ±12.7 standard deviations wide (t at 1 degree of freedom);
    the demo study needs at least 3 repetitions for its intervals to mean something."""
    from ccarena.study.catalog import resolve_study_path
    assert load_study(resolve_study_path("quickstart")).repetitions >= 3
