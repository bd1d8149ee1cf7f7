"""The CLI as a user meets it: --help everywhere, dry runs, and bad input as one clear line."""
import subprocess
import sys

import pytest

from conftest import ccarena_cli

COMMANDS = ["run", "ls", "show", "cleanup", "doctor", "cc", "studies", "plot", "archive",
            "shell"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(cmd):
    r = ccarena_cli(cmd, "--help")
    assert "usage: ccarena" in r.stdout


def test_dry_run_lists_runs_without_building(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('''
[study]
name = "d"
duration = "5s"
repetitions = 2
seed = 3
[bottleneck]
rate = "10mbit"
[[flow]]
name = "f"
from = "s1"
to = "r1"
[sweep]
"flow.f.cc" = ["reno", "cubic"]
''')
    r = ccarena_cli("run", p, "--dry-run", "--results", tmp_path / "res", check=False)
    assert "2 cells x 2 repetitions = 4 runs" in r.stdout
    assert "seed 3" in r.stdout
    assert not (tmp_path / "res").exists()
    # the resolved setup of each cell: rate, delay, BDP, buffer in packets and BDPs
    assert "rate 10 Mbit/s; one-way delay 0 µs" in r.stdout
    assert "buffer 1000 packets" in r.stdout
    assert ccarena_cli("validate", p).stdout == r.stdout


def test_dry_run_shows_the_setup_and_warns(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text('''
[study]
name = "w"
duration = "5s"
[bottleneck]
rate = "500kbit"
delay = "10ms"
buffer = "25p"
loss = "100%"
[hosts.s1]
delay = "40ms"
[[flow]]
name = "f"
from = "s1"
to = "r1"
''')
    out = ccarena_cli("validate", p).stdout
    assert "one-way delay 10 ms, base RTT 20 ms" in out
    assert "BDP 1.2 kB = 1 packets; buffer 25 packets = 30.28 BDP" in out
    assert "loss 100.0000% (s->r)" in out and "host s1: +40 ms delay" in out
    assert "warning: the bottleneck runs at 500 kbit/s, below 1 Mbit/s" in out
    assert "warning: the loss is 100 %" in out
    assert "about 0:00 (h:mm)" in out


def test_output_piped_into_head_is_no_traceback():
    import subprocess
    import sys
    r = subprocess.run(f"{sys.executable} -m ccarena.cli validate parallel-tcp --scale full "
                       "| head -1", shell=True, capture_output=True, text=True)
    assert r.stdout.startswith("study parallel-tcp (scale full): 35 cells")
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr


@pytest.mark.parametrize("edit,needle", [
    (('rate = "10mbit"', 'rate = "10 parsecs"'), "bottleneck.rate: unknown rate unit 'parsecs'"),
    (('rate = "10mbit"', 'rate = "10mbit"\nwidth = 3'), "bottleneck.width: unknown key"),
    (('to = "r1"', 'to = "r7"'), "flow.f.to: no such host 'r7'"),
    (('name = "f"', 'name = "f"\ncc = "turbo"'), "flow.f.cc: unknown congestion control 'turbo'"),
])
def test_bad_input_is_one_clear_line(tmp_path, edit, needle):
    text = '''
[study]
name = "d"
duration = "5s"
[bottleneck]
rate = "10mbit"
[[flow]]
name = "f"
from = "s1"
to = "r1"
'''.replace(*edit)
    p = tmp_path / "bad.toml"
    p.write_text(text)
    r = ccarena_cli("run", p, "--results", tmp_path / "res", check=False)
    assert r.returncode == 1
    assert r.stderr.startswith(f"ccarena: {p}: "), r.stderr
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "res").exists()   # nothing half-built


def test_missing_study_file(tmp_path):
    r = ccarena_cli("run", tmp_path / "nope.toml", check=False)
    assert r.returncode == 1 and "no such study file" in r.stderr


def test_studies_lists_the_builtin_ones():
    r = ccarena_cli("studies")
    assert "quickstart" in r.stdout


def test_show_markdown_of_a_stored_study(tmp_path):
    """`show --markdown` on a stored study (synthetic: no network needed)."""
    import re

    from ccarena.analysis.synthetic import write_synthetic_study
    d = write_synthetic_study(tmp_path / "s-20260101-000000", reps=3, duration_s=4.0,
                              invalid=("buf20-reno-r1",))
    r = ccarena_cli("show", d, "--markdown")
    assert "| buffer | flow | cc | goodput Mbit/s |" in r.stdout
    # the cell with an invalid run: mean ± CI over its 2 valid runs, the invalid one counted
    assert re.search(r"\| 20p \| bulk\d \| reno \| [\d.]+ ± [\d.]+ \|.*\| 2 \+1 invalid \|",
                     r.stdout), r.stdout


def test_shell_takes_everything_after_dashes_as_the_command():
    from ccarena.cli.main import build_parser
    ap = build_parser()
    a = ap.parse_args(["shell", "quickstart", "--cell", "2", "--host", "r1", "--", "ping",
                       "-c", "2", "--host", "10.2.1.2"])
    assert (a.study, a.cell, a.host) == ("quickstart", "2", "r1")
    assert a.command == ["ping", "-c", "2", "--host", "10.2.1.2"]
    assert ap.parse_args(["shell", "quickstart"]).command == []



# -- what the commands print, on a stored study (synthetic: no network needed) -------------

EXPECT_STUDY = '''
[study]
name = "synthetic"
duration = "8s"
[bottleneck]
rate = "10mbit"
delay = "10ms"
[[flow]]
name = "bulk"
from = "s1"
to = "r1"
[sweep]
"bottleneck.buffer" = ["20p", "100p"]
"flow.bulk.cc" = ["cubic", "reno"]
[[expect]]
name = "goodput within the rate"
metric = "goodput_bps"
level = "run"
max = "100%rate"
[[expect]]
name = "RTT below a second"
metric = "rtt_mean_s"
level = "run"
max = 1.0
'''


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A results base holding one study of 4 cells x 3 runs: one run invalid, one missing
    (its directory lost its meta.json: never complete)."""
    from ccarena.analysis.synthetic import write_synthetic_study
    base = tmp_path_factory.mktemp("stored")
    d = write_synthetic_study(base / "synthetic-20260101-000000", reps=3, duration_s=4.0,
                              invalid=("buf20-reno-r1",))
    victim = next(p for p in (d / "runs").iterdir() if p.name.endswith("buf100-cubic-r2"))
    (victim / "meta.json").unlink()
    return base, d


def _flat(text: str) -> str:
    """Terminal output with its line folding undone (rich wraps at the console width)."""
    return " ".join(text.split())


def test_ls_lists_each_study_with_its_valid_invalid_and_missing_runs(stored):
    import json
    import re
    base, d = stored
    out = ccarena_cli("ls", "--results", base).stdout
    head = next(ln for ln in out.splitlines() if "planned" in ln)
    for h in ("results", "planned", "valid", "invalid", "missing"):
        assert h in head, head
    row = next(ln for ln in out.splitlines() if d.name in ln)
    assert re.findall(r"\b\d+\b", row.replace(d.name, "")) == ["12", "10", "1", "1"], out
    rows = json.loads(ccarena_cli("ls", "--results", base, "--json").stdout)
    assert [{k: v for k, v in r.items() if k not in ("cells", "created")} for r in rows] == [
        {"results": d.name, "study": "synthetic", "planned": 12, "valid": 10,
         "invalid": 1, "missing": 1}]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", rows[0]["created"])
    assert set(rows[0]["cells"]) == {"buf20-reno", "buf20-cubic", "buf100-reno",
                                     "buf100-cubic"}


def test_show_json_has_the_counts_cells_and_invalid_runs(stored):
    import json
    _, d = stored
    out = json.loads(ccarena_cli("show", d, "--json").stdout)
    assert {"results", "study", "runs", "incomplete_cells", "cells", "anomalies",
            "invalid_runs", "problems"} <= set(out)
    assert out["runs"] == {"planned": 12, "valid": 10, "invalid": 1, "missing": 1}
    # per cell: the one with the invalid run and the one with the missing run
    assert len(out["incomplete_cells"]) == 2
    assert any("buffer=20p" in c and "cc=reno" in c and "1 invalid" in c
               for c in out["incomplete_cells"])
    assert any("buffer=100p" in c and "cc=cubic" in c and "1 missing" in c
               for c in out["incomplete_cells"])
    assert [r["label"] for r in out["invalid_runs"]] == [
        next(p.name for p in (d / "runs").iterdir() if p.name.endswith("buf20-reno-r1"))]
    cell = out["cells"][0]
    assert {"cell", "metrics"} <= set(cell)
    g = cell["metrics"]["goodput_bps"]
    assert {"mean", "ci_half", "sd", "n", "n_invalid"} <= set(g)
    assert 0 < g["mean"] <= 10e6        # SI units: bit/s, below the 10 Mbit/s rate


def test_show_explains_plus_minus_and_valid_and_invalid(stored):
    _, d = stored
    out = _flat(ccarena_cli("show", d).stdout)
    assert "mean ± half-width of the 95 % confidence interval over the valid runs" in out
    assert "invalid runs (the machine or a tool failed the experiment) are never " \
        "averaged in" in out
    # and what the study lacks, per cell, by its factor values
    assert "cell buf100-cubic (buffer=100p, cc=cubic): 2 of 3 planned runs valid, " \
        "1 missing" in out


def test_studies_and_cc_list_as_json():
    import json
    studies = json.loads(ccarena_cli("studies", "--json").stdout)
    assert "quickstart" in studies and all(isinstance(v, str) for v in studies.values())
    algs = json.loads(ccarena_cli("cc", "list", "--json").stdout)
    assert "reno" in algs        # every Linux kernel has reno built in
    for a in algs.values():
        assert set(a) == {"source", "kernel_name", "why", "variant", "follows", "variants"}
    assert algs["reno"]["source"] == "kernel" and algs["reno"]["kernel_name"] == "reno"
    # the kernel's own reno is Linux's; ccarena's BIC offers both variants
    assert algs["reno"]["variant"] == "linux"
    assert "paper" in algs["bic"]["variants"] and "linux" in algs["bic"]["variants"]


@pytest.fixture
def fake_run(stored, tmp_path, monkeypatch):
    """`ccarena run` with the runs replaced by a stored study (the CLI's own work
    after the runs: table, checks, JSON)."""
    import shutil

    from ccarena.run import study as run_study_mod
    from ccarena.store.results import open_results
    _, d = stored
    copy = tmp_path / d.name
    shutil.copytree(d, copy)
    monkeypatch.setattr(run_study_mod, "run_plan", lambda study, **kw: open_results(copy))
    p = tmp_path / "synthetic.toml"
    p.write_text(EXPECT_STUDY)
    return p


def test_run_prints_checks_in_display_units(fake_run, capsys, monkeypatch):
    import re

    from ccarena.cli.main import main
    monkeypatch.setenv("COLUMNS", "200")     # one line per check
    code = main(["run", str(fake_run), "--no-report"])
    out = capsys.readouterr().out
    checks = [ln for ln in out.splitlines() if ln.startswith(("pass", "FAIL"))]
    # two checks on each of the 4 planned cells, labelled by factor values
    assert len(checks) == 8, out
    assert sum("[buffer=20p, cc=reno" in ln for ln in checks) == 2
    good = [ln for ln in checks if "goodput within the rate" in ln]
    assert all(re.search(r": [\d.]+ Mbit/s, want ≤ 10 Mbit/s", ln) for ln in good), good
    rtt = [ln for ln in checks if "RTT below a second" in ln]
    assert all(re.search(r": [\d.]+ ms, want ≤ 1000 ms", ln) for ln in rtt), rtt
    assert not re.search(r"\de[+-]\d", out), "a number in scientific notation"
    # a planned run is missing: the study is incomplete, whatever its checks say
    assert code == 4


def test_run_json_is_the_summary_with_the_checks(fake_run, capsys):
    import json

    from ccarena.cli.main import main
    code = main(["run", str(fake_run), "--json", "--no-report"])
    out = json.loads(capsys.readouterr().out)      # only JSON on stdout: no progress
    assert {"results", "study", "runs", "cells", "checks", "incomplete_cells"} <= set(out)
    assert out["runs"]["planned"] == 12 and out["runs"]["missing"] == 1
    assert len(out["checks"]) == 8
    for c in out["checks"]:
        assert {"what", "cell", "ok", "measured", "max"} <= set(c)
    assert code == 4 and out["outcome"] == "incomplete"    # a planned run is missing
    # --json stores the checks as the text output does (one path: run/study.py)
    from ccarena.store.results import open_results
    stored = open_results(out["results"]).checks
    assert stored is not None and [c["ok"] for c in stored] == [c["ok"] for c in out["checks"]]


def _warnings(tmp_path, body: str, env=None) -> list[str]:
    p = tmp_path / "w.toml"
    p.write_text('[study]\nname = "w"\n' + body + '''
[[flow]]
name = "f"
from = "s1"
to = "r1"
''')
    out = ccarena_cli("validate", p, env=env).stdout
    return [ln for ln in out.splitlines() if ln.startswith("warning: ")]


def test_dry_run_warns_of_a_delay_not_shorter_than_the_run(tmp_path):
    w = _warnings(tmp_path, 'duration = "2s"\n[bottleneck]\nrate = "10mbit"\n'
                  'delay = "1s"\n')
    assert any("base RTT 2 s is not shorter than the run (2 s)" in x for x in w), w
    assert not _warnings(tmp_path, 'duration = "2s"\n[bottleneck]\nrate = "10mbit"\n'
                         'delay = "10ms"\n')


def test_dry_run_warns_of_a_study_of_many_hours(tmp_path):
    # 5 runs of an hour: about 5:00 (h:mm), beyond the few hours a study usually takes
    w = _warnings(tmp_path, 'duration = "3600s"\nrepetitions = 5\n[bottleneck]\n'
                  'rate = "10mbit"\n')
    assert any(x.startswith("warning: the study takes about 5:00 (h:mm)") for x in w), w
    assert not _warnings(tmp_path, 'duration = "3600s"\nrepetitions = 2\n[bottleneck]\n'
                         'rate = "10mbit"\n')


def test_dry_run_warns_of_rates_beyond_what_this_machine_carries(tmp_path):
    """With a capacity record (as `ccarena doctor --measure` keeps it) of 1 Gbit/s."""
    import json

    from ccarena.run import capacity
    cache = tmp_path / "cache"
    (cache / "ccarena").mkdir(parents=True)
    (cache / "ccarena" / "capacity.json").write_text(json.dumps(
        {capacity._key(): {"goodput_bps": 1e9, "valid": True, "results": "x"}}))
    env = {"XDG_CACHE_HOME": str(cache)}
    w = _warnings(tmp_path, 'duration = "5s"\n[bottleneck]\nrate = "10gbit"\n', env)
    assert any("10 Gbit/s is beyond what this machine carried when measured (1 Gbit/s"
               in x for x in w), w
    assert not _warnings(tmp_path, 'duration = "5s"\n[bottleneck]\nrate = "100mbit"\n', env)
    # without a record, docs/scale-out.md's rule (about 100 Mbit/s per core of a run)
    w = _warnings(tmp_path, 'duration = "5s"\n[bottleneck]\nrate = "10gbit"\n',
                  {"XDG_CACHE_HOME": str(tmp_path / "empty")})
    assert any("10 Gbit/s is beyond what" in x and "docs/scale-out.md" in x for x in w), w


# -- tables fit the terminal: 80 columns when the output is no terminal -------------------

TUTORIAL_HEAD = ["buffer", "flow", "cc", "goodput Mbit/s", "RTT ms", "RTT p95 ms", "loss %",
                 "limit", "n"]
TUTORIAL_ROWS = [
    ["20p", "bulk", "reno", "18.33 ± 0.38", "26.33 ± 0.51", "32.64 ± 0.21", "0.167 ± 0.006",
     "cwnd 100%", "3"],
    ["20p", "bulk", "cubic", "19.10 ± 0.14", "28.27 ± 1.71", "32.67 ± 0.53",
     "0.116 ± 0.192", "cwnd 100%", "2 +1 invalid"],
    ["100p", "bulk", "reno", "19.12 ± 0.00", "63.36 ± 1.85", "79.20 ± 3.89", "0.020 ± 0.000",
     "cwnd 100%", "3"],
    ["100p", "bulk", "cubic", "19.12 ± 0.00", "69.62 ± 0.07", "79.45 ± 1.27",
     "0.010 ± 0.000", "cwnd 100%", "2 +1 missing (1 anomalous)"],
]


# bufferbloat's: three factors besides the algorithm, two flows, five metric columns
BLOAT_HEAD = ["buffer", "enabled", "queue", "flow", "cc", "goodput Mbit/s", "RTT ms",
              "RTT p95 ms", "download s", "loss %", "limit", "n"]
BLOAT_ROWS = [[buf, en, q, f, "reno", "8.91 ± 0.12", "131.40 ± 2.05", "162.70 ± 3.31",
               "1.203 ± 0.118" if f == "web" else "-", "0.812 ± 0.041",
               "app 91%" if f == "web" else "cwnd 100%", "3"]
              for buf in ("20p", "100p") for en in ("True", "False")
              for q in ("droptail", "classes") for f in ("long", "web")]


def _rendered(head, rows, width: int) -> list[str]:
    import io

    from rich.console import Console

    from ccarena.report.summary import summary_tables
    con = Console(width=width, file=io.StringIO())
    for t in summary_tables("buffers-20261125-045836  (12 runs)", head, rows, con):
        con.print(t)
    return con.file.getvalue().splitlines()


@pytest.mark.parametrize("head,rows", [(TUTORIAL_HEAD, TUTORIAL_ROWS),
                                       (BLOAT_HEAD, BLOAT_ROWS)], ids=["tutorial", "bloat"])
def test_the_summary_fits_80_columns(head, rows):
    """The tutorial's table (two factors, four metrics, limit, n) and bufferbloat's (three
    factors, two flows, five metrics): no line beyond 80 columns, no mean or CI cut
    apart, and each row's factors beside each of its numbers."""
    lines = _rendered(head, rows, 80)
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    text = "\n".join(lines)
    for r in rows:
        for v in r[head.index("cc") + 1:]:
            for part in v.split(" ± "):
                assert part.split()[0] in text, (v, text)
            if " ± " in v:
                assert "± " + v.split(" ± ")[1] in text, (v, text)
    for h in head[:head.index("cc") + 1]:
        assert h in text
    # every part repeats the rows' keys: as many key lines as rows, per part
    parts = sum(set(ln.strip()) == {"─"} for ln in lines)
    assert sum(ln.startswith(("20p ", "100p ")) for ln in lines) == parts * len(rows)


def test_the_tutorials_table_is_one_compact_table_at_80_columns():
    lines = _rendered(TUTORIAL_HEAD, TUTORIAL_ROWS, 80)
    assert sum(set(ln.strip()) == {"─"} for ln in lines) == 1
    assert any(ln.split() == ["buffer", "flow", "cc", "Mbit/s", "ms", "ms", "%", "limit", "n"]
               for ln in lines), lines


def test_a_wide_terminal_keeps_one_line_per_row():
    lines = _rendered(TUTORIAL_HEAD, TUTORIAL_ROWS, 160)
    assert any("18.33 ± 0.38" in ln and "cwnd 100%" in ln for ln in lines)
    assert len([ln for ln in lines if "bulk" in ln]) == len(TUTORIAL_ROWS)


def test_commands_fit_80_columns_unless_the_terminal_is_wider(stored):
    """Output that is no terminal (a pipe, a file, CI's log) is 80 columns wide, or
    COLUMNS wide when that is set."""
    import os
    base, d = stored

    def cli(*args, columns=None):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        if columns:
            env["COLUMNS"] = columns
        # no terminal anywhere: rich would take the width of any standard stream
        r = subprocess.run([sys.executable, "-m", "ccarena.cli", *map(str, args)],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    for args in (("show", d), ("ls", "--results", base), ("studies",), ("cc", "list"),
                 ("plot", "--list")):
        out = cli(*args)
        assert max(map(len, out.splitlines())) <= 80, (args, out)
    wide = cli("show", d, columns="200")
    assert max(map(len, wide.splitlines())) > 80
    assert any(" ± " in ln and "bulk" in ln for ln in wide.splitlines())
