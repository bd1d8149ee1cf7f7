"""Statistics that do not overstate: the false discovery rate controlled over the cells of
a comparison (Benjamini-Hochberg), the confidence interval of a difference itself, and
bootstrap intervals for medians of percentile metrics. Seeded synthetic data, many
trials: the rates are the procedure's, not luck's."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ccarena.analysis import compare, compare_studies, summarize
from ccarena.analysis.stats import center_of, fdr

CELLS = 40


def study(rng, n_reps: int = 5, shift: dict | None = None) -> pd.DataFrame:
    """Runs of CELLS cells of one factor (goodput around 50 Mbit/s, sd 2 Mbit/s), each
    cell `n_reps` runs; `shift` adds to a cell's goodput (cell index -> bit/s)."""
    rows = []
    for c in range(CELLS):
        for _ in range(n_reps):
            rows.append({"bottleneck.delay": f"{c + 1}ms", "valid": True,
                         "goodput_bps": rng.normal(50e6, 2e6) + (shift or {}).get(c, 0.0)})
    return pd.DataFrame(rows)


def test_identical_studies_mark_no_cell_significant_at_the_stated_rate():
    """Two studies drawn from the same distribution, 40 cells each, 100 times: with the
    false discovery rate controlled at 5 %, at most ~5 % of the comparisons mark any cell
    (under no difference at all, Benjamini-Hochberg bounds that chance by alpha); marking
    each cell on its own p < 0.05 would star some cell in nearly every comparison
    (1 - 0.95^40 = 87 %)."""
    rng = np.random.default_rng(20261128)
    any_corrected = any_raw = 0
    trials = 100
    for _ in range(trials):
        out = compare_studies(study(rng), study(rng), ["goodput_bps"])
        assert len(out) == CELLS and out["n_tests"].iloc[0] == CELLS
        assert (out["correction"] == "Benjamini-Hochberg").all()
        any_corrected += bool(out["significant"].any())
        any_raw += bool((out["p"] < 0.05).any())
    assert any_corrected <= 0.09 * trials, any_corrected
    assert any_raw >= 0.7 * trials, any_raw


def test_a_known_shift_is_found_and_false_discoveries_stay_at_the_rate():
    """One cell of 40 shifted by 4 sd (8 Mbit/s), 8 runs a side, 50 times: the shifted
    cell is found every time, with the true difference inside its interval, and the
    cells marked wrongly are on average at most ~5 % of those marked."""
    rng = np.random.default_rng(7)
    fdp = []
    for _ in range(50):
        out = compare_studies(study(rng, 8), study(rng, 8, shift={17: 8e6}), ["goodput_bps"])
        sig = out[out["significant"]]
        assert "18ms" in set(sig["bottleneck.delay"])
        r = out.set_index("bottleneck.delay").loc["18ms"]
        # the difference A - B with its own interval, which holds the true -8 Mbit/s
        assert r["diff_ci_high"] < 0 and r["q"] >= r["p"]
        fdp.append((len(sig) - 1) / len(sig))
    assert np.mean(fdp) <= 0.08, np.mean(fdp)


def test_q_values_are_benjamini_hochberg():
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, np.nan])
    q = fdr(p)
    # BH by hand: q_(i) = min_{j >= i} p_(j) * m / j over the m = 8 finite p-values
    m = 8
    by_hand = np.minimum.accumulate((p[:8] * m / np.arange(1, 9))[::-1])[::-1]
    assert q[:8] == pytest.approx(np.minimum(by_hand, 1))
    assert math.isnan(q[8])
    assert q[:8] == pytest.approx(sps.false_discovery_control(p[:8]))


def test_the_difference_has_welchs_interval():
    a, b = [9.8, 10.1, 10.4, 9.9], [11.0, 12.5, 10.2, 13.1, 11.7]
    r = compare(a, b)
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (r["diff_ci_low"], r["diff_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert r["diff"] == pytest.approx(np.mean(a) - np.mean(b))
    assert r["test"] == "welch" and r["p"] == r["welch_p"]
    # constant samples: the difference is certain
    c = compare([1.0, 1.0, 1.0], [3.0, 3.0])
    assert (c["diff_ci_low"], c["diff_ci_high"]) == (-2.0, -2.0)


def test_the_difference_interval_covers_the_truth_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    hits = 0
    trials = 400
    for _ in range(trials):
        r = compare(rng.normal(5, 1, 6), rng.normal(6, 2, 7))
        hits += r["diff_ci_low"] <= -1.0 <= r["diff_ci_high"]
    assert 0.92 <= hits / trials <= 0.98, hits / trials


def test_percentile_metrics_are_summarised_by_a_bootstrapped_median():
    assert center_of("rtt_p95_s") == center_of("ping_rtt_p99_s") == "median"
    assert center_of("fct_p95_s") == "median"
    assert center_of("goodput_bps") == center_of("rtt_mean_s") == "mean"
    x = [0.031, 0.030, 0.045, 0.032, 0.029, 0.090, 0.033]
    s = summarize(x, center="median")
    assert s["center"] == "median" and s["interval"] == "bootstrap"
    assert s["median"] == pytest.approx(0.032)
    assert s["ci_low"] <= s["median"] <= s["ci_high"]
    # a median's interval is not pulled by the outlier the way the mean's is
    assert s["ci_high"] < summarize(x)["ci_high"]
    # seeded: the same data give the same interval
    again = summarize(x, center="median")
    assert (again["ci_low"], again["ci_high"]) == (s["ci_low"], s["ci_high"])
    # a constant sample has a zero-width interval
    k = summarize([0.02] * 4, center="median")
    assert k["ci_low"] == k["ci_high"] == 0.02


def test_medians_are_compared_by_bootstrap_and_mann_whitney():
    rng = np.random.default_rng(11)
    a = rng.lognormal(np.log(0.030), 0.1, 10)
    b = rng.lognormal(np.log(0.045), 0.1, 10)
    r = compare(a, b, center="median")
    assert r["test"] == "mann-whitney" and r["p"] == r["mw_p"] and r["significant"]
    assert r["diff"] == pytest.approx(np.median(a) - np.median(b))
    assert r["diff_ci_low"] <= r["diff"] <= r["diff_ci_high"] < 0
    # no difference: marked at about the stated rate, the interval mostly around 0
    rng = np.random.default_rng(99)
    trials, marked, covered = 150, 0, 0
    for _ in range(trials):
        same = compare(rng.lognormal(np.log(0.030), 0.1, 10),
                       rng.lognormal(np.log(0.030), 0.1, 10), center="median")
        marked += same["significant"]
        covered += same["diff_ci_low"] <= 0 <= same["diff_ci_high"]
    assert marked <= 0.08 * trials and covered >= 0.90 * trials, (marked, covered)


def test_compare_studies_uses_the_median_for_percentile_metrics():
    rng = np.random.default_rng(5)
    a = pd.DataFrame({"cell": "c0", "valid": True, "rtt_p95_s": rng.normal(0.03, 0.001, 6),
                      "goodput_bps": rng.normal(9e6, 1e5, 6)})
    b = a.assign(rtt_p95_s=a["rtt_p95_s"] + 0.01)
    out = compare_studies(a, b, ["rtt_p95_s", "goodput_bps"], by=["cell"]).set_index("metric")
    assert out.loc["rtt_p95_s", "center"] == "median"
    assert out.loc["rtt_p95_s", "test"] == "mann-whitney"
    assert out.loc["goodput_bps", "test"] == "welch"
    assert out.loc["rtt_p95_s", "diff"] == pytest.approx(-0.01)
