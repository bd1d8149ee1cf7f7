"""The kernel link backend (htb, netem, red, codel, fq_codel) held to the physics the
user-space link is held to in tests/integration/test_link_accuracy.py: rate, delay,
jitter, loss, buffer, per-host delay, RED, CoDel, FQ-CoDel, ECN marking.

These need a kernel with netem and the AQM qdiscs: they run inside the reference kernel
(test_kernel_link_in_vm.py boots it and runs this file there; or `ccarena vm -- pytest
tests/vm/test_kernel_link.py`) and skip elsewhere.

The kernel counts nothing per packet, so what the user-space link's own counters say
there is taken here from what the endpoints see (ping replies, TCP's delivery) and from
the bottleneck qdisc's statistics (link_stats: backlog, drops, bytes every ~10 ms).
A guest under TCG is slow: rates stay at 10-20 Mbit/s. The path's own round trip (veth,
namespaces, a slow guest) is measured beside the emulated one where a bound needs it."""
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from ccarena.run.executor import run_study
from ccarena.study.load import loads_study

# the user-space link tests' helpers (tests/integration)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from linkhelpers import (FRAME, PAYLOAD_SHARE, dumbbell, failed_parts,  # noqa: E402
                         run_table, runs, steady)

pytestmark = pytest.mark.root


def _kernel_has_everything() -> bool:
    from ccarena.testbed import caps
    c = caps.probe()
    return bool(c.get("netem")) and all(c["qdiscs"].get(q) for q in ("red", "codel",
                                                                    "fq_codel", "htb"))


@pytest.fixture(autouse=True)
def needs_the_reference_kernel():
    if not _kernel_has_everything():
        pytest.skip("needs netem, red, codel and fq_codel (the reference kernel: "
                    "`ccarena vm -- pytest tests/vm/test_kernel_link.py`)")


SAMPLER_GAP_MAX = 0.10     # as validity.SAMPLE_GAP_MAX for the flow engines


def sampler_gaps(d, interval_s: float = 0.01) -> float:
    """The share of the qdisc sampler's ~10 ms ticks that a run's link_stats lack (the
    sampler does not count its own, unlike the flow engines)."""
    ls = run_table(d, "link_stats")
    if ls.empty:
        return 1.0
    t = ls[ls["dir"] == 0]["t_ns"].sort_values().to_numpy()
    span = (t[-1] - t[0]) / 1e9 if len(t) > 1 else 0.0
    expected = span / interval_s
    return max(0.0, 1 - len(t) / expected) if expected else 1.0


def run_kernel(text: str, tmp_path):
    """Run a kernel-backend study. A run the machine's noise made invalid (a guest too
    slow under TCG: the flow engines missed sampling ticks, htb fell behind) or whose
    qdisc sampler missed ticks measured nothing that physics can be checked against:
    the test is skipped, naming why — never passed or failed on it."""
    res = run_study(loads_study(text.replace("seed = 11\n", 'seed = 11\nsample_interval = '
                                             '"20ms"\n')),
                    results_base=tmp_path, progress=False, reruns=0)
    dirs = res.run_dirs()
    assert dirs, "no completed run"
    for d in dirs:
        meta = res.run_meta(d)
        assert meta["backend"] == "kernel", meta["backend"]
        assert "error" not in meta, meta["error"]
        assert not failed_parts(meta), failed_parts(meta)
    for d in dirs:
        meta = res.run_meta(d)
        if meta.get("noise_reasons"):
            pytest.skip("the guest was too slow to measure this run: "
                        + "; ".join(meta["noise_reasons"]))
        gaps = sampler_gaps(d)
        if gaps > SAMPLER_GAP_MAX:
            pytest.skip(f"the guest was too slow to measure this run: the qdisc sampler "
                        f"missed {gaps:.0%} of its ticks")
    return res


def kb(bottleneck: str, **kw) -> str:
    return dumbbell(bottleneck, backend="kernel", **kw)


def _ctx(meta) -> str:
    cpu = meta.get("cpu", {})
    eng = {h: round(e.get("max_tick_late_ns", 0) / 1e6, 1)
           for h, e in (meta.get("engines") or {}).items()}
    return (f"[cpu busy {cpu.get('busy_frac', float('nan')):.2f}; engines' worst tick "
            f"lateness ms {eng}; invalid: {meta.get('invalid_reasons')}]")


def _rtts(res, key=("bottleneck", "delay_s")) -> dict:
    """{the cell's meta[key[0]][key[1]]: (ping RTTs in steady state, meta)}"""
    out = {}
    for meta, d in runs(res):
        out[meta[key[0]][key[1]]] = (steady(run_table(d, "ping"), meta)["rtt_s"].dropna(),
                                     meta)
    return out


# 1 ------------------------------------------------------------------------------------------
def test_unloaded_ping_sees_the_configured_rtt(tmp_path, no_leaks):
    """netem adds the configured delay each way: the RTT is the base RTT plus the path's
    own (measured in the same study with no delay), never less than the base."""
    base = 0.020
    res = run_kernel(kb('rate = "100mbit"\nbuffer = "100p"', ping="10ms", duration="3s",
                        warmup="0s", sweep='"bottleneck.delay" = ["0ms", "10ms"]'), tmp_path)
    r = _rtts(res)
    own, (rtt, meta) = r[0.0][0], r[0.010]
    assert len(rtt) >= 50 and len(own) >= 50, (len(rtt), len(own))
    assert rtt.min() >= base - 50e-6, f"a ping took {rtt.min() * 1e3:.3f} ms < 20 ms"
    tol = max(50e-6, 0.01 * base)
    excess = rtt.median() - base - own.median()
    assert round(abs(excess), 9) <= tol, (
        f"median {rtt.median() * 1e3:.3f} ms = base + path {own.median() * 1e3:.3f} ms "
        f"+ {excess * 1e3:.3f} ms {_ctx(meta)}")


# 2 ------------------------------------------------------------------------------------------
def test_bulk_goodput_is_95_to_100_percent_of_the_rate(tmp_path, no_leaks):
    rate = 10e6
    res = run_kernel(kb('rate = "10mbit"\nrtt = "20ms"\nbuffer = "100p"', flows=1,
                        duration="6s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    f = res.flows
    row = f[(f["conn"] == -1) & (f["name"] == "bulk0")].iloc[0]
    g, window = row["goodput_bps"], row["window_s"]
    payload_rate = rate * PAYLOAD_SHARE
    assert g >= 0.95 * payload_rate, f"goodput {g / 1e6:.2f} Mbit/s {_ctx(meta)}"
    # the ceiling, as for the user-space link: one sample interval at each end, how late
    # the receiving engine ran, and what the link had delivered but TCP held behind a
    # hole when the window began (the qdisc's bytes_out stand for the link's)
    reader_late = meta["engines"]["r1"]["max_tick_late_ns"] / 1e9
    slop_s = 2 * meta["sample_interval_s"] + reader_late
    ws = meta["warmup_s"]
    rx = run_table(d, "rx").sort_values("t")
    ls = run_table(d, "link_stats")
    ls = ls[ls["dir"] == 0].sort_values("t")
    delivered = np.interp(ws, ls["t"], ls["bytes_out"].cumsum()) * PAYLOAD_SHARE
    held = max(0.0, delivered - np.interp(ws, rx["t"], rx["bytes"]))
    ceiling = payload_rate * (1 + slop_s / window) + held * 8 / window
    assert g <= ceiling, f"goodput {g / 1e6:.3f} > {ceiling / 1e6:.3f} Mbit/s {_ctx(meta)}"
    # the shaper never beats its rate: frames out of the qdisc in the window
    win = ls[(ls["t"] > ws) & (ls["t"] <= meta["duration_s"])]
    out_bps = win["bytes_out"].sum() * 8 / (meta["duration_s"] - ws)
    assert out_bps <= rate * (1 + 2 * FRAME * 8 / (rate * window)) * 1.01, out_bps


# 3 ------------------------------------------------------------------------------------------
def test_random_loss_matches_the_configured_probability(tmp_path, no_leaks):
    """Loss applies towards the receivers: each echo request is lost independently with
    probability p, so the unanswered pings ~ Binomial(n, p) (the replies are not lost)."""
    p = 0.05
    res = run_kernel(kb('rate = "20mbit"\nrtt = "4ms"\nbuffer = "100p"\nloss = "5%"',
                        ping="2ms", duration="4s", warmup="0s"), tmp_path)
    (meta, d), = runs(res)
    pg = run_table(d, "ping").sort_values("seq")
    pg = pg[pg["seq"] < pg["seq"].max() - 25]     # none still in flight at the end
    n, k = len(pg), int(pg["rtt_s"].isna().sum())
    assert n >= 500, f"too few pings ({n}) to judge a 5 % loss"
    lo, hi = binom.ppf(0.0005, n, p), binom.ppf(0.9995, n, p)
    assert lo <= k <= hi, f"{k} of {n} lost = {k / n:.2%}; 99.9 % interval [{lo:.0f}, {hi:.0f}]"


# 4 ------------------------------------------------------------------------------------------
def test_the_queue_never_exceeds_its_limit_and_fills(tmp_path, no_leaks):
    limit = 30
    res = run_kernel(kb(f'rate = "10mbit"\nrtt = "20ms"\nbuffer = "{limit}p"', flows=1,
                        duration="4s", warmup="1s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    w2e = ls[ls["dir"] == 0]
    # htb may hold one packet it peeked at beside its leaf's `limit`
    assert w2e["qlen_pkts"].max() <= limit + 1, w2e["qlen_pkts"].max()
    assert w2e["qlen_pkts"].max() >= 0.8 * limit, w2e["qlen_pkts"].max()
    assert w2e["drops"].sum() > 0, "cubic never overflowed the buffer"


# 5 ------------------------------------------------------------------------------------------
def test_droptail_buffer_inflates_rtt_towards_its_drain_time(tmp_path, no_leaks):
    rate, base, B = 10e6, 0.020, 50
    drain = B * FRAME * 8 / rate
    frame_time = FRAME * 8 / rate
    res = run_kernel(kb(f'rate = "10mbit"\nrtt = "20ms"\nbuffer = "{B}p"', flows=1,
                        ping="20ms", duration="5s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
    assert len(rtt) >= 50
    assert rtt.quantile(0.95) > base + 0.5 * drain, f"p95 {rtt.quantile(0.95) * 1e3:.1f} ms"
    # a full buffer, the frame in transmission, htb's peeked frame, 2 ms for the hosts
    bound = base + drain + 2 * frame_time + 2e-3
    assert rtt.max() < bound, f"max {rtt.max() * 1e3:.1f} ms > {bound * 1e3:.1f} {_ctx(meta)}"


# 6 ------------------------------------------------------------------------------------------
def test_jitter_spreads_the_rtt_around_the_base(tmp_path, no_leaks):
    """Each direction's delay varies within ±jitter of the one-way delay: an RTT lies in
    base ± 2 x jitter (plus the path's own), and varies."""
    base, j = 0.040, 0.005
    res = run_kernel(kb('rate = "100mbit"\nbuffer = "1000p"\ndelay = "20ms"', ping="20ms",
                        duration="3s", warmup="0s",
                        sweep='"bottleneck.jitter" = ["0ms", "5ms"]'), tmp_path)
    r = _rtts(res, ("bottleneck", "jitter_s"))
    steady_rtt, (rtt, meta) = r[0.0][0], r[0.005]
    assert len(rtt) >= 50 and len(steady_rtt) >= 50
    own = steady_rtt - base          # the path's own share of the unjittered RTT
    assert rtt.min() >= base - 2 * j - 50e-6, rtt.min()
    assert rtt.max() <= base + 2 * j + own.max() + 1e-3, (rtt.max(), own.max())
    assert rtt.std() > 0.2 * j, f"sd {rtt.std() * 1e3:.2f} ms: no jitter?"
    # delays uniform in ±j each way average to the delay: the mean RTT is the unjittered
    # one within 4 standard errors (sd of a uniform ±j: j/sqrt(3), two directions)
    se = np.sqrt(2) * (j / np.sqrt(3)) / np.sqrt(len(rtt))
    assert abs(rtt.mean() - steady_rtt.median()) <= 4 * se + 1e-4, (rtt.mean(), se)


# 7 ------------------------------------------------------------------------------------------
def test_per_host_delay_is_added_on_the_hosts_segment_both_ways(tmp_path, no_leaks):
    """hosts.<h>.delay is extra one-way delay on h's access segment: a round trip to h
    crosses it twice (the user-space link adds it to packets from and to h)."""
    base, extra = 0.020, 0.010
    res = run_kernel(kb('rate = "100mbit"\nrtt = "20ms"\nbuffer = "100p"', ping="10ms",
                        duration="3s", warmup="0s") + '[hosts.r1]\ndelay = "10ms"\n',
                     tmp_path)
    (meta, d), = runs(res)
    rtt = run_table(d, "ping")["rtt_s"].dropna()
    assert len(rtt) >= 50
    assert rtt.min() >= base + 2 * extra - 50e-6, f"min {rtt.min() * 1e3:.2f} ms"


# 8 ------------------------------------------------------------------------------------------
def test_red_holds_the_queue_between_its_thresholds(tmp_path, no_leaks):
    lo, hi, limit = 10, 30, 100
    res = run_kernel(kb(f'rate = "10mbit"\nrtt = "20ms"\nbuffer = "{limit}p"\nqueue = "red"\n'
                        f'aqm = {{ min = "{lo}p", max = "{hi}p", max_p = 0.1 }}', flows=1,
                        duration="6s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    q = steady(ls[ls["dir"] == 0], meta)["qlen_pkts"]
    assert lo / 2 <= q.median() <= hi, q.describe()
    assert q.max() < limit


def test_red_with_default_thresholds_holds_the_queue_between_them(tmp_path, no_leaks):
    """The study format's defaults (study.resolve, both backends): min = buffer/10
    (at least 5 packets), max = 3 x min, in packets; with a 100-packet buffer 10 and 30."""
    lo, hi, limit = 10, 30, 100
    res = run_kernel(kb(f'rate = "10mbit"\nrtt = "20ms"\nbuffer = "{limit}p"\nqueue = "red"',
                        flows=1, duration="6s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    q = steady(ls[ls["dir"] == 0], meta)["qlen_pkts"]
    assert len(q) > 100
    assert lo / 2 <= q.median() <= hi, (f"median queue {q.median()} packets; "
                                        f"{q.describe().to_dict()} {_ctx(meta)}")
    assert ls[ls["dir"] == 0]["drops"].sum() > 0     # RED dropped early
    assert q.max() < limit


# 9 ------------------------------------------------------------------------------------------
def test_codel_keeps_the_standing_queue_near_its_target(tmp_path, no_leaks):
    """CoDel drops until the sojourn time stays near its target (5 ms): a ping through the
    bulk flow's queue waits about that, not the 200-packet buffer's 242 ms."""
    base, target = 0.020, 0.005
    res = run_kernel(kb('rate = "10mbit"\nrtt = "20ms"\nbuffer = "200p"\nqueue = "codel"',
                        flows=1, ping="20ms", duration="6s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
    assert len(rtt) >= 50
    # CoDel's control law lets the queue pass its target between drops; a few targets
    # of standing delay is CoDel working, a buffer's worth is not
    assert rtt.median() < base + 4 * target, f"median {rtt.median() * 1e3:.1f} ms {_ctx(meta)}"
    f = res.flows
    g = f[(f["conn"] == -1) & (f["name"] == "bulk0")].iloc[0]["goodput_bps"]
    assert g >= 0.8 * 10e6 * PAYLOAD_SHARE, f"goodput {g / 1e6:.2f}: CoDel starved the link"


# 10 -----------------------------------------------------------------------------------------
def test_fq_codel_keeps_ping_near_base_rtt_where_droptail_does_not(tmp_path, no_leaks):
    base = 0.020
    res = run_kernel(kb('rate = "10mbit"\nrtt = "20ms"\nbuffer = "200p"', flows=1,
                        ping="20ms", duration="5s", warmup="2s",
                        sweep='"bottleneck.queue" = ["droptail", "fq_codel"]'), tmp_path)
    p50 = {}
    for meta, d in runs(res):
        rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
        assert len(rtt) >= 50
        p50[meta["bottleneck"]["queue"]] = (rtt.median(), _ctx(meta))
    assert p50["fq_codel"][0] < base + 0.010, p50["fq_codel"]
    assert p50["droptail"][0] > base + 0.050, p50["droptail"]


# 11 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("queue", ["codel", "red"])
def test_ecn_flows_are_marked_instead_of_dropped(tmp_path, no_leaks, queue):
    """With ecn = true the AQM marks ECN-capable packets where it would drop them: the
    senders see CE echoed back, and the bottleneck drops nothing (the buffer is far above
    what two ECN flows queue)."""
    res = run_kernel(kb(f'rate = "20mbit"\nrtt = "20ms"\nbuffer = "1000p"\nqueue = "{queue}"\n'
                        'ecn = true', flows=2, tcp="ecn = 1", duration="5s", warmup="2s"),
                     tmp_path)
    (meta, d), = runs(res)
    f = res.flows
    flows = f[f["conn"] == -1]
    assert len(flows) == 2
    assert (flows["ce_ratio"] > 0).all(), flows[["name", "ce_ratio"]]
    ls = run_table(d, "link_stats")
    assert ls[ls["dir"] == 0]["drops"].sum() == 0, "the AQM dropped ECN-capable packets"
