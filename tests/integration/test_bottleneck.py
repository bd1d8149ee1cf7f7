"""One bulk flow through a rate-limited bottleneck fills it (physics: goodput <= rate, and
TCP keeps a loss-based or model-based sender near the rate), and the kernel ran the
algorithm the study asked for."""
import subprocess
import threading
import time

import pytest

from ccarena.run.study import run_study

from helpers import bulk_study

pytestmark = pytest.mark.root
HEADER_OVERHEAD = 1448 / 1514   # TCP payload per Ethernet frame with timestamps


@pytest.mark.parametrize("rate_bps,rate", [(100e6, "100mbit"), (10e6, "10mbit")])
def test_cubic_fills_the_bottleneck(tmp_path, no_leaks, rate_bps, rate):
    study = bulk_study(rate=rate, buffer="100p", cc="cubic", duration="8s", warmup="3s",
                       backend="kernel")
    res = run_study(study, results_base=tmp_path, progress=False)
    f = res.flows
    row = f[(f["conn"] == -1) & (f["name"] == "bulk")].iloc[0]
    # a run may be flagged for machine noise (CPU steal), never for a failed part
    reasons = " ".join(res.runs["invalid_reasons"].astype(str))
    assert "ccarena-flow" not in reasons and "failed" not in reasons, reasons
    g = row["goodput_bps"]
    # goodput can never exceed the rate (minus headers); steady state reaches 90-100 %
    assert g <= rate_bps * 1.01, g
    assert g >= 0.90 * rate_bps * HEADER_OVERHEAD, g
    # the samples are there: TCP_INFO every ~10 ms over the run
    ti = res.table("tcpinfo")
    assert len(ti) >= 0.5 * 8 / 0.01
    assert (ti["srtt_us"] > 0).all()
    # ... and the bottleneck qdisc's, read in the router's namespace: a loss-based sender
    # keeps the 100-packet buffer well filled and never above its limit (htb may hold one
    # peeked packet beside its leaf's), and in the goodput's window (after the 3 s
    # warm-up, to 8 s) the bytes leaving it carry at least the goodput and at most the
    # rate (each row counts the ~10 ms before its t)
    ls = res.table("link_stats")
    w2e = ls[ls["dir"] == 0].sort_values("t_ns")
    assert len(w2e) >= 0.5 * 8 / 0.01, len(w2e)
    assert 50 <= w2e["qlen_pkts"].max() <= 101, w2e["qlen_pkts"].max()
    win = w2e[(w2e["t"] > 3.0) & (w2e["t"] <= 8.0)]
    out_bps = win["bytes_out"].sum() * 8 / 5.0
    assert 0.98 * g <= out_bps <= rate_bps * 1.02, (out_bps, g)


def _watch_ss(found: dict, stop: threading.Event, sender_ns: list):
    """Poll `ss -tin` in this run's sender namespace; record the algorithms it shows."""
    while not stop.is_set():
        for ns in list(sender_ns):
            out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-tin", "state",
                                  "established", "dport", "5000"], capture_output=True,
                                 text=True).stdout
            for alg in ("reno", "cubic", "bbr"):
                if f" {alg} " in out or f"\t{alg} " in out:
                    found.setdefault(ns, set()).add(alg)
        time.sleep(0.2)


@pytest.mark.parametrize("cc", ["reno", "bbr"])
def test_the_kernel_runs_the_requested_algorithm(tmp_path, no_leaks, cc):
    found, stop, sender_ns = {}, threading.Event(), []
    th = threading.Thread(target=_watch_ss, args=(found, stop, sender_ns), daemon=True)
    th.start()
    try:
        res = run_study(bulk_study(rate="50mbit", cc=cc, duration="4s", warmup="1s",
                                   backend="kernel"), results_base=tmp_path, progress=False,
                        on_testbed=lambda topo: sender_ns.append(topo.ns("s1")),
                        reruns=0)       # what is watched is the one attempt judged
    finally:
        stop.set()
        th.join()
    seen = set().union(*found.values()) if found else set()
    assert seen == {cc}, f"ss saw {seen} in {list(found)}"
    # and the engine's own read-back (getsockopt TCP_CONGESTION) agrees
    conns = res.table("conns")
    assert set(conns[conns["side"] == "send"]["cc"]) == {cc}


def test_two_cubic_flows_share_fairly(tmp_path, no_leaks):
    # Two cubic flows through a 100-packet drop-tail buffer with no added delay see only
    # ~35 drops in 30 s, i.e. a handful of congestion epochs each, and drop-tail phase
    # effects (Floyd & Jacobson 1992) can hold one flow at twice the other's rate for
    # many of them: measured here Jain 0.87-0.95 over 20 s, 0.89 over 10 s (a CI
    # failure at the old 0.9). What the test can promise is no starvation: Jain >= 0.8,
    # at most a 3:1 split, over 20 s measured after 10 s.
    study = bulk_study(rate="20mbit", buffer="100p", cc="cubic", duration="30s", warmup="10s",
                       backend="kernel", pairs=2,
                       extra='[[flow]]\nname = "second"\nfrom = "s2"\nto = "r2"\ncc = "cubic"\n')
    res = run_study(study, results_base=tmp_path, progress=False)
    run = res.runs.iloc[0]
    g = res.flows.query("conn == -1")["goodput_bps"]
    assert len(g) == 2 and g.sum() <= 20e6
    assert run["jain"] >= 0.8, (run["jain"], list(g))
