"""Workloads of real studies: downloads timed like curl times them, commands inside hosts,
parallel connections, application-limited senders."""
import textwrap

import pandas as pd
import pytest

from ccarena.errors import PreflightError
from ccarena.run.study import run_study
from ccarena.study.load import loads_study
from linkhelpers import failed_parts

pytestmark = pytest.mark.root
SIZE = 1_000_000


def test_download_time_agrees_with_curl(tmp_path, no_leaks):
    # the engine's client downloads at 0,1,2,3,4 s; curl fetches the same object from the
    # same server at 5.5..9.5 s; both measure connect -> last byte
    study = loads_study(textwrap.dedent(f'''
        [study]
        name = "dl"
        duration = "11s"
        [bottleneck]
        rate = "20mbit"
        buffer = "100p"
        backend = "kernel"
        [[flow]]
        name = "web"
        from = "r1"
        to = "s1"
        kind = "download"
        size = {SIZE}
        count = 5
        every = "1s"
        [[flow]]
        name = "curl"
        kind = "command"
        host = "s1"
        start = "5.5s"
        run = "for i in 1 2 3 4 5; do curl -s -o /dev/null -w '%{{time_total}}\\n' http://{{r1}}:{{port.web}}/bytes/{SIZE}; sleep 0.5; done"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    # no part of the experiment failed (a run flagged for the machine's noise, e.g. CPU
    # steal, still carries both timings; the comparison below judges them)
    assert not failed_parts(res.run_meta(res.run_dirs()[0]))
    conns = res.table("conns")
    client = conns[(conns["role"] == "client") & (conns["flow"] == 0)]
    ours = ((client["last_byte_ns"] - client["connect_start_ns"]) / 1e9).sort_values()
    assert len(ours) == 5 and (client["bytes"] == SIZE).all()
    cmd = res.table("commands")
    curl = pd.Series([float(x) for x in cmd["stdout"].iloc[0].split()]).sort_values()
    assert len(curl) == 5
    # physics: no download beats the rate (1 MB at 20 Mbit/s = 0.4 s)
    assert ours.min() >= SIZE * 8 / 20e6 and curl.min() >= SIZE * 8 / 20e6
    a, b = ours.median(), curl.median()
    assert abs(a - b) <= max(0.05 * b, 0.002), (list(ours), list(curl))


def test_failing_and_missing_commands_are_clear(tmp_path, no_leaks):
    base = '''
        [study]
        name = "cmd"
        duration = "2s"
        [bottleneck]
        rate = "20mbit"
        backend = "kernel"
        [[flow]]
        name = "c"
        kind = "command"
        host = "s1"
        run = "{run}"
        '''
    with pytest.raises(PreflightError, match="program 'no-such-program' not found"):
        run_study(loads_study(textwrap.dedent(base.format(run="no-such-program --x"))),
                  results_base=tmp_path, progress=False)
    assert not list(tmp_path.glob("*"))   # nothing half-built, nothing written
    res = run_study(loads_study(textwrap.dedent(base.format(run="ls /nonexistent-dir"))),
                    results_base=tmp_path, progress=False)
    reason = res.runs["invalid_reasons"].iloc[0]
    assert "command c" in reason and "exit 2" in reason and "nonexistent-dir" in reason


def test_parallel_connections_fill_the_bottleneck(tmp_path, no_leaks):
    study = loads_study(textwrap.dedent('''
        [study]
        name = "par"
        duration = "6s"
        warmup = "2s"
        [bottleneck]
        rate = "20mbit"
        buffer = "100p"
        backend = "kernel"
        [[flow]]
        name = "p"
        from = "s1"
        to = "r1"
        kind = "parallel"
        conns = 4
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    f = res.flows
    total = f[f["conn"] == -1]["goodput_bps"].iloc[0]
    per = f[f["conn"] >= 0]["goodput_bps"]
    assert len(per) == 4 and (per > 0).all()
    assert per.sum() == pytest.approx(total, rel=0.02)
    assert 0.90 * 20e6 * 1448 / 1514 <= total <= 20e6


def test_application_limited_flow_matches_offered_load(tmp_path, no_leaks):
    # 1448 bytes every 2 ms = 5.79 Mbit/s offered through a 50 Mbit/s link
    study = loads_study(textwrap.dedent('''
        [study]
        name = "paced"
        duration = "6s"
        warmup = "1s"
        [bottleneck]
        rate = "50mbit"
        backend = "kernel"
        [[flow]]
        name = "app"
        from = "s1"
        to = "r1"
        kind = "paced"
        write = 1448
        gap = "2ms"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    g = res.flows.query("conn == -1")["goodput_bps"].iloc[0]
    offered = 1448 * 8 / 0.002
    assert g == pytest.approx(offered, rel=0.05)


def test_pcap_probe_keeps_a_capture_readable_by_tcpdump(tmp_path, no_leaks):
    import subprocess
    study = loads_study(textwrap.dedent('''
        [study]
        name = "pcap"
        duration = "2s"
        [bottleneck]
        rate = "10mbit"
        backend = "kernel"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        [[probe]]
        kind = "pcap"
        hosts = ["s1", "r1"]
        snaplen = 96
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    d = res.run_dirs()[0] / "raw" / "pcap"
    for h in ("s1", "r1"):
        out = subprocess.run(["tcpdump", "-n", "-r", str(d / f"{h}.pcap"), "-c", "50"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        lines = [x for x in out.stdout.splitlines() if "10.1.1.2" in x and "10.2.1.2" in x]
        assert len(lines) >= 40   # the flow's packets were captured on both hosts


def test_request_response_latency_is_at_least_one_rtt(tmp_path, no_leaks):
    study = loads_study(textwrap.dedent('''
        [study]
        name = "rr"
        duration = "3s"
        [bottleneck]
        rate = "20mbit"
        rtt = "10ms"
        backend = "user"
        [[flow]]
        name = "rpc"
        from = "r1"
        to = "s1"
        kind = "rr"
        request = 100
        response = 2000
        count = 50
        gap = "20ms"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    rr = res.table("rr")
    assert len(rr) == 50
    lat = rr["latency_ns"] / 1e9
    # physics: a request/response exchange takes at least one round trip
    assert (lat >= 0.010).all()
    # 2 kB response at 20 Mbit/s adds < 1 ms; an idle path answers within a few ms of the RTT
    assert lat.median() < 0.010 + 0.005
