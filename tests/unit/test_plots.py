"""ccarena.plots: every figure function returns a matplotlib Figure, draws into given
axes, and saves as PNG, SVG or PDF, also from empty inputs."""
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from ccarena.report import figures as plots
from ccarena.analysis import cell_stats
from ccarena.analysis.synthetic import synthetic_run

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(p):
    return p.read_bytes()[:8] == PNG and p.stat().st_size > 1000


def is_svg(p):
    head = p.read_text()[:300]
    return "<svg" in head or head.startswith("<?xml")


def is_pdf(p):
    return p.read_bytes()[:5] == b"%PDF-"


def saved(fig, path):
    assert isinstance(fig, Figure)
    return plots.save(fig, path)


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
    p = saved(plots.timeseries(tables, meta), tmp_path / f"ts{suffix}")
    assert check(p)


def test_timeseries_with_missing_tables(tmp_path, run):
    _, meta = run
    assert is_png(saved(plots.timeseries({"rx": pd.DataFrame()}, meta), tmp_path / "e.png"))


def test_figures_across_cells(tmp_path, runs):
    stats = cell_stats(runs, ["bottleneck.buffer", "cc"], ["goodput_bps", "jain"])
    assert is_png(saved(plots.metric_vs_factor(stats, "bottleneck.buffer", "goodput_bps",
                                               hue="cc"), tmp_path / "f.png"))
    assert is_svg(saved(plots.box(runs, "cell", "jain"), tmp_path / "b.svg"))
    assert is_png(saved(plots.cdf(runs, "rtt_mean_s", hue="cc"), tmp_path / "c.png"))
    assert is_png(saved(plots.heatmap(runs, "cc", "bottleneck.buffer", "jain"),
                        tmp_path / "h.png"))
    assert is_pdf(saved(plots.fairness_vs_flows(runs, "n_flows", hue="cc"),
                        tmp_path / "j.pdf"))


def test_empty_inputs_give_a_figure(tmp_path):
    e = pd.DataFrame()
    for i, f in enumerate([lambda: plots.metric_vs_factor(e, "x", "y"),
                           lambda: plots.box(e, "x", "y"),
                           lambda: plots.cdf(e, "y"),
                           lambda: plots.heatmap(e, "a", "b", "v"),
                           lambda: plots.fairness_vs_flows(e, "n"),
                           lambda: plots.throughput_delay(e, "cc"),
                           lambda: plots.box_per_flow(e),
                           lambda: plots.convergence(e)]):
        assert is_png(saved(f(), tmp_path / f"{i}.png"))


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not supported"):
        plots.save(plots.cdf(pd.DataFrame({"x": [1.0]}), "x"), tmp_path / "x.jpg")


def test_figures_draw_into_given_axes_and_return_their_figure(tmp_path, runs):
    fig = Figure(figsize=(12, 4))
    a, b = fig.subplots(1, 2)
    assert plots.box(runs, "cc", "jain", ax=a) is fig
    assert plots.cdf(runs, "rtt_mean_s", hue="cc", ax=b) is fig
    assert len(fig.axes) == 2 and a.get_title().startswith("Jain's index per cc")
    assert b.get_lines(), "the CDF was not drawn into the axes given"
    assert is_svg(plots.save(fig, tmp_path / "two.svg"))
    # the same figure saved twice as SVG or PDF is the same file: no date inside
    plots.save(fig, tmp_path / "again.svg")
    assert (tmp_path / "two.svg").read_bytes() == (tmp_path / "again.svg").read_bytes()


def test_timeseries_of_two_runs_overlaid(run):
    tables, meta = run
    fig = plots.timeseries(tables, meta, label="A")
    n = len(fig.axes[1].get_lines())
    assert plots.timeseries(tables, meta, fig=fig, label="B") is fig
    assert len(fig.axes) == 5 and len(fig.axes[1].get_lines()) > n
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(t.startswith("A: ") for t in labels) and any(t.startswith("B: ")
                                                            for t in labels)


def test_throughput_delay_reverses_the_delay_axis_and_draws_ellipses(runs):
    r = runs.assign(rtt_p95_s=runs["rtt_mean_s"] * 1.2)
    fig = plots.throughput_delay(r, "cc")
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert lo > hi, "delay axis not reversed (better must be to the right)"
    # a 1-sd ellipse per algorithm (each has 16 valid runs of 18)
    assert len(ax.patches) == 2
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["cubic (16)", "reno (16)"]
    assert "invalid runs excluded" in ax.get_title()


def test_box_per_flow_has_one_box_per_flow_and_group():
    rng = np.random.default_rng(1)
    fl = pd.DataFrame([{"cell": c, "name": n, "conn": -1, "valid": True,
                        "goodput_bps": rng.normal(5e6 if n == "a" else 3e6, 1e5)}
                       for c in ("c0", "c1", "c2") for n in ("a", "b") for _ in range(4)])
    ax = plots.box_per_flow(fl, "goodput_bps", by="cell").axes[0]
    assert len(ax.patches) == 6     # 3 groups x 2 flows, a filled box each
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c0", "c1", "c2"]


def test_convergence_marks_the_time_and_the_minimum():
    from ccarena.metrics.series import convergence_series
    tables, meta = synthetic_run(n_flows=2, duration_s=10.0, warmup_s=1.0)
    w, t_c = convergence_series(tables["rx"], meta)
    assert t_c == pytest.approx(4.0) and w["scored"].any() and (~w["scored"]).any()
    ax = plots.convergence(w.assign(t_c=t_c, label="run")).axes[0]
    assert any(line.get_xdata()[0] == t_c for line in ax.get_lines()
               if len(line.get_xdata()) == 2)
    assert any(t.get_text().startswith("min ") for t in ax.texts)
    assert "(min " in ax.get_legend().get_texts()[0].get_text()


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
    assert is_png(saved(plots.timeseries(cut, {k: v for k, v in meta.items() if k != "flows"}),
                        tmp_path / "p.png"))
    assert len(plt.get_fignums()) == before


def test_a_categorical_factor_gets_points_in_the_study_order_and_no_line(runs):
    """cc is a category: points with intervals, side by side per series, in the order
    the study gives (reno before cubic), never a line from one algorithm to another."""
    stats = cell_stats(runs, ["cc", "bottleneck.buffer"], ["goodput_bps", "jain"])
    fig = plots.metric_vs_factor(stats, "cc", ["goodput_bps", "jain"],
                                 hue="bottleneck.buffer", order=["reno", "cubic"])
    for ax in fig.axes[:2]:
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
        assert lines, "nothing drawn"
        assert all(ln.get_linestyle() in ("None", "none", "", " ") for ln in lines), \
            [ln.get_linestyle() for ln in lines]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["reno", "cubic"]
    # three series (buffers), in the numeric order of the buffer
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["5p", "20p", "100p"]
    assert fig.axes[0].get_ylabel() == "goodput (Mbit/s)"
    assert fig.axes[0].get_xlabel() == "cc"


def test_a_numeric_factor_gets_lines_on_its_true_scale():
    """Delays 1..16 ms are geometric: drawn at their values on a log axis, joined by a
    line, ticks labelled as the study writes them; 0-60 ms in steps of 15: linear."""
    rows = [{"bottleneck.delay": d, "valid": True, "goodput_bps": 9e6 - i * 1e5 + r * 1e4}
            for i, d in enumerate(["1ms", "2ms", "4ms", "8ms", "16ms"]) for r in range(3)]
    stats = cell_stats(pd.DataFrame(rows), ["bottleneck.delay"], ["goodput_bps"])
    ax = plots.metric_vs_factor(stats, "bottleneck.delay", "goodput_bps").axes[0]
    data = [ln for ln in ax.get_lines() if ln.get_linestyle() not in ("None", "none", "")]
    assert len(data) == 1 and data[0].get_linestyle() == "-"
    assert list(data[0].get_xdata()) == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1ms", "2ms", "4ms", "8ms",
                                                             "16ms"]
    rows = [{"bottleneck.delay": f"{d}ms", "valid": True, "goodput_bps": 9e6 + r}
            for d in (0, 15, 30, 45, 60) for r in range(2)]
    ax = plots.metric_vs_factor(cell_stats(pd.DataFrame(rows), ["bottleneck.delay"],
                                           ["goodput_bps"]), "bottleneck.delay",
                                "goodput_bps").axes[0]
    assert ax.get_xscale() == "linear"


def test_error_bars_stop_at_physical_bounds():
    """A loss near 0 with a wide interval: the bar ends at 0 %, not below."""
    rows = [{"cell": "a", "valid": True, "loss_ratio": v} for v in (0.0, 0.0, 0.0003)]
    stats = cell_stats(pd.DataFrame(rows).assign(cc="reno"), ["cc"], ["loss_ratio"])
    ax = plots.metric_vs_factor(stats, "cc", "loss_ratio").axes[0]
    assert ax.get_ylabel() == "loss (%)"
    segs = [c.get_segments() for c in ax.collections if hasattr(c, "get_segments")]
    lows = [min(p[1] for p in seg) for s in segs for seg in s]
    assert lows and min(lows) == pytest.approx(0.0)


def test_saved_axes_carry_no_scientific_multiplier(tmp_path):
    """Tiny values keep plain tick labels: no "1e-5" above the axis."""
    rows = [{"cc": cc, "valid": True, "loss_ratio": v * 1e-7}
            for cc in ("reno", "cubic") for v in (1.0, 2.0, 3.0)]
    fig = plots.metric_vs_factor(cell_stats(pd.DataFrame(rows), ["cc"], ["loss_ratio"]),
                                 "cc", "loss_ratio")
    plots.save(fig, tmp_path / "x.png")
    ax = fig.axes[0]
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert not any("e" in t.get_text() for t in ax.get_yticklabels())


def test_fairness_points_sit_at_their_flow_counts():
    """Each point at its number of flows (not at the number of runs averaged)."""
    rows = [{"n_flows": n, "valid": True, "jain": 1 - 0.05 * np.log2(n) + r * 0.01}
            for n in (2, 4, 8, 16) for r in range(3)]
    ax = plots.fairness_vs_flows(pd.DataFrame(rows), "n_flows").axes[0]
    data = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(data) == 1
    assert list(data[0].get_xdata()) == [2, 4, 8, 16]
    assert list(data[0].get_ydata()) == pytest.approx([1 - 0.05 * np.log2(n) + 0.01
                                                       for n in (2, 4, 8, 16)])
    assert ax.get_xscale() == "log"
