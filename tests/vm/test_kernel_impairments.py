"""netem's impairments through the kernel backend, measured as the user-space link's are
(tests/integration/test_link_impairments.py: the same UDP probe and statistics): a
different delay per direction, the delay distributions, correlated delays, the
Gilbert-Elliott and 4-state loss models, reordering, duplication and corruption, as netem
applies them on the routers' access ports. A guest under TCG is too slow to start packet
captures reliably, so delays are measured by the probe's round trips (one draw each way)
rather than one way.

They need netem: they run inside the reference kernel (test_kernel_link_in_vm.py runs
them there in `make verify`; or `ccarena vm -- pytest tests/vm/test_kernel_impairments.py`) and skip elsewhere. Under QEMU's TCG the
guest's timers fire late (test_kernel_link.TimerLateness measures by how much while a run
runs) and its processes answer late: a bound on a delay carries both, measured in the
same study (a cell without the delay: the path's own round trip); counts (losses,
copies, drops) do not depend on them."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from impairhelpers import (UDP_FRAME, band, band_gap, batch_se, binom_interval,  # noqa: E402
                           gilbert_loss_se, ks_critical, round_trip_law, runs_of, udp,
                           udp_study)
from linkhelpers import runs  # noqa: E402
from test_kernel_link import (LATE, ci, needs_the_reference_kernel,  # noqa: E402,F401
                              run_kernel)

pytestmark = pytest.mark.root


def _kernel(text: str, tmp_path):
    res, tl = run_kernel(text, tmp_path, tolerate=(LATE,))
    (meta, d), = runs(res)
    return meta, d, tl


def _cells(text: str, tmp_path):
    """-> ({swept value: (meta, run dir)}, TimerLateness) of a study sweeping one key."""
    res, tl = run_kernel(text, tmp_path, tolerate=(LATE,))
    out = {}
    for meta, d in runs(res):
        (v,) = meta["cell_params"].values()
        out[v if not isinstance(v, dict) else v.get("kind")] = (meta, d)
    return out, tl


def kstudy(bottleneck: str, **kw) -> str:
    return udp_study(bottleneck, backend="kernel", **kw)


def _rtt(d) -> np.ndarray:
    u, _, _ = udp(d)
    return u["rtt_s"].dropna().to_numpy()


@ci
def test_each_direction_keeps_its_own_delay(tmp_path, no_leaks):
    """20 ms s->r and 5 ms r->s: round trips of 25 ms (not 40 or 10: each port has its
    own), above the path's own round trip (the cell without delays) by that, plus what
    the guest's late timers add to the two netem releases."""
    cells, tl = _cells(kstudy('delay = "20ms"', interval="10ms", duration="4s") +
                       '[sweep]\n"bottleneck.reverse_delay" = ["5ms", "20ms"]\n', tmp_path)
    x, sym = _rtt(cells["5ms"][1]), _rtt(cells["20ms"][1])
    assert len(x) >= 150 and len(sym) >= 150, (len(x), len(sym))
    assert x.min() >= 0.025 - 1e-5, f"a round trip took {x.min() * 1e3:.3f} ms < 25 ms"
    # the same path with 20 ms back: exactly 15 ms longer, give or take the late timers
    tol = 2 * tl.q(0.9) + 0.5e-3
    gap = np.median(sym) - np.median(x)
    assert abs(gap - 0.015) <= tol, f"RTT 40 ms vs 25 ms medians differ by {gap * 1e3:.2f} ms"


@pytest.mark.parametrize("dist", ["normal", "pareto", "paretonormal"])
def test_the_delay_follows_its_distribution(tmp_path, no_leaks, dist):
    """netem's tables hold the same quantiles as the laws (to 1/4096): a round trip,
    60 ms + J·(one draw each way), stays within the law's band, late by at most the
    path's own round trip (measured in the study's cell without jitter, its 99th
    percentile) and two late timers (1 % more), and leaves the bands of the laws that
    differ more."""
    j = 0.010
    cells, tl = _cells(kstudy(f'delay = "30ms"\ndelay_distribution = "{dist}"',
                              interval="50ms", duration="12s", probes=4) +
                       '[sweep]\n"bottleneck.jitter" = ["0ms", "10ms"]\n', tmp_path)
    own = _rtt(cells["0ms"][1]) - 0.060
    t = (_rtt(cells["10ms"][1]) - 0.060) / j
    assert len(t) >= 600, len(t)
    law = round_trip_law(dist)
    eps = ks_critical(len(t))
    later = (np.quantile(own, 0.99) + 2 * tl.q(0.99)) / j
    early, late = band(t, law, later)
    assert early <= eps and late <= eps + 0.01, \
        f"{dist}: out of its band by {early:.3f} early, {late:.3f} late ({eps:.3f}) [{tl}]"
    for other in ("normal", "pareto", "paretonormal", "uniform"):
        if other == dist:
            continue
        o = round_trip_law(other)
        e, lt = band(t, o, later)
        if band_gap(law, o, later) > 2 * eps + 0.01:
            assert lt > eps + 0.01, f"{dist} passes for {other} (late side)"
        if band_gap(o, law, later) > 2 * eps + 0.01:
            assert e > eps, f"{dist} passes for {other} (early side)"


def test_correlated_delays_follow_the_one_before(tmp_path, no_leaks):
    """Each way's delays correlate with netem's C, so do their sums: the lag-1
    correlation of successive round trips is C, less what late answers dilute (round
    trips outside 60 ± 20 ms are left out with their pairs; within it a late timer still
    adds noise of its own: C·σ²/(σ² + σ_late²) at worst)."""
    c = 0.5
    meta, d, tl = _kernel(kstudy('delay = "30ms"\njitter = "10ms"\ndelay_correlation = "50%"',
                                 interval="25ms", duration="15s"), tmp_path)
    u, _, _ = udp(d)
    x = u["rtt_s"].to_numpy()
    ok = (x >= 0.040) & (x <= 0.082)
    assert ok.sum() >= 400, ok.sum()
    y = x - x[ok].mean()
    pair = ok[:-1] & ok[1:]
    r = float((y[:-1] * y[1:])[pair].mean() / (y[ok] ** 2).mean())
    se = (1 - c * c) / np.sqrt(pair.sum())
    sd = np.sqrt(2) * 0.010 / np.sqrt(3) * np.sqrt((1 - c) / (1 + c))
    low = c * sd ** 2 / (sd ** 2 + 2 * np.var(tl.late_s)) if tl.late_s else c
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
    """40 ms each way: a datagram netem sends at once comes back in about 40 ms, the
    others in 80."""
    meta, d, _ = _kernel(kstudy(f'delay = "40ms"\nreorder = "{p:.0%}"\nreorder_gap = {gap}',
                                interval="10ms", duration="10s"), tmp_path)
    x = _rtt(d)
    n, fast = len(x), int((x < 0.060).sum())
    want = p / (1 + (gap - 1) * p)
    se = want * want * np.sqrt(1 - p) / p / np.sqrt(n * want) if gap > 1 else \
        np.sqrt(want * (1 - want) / n)
    assert abs(fast / n - want) <= 4 * se, f"{fast} of {n} reordered, want {want:.3f}"


def test_duplicated_datagrams_arrive_twice(tmp_path, no_leaks):
    """r1 echoes both copies of a duplicated datagram: the prober counts the second."""
    meta, d, _ = _kernel(kstudy('delay = "10ms"\nduplicate = "5%"', interval="10ms",
                                duration="10s"), tmp_path)
    _, prober, _ = udp(d, tail_s=0)
    n, twice = prober["sent"], prober["duplicates"]
    lo, hi = binom_interval(n, 0.05)
    assert lo <= twice <= hi, f"{twice} of {n} arrived twice; 99.9 % [{lo:.0f}, {hi:.0f}]"


def test_corrupted_datagrams_are_dropped_by_the_receivers_checksum(tmp_path, no_leaks):
    c = 0.05
    meta, d, _ = _kernel(kstudy('delay = "10ms"\ncorrupt = "5%"', interval="10ms",
                                duration="10s"), tmp_path)
    _, prober, echo = udp(d, tail_s=0)
    n, dropped = prober["sent"], prober["sent"] - echo["echoed"]
    lo, hi = binom_interval(n, c * (1 - 49 / (8 * UDP_FRAME)))
    assert lo <= dropped <= hi, f"r1 dropped {dropped} of {n}; 99.9 % [{lo:.0f}, {hi:.0f}]"
