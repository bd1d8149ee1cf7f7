"""ccarena.report: report.html from a synthetic study directory, checked in headless
Chromium (every image decoded, no console error) and for its content."""
import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.report import write_report
from ccarena.store.results import open_results as load_results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# `make test` installs chromium (TEST_APT_PACKAGES) and sets this: there, a missing
# browser is a failure, not a skip
if os.environ.get("CCARENA_REQUIRE_CHROMIUM") == "1" and CHROMIUM is None:
    raise RuntimeError("CCARENA_REQUIRE_CHROMIUM=1 but chromium is not installed "
                       "(`make test-deps` installs it)")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]
# Injected into a copy of the report: the report itself carries no script.
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const svgs = document.querySelectorAll('svg').length;
  document.title = `CHECK imgs=${imgs.length} ok=${ok} svgs=${svgs} errors=${window.__errors.length}`;
});
</script></body>"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("study")
    return write_synthetic_study(d / "synthetic-20261122-000000", reps=2, duration_s=5.0,
                                 invalid=("buf20-reno-r1",))


@pytest.fixture(scope="module")
def report(study):
    return write_report(study)


def test_report_is_self_contained_with_sections(report):
    html = report.read_text()
    assert report.name == "report.html"
    for section in ("Summary", "Checks", "Results per cell", "Figures", "Flows",
                    "Environment", "Study"):
        assert f">{section}</h2>" in html, section
    assert not re.search(r'(src|href)="(https?:)?//', html), "external resource"
    assert "<script" not in html
    assert html.count('src="data:image/png;base64,') >= 8
    assert "0.0.0-synthetic" in html  # environment.json


def test_report_counts_invalid_runs_and_shows_cis(report):
    html = report.read_text()
    assert "1 of 8 runs are invalid" in html and "buf20-reno-r1" in html
    assert "cpu steal 12% &gt; 5%" in html
    # the invalid run's cell has n = 1: its CI is undefined, the others have a ± part
    assert re.search(r"\d ± [\d.]+", html)


def test_report_recomputes_metrics_without_runs_parquet(tmp_path, study):
    d = tmp_path / "copy"
    shutil.copytree(study, d)
    for f in ("runs.parquet", "flows.parquet", "cells.parquet", "report.html"):
        (d / f).unlink(missing_ok=True)
    res = load_results(d)
    assert len(res.runs) == 8 and "bottleneck.buffer" in res.runs
    assert write_report(d, max_timeseries=1).exists()


def test_report_of_a_study_with_missing_tables(tmp_path, study):
    d = tmp_path / "sparse"
    shutil.copytree(study, d)
    for p in d.glob("runs/*/link_stats.parquet"):
        p.unlink()
    for p in d.glob("runs/*/ping.parquet"):
        p.unlink()
    (d / "study.json").unlink()
    html = write_report(d, max_timeseries=1).read_text()
    assert "no link statistics" not in html  # the message is in the figure, not the page
    assert ">Figures</h2>" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test-deps` "
                    "installs it; `make test` requires it) - cannot render report.html")
def test_report_renders_in_headless_chromium(tmp_path, report):
    page = tmp_path / "check.html"
    html = report.read_text()
    page.write_text(html.replace("</body>", PROBE, 1))
    n_img = html.count("<img ")
    profile = tmp_path / "profile"
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={profile}",
                          "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = re.search(r"<title>(CHECK[^<]*)</title>", dom.stdout)
    assert title, f"probe did not run; stderr: {dom.stderr[-1500:]}"
    assert title.group(1) == f"CHECK imgs={n_img} ok={n_img} svgs=0 errors=0"
    console = [ln for ln in dom.stderr.splitlines()
               if "Uncaught" in ln or "ERROR:CONSOLE" in ln or "Failed to load resource" in ln]
    assert not console, console
    shot = tmp_path / "report.png"
    r = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={profile}",
                        "--window-size=1200,2400", f"--screenshot={shot}", report.as_uri()],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and shot.stat().st_size > 10_000, r.stderr[-1500:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test-deps` "
                    "installs it; `make test` requires it) - cannot render report.html")
def test_svg_report_renders_in_headless_chromium(tmp_path, study):
    report = write_report(study, out=tmp_path / "svg.html", max_timeseries=1,
                          figure_format="svg")
    html = report.read_text()
    n_fig = html.count('<div class="fig">')
    assert n_fig >= 5 and "<img " not in html and "<?xml" not in html
    page = tmp_path / "check.html"
    page.write_text(html.replace("</body>", PROBE, 1))
    dom = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    title = re.search(r"<title>(CHECK[^<]*)</title>", dom.stdout)
    assert title, dom.stderr[-1500:]
    svgs = int(re.search(r"svgs=(\d+)", title.group(1)).group(1))
    assert svgs >= n_fig and "errors=0" in title.group(1)
    assert not [ln for ln in dom.stderr.splitlines() if "Uncaught" in ln or "ERROR:CONSOLE" in ln]


def test_write_report_to_another_place(tmp_path, study):
    out = write_report(study, out=tmp_path / "elsewhere" / "r.html", max_timeseries=1)
    assert out.exists() and out.read_text().count("Time series of one run per cell") == 1
    meta = json.loads(next((study / "runs").glob("*/meta.json")).read_text())
    assert meta["cell_params"]
    assert not pd.read_parquet(study / "runs.parquet").empty


def test_report_shows_pass_criteria(tmp_path, study):
    d = tmp_path / "checked"
    shutil.copytree(study, d)
    st = json.loads((d / "study.json").read_text())
    st["expect"] = [{"name": "goodput within the rate", "metric": "goodput_bps",
                     "level": "run", "max": "100%rate", "where": {"bottleneck.buffer": "100p"},
                     "stat": "each"},
                    {"name": "RTT stays low", "metric": "rtt_mean_s", "level": "run",
                     "max": 0.001, "where": {"bottleneck.buffer": "100p"}}]
    (d / "study.json").write_text(json.dumps(st))
    html = write_report(d, max_timeseries=0).read_text()
    # two cells have buffer 100p (cubic, reno): each check is judged on each
    assert "Pass criteria: 2 of 4 met" in html and ">FAIL<" in html
    assert "goodput within the rate" in html and "RTT stays low" in html
    # a study whose checks cannot be judged still lists them by name
    st["expect"] = [{"name": "utilisation above half", "metric": "utilisation",
                     "level": "run", "min": 0.5, "where": {"no.such": 1}}]
    (d / "study.json").write_text(json.dumps(st))
    assert "utilisation above half" in write_report(d, max_timeseries=0).read_text()


def test_report_page_comes_from_autoescaped_templates(tmp_path, study):
    """The page is rendered from report/templates (shipped as package data) with
    autoescape: markup in a study's own text is shown, never interpreted."""
    from importlib.resources import files

    from ccarena.report.html import environment
    tpl = files("ccarena.report") / "templates"
    assert {"report.html.j2", "blocks.html.j2", "checks.html.j2", "style.css"} <= {
        p.name for p in tpl.iterdir()}
    assert environment().autoescape is True
    d = tmp_path / "tricky"
    shutil.copytree(study, d)
    st = json.loads((d / "study.json").read_text())
    st["study"]["name"] = "<script>alert(1)</script> & co"
    (d / "study.json").write_text(json.dumps(st))
    html = write_report(d, max_timeseries=0).read_text()
    assert "<script>alert(1)" not in html
    assert "ccarena report: &lt;script&gt;alert(1)&lt;/script&gt; &amp; co</h1>" in html


def test_packaging_ships_the_templates():
    import tomllib
    from pathlib import Path
    pp = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "report/templates/*" in pp["tool"]["setuptools"]["package-data"]["ccarena"]
    deps = " ".join(pp["project"]["dependencies"])
    assert "jinja2" in deps


def test_report_names_cells_by_their_factor_values(report, study):
    """Cells appear as "buffer=20p, cc=reno", never by their store id alone: each cell's
    time series says its setting, and the re-run and invalid-run lists stay by run."""
    html = report.read_text()
    cells = json.loads((study / "plan.json").read_text())["cells"]
    for cell, params in cells.items():
        setting = f"buffer={params['bottleneck.buffer']}, cc={params['flow.bulk.cc']}"
        assert re.search(rf"Run \S*{re.escape(cell)}-r\d \({re.escape(setting)}\)", html), setting
        assert f"({cell})" not in html


def _text(html: str) -> str:
    """The visible text of an HTML fragment: tags dropped, entities decoded."""
    import html as h
    return h.unescape(re.sub(r"<[^>]+>", " ", html))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test-deps` "
                    "installs it; `make test` requires it) - cannot render report.html")
def test_rendered_report_has_no_number_in_scientific_notation(tmp_path, report):
    """What a reader sees (the DOM Chromium renders): every value with a unit is in that
    unit with the digits its interval supports, never 9.559e+07 or 3.3e-04. The resolved
    study and the environment are shown as recorded, so they are left out."""
    dom = subprocess.run([CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", report.as_uri()], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert dom.returncode == 0, dom.stderr[-1500:]
    body = dom.stdout.split('id="environment"')[0]
    text = _text(body)
    assert "Results per cell" in text and "goodput (Mbit/s)" in text
    assert not re.findall(r"\d(?:\.\d+)?[eE][+-]?\d+", text), \
        re.findall(r".{30}\d(?:\.\d+)?[eE][+-]?\d+.{10}", text)
    # intervals are rounded to their own digits: no "± 0.0012345"-like noise
    for m in re.finditer(r"± (\d+\.?\d*)", text):
        digits = m.group(1).replace(".", "").lstrip("0")
        assert len(digits) <= 2, m.group(0)


def _checked_copy(tmp_path, study, checks):
    d = tmp_path / "checked"
    shutil.copytree(study, d)
    st = json.loads((d / "study.json").read_text())
    st["expect"] = checks
    (d / "study.json").write_text(json.dumps(st))
    (d / "checks.json").unlink(missing_ok=True)
    return d


CHECKS = [
    {"name": "every flow has a share", "metric": "goodput_bps", "min": "10%rate",
     "max": "100%rate", "stat": "each"},
    {"name": "goodput within the rate", "metric": "goodput_bps", "level": "run",
     "max": "100%rate", "where": {"bottleneck.buffer": "100p"}},
    {"name": "little loss", "metric": "loss_ratio", "level": "run", "max": 0.005},
    {"name": "RTT stays low", "metric": "rtt_mean_s", "level": "run", "max": 0.05},
    {"name": "RTT grows with the buffer", "metric": "rtt_mean_s", "level": "run",
     "trend": "increasing", "over": "bottleneck.buffer", "where": {"flow.bulk.cc": "cubic"}},
]


def test_checks_table_reads_as_the_terminal(tmp_path, study):
    """Each row of the report's checks table says, in the same words and units, what
    `ccarena check` prints for that check: "goodput within the rate [buffer=100p,
    cc=cubic]: 9.69 Mbit/s, want ≤ 10 Mbit/s"."""
    import io

    from rich.console import Console

    from ccarena.analysis.checks import record
    from ccarena.report.summary import print_checks
    from ccarena.study.load import parse_study
    d = _checked_copy(tmp_path, study, CHECKS)
    res = load_results(d)
    checks = record(res, parse_study(res.study, res.study_source))
    con = Console(file=io.StringIO(), width=1000)
    print_checks(checks, con)
    terminal = [ln.rstrip() for ln in con.file.getvalue().splitlines() if ln.strip()]
    assert any("Mbit/s, want" in ln for ln in terminal) and any(" %" in ln for ln in terminal)
    html = write_report(d, max_timeseries=0).read_text()
    table = html.split("Pass criteria:")[1].split("</table>")[0]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        result, what, cell, detail, runs = [_text(td).strip()
                                            for td in re.findall(r"<td[^>]*>(.*?)</td>", tr,
                                                                 re.S)]
        rows.append(f"{result}  {what}" + (f" [{cell}]" if cell else "") + f": {detail}"
                    + (f" [{runs}]" if runs else ""))
    assert rows == terminal
    assert not any(re.search(r"\d[eE][+-]?\d", r) for r in rows), rows


def test_a_categorical_sweep_is_drawn_without_connecting_lines(tmp_path, monkeypatch):
    """A study that sweeps only the algorithm: its results figure has points with
    intervals in the study's order and no line from one algorithm to the next (checked on
    the figure's artists, not its pixels)."""
    from ccarena.report import figures
    d = write_synthetic_study(tmp_path / "ccs-20261122-000000", buffers=(100,),
                              ccs=(("reno",), ("cubic",)), reps=3, duration_s=4.0)
    drawn = []
    real = figures.save

    def keep(fig, path, fmt=None):
        drawn.append(fig)
        return real(fig, path, fmt)
    monkeypatch.setattr(figures, "save", keep)
    write_report(d, max_timeseries=0)
    vs = [f for f in drawn if f._suptitle is not None
          and f._suptitle.get_text().startswith("results against cc")]
    assert len(vs) == 1, [f._suptitle.get_text() for f in drawn if f._suptitle]
    for ax in vs[0].axes:
        if not ax.get_visible():
            continue
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
        assert all(ln.get_linestyle() in ("None", "none", "", " ") for ln in lines)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["reno", "cubic"]
        assert ax.get_xlabel() == "cc"


def test_a_single_flow_study_leaves_jains_index_out_and_says_why(tmp_path):
    d = write_synthetic_study(tmp_path / "one-20261122-000000", n_flows=1, reps=2,
                              duration_s=4.0)
    html = _text(write_report(d, max_timeseries=0).read_text())
    results = html.split("Results per cell")[1].split("Figures")[0]
    assert "Jain" not in results.split("Jain's index")[0]    # no column
    assert re.search(r"Jain's index(, [^:]+)?: not shown, every run has a single flow",
                     results)
    figures = html.split("Figures")[1].split("Flows")[0]
    assert re.search(r"Jain's index(, [^:]+)?: left out, every run has a single flow",
                     figures)
    assert "convergence time: left out, no valid run has a value" in figures


def test_a_metric_with_one_value_in_every_run_has_no_figure(report):
    """Nothing to compare: the figure is left out with a line saying so."""
    figures = _text(report.read_text()).split("Figures")[1].split("Flows")[0]
    assert re.search(r"convergence time: left out, 0 s in every run", figures)
