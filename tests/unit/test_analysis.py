"""ccarena.analysis: cell statistics and comparisons, answers worked out by hand."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from ccarena.analysis import cell_stats, compare, compare_studies, summarize


def test_summarize_by_hand():
    s = summarize([2.0, 4.0, 6.0])
    assert (s["n"], s["mean"], s["median"], s["min"], s["max"]) == (3, 4.0, 4.0, 2.0, 6.0)
    assert s["sd"] == pytest.approx(2.0)
    # t_{0.975, 2} = 4.302653; half width = 4.302653 * 2 / sqrt(3)
    assert s["ci_half"] == pytest.approx(4.302653 * 2 / math.sqrt(3), rel=1e-6)
    assert s["cov"] == pytest.approx(0.5)
    one = summarize([5.0])
    assert one["n"] == 1 and one["mean"] == 5.0 and math.isnan(one["ci_half"])
    assert summarize([])["n"] == 0


def test_ci_narrows_like_one_over_sqrt_n():
    # the same +-1 pattern repeated: sd stays ~1, so half * sqrt(n) / t_{n-1} stays ~ sd
    halves, sds = {}, {}
    for n in (4, 16, 64, 256):
        x = np.tile([-1.0, 1.0], n // 2) + 10
        s = summarize(x)
        halves[n], sds[n] = s["ci_half"], s["sd"]
        assert s["ci_half"] == pytest.approx(sps.t.ppf(0.975, n - 1) * s["sd"] / math.sqrt(n))
    for n in (4, 16, 64):  # 4x the runs: half the width, up to the t quantile and sd
        t_ratio = sps.t.ppf(0.975, n - 1) / sps.t.ppf(0.975, 4 * n - 1)
        assert halves[n] / halves[4 * n] / t_ratio / (sds[n] / sds[4 * n]) == pytest.approx(2)
    assert halves[64] / halves[256] == pytest.approx(2.0, rel=0.05)


def runs_frame():
    return pd.DataFrame({
        "cell": ["a", "a", "a", "a", "b", "b", "b"],
        "bottleneck.buffer": ["20p"] * 4 + ["100p"] * 3,
        "valid": [True, True, True, False, True, True, True],
        "goodput_bps": [1.0, 2.0, 3.0, 1000.0, 5.0, 5.0, np.nan],
        "jain": [1.0, 1.0, 1.0, 0.1, 0.5, 0.6, 0.7]})


def test_cell_stats_excludes_and_counts_invalid_runs():
    cs = cell_stats(runs_frame(), ["cell"], ["goodput_bps", "jain"]).set_index(
        ["cell", "metric"])
    a = cs.loc[("a", "goodput_bps")]
    assert (a.n, a.n_invalid, a["mean"], a["max"]) == (3, 1, 2.0, 3.0)  # 1000 not averaged
    b = cs.loc[("b", "goodput_bps")]
    assert (b.n, b.n_missing, b["mean"], b.sd) == (2, 1, 5.0, 0.0)
    assert cs.loc[("b", "jain")]["median"] == pytest.approx(0.6)


def test_cell_stats_several_keys_and_missing_metric():
    cs = cell_stats(runs_frame(), ["cell", "bottleneck.buffer"], ["nope"])
    assert len(cs) == 2 and (cs.n == 0).all()
    assert set(cs["bottleneck.buffer"]) == {"20p", "100p"}
    assert cell_stats(pd.DataFrame(), ["cell"], ["x"]).empty


def test_welch_detects_a_clear_difference():
    rng = np.random.default_rng(1)
    a, b = rng.normal(10, 1, 10), rng.normal(20, 1, 10)
    r = compare(a, b)
    assert r["welch_p"] < 1e-6 and r["significant"]
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert r["welch_t"] == pytest.approx(ref.statistic) and r["welch_p"] == pytest.approx(
        ref.pvalue)
    assert r["mw_p"] < 0.001 and r["rank_biserial"] == pytest.approx(-1.0)
    assert r["cohen_d"] < -5


def test_welch_does_not_detect_an_absent_difference():
    rng = np.random.default_rng(2)
    a, b = rng.normal(10, 1, 12), rng.normal(10, 1, 12)
    r = compare(a, b)
    assert r["welch_p"] > 0.05 and not r["significant"]
    assert abs(r["rank_biserial"]) < 0.5


def test_effect_sizes_by_hand():
    # a = 1,2,3 ; b = 2,3,4: d = -1 / 1 = -1; U_a = 0.5+0+... count a>b pairs: (3>2) = 1,
    # ties (2,2),(3,3) = 0.5 each -> U = 2, r = 2*2/9 - 1 = -5/9
    r = compare([1, 2, 3], [2, 3, 4])
    assert r["cohen_d"] == pytest.approx(-1.0)
    assert r["mw_u"] == pytest.approx(2.0)
    assert r["rank_biserial"] == pytest.approx(-5 / 9)


def test_compare_constant_and_too_small_samples():
    assert compare([1, 1, 1], [2, 2, 2])["welch_p"] == 0.0
    assert compare([1, 1, 1], [1, 1, 1])["welch_p"] == 1.0
    r = compare([1.0], [2.0, 3.0])
    assert math.isnan(r["welch_p"]) and not r["significant"]


def test_compare_studies_matches_cells_on_swept_factors():
    a = runs_frame()
    b = runs_frame().assign(goodput_bps=lambda d: d.goodput_bps * 10, cell=list("xxxxyyy"))
    out = compare_studies(a, b, ["goodput_bps"]).set_index("bottleneck.buffer")
    assert set(out.index) == {"20p", "100p"}
    assert out.loc["20p", "mean_a"] == 2.0 and out.loc["20p", "mean_b"] == 20.0
    assert out.loc["20p", "n_a"] == 3 and out.loc["20p", "n_invalid_a"] == 1


def test_welch_is_scipys_unequal_variance_t_test(monkeypatch):
    """compare() takes Welch's t, df and p from scipy.stats.ttest_ind(equal_var=False)."""
    from ccarena.analysis import stats
    calls = []
    real = stats.sps.ttest_ind

    def spy(a, b, **kw):
        calls.append(kw)
        return real(a, b, **kw)
    monkeypatch.setattr(stats.sps, "ttest_ind", spy)
    a, b = [9.8, 10.1, 10.4, 9.9], [11.0, 12.5, 10.2, 13.1, 11.7]
    r = compare(a, b)
    assert calls == [{"equal_var": False}]
    # Welch-Satterthwaite degrees of freedom and t, written out
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 5
    df = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 4)
    assert r["welch_df"] == pytest.approx(df)
    assert r["welch_t"] == pytest.approx((np.mean(a) - np.mean(b)) / np.sqrt(va + vb))
