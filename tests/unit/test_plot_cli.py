"""`ccarena plot RESULTS… NAME`: figures by name, several result sets in one figure."""
import pytest
from matplotlib.figure import Figure

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.cli.main import main
from ccarena.report import plotting

PNG = b"\x89PNG\r\n\x1a\n"
NAMES = ["timeseries", "goodput_cdf", "rtt_cdf", "box", "metric_vs_factor",
         "throughput_delay", "fairness_vs_flows", "heatmap", "box_per_flow", "convergence"]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    base = tmp_path_factory.mktemp("plots")
    a = write_synthetic_study(base / "synthetic-20261122-000000", reps=3, duration_s=8.0,
                              invalid=("buf20-reno-r1",))
    b = write_synthetic_study(base / "synthetic-20261122-010000", reps=3, duration_s=8.0,
                              buffers=(20, 200))
    return base, a, b


def test_list_names_every_figure_with_one_line(capsys):
    assert main(["plot", "--list"]) == 0
    out = capsys.readouterr().out
    for n in NAMES:
        assert n in out
    assert list(plotting.names()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_figure_of_two_result_sets(two, tmp_path, capsys, name):
    _, a, b = two
    out = tmp_path / f"{name}.png"
    assert main(["plot", str(a), str(b), name, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert out.read_bytes()[:8] == PNG and out.stat().st_size > 5000


def test_several_sets_are_one_colour_and_label_each(two):
    _, a, b = two
    fig = plotting.plot([a, b], "throughput_delay", labels=["A", "B"])
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("A: ") for t in legend) and any(t.startswith("B: ")
                                                            for t in legend)
    fig = plotting.plot([a, b], "box", metric="jain", labels=["A", "B"])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["A", "B"]
    fig = plotting.plot([a, b], "timeseries", labels=["A", "B"])
    texts = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(t.startswith("A: ") for t in texts) and any(t.startswith("B: ") for t in texts)


def test_options_metric_by_run_and_formats(two, tmp_path):
    _, a, _ = two
    for suffix, magic in ((".svg", b"<?xml"), (".pdf", b"%PDF-")):
        out = tmp_path / f"b{suffix}"
        # --by takes a factor's short name
        assert main(["plot", str(a), "box", "--metric", "rtt_mean_s", "--by", "buffer",
                     "-o", str(out)]) == 0
        assert out.read_bytes()[:5] == magic
    fig = plotting.plot(a, "box", metric="rtt_mean_s", by="buffer")
    assert fig.axes[0].get_xlabel() == "buffer"
    fig = plotting.plot(a, "timeseries", run="buf100-cubic-r1")
    assert fig.texts[0].get_text() == "buffer=100p, cc=cubic, repetition 1"
    fig = plotting.plot(a, "convergence", run="buf20-cubic-r0")
    assert isinstance(fig, Figure) and len(fig.axes[0].get_legend().get_texts()) == 1


def test_mistakes_are_one_clear_line(two, capsys):
    _, a, _ = two
    assert main(["plot", str(a), "nosuch"]) == 1
    assert "known: timeseries" in capsys.readouterr().err
    assert main(["plot", str(a), "boxx"]) == 1
    assert "no figure 'boxx' (did you mean 'box'" in capsys.readouterr().err
    # an unknown metric is an error naming the closest, never an empty figure
    assert main(["plot", str(a), "box", "--metric", "goodput_mbps"]) == 1
    err = capsys.readouterr().err
    assert "no metric 'goodput_mbps' in runs (did you mean 'goodput_bps'" in err
    assert main(["plot", str(a), "goodput_cdf", "--metric", "rtt_maen_s"]) == 1
    assert "did you mean 'rtt_mean_s'" in capsys.readouterr().err
    assert main(["plot", str(a), "timeseries", "--run", "cc=vegas"]) == 1
    assert "no run has these values" in capsys.readouterr().err
    assert main(["plot", str(a), "timeseries", "--run", "algo=reno"]) == 1
    assert "no factor 'algo'" in capsys.readouterr().err
    assert main(["plot", str(a), "box", "--by", "nosuch"]) == 1
    assert "no column 'nosuch'" in capsys.readouterr().err
    assert main(["plot", str(a), "timeseries", "--run", "zzz"]) == 1
    assert "no run 'zzz'" in capsys.readouterr().err
    assert main(["plot", str(a), "box", "-o", "x.jpg"]) == 1
    assert "use .png, .svg or .pdf" in capsys.readouterr().err


def test_figures_name_settings_by_factor_values_not_cell_ids(two):
    _, a, _ = two
    fig = plotting.plot(a, "box", metric="goodput_bps")
    ticks = {t.get_text() for t in fig.axes[0].get_xticklabels()}
    assert ticks == {f"buffer={b}, cc={c}" for b in ("20p", "100p") for c in ("cubic", "reno")}
    fig = plotting.plot(a, "goodput_cdf")
    legend = {t.get_text().split(" (")[0] for t in fig.axes[0].get_legend().get_texts()}
    assert legend == ticks      # not the store's cell ids (buf20-reno, ...)


def test_run_by_its_factor_values(two):
    """--run takes factor values (short or full names), and rep= picks the repetition;
    without it, the first valid repetition of the cell is drawn."""
    _, a, _ = two
    fig = plotting.plot(a, "timeseries", run="buffer=20p,cc=reno")
    # buf20-reno-r1 is invalid, r0 is the first valid one
    assert fig.texts[0].get_text() == "buffer=20p, cc=reno, repetition 0"
    fig = plotting.plot(a, "timeseries", run="bottleneck.buffer=100p,cc=cubic,rep=2")
    assert fig.texts[0].get_text() == "buffer=100p, cc=cubic, repetition 2"
    fig = plotting.plot(a, "convergence", run="cc=cubic,buffer=100p,rep=1")
    assert len(fig.axes[0].get_legend().get_texts()) == 1
    with pytest.raises(plotting.PlotError, match="no run has these values"):
        plotting.plot(a, "timeseries", run="buffer=100p,cc=cubic,rep=7")


def test_plot_errors_are_ccarena_errors():
    from ccarena.errors import CcarenaError
    assert issubclass(plotting.PlotError, CcarenaError)
    with pytest.raises(CcarenaError, match="did you mean 'heatmap'"):
        plotting.plot([], "heatmp")


def test_list_as_json(capsys):
    import json
    assert main(["plot", "--list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == plotting.names()
