"""What limited a flow, judged per TCP_INFO sample (metrics/limits.py), on sample tables
made by hand: each row is one sample whose label follows from its own numbers."""
import math

import numpy as np
import pandas as pd
import pytest

from ccarena.metrics.limits import evidence, judge, kernel_opinion, summarise

MSS = 1448
MiB = 2**20


def sample(**kw):
    """One sample: a sender with room everywhere and nothing to send, unless kw says."""
    base = {"mss": MSS, "cwnd": 100, "unacked": 10, "sacked": 0, "lost": 0, "retrans": 0,
            "snd_wnd": 8 * MiB, "notsent_bytes": 0, "sndbuf": 4 * MiB, "wmem_queued": 20_000,
            "ca_state": 0}
    base.update(kw)
    return base


def label(**kw):
    return judge(pd.DataFrame([sample(**kw)]))[0]


def test_room_everywhere_and_nothing_unsent_is_the_application():
    assert label() == "app"


@pytest.mark.parametrize("inflight, cwnd, want", [
    (100, 100, "cwnd"),          # the window is full
    (90, 100, "cwnd"),           # within 10 %: a sample between an ACK and the refill
    (89, 100, "pacing"),         # below: data waits, no window is full
    (8, 10, "cwnd"),             # a small window: within two segments
    (7, 10, "pacing"),
])
def test_in_flight_filling_cwnd_with_data_waiting_is_cwnd(inflight, cwnd, want):
    assert label(unacked=inflight, cwnd=cwnd, notsent_bytes=500_000,
                 wmem_queued=4 * MiB) == want


def test_in_flight_counts_as_linux_does_sacked_and_lost_out_retransmitted_in():
    # tcp_packets_in_flight = packets_out - (sacked_out + lost_out) + retrans_out = 75
    kw = dict(unacked=100, sacked=20, lost=10, retrans=5, notsent_bytes=500_000)
    assert label(cwnd=75, **kw) == "cwnd"
    assert label(cwnd=100, **kw) == "pacing"


@pytest.mark.parametrize("unacked, snd_wnd, want", [
    (100, 100 * MSS, "rwnd"),             # outstanding bytes fill the peer's window
    (95, 100 * MSS, "rwnd"),
    (80, 100 * MSS, "pacing"),
    (3, 0, "rwnd"),                        # a zero window
])
def test_outstanding_bytes_filling_the_peers_window_is_rwnd(unacked, snd_wnd, want):
    assert label(unacked=unacked, cwnd=1000, snd_wnd=snd_wnd, notsent_bytes=1 * MiB,
                 wmem_queued=3 * MiB) == want


def test_a_full_peer_window_comes_before_a_full_cwnd():
    assert label(unacked=100, cwnd=100, snd_wnd=100 * MSS, notsent_bytes=MiB) == "rwnd"


@pytest.mark.parametrize("queued, want", [
    (4 * MiB, "sndbuf"),             # full
    (int(0.6 * 4 * MiB), "sndbuf"),  # at the writer's wake-up mark (2/3) less its latency
    (int(0.4 * 4 * MiB), "app"),     # room in the buffer: the application wrote no more
])
def test_nothing_unsent_and_a_full_send_buffer_is_sndbuf(queued, want):
    # the case: 2,898 segments in flight of a 6,024-segment cwnd, nothing unsent
    assert label(unacked=2898, cwnd=6024, snd_wnd=6 * MiB, notsent_bytes=0,
                 wmem_queued=queued) == want


def test_a_partial_segment_held_back_is_not_data_waiting():
    assert label(unacked=2898, cwnd=6024, notsent_bytes=2 * MSS,
                 wmem_queued=4 * MiB) == "sndbuf"
    assert label(unacked=2898, cwnd=6024, notsent_bytes=2 * MSS + 1,
                 wmem_queued=4 * MiB) == "pacing"


@pytest.mark.parametrize("state, unsent, queued, want", [
    (3, MiB, 4 * MiB, "cwnd"),       # Recovery with data waiting: the loss response
    (4, 0, 4 * MiB, "cwnd"),         # Loss, buffer full
    (2, MiB, 4 * MiB, "cwnd"),       # CWR (ECN)
    (1, MiB, 4 * MiB, "pacing"),     # Disorder is no response
    (3, 0, 20_000, "app"),           # in Recovery with nothing to send: the application
])
def test_a_congestion_response_with_data_waiting_is_cwnd(state, unsent, queued, want):
    assert label(unacked=40, cwnd=100, ca_state=state, notsent_bytes=unsent,
                 wmem_queued=queued) == want


def test_a_sample_that_cannot_say_has_no_label():
    assert label(mss=0) is None                      # not established
    assert label(cwnd=0) is None
    assert label(sndbuf=0) is None                   # nothing unsent, buffer unknown
    assert label(sndbuf=0, notsent_bytes=MiB) == "pacing"   # the windows still say
    no_buf = pd.DataFrame([sample()]).drop(columns=["sndbuf", "wmem_queued"])
    assert judge(no_buf)[0] is None                  # records from before SO_MEMINFO
    assert judge(pd.DataFrame([sample()]).drop(columns=["unacked"]))[0] is None


def table(rows):
    return pd.DataFrame([{"flow": f, "conn": c, **sample(**kw)} for f, c, kw in rows])


def test_summary_counts_labels_and_takes_evidence_from_the_majoritys_samples():
    rows = [(0, 0, dict(unacked=2898, cwnd=6024, wmem_queued=4 * MiB))] * 6 \
        + [(0, 0, dict(unacked=2500, cwnd=6024, wmem_queued=3 * MiB))] * 2 \
        + [(0, 0, dict(unacked=100, cwnd=100, notsent_bytes=MiB))] * 2 \
        + [(1, 0, dict(unacked=30, cwnd=100))] * 4
    s = summarise(table(rows), ["flow"])
    a = s.loc[0]
    assert a.limited_by == "sndbuf" and a.sndbuf_limited_frac == pytest.approx(0.8)
    assert a.cwnd_limited_frac == pytest.approx(0.2) and a.app_limited_frac == 0
    assert a.limited_frac == pytest.approx(0.8)
    # medians and maximum over the 8 sndbuf samples only, not the cwnd ones
    assert a.limit_inflight_pkts == 2898 and a.limit_inflight_max_pkts == 2898
    assert a.limit_cwnd_pkts == 6024 and a.limit_sndbuf_bytes == 4 * MiB
    assert a.limit_evidence == ("sndbuf: nothing unsent, 4.0 MiB queued in a 4.0 MiB send "
                                "buffer; 2,898 segments in flight (up to 2,898, 4.0 MiB) of "
                                "a 6,024-segment cwnd (80% of samples)")
    b = s.loc[1]
    assert b.limited_by == "app" and b.app_limited_frac == 1.0
    assert b.limit_evidence == ("app: nothing unsent, 30 of a 100-segment cwnd in flight, "
                                "send buffer 0% full (100% of samples)")


def test_undetermined_samples_count_against_every_label():
    rows = [(0, 0, dict(mss=0))] * 3 + [(0, 0, dict(unacked=100, notsent_bytes=MiB))]
    a = summarise(table(rows), ["flow"]).loc[0]
    assert a.limited_by == "cwnd" and a.cwnd_limited_frac == pytest.approx(0.25)
    none = summarise(table([(0, 0, dict(mss=0))] * 2), ["flow"]).loc[0]
    assert none.limited_by is None and math.isnan(none.limited_frac)
    assert none.limit_evidence is None


@pytest.mark.parametrize("r, text", [
    ({"limited_by": "cwnd", "limited_frac": 0.9, "limit_inflight_pkts": 312,
      "limit_cwnd_pkts": 320, "limit_response_frac": 0.25},
     "cwnd: 312 segments in flight ≈ 320-segment cwnd (90% of samples; in loss/ECN "
     "response 25% of them)"),
    ({"limited_by": "rwnd", "limited_frac": 1.0, "limit_outstanding_bytes": 3 * MiB,
      "limit_snd_wnd_bytes": 3 * MiB, "limit_cwnd_pkts": 4000},
     "rwnd: 3.0 MiB outstanding = 3.0 MiB peer window (100% of samples; cwnd 4,000 segments)"),
    ({"limited_by": "pacing", "limited_frac": 0.7, "limit_unsent_bytes": 512 * 1024,
      "limit_inflight_pkts": 200, "limit_cwnd_pkts": 400},
     "pacing: 512 KiB unsent while 200 of a 400-segment cwnd in flight (70% of samples)"),
])
def test_evidence_lines(r, text):
    assert evidence(r) == text


def test_the_kernels_opinion_agrees_disagrees_or_cannot_say():
    f = pd.DataFrame({"window_s": [8.0, 8.0, 8.0, 8.0], "n_conns": [1, 1, 1, 1],
                      "limited_by": ["sndbuf", "pacing", "rwnd", None],
                      "limit_evidence": ["sndbuf: x", "pacing: y", "rwnd: z", None]})
    busy = pd.Series([8e6, 8e6, 8e6, 8e6])
    rw = pd.Series([0.0, 0.0, 6e6, 0.0])
    cols = {"busy_us": busy, "rwnd_limited_us": rw, "sndbuf_limited_us": pd.Series(0.0,
                                                                                  index=rw.index)}
    out = kernel_opinion(f, lambda c: cols[c])
    assert list(out["kernel_limited_by"]) == ["cwnd", "cwnd", "rwnd", "cwnd"]
    # sndbuf vs the kernel's busy: flagged; pacing is "busy" to the kernel too: agrees
    assert list(out["limit_disagrees"][:3]) == [1.0, 0.0, 0.0]
    assert np.isnan(out["limit_disagrees"][3])
    assert out["limit_evidence"][0] == "sndbuf: x; the kernel's counters say cwnd 100%"
    assert out["limit_evidence"][1] == "pacing: y"


def test_per_cell_the_limit_most_valid_runs_gave_with_a_typical_runs_evidence():
    from ccarena.report.limits import flow_limits, short, show_lines
    rows = [  # cell a: three valid runs say sndbuf, one rwnd, one invalid run says app
        {"cell": "a", "name": "f", "conn": -1, "valid": True, "goodput_bps": g,
         "limited_by": lab, "limited_frac": fr, "limit_evidence": f"{lab}: run {g:g}",
         "limit_disagrees": dis, "kernel_limited_by": "cwnd"}
        for g, lab, fr, dis in ((100.0, "sndbuf", 0.9, 1.0), (300.0, "sndbuf", 0.8, 1.0),
                                (200.0, "sndbuf", 1.0, 1.0), (50.0, "rwnd", 0.6, 1.0))]
    rows.append({**rows[0], "valid": False, "limited_by": "app"})
    rows.append({**rows[0], "conn": 0, "limited_by": "app"})          # a connection row
    lim = flow_limits(pd.DataFrame(rows))
    r = lim.iloc[0].to_dict()
    assert (r["limited_by"], r["runs"], r["of"]) == ("sndbuf", 3, 4)
    assert r["share"] == pytest.approx(0.9)
    assert r["evidence"] == "sndbuf: run 200"            # the median goodput of the three
    assert r["kernel_disagrees"] == 3 and short(r) == "sndbuf 90%*"
    assert show_lines(lim, {"a": "rtt 30ms"})[1] == \
        "  [rtt 30ms] f: sndbuf: run 200 [3 of 4 runs]"
