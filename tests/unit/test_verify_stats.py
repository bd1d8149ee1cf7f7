"""The verdicts of the verification matrices (verify/common.py): a difference
agrees only when its whole 90 % interval lies inside the tolerance, disagrees only when
the whole interval lies outside it, and is unresolved otherwise."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "verify"))
from common import diff_ci, equivalence  # noqa: E402


def test_runs_that_differ_by_less_than_the_tolerance_agree():
    native, bpf = [1.80, 1.82, 1.81], [1.79, 1.81, 1.80]
    d, lo, hi = diff_ci(native, bpf)
    assert abs(d + 0.01) < 1e-9 and lo < d < hi
    assert equivalence((d, lo, hi), 0.18) == "agree"


def test_a_difference_wholly_beyond_the_tolerance_disagrees():
    ci = diff_ci([1.80, 1.82, 1.81], [0.84, 0.83, 0.86])
    assert ci[2] < -0.18 and equivalence(ci, 0.18) == "DISAGREE"


def test_noise_too_large_to_tell_is_unresolved_and_no_data_is_not_measured():
    assert equivalence(diff_ci([1.0, 2.0, 1.5], [1.1, 2.2, 1.4]), 0.1) == "unresolved"
    assert equivalence(diff_ci([1.0], [1.1, 1.2]), 0.1) == "not measured"


def test_pooled_events_compare_their_medians_by_bootstrap():
    rng = np.random.default_rng(3)
    a, b = 0.5 + rng.normal(0, 0.01, 40), 0.5 + rng.normal(0, 0.01, 30)
    d, lo, hi = diff_ci(a, b, stat="median")
    assert lo <= d <= hi and hi - lo < 0.02
    assert equivalence((d, lo, hi), 0.05) == "agree"
    # the same data twice give the same interval (a fixed seed)
    assert diff_ci(a, b, stat="median") == (d, lo, hi)
