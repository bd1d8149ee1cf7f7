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

