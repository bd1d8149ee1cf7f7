"""The kernel link backend (htb, netem, red, codel, fq_codel) held to the physics the
user-space link is held to in tests/integration/test_link_accuracy.py: rate, delay,
jitter, loss, buffer, per-host delay, RED, CoDel, FQ-CoDel, ECN marking.

These need a kernel with netem and the AQM qdiscs: they run inside the reference kernel
(test_kernel_link_in_vm.py boots it and runs this file there, in `make verify`; or
`ccarena vm -- pytest tests/vm/test_kernel_link.py`) and skip elsewhere.

The kernel counts nothing per packet, so what the user-space link's own counters say
there is taken here from what the endpoints see (ping replies, TCP's delivery) and from
the bottleneck qdisc's statistics (link_stats: backlog, drops, bytes every 20 ms).

A guest under QEMU's TCG (no KVM) runs everything emulated: the rates and delays here
are ones such a guest carries on a shared 2-core host (RATE, delays of 20 ms and more).
A run the guest was too slow for (the run's validity checks: the flow engines' and the
qdisc sampler's missed ticks, htb behind its rate, netem late on every packet) fails its
test with the run's figures — it is never skipped and never passed: the conditions must
fit the guest. Bounds that a late timer moves (a round trip's median or maximum) carry
the guest's own timer lateness, measured while the run runs (TimerLateness)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

# the user-space link tests' helpers (tests/integration)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from linkhelpers import (FRAME, PAYLOAD_SHARE, dumbbell, failed_parts,  # noqa: E402
                         run_table, runs, steady)

pytestmark = pytest.mark.root
ci = pytest.mark.vm_ci          # the quick subset inside the VM (make verify runs all)

RATE = 2e6                      # bit/s: a TCG guest carries a TCP flow at this rate
RATE_S = "2mbit"
FRAME_S = FRAME * 8 / RATE      # one frame's time at RATE (6.1 ms)
PING_RES = 50e-6                # ping prints 0.1 ms steps above 10 ms: half a step
SAMPLE = "50ms"                 # TCP_INFO and qdisc sampling: a TCG guest's Python and
                                # engines keep this (at 10-20 ms they missed 10-40 % of
                                # their ticks on a loaded 2-core host)


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


class TimerLateness:
    """How late this machine's timers fire while a run runs: a separate process (not to
    take the orchestrator's GIL) waits `period_s` again and again in select() and records
    how much later than asked it woke. netem releases each packet from an hrtimer
    (qdisc_watchdog) and htb sends on one, so a guest whose timers are late by L delays
    each emulated direction by about L; a process's wake-up also includes the
    scheduler's and Python's own delay, so this overstates netem's lateness rather than
    understating it (a bound built on it is the looser)."""

    CODE = ("import json, select, sys, time\n"
            "p = float(sys.argv[1]); late = []\n"
            "while True:\n"
            "    t = time.monotonic()\n"
            "    if select.select([sys.stdin], [], [], p)[0]: break\n"
            "    late.append(time.monotonic() - t - p)\n"
            "print(json.dumps(late))\n")

    def __init__(self, period_s: float = 0.005):
        self.period_s = period_s
        self.late_s: list[float] = []

    def __enter__(self):
        self._p = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.period_s)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        out, _ = self._p.communicate("", timeout=30)     # stdin closed: it prints, ends
        self.late_s = json.loads(out or "[]")

    def q(self, p: float) -> float:
        return float(np.quantile(self.late_s, p)) if self.late_s else float("nan")

    def __str__(self):
        return (f"guest timer lateness ms: p50 {self.q(0.5) * 1e3:.2f} p90 "
                f"{self.q(0.9) * 1e3:.2f} p99 {self.q(0.99) * 1e3:.2f} max "
                f"{self.q(1.0) * 1e3:.1f} (n {len(self.late_s)})")


# the reasons a run may be flagged and still judged by a test whose own bound carries the
# guest's lateness: the kernel link late (validity.judge_kernel_delay)
LATE = "kernel link late"


def run_kernel(text: str, tmp_path, tolerate=()):
    """Run a kernel-backend study, sampled every SAMPLE (a TCG guest keeps that);
    -> (ResultsDir, TimerLateness measured meanwhile).

    A run the machine's noise made invalid measured nothing physics can be checked
    against: the test fails, quoting the run's validity and figures (never skips: a
    skip would count as a pass in CI) — apart from the reasons in `tolerate`, for a test
    whose bounds account for them."""
    with TimerLateness() as tl:
        res = run_study(loads_study(text.replace(
            "seed = 11\n", f'seed = 11\nsample_interval = "{SAMPLE}"\n')),
            results_base=tmp_path, progress=False, reruns=0)
    dirs = res.run_dirs()
    assert dirs, "no completed run"
    for d in dirs:
        meta = res.run_meta(d)
        assert meta["backend"] == "kernel", meta["backend"]
        assert "error" not in meta, meta["error"]
        assert not failed_parts(meta), failed_parts(meta)
        noise = [r for r in meta.get("noise_reasons") or []
                 if not any(t in r for t in tolerate)]
        assert not noise, (f"the guest was too slow to measure this run (the test's "
                           f"conditions must fit it): {'; '.join(noise)} {_ctx(meta)} [{tl}]")
    return res, tl


def kb(bottleneck: str, **kw) -> str:
    return dumbbell(bottleneck, backend="kernel", **kw)


def _ctx(meta) -> str:
    cpu = meta.get("cpu", {})
    eng = {h: round(e.get("max_tick_late_ns", 0) / 1e6, 1)
           for h, e in (meta.get("engines") or {}).items()}
    kd = {k: round(v["excess_s"] * 1e3, 2)
          for k, v in ((meta.get("kernel_delay") or {}).get("paths") or {}).items()}
    return (f"[cpu busy {cpu.get('busy_frac', float('nan')):.2f}; engines' worst tick "
            f"lateness ms {eng}; qdisc sampler {meta.get('qdisc_sampler')}; RTT floor "
            f"above base ms {kd}; shaper {meta.get('shaper')}]")


def _rtts(res, key=("bottleneck", "delay_s")) -> dict:
    """{the cell's meta[key[0]][key[1]]: (ping RTTs in steady state, meta)}"""
    out = {}
    for meta, d in runs(res):
        out[meta[key[0]][key[1]]] = (steady(run_table(d, "ping"), meta)["rtt_s"].dropna(),
                                     meta)
    return out


def _goodput(res, name="bulk0") -> float:
    f = res.flows
    return float(f[(f["conn"] == -1) & (f["name"] == name)].iloc[0]["goodput_bps"])


# 1 ------------------------------------------------------------------------------------------
@ci
def test_unloaded_ping_sees_the_configured_rtt(tmp_path, no_leaks):
    """netem adds the configured delay each way: no RTT below the base, and the median is
    the base RTT plus the path's own (measured in the same study with no delay) plus what
    the guest's late timers add — two netem releases per round trip, each late by about
    the guest's timer lateness (bounded here by its 90th percentile)."""
    base = 0.040
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nbuffer = "100p"', ping="10ms",
                            duration="4s", warmup="0s",
                            sweep='"bottleneck.delay" = ["0ms", "20ms"]'), tmp_path,
                         tolerate=(LATE,))
    r = _rtts(res)
    own, (rtt, meta) = r[0.0][0], r[0.020]
    assert len(rtt) >= 100 and len(own) >= 100, (len(rtt), len(own))
    assert rtt.min() >= base - PING_RES, f"a ping took {rtt.min() * 1e3:.3f} ms < 40 ms"
    # the run's own account of its delay (validity.kernel_delay: every reply) has the floor
    kd = meta["kernel_delay"]["paths"]["ping s1->r1"]
    assert kd["base_s"] == base and base - PING_RES <= kd["floor_s"] <= rtt.min(), kd
    tol = 2 * PING_RES + 2 * tl.q(0.9)
    excess = rtt.median() - base - own.median()
    assert excess <= tol, (
        f"median {rtt.median() * 1e3:.3f} ms = base + path {own.median() * 1e3:.3f} ms "
        f"+ {excess * 1e3:.3f} ms > {tol * 1e3:.2f} ms {_ctx(meta)} [{tl}]")


# 2 ------------------------------------------------------------------------------------------
@ci
def test_bulk_goodput_is_what_the_rate_allows(tmp_path, no_leaks):
    """htb sends at its rate while backlogged, and a bulk flow's goodput is what the link
    sent in the window less what it sent again, never more than the payload rate. The
    floor is the link's, not the rate's: how much of the link the guest's TCP uses depends
    on how fast the guest runs (a starved sender leaves the link idle now and then, or
    resends a window after a spurious time-out), which the run's validity does not judge
    and a shared host does not promise."""
    buffer = 20
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "{buffer}p"', flows=1,
                            duration="8s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    f = res.flows
    row = f[(f["conn"] == -1) & (f["name"] == "bulk0")].iloc[0]
    g, window = row["goodput_bps"], row["window_s"]
    payload_rate = RATE * PAYLOAD_SHARE
    ws = meta["warmup_s"]
    rx = run_table(d, "rx").sort_values("t")
    ls = run_table(d, "link_stats")
    ls = ls[ls["dir"] == 0].sort_values("t")
    win = ls[(ls["t"] > ws) & (ls["t"] <= meta["duration_s"])]
    out_bps = win["bytes_out"].sum() * 8 / (meta["duration_s"] - ws)
    # the shaper: never above its rate in the window (htb's burst of two frames at each
    # edge), and at it while backlogged (validity's own measure, over the whole run)
    assert out_bps <= RATE * (1 + 2 * FRAME * 8 / (RATE * window)) * 1.01, out_bps
    sh = (meta.get("shaper") or {}).get("w2e")
    assert sh and sh["busy_s"] >= 2.0, f"the bottleneck was hardly backlogged {_ctx(meta)}"
    assert sh["frac"] >= 0.95, f"htb sent {sh['frac']:.1%} of its rate {_ctx(meta)} [{tl}]"
    # the window's edges: one sample interval at each end and how late the receiving
    # engine ran; what the link had delivered but TCP held behind a hole when the window
    # began counts in goodput, not in the link's window (and at its end the other way,
    # at most the buffer)
    reader_late = meta["engines"]["r1"]["max_tick_late_ns"] / 1e9
    slop_s = 2 * meta["sample_interval_s"] + reader_late
    delivered = np.interp(ws, ls["t"], ls["bytes_out"].cumsum()) * PAYLOAD_SHARE
    held = max(0.0, delivered - np.interp(ws, rx["t"], rx["bytes"]))
    ceiling = payload_rate * (1 + slop_s / window) + held * 8 / window
    assert g <= ceiling, f"goodput {g / 1e6:.3f} > {ceiling / 1e6:.3f} Mbit/s {_ctx(meta)}"
    anew = out_bps * PAYLOAD_SHARE * (1 - row["retrans_ratio"])
    floor = anew - payload_rate * slop_s / window - buffer * FRAME * PAYLOAD_SHARE * 8 / window
    assert g >= floor, (f"goodput {g / 1e6:.3f} < {floor / 1e6:.3f} Mbit/s: the link sent "
                        f"{out_bps / 1e6:.3f} Mbit/s, {row['retrans_ratio']:.1%} of it again "
                        f"{_ctx(meta)} [{tl}]")


# 3 ------------------------------------------------------------------------------------------
@ci
def test_random_loss_matches_the_configured_probability(tmp_path, no_leaks):
    """Loss applies towards the receivers: each echo request is lost independently with
    probability p, so the unanswered pings ~ Binomial(n, p) (the replies are not lost)."""
    p = 0.05
    res, _ = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "100p"\nloss = "5%"',
                           ping="5ms", duration="6s", warmup="0s"), tmp_path,
                        tolerate=(LATE,))     # late replies still come back within 2 s
    (meta, d), = runs(res)
    pg = run_table(d, "ping").sort_values("seq")
    pg = pg[pg["seq"] < pg["seq"].max() - 25]     # none still in flight at the end
    n, k = len(pg), int(pg["rtt_s"].isna().sum())
    assert n >= 500, f"too few pings ({n}) to judge a 5 % loss {_ctx(meta)}"
    lo, hi = binom.ppf(0.0005, n, p), binom.ppf(0.9995, n, p)
    assert lo <= k <= hi, f"{k} of {n} lost = {k / n:.2%}; 99.9 % interval [{lo:.0f}, {hi:.0f}]"


# 4 ------------------------------------------------------------------------------------------
@ci
def test_the_queue_never_exceeds_its_limit_and_fills(tmp_path, no_leaks):
    """A bulk flow fills a 10-packet buffer (its BDP at 40 ms is 6.6 packets) and
    overflows it; the queue never holds more than its limit."""
    limit = 10
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "{limit}p"',
                            flows=1, ping="20ms", duration="6s", warmup="1s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    w2e = ls[ls["dir"] == 0]
    # htb may hold one packet it peeked at beside its leaf's `limit`
    assert w2e["qlen_pkts"].max() <= limit + 1, w2e["qlen_pkts"].max()
    assert w2e["qlen_pkts"].max() >= 0.8 * limit, f"{w2e['qlen_pkts'].max()} {_ctx(meta)}"
    assert w2e["drops"].sum() > 0, f"cubic never overflowed the buffer {_ctx(meta)}"
    # every round trip at least the base RTT; the longest no more than the base, a full
    # buffer's drain, the frame in transmission and htb's peeked one, and the guest's
    # worst timer lateness on each of the two netem releases
    rtt = run_table(d, "ping")["rtt_s"].dropna()
    tcp = run_table(d, "tcpinfo")
    assert rtt.min() >= 0.040 - PING_RES, rtt.min()
    assert tcp[tcp["srtt_us"] > 0]["srtt_us"].min() >= 0.040 * 1e6 * 0.99
    bound = 0.040 + (limit + 2) * FRAME_S + 2 * tl.q(1.0) + 2e-3
    assert rtt.max() <= bound, f"max {rtt.max() * 1e3:.1f} ms > {bound * 1e3:.1f} [{tl}]"


# 5 ------------------------------------------------------------------------------------------
def test_droptail_buffer_inflates_rtt_towards_its_drain_time(tmp_path, no_leaks):
    base, B = 0.040, 20
    drain = B * FRAME_S
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "{B}p"', flows=1,
                            ping="20ms", duration="8s", warmup="2s"), tmp_path)
    (meta, d), = runs(res)
    rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
    assert len(rtt) >= 100
    assert rtt.quantile(0.95) > base + 0.5 * drain, f"p95 {rtt.quantile(0.95) * 1e3:.1f} ms"
    # a full buffer, the frame in transmission, htb's peeked frame, 2 ms for the hosts,
    # and the guest's worst timer lateness on each of the two netem releases
    bound = base + drain + 2 * FRAME_S + 2e-3 + 2 * tl.q(1.0)
    assert rtt.max() < bound, f"max {rtt.max() * 1e3:.1f} ms > {bound * 1e3:.1f} {_ctx(meta)}"


# 6 ------------------------------------------------------------------------------------------
def test_jitter_spreads_the_rtt_around_the_base(tmp_path, no_leaks):
    """Each direction's delay varies within ±jitter of the one-way delay: an RTT lies in
    base ± 2 x jitter (plus the path's own and the guest's timer lateness), and varies."""
    base, j = 0.040, 0.005
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nbuffer = "1000p"\ndelay = "20ms"',
                            ping="20ms", duration="4s", warmup="0s",
                            sweep='"bottleneck.jitter" = ["0ms", "5ms"]'), tmp_path,
                         tolerate=(LATE,))
    r = _rtts(res, ("bottleneck", "jitter_s"))
    steady_rtt, (rtt, meta) = r[0.0][0], r[0.005]
    assert len(rtt) >= 100 and len(steady_rtt) >= 100
    own = steady_rtt - base          # the path's own share of the unjittered RTT
    assert rtt.min() >= base - 2 * j - PING_RES, rtt.min()
    assert rtt.max() <= base + 2 * j + own.max() + 2 * tl.q(1.0) + 1e-3, (rtt.max(), own.max(),
                                                                           str(tl))
    assert rtt.std() > 0.2 * j, f"sd {rtt.std() * 1e3:.2f} ms: no jitter?"
    # delays uniform in ±j each way average to the delay: the mean RTT is the unjittered
    # one within 4 standard errors (sd of a uniform ±j: j/sqrt(3), two directions) and
    # what the guest's lateness adds to either
    se = np.sqrt(2) * (j / np.sqrt(3)) / np.sqrt(len(rtt))
    assert abs(rtt.mean() - steady_rtt.median()) <= 4 * se + 2 * tl.q(0.9) + 1e-4, \
        (rtt.mean(), steady_rtt.median(), se, str(tl))


# 7 ------------------------------------------------------------------------------------------
def test_per_host_delay_is_added_on_the_hosts_segment_both_ways(tmp_path, no_leaks):
    """hosts.<h>.delay is extra one-way delay on h's access segment: a round trip to h
    crosses it twice (the user-space link adds it to packets from and to h)."""
    base, extra = 0.040, 0.010
    res, _ = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "100p"', ping="20ms",
                           duration="4s", warmup="0s") + '[hosts.r1]\ndelay = "10ms"\n',
                        tmp_path, tolerate=(LATE,))     # lateness never shortens a trip
    (meta, d), = runs(res)
    rtt = run_table(d, "ping")["rtt_s"].dropna()
    assert len(rtt) >= 100
    assert rtt.min() >= base + 2 * extra - PING_RES, f"min {rtt.min() * 1e3:.2f} ms"


# 8 ------------------------------------------------------------------------------------------
def test_red_holds_the_queue_between_its_thresholds(tmp_path, no_leaks):
    lo, hi, limit = 10, 30, 100
    res, _ = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "{limit}p"\n'
                           f'queue = "red"\naqm = {{ min = "{lo}p", max = "{hi}p", '
                           'max_p = 0.1 }', flows=1, duration="10s", warmup="4s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    q = steady(ls[ls["dir"] == 0], meta)["qlen_pkts"]
    assert lo / 2 <= q.median() <= hi, (q.describe().to_dict(), _ctx(meta))
    assert q.max() < limit


@ci
def test_red_with_default_thresholds_holds_the_queue_between_them(tmp_path, no_leaks):
    """The study format's defaults (study.resolve, both backends): min = buffer/10
    (at least 5 packets), max = 3 x min, in packets; with a 100-packet buffer 10 and 30.
    One cubic flow (BDP 6.6 packets) keeps the average between them: RED drops early,
    long before the buffer fills."""
    lo, hi, limit = 10, 30, 100
    res, _ = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "{limit}p"\n'
                           'queue = "red"', flows=1, duration="10s", warmup="4s"), tmp_path)
    (meta, d), = runs(res)
    ls = run_table(d, "link_stats")
    q = steady(ls[ls["dir"] == 0], meta)["qlen_pkts"]
    # 120 samples in the steady 6 s at 50 ms; a loaded host's guest misses some (validity
    # judges lateness): the median needs most of the window, not every tick
    assert len(q) >= 60, f"{len(q)} of the steady window's 120 samples"
    assert lo / 2 <= q.median() <= hi, (f"median queue {q.median()} packets; "
                                        f"{q.describe().to_dict()} {_ctx(meta)}")
    assert ls[ls["dir"] == 0]["drops"].sum() > 0     # RED dropped early
    assert q.max() < limit
    assert _goodput(res) <= RATE * PAYLOAD_SHARE * 1.01


# 9 ------------------------------------------------------------------------------------------
def test_codel_keeps_the_standing_queue_near_its_target(tmp_path, no_leaks):
    """CoDel drops until the sojourn time stays near its target: a ping through the bulk
    flow's queue waits about that, not the 200-packet buffer's 1.2 s. At 2 Mbit/s one
    frame takes 6 ms, longer than the default 5 ms target (RFC 8289 §4.4: the target must
    exceed a frame's time), so the target here is 15 ms."""
    base, target = 0.040, 0.015
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "200p"\n'
                            'queue = "codel"\naqm = { target = "15ms" }', flows=1,
                            ping="20ms", duration="10s", warmup="3s"), tmp_path)
    (meta, d), = runs(res)
    rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
    assert len(rtt) >= 100
    # CoDel's control law lets the queue pass its target between drops; a few targets
    # of standing delay is CoDel working, a buffer's worth is not
    assert rtt.median() < base + 4 * target + 2 * tl.q(0.9), \
        f"median {rtt.median() * 1e3:.1f} ms {_ctx(meta)} [{tl}]"
    g = _goodput(res)
    assert g >= 0.8 * RATE * PAYLOAD_SHARE, f"goodput {g / 1e6:.2f}: CoDel starved the link"


# 10 -----------------------------------------------------------------------------------------
def test_fq_codel_keeps_ping_near_base_rtt_where_droptail_does_not(tmp_path, no_leaks):
    """A ping is a flow of its own to FQ-CoDel, served ahead of the bulk flow's queue: it
    waits at most for the frame in transmission; behind droptail it waits for the
    buffer's drain (100 packets: 0.6 s at 2 Mbit/s)."""
    base = 0.040
    res, tl = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "100p"', flows=1,
                            ping="20ms", duration="8s", warmup="3s",
                            sweep='"bottleneck.queue" = ["droptail", "fq_codel"]'), tmp_path)
    p50 = {}
    for meta, d in runs(res):
        rtt = steady(run_table(d, "ping"), meta)["rtt_s"].dropna()
        assert len(rtt) >= 100
        p50[meta["bottleneck"]["queue"]] = (rtt.median(), _ctx(meta))
    assert p50["fq_codel"][0] < base + 2 * FRAME_S + 2 * tl.q(0.9) + 2e-3, (p50["fq_codel"],
                                                                             str(tl))
    assert p50["droptail"][0] > base + 0.2, p50["droptail"]


# 11 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("queue", ["codel", "red"])
def test_ecn_flows_are_marked_instead_of_dropped(tmp_path, no_leaks, queue):
    """With ecn = true the AQM marks ECN-capable packets where it would drop them: the
    senders see CE echoed back, and the bottleneck drops nothing (the buffer is far above
    what two ECN flows queue)."""
    aqm = '\naqm = { target = "15ms" }' if queue == "codel" else ""
    res, _ = run_kernel(kb(f'rate = "{RATE_S}"\nrtt = "40ms"\nbuffer = "1000p"\n'
                           f'queue = "{queue}"\necn = true{aqm}', flows=2, tcp="ecn = 1",
                           duration="8s", warmup="3s"), tmp_path)
    (meta, d), = runs(res)
    f = res.flows
    flows = f[f["conn"] == -1]
    assert len(flows) == 2
    assert (flows["ce_ratio"] > 0).all(), flows[["name", "ce_ratio"]]
    ls = run_table(d, "link_stats")
    assert ls[ls["dir"] == 0]["drops"].sum() == 0, "the AQM dropped ECN-capable packets"
