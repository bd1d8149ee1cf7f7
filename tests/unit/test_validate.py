"""`ccarena validate` refuses, before anything is built, what would otherwise fail only
after the runs (a check naming no metric, a bound nobody can read, a `where` no cell has, a
typo in a scale not used today, bad options), and warns of the traps that are legal but
rarely meant (tc's "mbps", a rate beyond the machine). Each refusal is one line naming the
file or option, the key and what is accepted."""
import json
import re
import textwrap
from pathlib import Path

import pytest

from ccarena.analysis import check_spec
from ccarena.cli.main import main
from ccarena.errors import SpecError
from ccarena.run import dryrun
from ccarena.study.load import load_study
from ccarena.study.plan import make_plan

ROOT = Path(__file__).resolve().parents[2]

STUDY = """
[study]
name = "v"
duration = "10s"
[bottleneck]
rate = "10mbit"
delay = "10ms"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
"""


def write(tmp_path, text: str, name="v.toml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def refused(tmp_path, text: str, key: str, *says) -> str:
    """The study is refused as `ccarena validate` refuses it: loading, then the checks'
    metric names; -> the message, which names the file and the key."""
    p = write(tmp_path, text)
    with pytest.raises(SpecError) as e:
        check_spec.check(load_study(p))
    msg = str(e.value)
    assert str(p) in msg and e.value.key == key, msg
    for s in says:
        assert s in msg, msg
    return msg


def check(body: str) -> str:
    return STUDY + "[[expect]]\n" + textwrap.dedent(body)


# -- checks -----------------------------------------------------------------------------------

def test_a_metric_typo_is_refused_with_did_you_mean(tmp_path):
    refused(tmp_path, check('metric = "goodput_mbps"\n'), "expect[0].metric",
            "unknown metric 'goodput_mbps'", "did you mean 'goodput_bps'?", "docs/metrics.md")
    # either side of a ratio
    refused(tmp_path, check('metric = "goodput_bps / rwnd_bound"\n'), "expect[0].metric",
            "unknown metric 'rwnd_bound'", "'rwnd_bound_bps'")


def test_a_metric_of_the_other_level_says_which_level(tmp_path):
    refused(tmp_path, check('metric = "jain"\nmin = 0.9\n'), "expect[0].metric",
            "'jain' is a run metric", 'add level = "run"')
    refused(tmp_path, check('metric = "cwnd_mean_pkts"\nlevel = "run"\n'), "expect[0].metric",
            "'cwnd_mean_pkts' is a flow metric")
    # as written right, both pass
    check_spec.check(load_study(write(tmp_path, check('metric = "jain"\nlevel = "run"\n'))))
    check_spec.check(load_study(write(tmp_path, check(
        'metric = "goodput_bps / rwnd_bound_bps"\nmax = 1\n'))))


@pytest.mark.parametrize("bound", ['"50%"', '"1mbit"', '"rate"', "true", '"-"'])
def test_an_unreadable_bound_is_refused_with_the_accepted_forms(tmp_path, bound):
    refused(tmp_path, check(f'metric = "goodput_bps"\nmin = {bound}\n'), "expect[0].min",
            "cannot read the bound", '"90%rate"', '"3*base_rtt"')


def test_min_above_max_is_refused(tmp_path):
    refused(tmp_path, check('metric = "goodput_bps"\nmin = "90%rate"\nmax = "50%rate"\n'),
            "expect[0].min", "no value can pass")
    refused(tmp_path, check('metric = "rtt_p50_s"\nmin = 0.2\nmax = 0.1\n'),
            "expect[0].min", "no value can pass")
    # bounds of different kinds are compared per cell at evaluation, not here
    load_study(write(tmp_path, check('metric = "rtt_p50_s"\nmin = 0.5\nmax = "3*base_rtt"\n')))


def test_where_naming_a_value_or_factor_no_cell_has_is_refused(tmp_path):
    refused(tmp_path, check('metric = "goodput_bps"\nwhere = { "bottleneck.buffer" = "50p" }\n'),
            "expect[0].where.bottleneck.buffer", "no cell has bottleneck.buffer = '50p'",
            "its values: 20p, 100p")
    refused(tmp_path, check('metric = "goodput_bps"\nwhere = { "bottleneck.rate" = "1mbit" }\n'),
            "expect[0].where.bottleneck.rate", "not a swept factor", "bottleneck.buffer")
    refused(tmp_path, check('metric = "goodput_bps"\nrelative_to = { "bottleneck.buffer" = 20 }\n'
                            'max = 1\n'), "expect[0].relative_to.bottleneck.buffer", "no cell")
    refused(tmp_path, check('metric = "goodput_bps"\ntrend = "increasing"\n'
                            'over = "bottleneck.delay"\n'), "expect[0].over", "not a swept factor")
    # a list may name values of other scales as long as one is here
    load_study(write(tmp_path, check('metric = "goodput_bps"\n'
                                     'where = { "bottleneck.buffer" = ["50p", "100p"] }\n')))


def test_a_bound_on_the_rate_without_a_rate_is_refused(tmp_path):
    refused(tmp_path, check('metric = "goodput_bps"\nmin = "90%rate"\n').replace(
        'rate = "10mbit"\n', ""), "expect[0].min", "bottleneck has no rate")


def test_a_typo_in_a_scale_not_used_is_found(tmp_path):
    text = STUDY + '\n[scale.quick]\nstudy = { duration = "2s" }\n' \
        '[scale.long]\nbottleneck = { rat = "20mbit" }\n'
    refused(tmp_path, text, "scale.long.bottleneck.rat", "unknown key", "'rate'",
            "--scale long")
    # the checks a scale adds are held against the metric names too
    text = STUDY + '\n[scale.quick]\nstudy = { duration = "2s" }\n' \
        '[[scale.quick.expect]]\nmetric = "goodputt_bps"\n'
    refused(tmp_path, text, "expect[0].metric", "did you mean 'goodput_bps'?",
            "--scale quick")


def test_binary_garbage_is_one_line_naming_the_file(tmp_path, capsys):
    p = tmp_path / "garbage.toml"
    p.write_bytes(bytes(range(256)) * 4)
    assert main(["validate", str(p)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ccarena: {p}: ") and "not a text file" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_metric_names_are_those_docs_metrics_md_documents():
    """The names the checks accept come from the code (metrics.run_metrics and the
    store's columns); docs/metrics.md's per-flow and per-run tables list the same."""
    doc = (ROOT / "docs" / "metrics.md").read_text()

    def table(title):
        part = doc[doc.index(title):]
        part = part[part.index("\n"):]
        part = part[:part.find("\n#")]
        return {n for line in part.splitlines() if line.startswith("| `")
                for n in re.findall(r"`([a-z_0-9]+)`", line.split("|")[1])} \
            - check_spec.IDENTITY
    flow, run = check_spec.metric_names()
    assert {"goodput_bps", "rtt_p50_s", "cwnd_mean_pkts", "fct_s", "jain_conns"} <= flow
    assert {"jain", "utilisation", "ping_rtt_p50_s", "queue_max_pkts", "cpu_busy_frac"} <= run
    assert flow == table("## Per-flow metrics")
    assert run == table("## Per-run metrics")


# -- traps ------------------------------------------------------------------------------------

def test_tc_words_and_upper_case_algorithms_get_suggestions(tmp_path):
    refused(tmp_path, STUDY.replace('delay = "10ms"', 'delay = "10ms"\nlimit = 100'),
            "bottleneck.limit", "did you mean 'buffer'")
    refused(tmp_path, STUDY.replace('to = "r1"', 'to = "r1"\ncc = "CUBIC"'), "flow.bulk.cc",
            "unknown congestion control 'CUBIC'", "did you mean 'cubic'?")
    refused(tmp_path, STUDY.replace('to = "r1"', 'to = "r1"\nalgorithm = "reno"'),
            "flow.bulk.algorithm", "did you mean 'cc'")


@pytest.mark.parametrize("delay,reverse,jitter,ok", [
    ("10ms", None, "10ms", True), ("10ms", None, "11ms", False),
    ("10ms", "2ms", "5ms", False), ("0ms", None, "1ms", False)])
def test_jitter_larger_than_a_delay_is_refused(tmp_path, delay, reverse, jitter, ok):
    """netem and ccarena-link alike send a draw below 0 at once: the delays would not
    have the spread asked for."""
    text = STUDY.replace('delay = "10ms"', f'delay = "{delay}"\njitter = "{jitter}"'
                         + (f'\nreverse_delay = "{reverse}"' if reverse else ""))
    if ok:
        assert load_study(write(tmp_path, text)).bottleneck.jitter_s == pytest.approx(0.01)
    else:
        refused(tmp_path, text, "bottleneck.jitter", "is larger than bottleneck.",
                "at most the delay")


def _warnings(tmp_path, text: str, capacity=None) -> list[str]:
    s = load_study(write(tmp_path, text))
    return dryrun.warnings(s, make_plan(s, seed=1), capacity)


def test_rates_in_tc_bytes_per_second_are_warned_of(tmp_path):
    w = _warnings(tmp_path, STUDY.replace('"10mbit"', '"10mbps"'))
    assert any("bottleneck.rate = '10mbps' is 10 MB/s = 80 Mbit/s" in x
               and 'did you mean "10mbit"?' in x for x in w), w
    w = _warnings(tmp_path, STUDY.replace('"10mbit"', '"1.5Mbps"\nreverse_rate = "500kbps"'))
    assert any("'1.5Mbps' is 1.5 MB/s = 12 Mbit/s" in x and '"1.5mbit"' in x for x in w), w
    assert any("bottleneck.reverse_rate = '500kbps'" in x and '"500kbit"' in x for x in w), w
    assert not [x for x in _warnings(tmp_path, STUDY) if "bytes per second" in x]


def test_a_rate_beyond_what_the_cores_carry_is_warned_of_without_a_measurement(tmp_path):
    """Without `doctor --measure`'s record, docs/scale-out.md's rule: about 100 Mbit/s
    per core a run has."""
    fast = STUDY.replace('"10mbit"', '"1gbit"')
    w = _warnings(tmp_path, fast, dryrun.Capacity(None, cpus=2, jobs=1))
    assert any("1 Gbit/s is beyond what 2 cores per run carry" in x for x in w), w
    w = _warnings(tmp_path, STUDY.replace('"10mbit"', '"250mbit"'),
                  dryrun.Capacity(None, cpus=4, jobs=2))
    assert any("250 Mbit/s is beyond what 2 cores per run carry" in x for x in w), w
    assert not [x for x in _warnings(tmp_path, STUDY, dryrun.Capacity(None, cpus=1))
                if "carry" in x]
    # nothing known of the machine (the runs go to a cluster's workers): nothing claimed
    assert not [x for x in _warnings(tmp_path, fast, None) if "carr" in x]
    # a measurement, where there is one, decides
    assert not [x for x in _warnings(tmp_path, fast, dryrun.Capacity(5e9, cpus=1))
                if "carr" in x]


# -- options ----------------------------------------------------------------------------------

@pytest.mark.parametrize("option,says", [
    (["--repetitions", "0"], "argument --repetitions: must be at least 1, got 0"),
    (["--repetitions", "-1"], "argument --repetitions: must be at least 1"),
    (["--seed", "-5"], "argument --seed: expected a whole number of 0 or more"),
    (["--cpus", "0"], "argument --cpus: guest vCPUs must be at least 1"),
    (["--cluster", "notaurl"], "argument --cluster: expected a Dask scheduler's address"),
])
def test_bad_options_are_refused_before_anything(tmp_path, capsys, option, says):
    p = write(tmp_path, STUDY)
    with pytest.raises(SystemExit) as e:
        main(["validate", str(p), *option])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert says in err, err


def test_validate_json_is_the_plan_as_data(tmp_path, capsys):
    p = write(tmp_path, STUDY.replace('"10mbit"', '"10mbps"'))
    assert main(["validate", str(p), "--json", "--seed", "7", "--repetitions", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study"] == "v" and out["seed"] == 7 and out["repetitions"] == 2
    assert [c["params"] for c in out["cells"]] == [{"bottleneck.buffer": "20p"},
                                                   {"bottleneck.buffer": "100p"}]
    assert len(out["runs"]) == 4 and {r["label"][:4] for r in out["runs"]} == {"c000", "c001"}
    assert any("80 Mbit/s" in x for x in out["cells"][0]["setup"])
    assert any("10mbps" in w for w in out["warnings"])


def test_validate_vm_describes_the_reference_kernel_not_this_one(tmp_path, capsys):
    from ccarena.study.tcp_reference import REFERENCE_KERNEL
    p = write(tmp_path, STUDY)
    assert main(["validate", str(p), "--vm", "--accel", "tcg", "--cpus", "1"]) == 0
    out = capsys.readouterr().out
    assert f"the reference kernel {REFERENCE_KERNEL}" in out, out
    assert "1 vCPUs" in out and "accelerator tcg" in out
    assert "under TCG" in out          # 10 Mbit/s is beyond what a TCG guest carries
    assert f"as the reference kernel ({REFERENCE_KERNEL}) sets them" in out


def test_show_with_an_ambiguous_prefix_lists_the_matches(tmp_path, capsys):
    from ccarena.analysis.synthetic import write_synthetic_study
    for name in ("syn-20260101-000000", "syn-20260102-000000"):
        write_synthetic_study(tmp_path / name, reps=1, duration_s=2.0)
    assert main(["show", "syn-", "--results", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "'syn-' names 2 results directories" in err, err
    assert "syn-20260101-000000, syn-20260102-000000" in err
    assert main(["show", "syn-20260102", "--results", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"].endswith("syn-20260102-000000")
    # a whole name is that directory, even where it begins another's name
    write_synthetic_study(tmp_path / "syn-20260101-000000-b", reps=1, duration_s=2.0)
    assert main(["show", "syn-20260101-000000", "--results", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"].endswith("syn-20260101-000000")


def test_delay_correlation_on_the_kernel_backend_is_warned_of(tmp_path):
    """netem's delay correlation has no measurable effect (docs/link.md, "Measured against
    netem"): said where a cell runs on the kernel backend, chosen or given by preflight."""
    text = STUDY.replace('delay = "10ms"', 'delay = "10ms"\njitter = "2ms"\n'
                         'delay_correlation = "50%"')
    s = load_study(write(tmp_path, text))
    plan = make_plan(s, seed=1)

    def said(pf=None):
        return [x for x in dryrun.warnings(s, plan, None, pf) if "delay_correlation" in x]
    assert said() == []                                     # auto, nothing known yet
    kernel = {"cells": {c.index: {"backend": "kernel"} for c in s.cells}}
    user = {"cells": {c.index: {"backend": "user"} for c in s.cells}}
    w = said(kernel)
    assert len(w) == 2 and all("uncorrelated" in x and "backend = \"user\"" in x for x in w), w
    assert said(user) == []
    chosen = load_study(write(tmp_path, text.replace('jitter = "2ms"',
                                                     'jitter = "2ms"\nbackend = "kernel"')))
    assert len([x for x in dryrun.warnings(chosen, make_plan(chosen, seed=1))
                if "delay_correlation" in x]) == 2
    plain = load_study(write(tmp_path, STUDY))
    assert not [x for x in dryrun.warnings(plain, make_plan(plain, seed=1), None, kernel)
                if "delay_correlation" in x]
