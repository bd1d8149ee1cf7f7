"""netem's impairments through the kernel backend, measured as the user-space link's are
(tests/integration/test_link_impairments.py, the same UDP probe, captures and
statistics): a different delay per direction, the delay distributions, correlated
delays, the Gilbert-Elliott and 4-state loss models, reordering, duplication and
corruption, as netem applies them on the routers' access ports.

They need netem: they run inside the reference kernel (test_kernel_link_in_vm.py runs
those marked `vm_ci` in the test suite and all of them in `make verify`; or `ccarena vm
-- pytest tests/vm/test_kernel_impairments.py`) and skip elsewhere. Under QEMU's TCG the
guest's timers fire late (test_kernel_link.TimerLateness measures by how much while a run
runs): a bound on a delay carries that lateness; counts (losses, copies, drops) do not
depend on it."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from impairhelpers import (SHAPES, UDP_FRAME, band, band_gap, batch_se,  # noqa: E402
                           binom_interval, gilbert_loss_se, ks_critical, lag1, one_way,
                           runs_of, udp, udp_study)
from linkhelpers import runs  # noqa: E402
from test_kernel_link import (LATE, ci, needs_the_reference_kernel,  # noqa: E402,F401
                              run_kernel)

pytestmark = pytest.mark.root

S1, R1 = "10.1.1.2", "10.2.1.2"
PCAP = '[[probe]]\nkind = "pcap"\nhosts = ["s1", "r1"]\n'
PATH_S = 1e-3       # a guest's veth hops and routers, emulated instruction by instruction


def _kernel(text: str, tmp_path):
    res, tl = run_kernel(text, tmp_path, tolerate=(LATE,))
    (meta, d), = runs(res)
    return meta, d, tl


def kstudy(bottleneck: str, **kw) -> str:
    return udp_study(bottleneck, backend="kernel", **kw)


@ci
def test_each_direction_keeps_its_own_delay(tmp_path, no_leaks):
    meta, d, tl = _kernel(kstudy('delay = "20ms"\nreverse_delay = "5ms"', interval="10ms",
                                 duration="4s", flows=PCAP), tmp_path)
    fwd, rev, _, _ = one_way(d, S1, R1)
    f = np.array([v[0] for v in fwd.values()])
    r = np.array([v[0] for v in rev.values()])
    assert len(f) >= 150 and len(r) >= 150, (len(f), len(r))
    for name, x, want in (("s->r", f, 0.020), ("r->s", r, 0.005)):
        assert x.min() >= want - 1e-5, f"{name}: a datagram took {x.min() * 1e3:.3f} ms"
        slack = PATH_S + tl.q(0.9)
        assert np.median(x) <= want + slack, \
            f"{name}: median {np.median(x) * 1e3:.3f} ms > {want * 1e3} + {slack * 1e3:.2f} [{tl}]"


@pytest.mark.parametrize("dist", ["normal", "pareto", "paretonormal"])
def test_the_delay_follows_its_distribution(tmp_path, no_leaks, dist):
    """netem's tables hold the same quantiles as the laws (to 1/4096): the one-way delays
    stay within the law's band, late by at most the path and the guest's timer lateness
    (its 99th percentile; 1 % more), and leave the bands of the laws that differ more."""
    j = 0.020
    meta, d, tl = _kernel(kstudy(f'delay = "100ms"\njitter = "20ms"\n'
                                 f'delay_distribution = "{dist}"', interval="100ms",
                                 duration="12s", probes=4, flows=PCAP), tmp_path)
    fwd, _, _, _ = one_way(d, S1, R1)
    t = (np.array([v[0] for v in fwd.values()]) - 0.100) / j
    assert len(t) >= 400, len(t)
    rng = np.random.default_rng(2)
    laws = {k: np.sort(f(rng.random(200_000))) for k, f in SHAPES.items()}
    eps = ks_critical(len(t))
    later = (PATH_S + tl.q(0.99)) / j
    early, late = band(t, laws[dist], later)
    assert early <= eps and late <= eps + 0.01, \
        f"{dist}: out of its band by {early:.3f} early, {late:.3f} late ({eps:.3f}) [{tl}]"
    for other, law in laws.items():
        if other == dist:
            continue
        e, lt = band(t, law, later)
        if band_gap(laws[dist], law, later) > 2 * eps + 0.01:
            assert lt > eps + 0.01, f"{dist} passes for {other} (late side)"
        if band_gap(law, laws[dist], later) > 2 * eps + 0.01:
            assert e > eps, f"{dist} passes for {other} (early side)"


def test_correlated_delays_follow_the_one_before(tmp_path, no_leaks):
    """Successive delays correlate with netem's C, less what the guest's timer lateness
    (independent of the delay) dilutes: C·σ²/(σ² + σ_late²)."""
    c = 0.5
    meta, d, tl = _kernel(kstudy('delay = "60ms"\njitter = "20ms"\ndelay_correlation = "50%"',
                                 interval="50ms", duration="12s", probes=4, flows=PCAP),
                          tmp_path)
    fwd, _, _, sent = one_way(d, S1, R1)
    keys = sorted(fwd, key=lambda k: sent[k])
    x = np.array([fwd[k][0] for k in keys])
    assert len(x) >= 400, len(x)
    r = lag1(x)
    se = (1 - c * c) / np.sqrt(len(x))
    sd = 0.020 / np.sqrt(3) * np.sqrt((1 - c) / (1 + c))
    low = c * sd ** 2 / (sd ** 2 + np.var(tl.late_s)) if tl.late_s else c
    assert low - 4 * se <= r <= c + 4 * se, f"lag-1 {r:.3f}, want {low:.3f}..{c} ± {4 * se:.3f}"


@ci
def test_gilbert_elliott_losses_come_in_bursts(tmp_path, no_leaks):
    p, r = 0.03, 0.25
    meta, d, _ = _kernel(kstudy(f'delay = "10ms"\nloss_model = {{ kind = "gilbert", '
                                f'p = "{p:.0%}", r = "{r:.0%}" }}', interval="5ms",
                                duration="10s"), tmp_path)
    u, _, _ = udp(d)
    lost = u["rtt_s"].isna().to_numpy()
    n, k = len(lost), int(lost.sum())
    assert n >= 800, n
    pi, se = p / (p + r), gilbert_loss_se(p, r, n)
    assert abs(k / n - pi) <= 4 * se, f"{k} of {n} lost; model {pi:.3f} ± {4 * se:.3f}"
    b = np.array(runs_of(lost))
    se_b = np.sqrt(1 - r) / r / np.sqrt(len(b))
    assert abs(b.mean() - 1 / r) <= 4 * se_b, \
        f"mean burst {b.mean():.2f} over {len(b)}, want {1 / r} ± {4 * se_b:.2f}"


def test_four_state_losses_follow_the_model(tmp_path, no_leaks):
    meta, d, _ = _kernel(kstudy('delay = "10ms"\nloss_model = { kind = "4state", p13 = "2%", '
                                'p31 = "50%", p32 = "0%", p14 = "2%" }', interval="5ms",
                                duration="10s"), tmp_path)
    u, _, _ = udp(d)
    lost = u["rtt_s"].isna().to_numpy()
    n, k = len(lost), int(lost.sum())
    want = (0.02 + 0.02 * 0.5) / (0.5 + 0.02 + 0.02 * 0.5)
    se = batch_se(lost)
    assert abs(k / n - want) <= 4 * se, f"{k} of {n} lost, model {want:.3f} ± {4 * se:.3f}"
    ev = np.array(runs_of(lost))
    se = ev.std() / np.sqrt(len(ev))
    assert abs(ev.mean() - 1.5) <= 4 * se, f"mean run {ev.mean():.2f} ± {se:.2f}"


@pytest.mark.parametrize("p,gap", [(0.2, 1), (0.3, 3)])
def test_reordered_datagrams_skip_the_delay(tmp_path, no_leaks, p, gap):
    meta, d, _ = _kernel(kstudy(f'delay = "20ms"\nreorder = "{p:.0%}"\nreorder_gap = {gap}',
                                interval="10ms", duration="8s", flows=PCAP), tmp_path)
    fwd, _, _, _ = one_way(d, S1, R1)
    x = np.array([v[0] for v in fwd.values()])
    n, fast = len(x), int((x < 0.010).sum())
    want = p / (1 + (gap - 1) * p)
    se = want * want * np.sqrt(1 - p) / p / np.sqrt(n * want) if gap > 1 else \
        np.sqrt(want * (1 - want) / n)
    assert abs(fast / n - want) <= 4 * se, f"{fast} of {n} reordered, want {want:.3f}"


def test_duplicated_datagrams_arrive_twice(tmp_path, no_leaks):
    meta, d, _ = _kernel(kstudy('delay = "10ms"\nduplicate = "5%"', interval="10ms",
                                duration="8s", flows=PCAP), tmp_path)
    fwd, _, _, _ = one_way(d, S1, R1)
    n, twice = len(fwd), sum(1 for v in fwd.values() if len(v) == 2)
    lo, hi = binom_interval(n, 0.05)
    assert lo <= twice <= hi, f"{twice} of {n} arrived twice; 99.9 % [{lo:.0f}, {hi:.0f}]"


def test_corrupted_datagrams_are_dropped_by_the_receivers_checksum(tmp_path, no_leaks):
    c = 0.05
    meta, d, _ = _kernel(kstudy('delay = "10ms"\ncorrupt = "5%"', interval="10ms",
                                duration="8s"), tmp_path)
    _, prober, echo = udp(d, tail_s=0)
    n, dropped = prober["sent"], prober["sent"] - echo["echoed"]
    lo, hi = binom_interval(n, c * (1 - 49 / (8 * UDP_FRAME)))
    assert lo <= dropped <= hi, f"r1 dropped {dropped} of {n}; 99.9 % [{lo:.0f}, {hi:.0f}]"
