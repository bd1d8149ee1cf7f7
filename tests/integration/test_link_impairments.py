"""netem's impairments through the user-space link, measured end to end at low rates: a
UDP probe sends a datagram every few milliseconds from s1 to r1, both hosts capture them
(the same kernel clock stamps both captures, so each datagram's one-way delay is exact),
and each test compares what arrived with what the impairment defines (docs/link.md,
"Impairments"): the delay's distribution with its law (Kolmogorov-Smirnov), correlated
delays' lag-1 correlation, loss bursts' mean length, the share reordered, duplicated and
corrupted. Tolerances are the statistics' own (99.9 % intervals) plus, for delays, the
link's own reported lateness; the same measurements run against netem in the reference
kernel (tests/vm/test_kernel_link.py)."""
import numpy as np
import pytest

from impairhelpers import (SHAPES, UDP_FRAME, band, band_gap, batch_se, binom_interval,
                           gilbert_loss_se, ks_critical, lag1, one_way, runs_of, udp, udp_study)
from linkhelpers import noise, run, run_table, runs

pytestmark = pytest.mark.root

S1, R1 = "10.1.1.2", "10.2.1.2"
PCAP = '[[probe]]\nkind = "pcap"\nhosts = ["s1", "r1"]\n'
# what a path adds to a datagram's one-way trip besides the emulated delay: the veth hops
# and routers, the serialisation of a 106-byte frame at 10 Mbit/s (85 µs)
PATH_S = 0.3e-3


@pytest.fixture(autouse=True)
def realtime_link(monkeypatch):
    """Delays are measured to a fraction of a millisecond: the forwarding thread runs
    SCHED_FIFO (the default; set here so the environment cannot turn it off)."""
    monkeypatch.setenv("CCARENA_LINK_RT_PRIORITY", "10")


def _one(text, tmp_path):
    (meta, d), = runs(run(text, tmp_path))
    return meta, d


def _late_s(meta) -> float:
    """How late the link released its 99th percentile packet (its own account)."""
    return meta["link"]["p99_late_ns"] / 1e9


def test_each_direction_keeps_its_own_delay(tmp_path, no_leaks):
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "20ms"\nreverse_delay = "5ms"',
                             interval="10ms", duration="3s", flows=PCAP), tmp_path)
    assert meta["base_rtt_s"] == pytest.approx(0.025)
    fwd, rev, _, _ = one_way(d, S1, R1)
    f = np.array([v[0] for v in fwd.values()])
    r = np.array([v[0] for v in rev.values()])
    assert len(f) >= 200 and len(r) >= 200, (len(f), len(r))
    slack = PATH_S + 2 * _late_s(meta)
    for name, x, want in (("s->r", f, 0.020), ("r->s", r, 0.005)):
        assert x.min() >= want - 1e-5, f"{name}: a datagram took {x.min() * 1e3:.3f} ms"
        assert np.median(x) <= want + slack, \
            f"{name}: median {np.median(x) * 1e3:.3f} ms > {want * 1e3} ms + slack {noise(meta)}"


# the suite draws from one distribution; make verify from the other two as well
@pytest.mark.parametrize("dist", ["normal", pytest.param("pareto", marks=pytest.mark.verify),
                                  pytest.param("paretonormal", marks=pytest.mark.verify)])
def test_the_delay_follows_its_distribution_and_not_another(tmp_path, no_leaks, dist):
    """Each s->r delay is 60 ms + J·t, t drawn from the distribution (netem's shapes).
    Nothing makes a delay shorter, and the path and the link's lateness make it longer by
    at most PATH_S + the link's p99 lateness (1 % of the packets by more): the measured
    delays' CDF stays within that band of the law's, to the KS test's 99.9 % bound, and
    leaves the band of every other law that differs from this one by more than the bound
    and what lateness could hide. Four probes (four flows, each 50 ms apart, more than
    a law spans, so no datagram is held back behind its flow's previous one) give 960
    datagrams."""
    j = 0.010
    meta, d = _one(udp_study(f'rate = "10mbit"\ndelay = "60ms"\njitter = "10ms"\n'
                             f'delay_distribution = "{dist}"', interval="50ms",
                             duration="12s", probes=4, flows=PCAP), tmp_path)
    fwd, _, _, _ = one_way(d, S1, R1)
    t = (np.array([v[0] for v in fwd.values()]) - 0.060) / j
    assert len(t) >= 800, len(t)
    rng = np.random.default_rng(2)
    laws = {k: np.sort(f(rng.random(200_000))) for k, f in SHAPES.items()}
    eps = ks_critical(len(t))
    later = (PATH_S + _late_s(meta)) / j
    early, late = band(t, laws[dist], later)
    assert early <= eps and late <= eps + 0.01, \
        f"{dist}: out of its band by {early:.3f} early, {late:.3f} late (bound {eps:.3f}) " \
        f"{noise(meta)}"
    # another law is told apart where it differs from this one by more than the bound
    # plus what lateness could hide, on either side of its band
    for other, law in laws.items():
        if other == dist:
            continue
        e, l = band(t, law, later)
        if band_gap(laws[dist], law, later) > 2 * eps + 0.01:
            assert l > eps + 0.01, f"{dist} passes for {other} (late side)"
        if band_gap(law, laws[dist], later) > 2 * eps + 0.01:
            assert e > eps, f"{dist} passes for {other} (early side)"


def test_correlated_delays_follow_the_one_before(tmp_path, no_leaks):
    """netem's correlation C: each delay of a direction leans on the one before it, so
    successive datagrams' delays (four probes, in the order s1 sent them) correlate with
    coefficient C, and their spread narrows by √((1 − C)/(1 + C)). The jitter (±20 ms) is
    large against what the path and a busy machine add."""
    c = 0.5
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "60ms"\njitter = "20ms"\n'
                             'delay_correlation = "50%"', interval="50ms", duration="12s",
                             probes=4, flows=PCAP), tmp_path)
    fwd, _, _, sent = one_way(d, S1, R1)
    keys = sorted(fwd, key=lambda k: sent[k])
    x = np.array([fwd[k][0] for k in keys])
    assert len(x) >= 800, len(x)
    r = lag1(x)
    se = (1 - c * c) / np.sqrt(len(x))
    assert abs(r - c) <= 4 * se + 0.02, f"lag-1 correlation {r:.3f}, want {c} ± {4 * se:.3f}"
    want = 0.020 / np.sqrt(3) * np.sqrt((1 - c) / (1 + c))
    se_sd = want * np.sqrt((1 + c * c) / (1 - c * c) / (2 * len(x)))
    assert abs(x.std() - want) <= 4 * se_sd + _late_s(meta), \
        f"sd {x.std() * 1e3:.3f} ms vs {want * 1e3:.3f} {noise(meta)}"


def test_gilbert_elliott_losses_come_in_bursts(tmp_path, no_leaks):
    p, r = 0.03, 0.25
    meta, d = _one(udp_study(f'rate = "10mbit"\ndelay = "10ms"\nloss_model = '
                             f'{{ kind = "gilbert", p = "{p:.0%}", r = "{r:.0%}" }}',
                             interval="5ms", duration="10s"), tmp_path)
    u, prober, _ = udp(d)
    lost = u["rtt_s"].isna().to_numpy()
    n, k = len(lost), int(lost.sum())
    assert n >= 1200, n
    # loss acts s->r only, so an unanswered datagram is one the model took
    assert meta["link"]["e2w"]["drops_loss"] == 0
    assert k <= meta["link"]["w2e"]["drops_loss"] <= prober["lost"]
    pi = p / (p + r)
    se = gilbert_loss_se(p, r, n)
    assert abs(k / n - pi) <= 4 * se, f"{k} of {n} lost; model {pi:.3f} ± {4 * se:.3f}"
    b = np.array(runs_of(lost))
    se_b = np.sqrt(1 - r) / r / np.sqrt(len(b))     # a bad-state stay is geometric
    assert abs(b.mean() - 1 / r) <= 4 * se_b, \
        f"mean burst {b.mean():.2f} over {len(b)}, want {1 / r} ± {4 * se_b:.2f}"


def test_four_state_losses_follow_the_model(tmp_path, no_leaks):
    """Only isolated losses (state 4) and bursts (state 3): p13 = 2 %, p31 = 50 %,
    p32 = 0, p14 = 2 %: mean loss (p13 + p14·p31)/(p31 + p13 + p14·p31) = 5.6 %, bursts
    of 1/p31 = 2 datagrams, isolated ones single."""
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "10ms"\nloss_model = { kind = '
                             '"4state", p13 = "2%", p31 = "50%", p32 = "0%", p14 = "2%" }',
                             interval="5ms", duration="10s"), tmp_path)
    u, _, _ = udp(d)
    lost = u["rtt_s"].isna().to_numpy()
    n, k = len(lost), int(lost.sum())
    want = (0.02 + 0.02 * 0.5) / (0.5 + 0.02 + 0.02 * 0.5)
    se = batch_se(lost)
    assert abs(k / n - want) <= 4 * se, f"{k} of {n} lost, model {want:.3f} ± {4 * se:.3f}"
    ev = np.array(runs_of(lost))
    # runs: an isolated loss is 1, a burst geometric with mean 2; together 1.5 on average
    # (equal rates of entering each: p13 = p14)
    se = ev.std() / np.sqrt(len(ev))
    assert abs(ev.mean() - 1.5) <= 4 * se, f"mean run {ev.mean():.2f} ± {se:.2f}"


@pytest.mark.parametrize("p,gap", [(0.2, 1), pytest.param(0.3, 3, marks=pytest.mark.verify)])
def test_reordered_datagrams_skip_the_delay_and_overtake(tmp_path, no_leaks, p, gap):
    """netem's reorder P gap G: P/(1 + (G - 1)P) of the datagrams arrive without the
    20 ms delay, ahead of ones sent before them."""
    meta, d = _one(udp_study(f'rate = "10mbit"\ndelay = "20ms"\nreorder = "{p:.0%}"\n'
                             f'reorder_gap = {gap}', interval="5ms", duration="6s",
                             flows=PCAP), tmp_path)
    fwd, _, order, _ = one_way(d, S1, R1)
    x = np.array([v[0] for v in fwd.values()])
    # a reordered datagram takes the path's time and the link's lateness at most, a
    # delayed one at least the delay: none lies between unless the link ran 10 ms late
    max_late = meta["link"]["max_late_ns"] / 1e9
    assert np.all((x < PATH_S + max_late) | (x >= 0.020 - 1e-5)), \
        "a delay neither skipped nor whole"
    fast = int((x < 0.010).sum())
    n = len(x)
    unsure = meta["link"]["late_packets"] / n if max_late >= 0.010 - PATH_S else 0.0
    want = p / (1 + (gap - 1) * p)
    # a renewal process: cycles of G - 1 + Geometric(p) datagrams, one reordered in each
    cycles = n * want
    se = want * want * np.sqrt(1 - p) / p / np.sqrt(cycles) if gap > 1 else \
        np.sqrt(want * (1 - want) / n)
    assert abs(fast / n - want) <= 4 * se + unsure, \
        f"{fast} of {n} reordered, want {want:.3f} ± {4 * se:.3f} {noise(meta)}"
    assert meta["link"]["w2e"]["reordered"] >= fast
    overtaken = sum(1 for a, b in zip(order, order[1:]) if b < a)
    assert overtaken >= 0.8 * fast, f"{overtaken} arrivals before earlier datagrams"


def test_duplicated_datagrams_arrive_twice(tmp_path, no_leaks):
    dup = 0.05
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "10ms"\nduplicate = "5%"',
                             interval="5ms", duration="6s", flows=PCAP), tmp_path)
    fwd, _, _, _ = one_way(d, S1, R1)
    n = len(fwd)
    twice = sum(1 for v in fwd.values() if len(v) == 2)
    assert all(len(v) <= 2 for v in fwd.values())
    lo, hi = binom_interval(n, dup)
    assert lo <= twice <= hi, f"{twice} of {n} arrived twice; 99.9 % [{lo:.0f}, {hi:.0f}]"
    # the link copies any frame (a host's IPv6 chatter too), and the captures start and
    # stop a little apart from the probe
    _, prober, _ = udp(d, tail_s=0)
    w2e = meta["link"]["w2e"]
    others = w2e["arrivals"] - prober["sent"]
    assert twice <= w2e["duplicated"] <= twice + others + 2, (w2e, twice, prober)
    # r1 echoes both copies: the prober sees them as duplicates
    assert abs(prober["duplicates"] - twice) <= 2, (prober, twice)


def test_corrupted_datagrams_are_dropped_by_the_receivers_checksum(tmp_path, no_leaks):
    """One bit flipped per corrupted frame; the UDP checksum (or IP's, or the Ethernet
    destination) makes r1 drop it, unless the bit is in a place nothing checks: the source
    MAC (48 bits) or the destination's multicast bit. r1 echoes what it accepts, so the
    link's released frames minus r1's echoes is what r1 dropped."""
    c = 0.05
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "10ms"\ncorrupt = "5%"',
                             interval="5ms", duration="6s"), tmp_path)
    _, prober, echo = udp(d, tail_s=0)
    w2e = meta["link"]["w2e"]
    k, n = w2e["corrupted"], w2e["released"]
    lo, hi = binom_interval(prober["sent"], c)
    assert lo <= k <= hi, f"{k} corrupted of {prober['sent']}"
    dropped = n - echo["echoed"]
    q = 1 - 49 / (8 * UDP_FRAME)
    lo, hi = binom_interval(k, q)
    assert lo <= dropped <= k, f"r1 dropped {dropped} of {k} corrupted (want ≥ {lo:.0f})"


def test_corrupted_tcp_segments_are_resent(tmp_path, no_leaks):
    """A TCP segment with a flipped bit is dropped by the receiver (its checksum, which
    the link completed before the flip and left to the receiver to verify), so the
    sender resends it: every corrupted data segment costs a retransmission. Nothing else
    drops here (no loss, a buffer the flow cannot fill)."""
    meta, d = _one(udp_study('rate = "10mbit"\ndelay = "5ms"\nbuffer = "2000p"\n'
                             'corrupt = "2%"', interval="50ms", duration="5s",
                             flows='[[flow]]\nname = "bulk"\nfrom = "s1"\nto = "r1"\n'
                             'cc = "reno"\n'), tmp_path)
    w2e = meta["link"]["w2e"]
    assert w2e["drops_queue"] == 0 and w2e["drops_loss"] == 0, w2e
    assert w2e["corrupted"] >= 20, w2e
    ti = run_table(d, "tcpinfo")
    s = ti[ti["host"] == "s1"]
    retrans = int(s.groupby("conn")["total_retrans"].max().sum())
    # a corrupted segment the receiver kept would be acknowledged and never resent
    assert retrans >= 0.9 * w2e["corrupted"] - 3, \
        f"{retrans} retransmissions for {w2e['corrupted']} corrupted frames" 
