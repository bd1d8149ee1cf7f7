"""BBRv3 (and BBRv2) of the BPF pack through an emulated bottleneck (the user-space
link), in real kernel TCP: what draft-ietf-ccwg-bbr-06 says the model does to a path.

- a lone flow through a deep drop-tail buffer keeps the queue small: BBR bounds its
  in-flight data by cwnd_gain × BDP + extra_acked (§5.6.4.2), where CUBIC fills the
  buffer;
- ProbeRTT cuts the window to half the BDP for 200 ms at least every 5 s (§5.3.4), never
  sooner (the interval starts again at its end);
- random loss of 1 % keeps most of the rate (the design tolerates 1 % per round trip,
  §5.3.3.8.3), 5 % (above the 2 % loss threshold, §2.8) makes it back off;
- two flows converge to a fair share (Jain's index) within 20 s.

The definitions themselves are tested deterministically in crates/cc-harness
(tests/bbr*.rs); these tests check physics that noise cannot break: goodput under the
payload rate, RTT over the base, a queue bounded by the model, with tolerances far from
the values measured. Studies run with reruns = 0 and are judged with ccsig.check_valid
(a late packet release only delays what the algorithm reacts to)."""
import numpy as np
import pandas as pd
import pytest

from ccarena.metrics import goodput_series
from ccsig import (FRAME, PAYLOAD_SHARE, bulk, check_valid, flow_metrics, note, run, run_metrics,
                   runs_by_cc, sender_trace, study_text)

pytestmark = pytest.mark.root

RATE = 20e6
BASE_RTT = 0.020


@pytest.fixture(autouse=True, scope="module")
def realtime_link():
    """The link's forwarding thread runs SCHED_FIFO (as in test_cc_signatures.py)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("CCARENA_LINK_RT_PRIORITY", "10")
    yield
    mp.undo()


DEEP = 'rate = "20mbit"\nrtt = "20ms"\nbuffer = "500p"'


@pytest.fixture(scope="module")
def deep_runs(tmp_path_factory):
    """A lone flow through 20 Mbit/s, 20 ms and 500 packets of drop-tail buffer (15
    BDPs): bbr3 for 22 s with the per-ACK trace, cubic for 15 s (its window reaches the
    buffer's end after about 9 s: HyStart leaves slow start early, then the cubic curve
    takes a while to add 500 packets)."""
    out = {}
    for cc, secs in (("bbr3", "22s"), ("cubic", "15s")):
        text = study_text(DEEP, bulk(cc), name=f"bbr-deep-{cc}", duration=secs, warmup="3s",
                          trace=cc == "bbr3")
        out |= runs_by_cc(run(text, tmp_path_factory.mktemp(f"deep-{cc}")))
    return out


def test_a_deep_buffer_stays_nearly_empty_where_cubic_fills_it(deep_runs, no_leaks):
    cubic = deep_runs["cubic"]
    check_valid(cubic)
    c = flow_metrics(cubic).loc[0]
    # cubic's window grows until the buffer overflows: its RTT reaches a queue of over
    # half the buffer (500 frames = 300 ms)
    assert c["rtt_p95_s"] > BASE_RTT + 0.5 * 500 * FRAME * 8 / RATE, note(cubic)
    for cc in ("bbr3",):
        m = deep_runs[cc]
        check_valid(m)
        f = flow_metrics(m).loc[0]
        # in-flight ≤ 2.25 BDP + aggregation: the RTT stays within 2.5 base RTTs, a
        # small fraction of cubic's; the link stays busy (a late release can only lower
        # the goodput and raise the RTT: neither bound passes falsely)
        assert f["rtt_p50_s"] < 2.5 * BASE_RTT, f"{cc}: {f['rtt_p50_s']} {note(m)}"
        assert f["rtt_p95_s"] < 0.3 * c["rtt_p95_s"], f"{cc} {note(m)}"
        assert 0.8 * RATE * PAYLOAD_SHARE < f["goodput_bps"] <= RATE * PAYLOAD_SHARE, \
            f"{cc}: {f['goodput_bps']} {note(m)}"
        # the buffer never overflowed (the link's own count; a retransmission the machine's
        # timing noise made spurious is not a loss the algorithm caused)
        assert run_metrics(m)["link_drops"] == 0, f"{cc} overflowed 15 BDPs {note(m)}"


def _dips(tr, frac=0.4, window_s=2.0):
    """(start, end) of each stretch of the trace where cwnd falls to `frac` of its median
    over the `window_s` before: ProbeRTT's cwnd is half the estimated BDP where ProbeBW's
    is about twice it, a quarter, whatever the estimates (which the machine's timing
    noise inflates: late releases raise the RTT samples, bursts of ACKs the rate)."""
    t = tr["t"].to_numpy()
    w = tr["snd_cwnd"].astype(float)
    before = pd.Series(w.to_numpy(), index=pd.to_timedelta(t, unit="s")) \
        .rolling(f"{int(window_s * 1000)}ms").median().to_numpy()
    low = w.to_numpy() <= frac * before
    edges = np.flatnonzero(np.diff(low.astype(int))) + 1
    out = []
    for seg in np.split(np.arange(len(low)), edges):
        if len(seg) and low[seg[0]] and t[seg[0]] > 1.0:
            out.append((t[seg[0]], t[seg[-1]]))
    return out


def test_probe_rtt_halves_the_window_every_five_seconds(deep_runs, no_leaks):
    """§5.3.4: ProbeRTT after 5 s without a lower RTT sample, cwnd = max(BDP/2, 4) for at
    least 200 ms and a round; the next one at least 5 s after its end. In 22 s: at least
    two, each ≥ 5 s after the one before, each a fall to at most 0.4 of the window
    before it (ProbeRTT's is about a quarter of ProbeBW's). Not three: a sample a
    microsecond below the minimum (ProbeBW's DOWN phase drains the queue to the base RTT,
    and the host's timing decides the last microseconds) restarts the 5 s by the draft's
    rule (BBRUpdateMinRTT: rs.rtt < probe_rtt_min_delay), so a ProbeRTT due may come
    later than every 5 s; never earlier."""
    for cc in ("bbr3",):
        m = deep_runs[cc]
        check_valid(m)
        tr = sender_trace(m)
        dips = _dips(tr)
        assert len(dips) >= 2, f"{cc}: window cuts {dips} {note(m)}"
        starts = [a for a, _ in dips]
        assert all(b - a >= 5.0 for a, b in zip(starts, starts[1:])), f"{cc}: {starts}"
        assert all(b - a >= 0.2 for a, b in dips), f"{cc}: ProbeRTT shorter than 200 ms: {dips}"


@pytest.fixture(scope="module")
def loss_runs(tmp_path_factory):
    """bbr3 alone with 1 % and 5 % random loss, 30 Mbit/s, 60 ms, a buffer of one BDP
    (150 packets): 1 % loses about 2 segments per BDP (under the 2 % threshold), 5 %
    about 7."""
    text = study_text('rate = "30mbit"\nrtt = "60ms"\nbuffer = "150p"', bulk("bbr3"),
                      name="bbr-loss", duration="12s", warmup="4s", trace=False,
                      sweep='"bottleneck.loss" = ["1%", "5%"]')
    res = run(text, tmp_path_factory.mktemp("loss"))
    return {res.run_meta(d)["bottleneck"]["loss"]: res.run_meta(d) | {"_dir": d}
            for d in res.run_dirs()}


def test_one_percent_loss_keeps_the_rate_five_percent_backs_off(loss_runs, no_leaks):
    g = {}
    for loss, m in loss_runs.items():
        check_valid(m)
        g[loss] = flow_metrics(m).loc[0, "goodput_bps"]
    payload = 30e6 * PAYLOAD_SHARE * 0.99
    one, five = g[0.01], g[0.05]
    assert one <= payload, g
    assert one > 0.45 * payload, f"bbr3 at 1 % loss: {one:.0f} bit/s {note(loss_runs[0.01])}"
    assert five < 0.6 * one, f"bbr3 at 5 %: {five:.0f}, at 1 %: {one:.0f} {note(loss_runs[0.05])}"


def test_two_bbr3_flows_converge_to_a_fair_share(tmp_path, no_leaks):
    """The second flow starts 3 s after the first (20 Mbit/s, 20 ms, 100 packets): from
    20 s after its start, the two share the link fairly (Jain's index of their goodput
    over 1 s intervals, mean ≥ 0.9) and together use it."""
    text = study_text('rate = "20mbit"\nrtt = "20ms"\nbuffer = "100p"',
                      bulk("bbr3", "a", "s1", "r1") + bulk("bbr3", "b", "s2", "r2", 'start = "3s"'),
                      name="bbr-fair", duration="33s", warmup="0s", pairs=2, trace=False)
    res = run(text, tmp_path)
    d = res.run_dirs()[0]
    m = res.run_meta(d) | {"_dir": d}
    check_valid(m)
    g = goodput_series(res.table("rx"), m, 1.0).pivot(index="t", columns="name", values="goodput_bps")
    late = g.loc[23.0:32.0]
    x, y = late["a"].to_numpy(), late["b"].to_numpy()
    jain = ((x + y) ** 2 / (2 * (x * x + y * y))).mean()
    assert jain >= 0.9, f"Jain {jain:.3f}\n{late} {note(m)}"
    assert (x + y).mean() > 0.8 * RATE * PAYLOAD_SHARE, f"{late} {note(m)}"
    assert (x + y).max() <= RATE * PAYLOAD_SHARE * 1.05, f"{late}"
