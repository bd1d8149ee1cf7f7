"""ccarena.plots: every figure is written as PNG or SVG, also from empty inputs."""
import numpy as np
import pandas as pd
import pytest

from ccarena.report import figures as plots
from ccarena.analysis import cell_stats
from ccarena.analysis.synthetic import synthetic_run

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(p):
    return p.read_bytes()[:8] == PNG and p.stat().st_size > 1000


def is_svg(p):
    head = p.read_text()[:300]
    return "<svg" in head or head.startswith("<?xml")


@pytest.fixture(scope="module")
def run():
    return synthetic_run(n_flows=3, duration_s=6.0, warmup_s=1.0, stagger_s=1.0)


@pytest.fixture(scope="module")
def runs():
    rng = np.random.default_rng(0)
    rows = [{"cell": f"{b}-{cc}", "bottleneck.buffer": b, "cc": cc, "n_flows": n,
             "valid": rep != 2 or b != "20p", "jain": rng.uniform(0.6, 1),
             "goodput_bps": rng.normal(9e6, 2e5), "rtt_mean_s": rng.uniform(0.02, 0.1)}
            for b in ("100p", "20p", "5p") for cc in ("reno", "cubic") for n in (2, 4)
            for rep in range(3)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix,check", [(".png", is_png), (".svg", is_svg)])
def test_timeseries_png_and_svg(tmp_path, run, suffix, check):
    tables, meta = run
    p = plots.timeseries(tables, meta, tmp_path / f"ts{suffix}")
    assert check(p)


def test_timeseries_with_missing_tables(tmp_path, run):
    _, meta = run
    assert is_png(plots.timeseries({"rx": pd.DataFrame()}, meta, tmp_path / "e.png"))


def test_figures_across_cells(tmp_path, runs):
    stats = cell_stats(runs, ["bottleneck.buffer", "cc"], ["goodput_bps", "jain"])
    assert is_png(plots.metric_vs_factor(stats, "bottleneck.buffer", "goodput_bps",
                                         tmp_path / "f.png", hue="cc"))
    assert is_svg(plots.box(runs, "cell", "jain", tmp_path / "b.svg"))
    assert is_png(plots.cdf(runs, "rtt_mean_s", tmp_path / "c.png", hue="cc"))
    assert is_png(plots.heatmap(runs, "cc", "bottleneck.buffer", "jain", tmp_path / "h.png"))
    assert is_png(plots.fairness_vs_flows(runs, "n_flows", tmp_path / "j.png", hue="cc"))


def test_empty_inputs_give_a_figure(tmp_path):
    e = pd.DataFrame()
    for i, f in enumerate([lambda p: plots.metric_vs_factor(e, "x", "y", p),
                           lambda p: plots.box(e, "x", "y", p),
                           lambda p: plots.cdf(e, "y", p),
                           lambda p: plots.heatmap(e, "a", "b", "v", p),
                           lambda p: plots.fairness_vs_flows(e, "n", p)]):
        assert is_png(f(tmp_path / f"{i}.png"))


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not supported"):
        plots.cdf(pd.DataFrame({"x": [1.0]}), "x", tmp_path / "x.jpg")


def test_levels_sort_naturally_and_units():
    assert sorted(["100p", "20p", "5p"], key=plots.natural_key) == ["5p", "20p", "100p"]
    assert sorted(["reno", 10, "1ms"], key=plots.natural_key) == ["1ms", 10, "reno"]
    assert plots.unit_of("goodput_bps") == (1e-6, "Mbit/s")
    assert plots.unit_of("rtt_p99_s") == (1e3, "ms")
    assert plots.unit_of("jain") == (1.0, "")


def test_timeseries_with_partial_columns_closes_its_figures(tmp_path, run):
    import matplotlib.pyplot as plt
    tables, meta = run
    cut = {"rx": tables["rx"].drop(columns=["conn"]),
           "tcpinfo": tables["tcpinfo"].drop(columns=["cwnd", "srtt_us"]),
           "link_stats": tables["link_stats"].drop(columns=["qlen_pkts"]),
           "ping": tables["ping"].drop(columns=["t", "t_ns"])}
    before = len(plt.get_fignums())
    assert is_png(plots.timeseries(cut, {k: v for k, v in meta.items() if k != "flows"},
                                   tmp_path / "p.png"))
    assert len(plt.get_fignums()) == before
