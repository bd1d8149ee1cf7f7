"""netem's impairments as a study writes them (docs/study-format.md, "Impairments"): the
keys, their errors, sweeps, what each backend is told (tc-netem(8) words for the kernel,
contract §3 JSON for ccarena-link, checked by the link's own parser), what a run records
and what `validate` shows."""
import json
import subprocess

import numpy as np
import pytest

from ccarena.errors import PreflightError, SpecError
from ccarena.paths import find_binary
from ccarena.run import dryrun
from ccarena.run.one_run import _bottleneck_meta
from ccarena.study import impair
from ccarena.study.impair import FourStateLoss, GilbertLoss
from ccarena.study.load import loads_study
from ccarena.study.plan import make_plan
from ccarena.testbed import backend, kernel_link, user_link
from ccarena.testbed.topology import plan_dumbbell


def study(bottleneck: str, extra: str = "", sweep: str = ""):
    text = f'''
[study]
name = "imp"
duration = "5s"
seed = 1
[bottleneck]
rate = "10mbit"
{bottleneck}
[[probe]]
kind = "ping"
from = "s1"
to = "r1"
{extra}'''
    if sweep:
        text += f"[sweep]\n{sweep}\n"
    return loads_study(text, path="imp.toml")


def err(bottleneck: str, extra: str = "") -> SpecError:
    with pytest.raises(SpecError) as e:
        study(bottleneck, extra)
    return e.value


# -- keys ---------------------------------------------------------------------------------
def test_every_impairment_parses_in_the_units_people_write():
    s = study('delay = "10ms"\nreverse_delay = "2ms"\njitter = "1ms"\n'
              'delay_distribution = "paretonormal"\ndelay_correlation = "25%"\n'
              'loss_model = { kind = "4state", p13 = "1%", p31 = "30%", p32 = "20%", '
              'p23 = "10%", p14 = "0.5%" }\n'
              'reorder = "5%"\nreorder_correlation = "50%"\nreorder_gap = 3\n'
              'duplicate = "1%"\nduplicate_correlation = "10%"\n'
              'corrupt = "0.1%"\ncorrupt_correlation = "20%"')
    b = s.bottleneck
    assert (b.delay_s, b.reverse_delay_s, s.base_rtt_s) == (0.010, 0.002, pytest.approx(0.012))
    assert (b.delay_distribution, b.delay_correlation) == ("paretonormal", 0.25)
    assert b.loss_model == FourStateLoss(0.01, 0.3, 0.2, 0.1, 0.005)
    assert (b.reorder, b.reorder_correlation, b.reorder_gap) == (0.05, 0.5, 3)
    assert (b.duplicate, b.duplicate_correlation) == (0.01, 0.1)
    assert (b.corrupt, b.corrupt_correlation) == (0.001, 0.2)


def test_reverse_delay_defaults_to_the_delay():
    s = study('delay = "7ms"')
    assert s.bottleneck.reverse_delay_s == 0.007 and s.base_rtt_s == pytest.approx(0.014)


def test_loss_models_take_netems_defaults():
    # loss gemodel p: r = 1 - p, 1-h = 100 %, 1-k = 0; loss state p13: p31 = 1 - p13, ...
    b = study('loss_model = { kind = "gilbert", p = "2%" }').bottleneck
    assert b.loss_model == GilbertLoss(0.02, 0.98, 1.0, 0.0)
    b = study('loss_model = { kind = "4state", p13 = "3%" }').bottleneck
    assert b.loss_model == FourStateLoss(0.03, 0.97, 0.0, 1.0, 0.0)
    assert impair.mean_loss(b.loss_model) == pytest.approx(0.03)   # netem: Bernoulli


@pytest.mark.parametrize("line,key,says", [
    ('loss_model = { kind = "gilbertt", p = "1%" }', "bottleneck.loss_model.kind",
     "did you mean 'gilbert'"),
    ('loss_model = { p = "1%" }', "bottleneck.loss_model.kind", "is required"),
    ('loss_model = { kind = "gilbert", p = "1%", rr = "5%" }', "bottleneck.loss_model.rr",
     "did you mean 'r'"),
    ('loss_model = { kind = "4state", p31 = "5%" }', "bottleneck.loss_model.p13",
     "is required"),
    ('loss_model = { kind = "4state", p13 = "60%", p14 = "50%" }', "bottleneck.loss_model.p14",
     "more than 100 %"),
    ('loss_model = { kind = "gilbert", p = "1", r = "5%" }', "bottleneck.loss_model.p",
     "per cent"),
    ('loss_model = "gilbert"', "bottleneck.loss_model", "expected a table"),
    ('loss = "1%"\nloss_model = { kind = "gilbert", p = "1%", r = "5%" }',
     "bottleneck.loss_model", "not both"),
    ('rtt = "20ms"\nreverse_delay = "5ms"', "bottleneck.rtt", "not both"),
    ('reorder = "5%"', "bottleneck.reorder", "bottleneck.delay > 0"),
    ('jitter = "1ms"\ndelay_distribution = "normal"', "bottleneck.delay_distribution",
     "bottleneck.delay, which is 0"),
    ('delay = "5ms"\nreverse_delay = "0ms"\njitter = "1ms"\ndelay_distribution = "pareto"',
     "bottleneck.delay_distribution", "reverse_delay, which is 0"),
    ('delay = "5ms"\njitter = "1ms"\ndelay_distribution = "gauss"',
     "bottleneck.delay_distribution", "uniform, normal, pareto, paretonormal"),
    ('delay = "5ms"\nreorder = "5%"\nreorder_gap = 0', "bottleneck.reorder_gap", "at least 1"),
    ('duplicate = "2"', "bottleneck.duplicate", "per cent"),
    ('corrupt = "150%"', "bottleneck.corrupt", "outside 0..100"),
])
def test_bad_impairments_name_the_file_the_key_and_what_is_accepted(line, key, says):
    e = err(line)
    assert (e.path, e.key) == ("imp.toml", key), str(e)
    assert says in e.reason, e.reason


def test_impairments_are_sweepable_like_other_link_keys():
    s = study('delay = "10ms"\njitter = "1ms"', sweep='''
"bottleneck.delay_distribution" = ["normal", "pareto"]
"bottleneck.loss_model" = [{ kind = "gilbert", p = "1%", r = "25%" }, { kind = "4state", p13 = "1%" }]
"bottleneck.reorder" = ["0%", "10%"]
"bottleneck.reverse_delay" = ["1ms", "30ms"]''')
    got = {(c.study.bottleneck.delay_distribution, c.study.bottleneck.loss_model.kind,
            c.study.bottleneck.reorder, c.study.bottleneck.reverse_delay_s) for c in s.cells}
    assert len(got) == 16 == len(s.cells)
    assert ("pareto", "4state", 0.1, 0.030) in got


# -- the models' long-run loss ---------------------------------------------------------------
def _stationary_loss(P: np.ndarray, lost: np.ndarray) -> float:
    """Long-run loss of a Markov chain from its transition matrix, by linear algebra."""
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(abs(w - 1))])
    return float((pi / pi.sum()) @ lost)


@pytest.mark.parametrize("seed", range(5))
def test_mean_loss_is_the_chains_stationary_loss(seed):
    rng = np.random.default_rng(seed)
    p, r, lb, lg = rng.uniform(0.01, 0.5, 4)
    ge = GilbertLoss(p, r, lb, lg)
    P = np.array([[1 - p, p], [r, 1 - r]])
    assert impair.mean_loss(ge) == pytest.approx(_stationary_loss(P, np.array([lg, lb])))
    p13, p14, p31, p32, p23 = rng.uniform(0.01, 0.45, 5)
    fs = FourStateLoss(p13, p31, p32, p23, p14)
    # states 1 (received, gap), 2 (received, burst), 3 (lost, burst), 4 (lost, isolated)
    P = np.array([[1 - p13 - p14, 0, p13, p14], [0, 1 - p23, p23, 0],
                  [p31, p32, 1 - p31 - p32, 0], [1, 0, 0, 0]])
    assert impair.mean_loss(fs) == pytest.approx(_stationary_loss(P, np.array([0, 0, 1, 1])))


# -- what the kernel backend is told -----------------------------------------------------------
def _netem(s, host: str, extra_d=0.0, extra_l=0.0) -> str:
    lines = kernel_link.netem_lines("p", **kernel_link.access_netem(
        s.bottleneck, host.startswith("r"), extra_d, extra_l))
    return lines[0] if lines else ""


def test_the_kernel_gets_netems_own_words_on_each_side():
    s = study('delay = "10ms"\nreverse_delay = "3ms"\njitter = "1ms"\n'
              'delay_distribution = "normal"\ndelay_correlation = "25%"\n'
              'loss_model = { kind = "gilbert", p = "1%", r = "30%", loss_bad = "90%", '
              'loss_good = "0.5%" }\nreorder = "5%"\nreorder_correlation = "50%"\n'
              'reorder_gap = 3\nduplicate = "1%"\ncorrupt = "0.1%"\ncorrupt_correlation = "20%"')
    to_r = _netem(s, "r1")
    assert to_r == ("qdisc replace dev p root netem limit 1000000 delay 10000us 1000us "
                    "25.000000% distribution normal loss gemodel 1.000000% 30.000000% "
                    "90.000000% 0.500000% duplicate 1.000000% corrupt 0.100000% 20.000000% "
                    "reorder 5.000000% 50.000000% gap 3")
    # towards the senders: the r->s delay and the jitter, nothing of the s->r direction
    assert _netem(s, "s1") == ("qdisc replace dev p root netem limit 1000000 delay 3000us "
                               "1000us 25.000000% distribution normal")


def test_the_kernel_gets_the_4state_model_and_uniform_jitter_without_a_table():
    s = study('delay = "10ms"\njitter = "1ms"\n'
              'loss_model = { kind = "4state", p13 = "1%", p31 = "30%", p32 = "20%", '
              'p23 = "10%", p14 = "0.5%" }')
    assert _netem(s, "r1").endswith("delay 10000us 1000us loss state 1.000000% 30.000000% "
                                    "20.000000% 10.000000% 0.500000%")


def test_a_bernoulli_model_combines_with_a_receivers_own_loss():
    s = study('delay = "10ms"\nloss_model = { kind = "bernoulli", p = "10%" }')
    assert _netem(s, "r1", extra_l=0.1).endswith("loss 19.000000%")
    with pytest.raises(ValueError):
        kernel_link.netem_lines("p", 0.01, 0.0, 0.1, loss_model=GilbertLoss(0.1, 0.2))


CAPS = {"netem": True, "qdiscs": {q: True for q in ("htb", "red", "codel", "fq_codel")}}


def test_what_a_backend_cannot_do_is_refused_before_anything_is_built():
    ge = 'delay = "10ms"\nloss_model = { kind = "gilbert", p = "1%", r = "30%" }'
    s = study(ge, '[hosts.r1]\nloss = "1%"\n')
    assert any("one loss model per port" in g for g in backend.kernel_gaps(s, CAPS))
    s.bottleneck.backend = "kernel"
    with pytest.raises(PreflightError, match="one loss model per port"):
        backend.choose(s, CAPS)
    # on a kernel without netem every impairment is the user link's
    for line in ('reverse_delay = "5ms"', 'duplicate = "1%"', 'corrupt = "1%"',
                 'delay = "5ms"\nreorder = "1%"', ge):
        assert any("need netem" in g for g in backend.kernel_gaps(study(line), {"qdiscs": {}}))
    # the user link cannot corrupt offloaded super-packets
    s = study('corrupt = "1%"', '[testbed]\noffloads = true\n')
    assert backend.user_gaps(s)
    s.bottleneck.backend = "user"
    with pytest.raises(PreflightError, match="segment a corrupted super-packet"):
        backend.choose(s, CAPS)


# -- what the user-space link is told ----------------------------------------------------------
def _config(s, tmp_path) -> dict:
    return user_link.make_config(plan_dumbbell("abcdef", 1, "user"), s, tmp_path, seed=3)


def test_the_user_link_gets_each_impairment_on_its_direction(tmp_path):
    s = study('delay = "10ms"\nreverse_delay = "3ms"\njitter = "1ms"\n'
              'delay_distribution = "normal"\ndelay_correlation = "25%"\n'
              'loss_model = { kind = "4state", p13 = "1%" }\nreorder = "5%"\nreorder_gap = 2\n'
              'duplicate = "1%"\ncorrupt = "0.1%"')
    c = _config(s, tmp_path)
    w, e = c["w2e"], c["e2w"]
    assert (w["delay_ns"], e["delay_ns"]) == (10_000_000, 3_000_000)
    for d in (w, e):
        assert d["jitter"] == {"kind": "normal", "sd_ns": 1_000_000, "correlation": 0.25}
    assert w["loss"] == {"kind": "four_state", "p13": 0.01, "p31": 0.99, "p32": 0.0,
                         "p23": 1.0, "p14": 0.0}
    assert w["reorder"] == {"p": 0.05, "correlation": 0.0, "gap": 2}
    assert w["duplicate"] == {"p": 0.01, "correlation": 0.0}
    assert w["corrupt"] == {"p": 0.001, "correlation": 0.0}
    assert e["loss"] is None and not {"reorder", "duplicate", "corrupt"} & set(e)


@pytest.mark.parametrize("line", [
    'delay = "10ms"\njitter = "2ms"\ndelay_distribution = "pareto"\n'
    'loss_model = { kind = "gilbert", p = "1%", r = "25%" }',
    'delay = "10ms"\njitter = "2ms"\ndelay_distribution = "paretonormal"\n'
    'delay_correlation = "10%"\nreorder = "10%"\nreorder_gap = 4\nduplicate = "2%"\n'
    'duplicate_correlation = "5%"\ncorrupt = "1%"\ncorrupt_correlation = "5%"',
    'delay = "10ms"\nloss_model = { kind = "4state", p13 = "1%", p31 = "20%", p32 = "10%", '
    'p23 = "5%", p14 = "1%" }',
])
def test_the_link_itself_accepts_what_it_is_told(tmp_path, line):
    """The contract between the two languages: ccarena-link's own parser (exit 2 on a
    bad config, before it opens anything; past it, opening the made-up ports fails
    with exit 1)."""
    binary = find_binary("ccarena-link")
    if not binary:
        pytest.fail("ccarena-link is not built (make build)")
    cfg = _config(study(line), tmp_path)
    cfg["ifaces"] = {"west": "nosuchport0", "east": "nosuchport1"}
    p = tmp_path / "link.config.json"
    p.write_text(json.dumps(cfg))
    r = subprocess.run([binary, "--config", str(p)], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 1 and "load config" not in r.stderr, r.stderr


# -- what a run records and `validate` shows -------------------------------------------------
def test_a_run_records_every_impairment():
    s = study('delay = "10ms"\nreverse_delay = "4ms"\njitter = "1ms"\n'
              'delay_distribution = "pareto"\nloss_model = { kind = "gilbert", p = "1%", '
              'r = "30%" }\nreorder = "5%"\nduplicate = "1%"\ncorrupt = "0.1%"')
    m = _bottleneck_meta(s)
    assert m["reverse_delay_s"] == 0.004 and m["delay_distribution"] == "pareto"
    assert m["loss_model"] == {"p": 0.01, "r": 0.3, "loss_bad": 1.0, "loss_good": 0.0,
                               "kind": "gilbert"}
    assert (m["reorder"], m["reorder_gap"], m["duplicate"], m["corrupt"]) == \
        (0.05, 1, 0.01, 0.001)
    json.dumps(m)


def test_validate_shows_the_impairments():
    s = study('delay = "10ms"\nreverse_delay = "4ms"\njitter = "1ms"\n'
              'delay_distribution = "pareto"\ndelay_correlation = "25%"\n'
              'loss_model = { kind = "gilbert", p = "1%", r = "25%" }\nreorder = "10%"\n'
              'reorder_gap = 2\nduplicate = "1%"\ncorrupt = "0.1%"')
    text = "\n".join(dryrun.describe(s, make_plan(s)))
    assert "one-way delay 10 ms (r->s 4 ms), base RTT 14 ms" in text
    assert "delay distribution pareto, jitter 1 ms, correlation 25 %" in text
    assert "from 0.6667 ms below to 4 ms above the delay" in text
    assert "loss model gilbert: p 1 %, r 25 %" in text and "mean loss 3.846 %" in text
    assert "bursts of 4 packets on average" in text
    # p/(1 + (gap - 1)p) of the packets skip the delay
    assert "reorder 10 %, gap 2: 9.091 % of the packets sent without the delay" in text
    assert "duplicate 1 % (s->r)" in text and "corrupt 0.1 % (s->r)" in text
