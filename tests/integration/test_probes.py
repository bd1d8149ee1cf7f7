"""Probes: the UDP RTT probe at 100 Hz and the per-ACK tcp_probe tracer, through the
user-space link (real delay, a real droptail queue at the bottleneck)."""
import textwrap

import numpy as np
import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study
from linkhelpers import late_allowance_s

pytestmark = pytest.mark.root
RECOVERY = 3     # TCP_CA_Recovery


def test_udp_probe_at_100hz_sees_base_rtt_and_queueing(tmp_path, no_leaks):
    # 10 Mbit/s, 20 ms RTT, 50-packet queue: a bulk flow adds up to 50*1514*8/10e6 = 61 ms
    study = loads_study(textwrap.dedent('''
        [study]
        name = "udp"
        duration = "6s"
        warmup = "2s"
        [bottleneck]
        rate = "10mbit"
        rtt = "20ms"
        buffer = "50p"
        backend = "user"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        start = "2s"
        [[probe]]
        name = "u"
        kind = "udp"
        from = "s1"
        to = "r1"
        interval = "10ms"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    u = res.table("udp")
    assert set(u["probe"]) == {"u"}
    assert 0.9 * 600 <= len(u) <= 610          # 100 Hz for 6 s
    ok = u.dropna(subset=["rtt_s"])
    assert (ok["rtt_s"] >= 0.020).all()        # never below the base RTT
    idle, loaded = ok[ok["t"] < 1.9], ok[ok["t"] > 3.0]
    assert np.median(idle["rtt_s"]) < 0.020 + 0.002
    queue_max = 50 * 1514 * 8 / 10e6
    assert np.median(loaded["rtt_s"]) > 0.020 + 0.3 * queue_max
    # above base + a full queue only by what the emulator itself reports releasing late
    late_s = late_allowance_s(res.run_meta(res.run_dirs()[0]))
    assert loaded["rtt_s"].max() < 0.020 + queue_max + late_s + 0.005
    run = res.runs.iloc[0]
    assert run["udp_rtt_p50_s"] > 0.020


def test_tcp_probe_trace_shows_reno_halving_at_each_loss(tmp_path, no_leaks):
    study = loads_study(textwrap.dedent('''
        [study]
        name = "trace"
        duration = "8s"
        [bottleneck]
        rate = "10mbit"
        rtt = "20ms"
        buffer = "30p"
        backend = "user"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        cc = "reno"
        [[probe]]
        kind = "tcp_probe"
        hosts = ["s1"]
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    meta = res.run_meta(res.run_dirs()[0])
    assert meta["trace"]["lost"] == 0
    tr = res.table("tcpprobe")
    assert len(tr) > 1000                       # one event per ACK
    tr = tr[tr["dport"] == 5000]                # the data sender's socket
    state = tr["ca_state"].to_numpy()
    cwnd = tr["snd_cwnd"].to_numpy()
    ssth = tr["ssthresh"].to_numpy()
    ratios = []
    for i in np.flatnonzero((state[1:] == RECOVERY) & (state[:-1] < RECOVERY)) + 1:
        before = cwnd[i - 1]
        if before >= 8:
            ratios.append(ssth[i] / before)     # reno: ssthresh = cwnd / 2 at a loss
    assert len(ratios) >= 3, "expected several losses against a 30-packet queue"
    assert all(0.4 <= r <= 0.6 for r in ratios), ratios
