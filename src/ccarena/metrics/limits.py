"""What limited a flow, judged from what its TCP_INFO samples show.

Contract:
- `judge(samples) -> ndarray of labels`: one label per sample (row), from that sample's
  own numbers, or None where they cannot say (no MSS or cwnd yet).
- `summarise(samples, keys) -> DataFrame`: per group (flow, or flow and connection) the
  fraction of samples under each label, the label of most of them (`limited_by`) and the
  numbers that show it (medians over the samples with that label), `limit_evidence` as
  one line ("sndbuf: nothing unsent, 4.0 MiB queued in a 4.0 MiB send buffer; ...").
- `kernel_opinion(fdf, col)`: the kernel's own accounting (tcp_chrono: busy, rwnd- and
  sndbuf-limited time) as a second opinion, `kernel_*` columns, and `limit_disagrees`.
Pure: DataFrames in, DataFrames out; missing columns give None labels, never exceptions.

Per sample, with in flight = unacked − sacked − lost + retrans (Linux's
tcp_packets_in_flight), outstanding bytes = unacked × mss (snd_nxt − snd_una), unsent =
notsent_bytes, and the send buffer = sndbuf with wmem_queued bytes charged to it:
  rwnd    outstanding bytes fill the peer's advertised window (snd_wnd): the sender may
          not send past snd_una + snd_wnd (RFC 9293 §3.8.6.2.1, tcp_snd_wnd_test);
  cwnd    in flight fills the congestion window (tcp_cwnd_test), or the sender is in a
          loss or ECN response (CA state CWR, Recovery, Loss) with data waiting;
  pacing  data waits unsent while neither window is full: the sender's own pacing (BBR)
          or segment deferral holds it;
  sndbuf  nothing waits unsent and the send buffer is full: all the application could
          write is in flight, and the buffer (tcp_wmem / SO_SNDBUF) keeps it from writing
          more;
  app     nothing waits unsent and the buffer has room: the application had nothing more
          to send.
The order matters where two hold at once: a full window stops the sender whatever else
holds, and unsent data means the buffer was not what kept the data back.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

LIMITS = ("cwnd", "rwnd", "sndbuf", "pacing", "app")
# A window is full when in flight reaches this share of it, or comes within WINDOW_SLACK
# segments: a sample lands between an ACK opening room and the sender filling it, and a
# small window moves in whole segments.
WINDOW_FULL = 0.9
WINDOW_SLACK_SEGS = 2
# The send buffer is full above this share: a non-blocking writer is woken (EPOLLOUT)
# only once a third of the buffer is free (sk_stream_min_wspace = wmem_queued / 2), so a
# writer held back by its buffer keeps it between about 2/3 and full; half leaves room
# for the writer's wake-up latency.
SNDBUF_FULL = 0.5
# Data "waits unsent" beyond this many segments' worth (a partial segment held for
# coalescing is not waiting).
UNSENT_SEGS = 2
# CA states of a congestion response (include/net/tcp.h: TCP_CA_CWR, Recovery, Loss).
RESPONSE_STATES = (2, 3, 4)


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    return df[name].to_numpy(float) if name in df else np.full(len(df), np.nan)


def sample_numbers(df: pd.DataFrame) -> pd.DataFrame:
    """The per-sample quantities the judgement uses (NaN where a column is missing)."""
    mss = _col(df, "mss")
    mss = np.where(mss > 0, mss, np.nan)
    unacked = _col(df, "unacked")
    lost, sacked, retrans = (np.nan_to_num(_col(df, c)) for c in ("lost", "sacked", "retrans"))
    sndbuf = _col(df, "sndbuf")
    return pd.DataFrame({
        "mss": mss,
        "cwnd": np.where(_col(df, "cwnd") > 0, _col(df, "cwnd"), np.nan),
        "inflight": np.maximum(unacked - sacked - lost + retrans, 0.0),
        "outstanding": unacked * mss,
        "snd_wnd": _col(df, "snd_wnd"),
        "unsent": _col(df, "notsent_bytes"),
        "sndbuf": np.where(sndbuf > 0, sndbuf, np.nan),   # 0: the kernel did not say
        "queued": _col(df, "wmem_queued"),
        "ca_state": _col(df, "ca_state"),
    }, index=df.index)


def _full(x: np.ndarray, limit: np.ndarray, seg: np.ndarray | float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return x >= limit - np.maximum((1 - WINDOW_FULL) * limit, WINDOW_SLACK_SEGS * seg)


def judge(df: pd.DataFrame) -> np.ndarray:
    """One label (LIMITS) per sample, or None where the sample cannot say."""
    n = sample_numbers(df)
    known = ~np.isnan(n["mss"].to_numpy()) & ~np.isnan(n["cwnd"].to_numpy()) \
        & ~np.isnan(n["inflight"].to_numpy())
    mss = n["mss"].to_numpy()
    with np.errstate(invalid="ignore"):
        rwnd = _full(n["outstanding"].to_numpy(), n["snd_wnd"].to_numpy(), mss) \
            & (n["snd_wnd"].to_numpy() >= 0)
        waiting = n["unsent"].to_numpy() > UNSENT_SEGS * mss
        buf_full = n["queued"].to_numpy() >= SNDBUF_FULL * n["sndbuf"].to_numpy()
        buf_known = ~np.isnan(n["sndbuf"].to_numpy()) & ~np.isnan(n["queued"].to_numpy())
        response = np.isin(n["ca_state"].to_numpy(), RESPONSE_STATES)
        cwnd = _full(n["inflight"].to_numpy(), n["cwnd"].to_numpy(), 1.0) \
            | (response & (waiting | buf_full))
    # the unsent count is needed for every label after the windows
    unsent_known = ~np.isnan(n["unsent"].to_numpy())
    conds = [rwnd, cwnd, unsent_known & waiting,
             unsent_known & ~waiting & buf_known & buf_full,
             unsent_known & ~waiting & buf_known & ~buf_full]
    out = np.select(conds, ["rwnd", "cwnd", "pacing", "sndbuf", "app"], default="")
    out = out.astype(object)
    out[(out == "") | ~known] = None
    return out


def summarise(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of `keys`: <label>_limited_frac for each label (the share of the group's
    samples), limited_by, limited_frac, the evidence numbers and limit_evidence."""
    if not len(df):
        return pd.DataFrame(columns=keys).set_index(keys)
    n = sample_numbers(df)
    n["label"] = judge(df)
    for k in keys:
        n[k] = df[k].to_numpy()
    g = n.groupby(keys, sort=True)
    total = g.size()
    out = pd.DataFrame(index=total.index)
    counts = n.dropna(subset=["label"]).groupby(keys + ["label"]).size().unstack(fill_value=0)
    for lab in LIMITS:
        c = counts[lab] if lab in counts else pd.Series(0, index=counts.index, dtype=float)
        out[f"{lab}_limited_frac"] = (c.reindex(total.index).fillna(0) / total).astype(float)
    fr = out[[f"{k}_limited_frac" for k in LIMITS]].to_numpy()
    best = fr.argmax(axis=1)
    some = fr.max(axis=1) > 0
    out["limited_by"] = [LIMITS[i] if ok else None for i, ok in zip(best, some)]
    out["limited_frac"] = np.where(some, fr.max(axis=1), np.nan)
    # the evidence: medians over the samples of the group's own label
    ev = n[n["label"].notna()]
    ev = ev.merge(out["limited_by"].reset_index(), on=keys)
    ev = ev[ev["label"] == ev["limited_by"]]
    cols = {"inflight": "limit_inflight_pkts", "cwnd": "limit_cwnd_pkts",
            "outstanding": "limit_outstanding_bytes", "snd_wnd": "limit_snd_wnd_bytes",
            "unsent": "limit_unsent_bytes", "sndbuf": "limit_sndbuf_bytes",
            "queued": "limit_queued_bytes", "mss": "limit_mss"}
    med = ev.groupby(keys)[list(cols)].median().rename(columns=cols)
    med["limit_inflight_max_pkts"] = ev.groupby(keys)["inflight"].max()
    med["limit_response_frac"] = ev.groupby(keys)["ca_state"].agg(
        lambda s: float(np.isin(s.to_numpy(), RESPONSE_STATES).mean()))
    out = out.join(med)
    out["limit_evidence"] = [evidence(r) for r in out.to_dict("records")]
    return out


def _size(b) -> str:
    """Bytes as people read a buffer size: 4.0 MiB, 512 KiB, 900 B."""
    if b is None or not np.isfinite(b):
        return "?"
    for unit, k in (("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            v = b / k
            return f"{v:.1f} {unit}" if v < 100 else f"{v:,.0f} {unit}"
    return f"{b:.0f} B"


def _segs(x) -> str:
    return f"{x:,.0f}" if x is not None and np.isfinite(x) else "?"


def evidence(r: dict) -> str | None:
    """One line with the numbers that show the limit (medians over its samples)."""
    lab = r.get("limited_by")
    if not lab:
        return None
    share = f"{r.get('limited_frac', np.nan):.0%} of samples"
    inflight, cwnd = r.get("limit_inflight_pkts"), r.get("limit_cwnd_pkts")
    if lab == "cwnd":
        resp = r.get("limit_response_frac") or 0.0
        tail = f"; in loss/ECN response {resp:.0%} of them" if resp >= 0.05 else ""
        return f"cwnd: {_segs(inflight)} segments in flight ≈ {_segs(cwnd)}-segment cwnd " \
               f"({share}{tail})"
    if lab == "rwnd":
        return f"rwnd: {_size(r.get('limit_outstanding_bytes'))} outstanding = " \
               f"{_size(r.get('limit_snd_wnd_bytes'))} peer window ({share}; cwnd " \
               f"{_segs(cwnd)} segments)"
    if lab == "sndbuf":
        top = r.get("limit_inflight_max_pkts")
        mss = r.get("limit_mss") or np.nan
        return f"sndbuf: nothing unsent, {_size(r.get('limit_queued_bytes'))} queued in a " \
               f"{_size(r.get('limit_sndbuf_bytes'))} send buffer; {_segs(inflight)} " \
               f"segments in flight (up to {_segs(top)}, {_size(top * mss)}) of a " \
               f"{_segs(cwnd)}-segment cwnd ({share})"
    if lab == "pacing":
        return f"pacing: {_size(r.get('limit_unsent_bytes'))} unsent while " \
               f"{_segs(inflight)} of a {_segs(cwnd)}-segment cwnd in flight ({share})"
    q, b = r.get("limit_queued_bytes"), r.get("limit_sndbuf_bytes")
    fill = f", send buffer {q / b:.0%} full" if q is not None and b and np.isfinite(q / b) \
        else ""
    return f"app: nothing unsent, {_segs(inflight)} of a {_segs(cwnd)}-segment cwnd in " \
           f"flight{fill} ({share})"


# -- the kernel's own accounting, as a second opinion -------------------------------------
KERNEL_LIMITS = ("cwnd", "rwnd", "sndbuf", "app")
# The kernel cannot tell pacing from cwnd (both are "busy"): they agree with its "cwnd".
_SAME = {"pacing": "cwnd"}


def kernel_opinion(fdf: pd.DataFrame, col) -> pd.DataFrame:
    """Fractions of the flow's window the kernel's tcp_chrono accounting (TCP_INFO
    busy_time, rwnd_limited, sndbuf_limited) gives each limit, Δcounter / (connections ×
    window): kernel_rwnd_limited_frac, kernel_sndbuf_limited_frac, kernel_cwnd_limited_frac
    (busy otherwise), kernel_app_limited_frac (not busy); kernel_limited_by names the
    largest, and limit_disagrees is 1.0 where it names another limit than the samples.
    The chrono counts sndbuf-limited time only while the writer sleeps on a full buffer
    (SOCK_NOSPACE) after a send left nothing unsent, so a non-blocking writer that keeps
    its buffer full shows as busy, i.e. "cwnd": a second opinion, not the judgement."""
    span = fdf["window_s"].astype(float) * 1e6 * fdf["n_conns"].clip(lower=1).astype(float)
    span = span.where(span > 0)
    busy, rw, sb = col("busy_us"), col("rwnd_limited_us"), col("sndbuf_limited_us")
    fdf["kernel_rwnd_limited_frac"] = (rw / span).clip(0, 1)
    fdf["kernel_sndbuf_limited_frac"] = (sb / span).clip(0, 1)
    fdf["kernel_cwnd_limited_frac"] = ((busy - rw - sb) / span).clip(0, 1)
    fdf["kernel_app_limited_frac"] = (1 - busy / span).clip(0, 1)
    fr = fdf[[f"kernel_{k}_limited_frac" for k in KERNEL_LIMITS]]
    best = fr.fillna(-1).to_numpy().argmax(axis=1)
    has = fr.notna().any(axis=1).to_numpy()
    fdf["kernel_limited_by"] = [KERNEL_LIMITS[i] if h else None for i, h in zip(best, has)]
    ours = fdf["limited_by"] if "limited_by" in fdf else pd.Series(None, index=fdf.index)
    fdf["limit_disagrees"] = [
        float(_SAME.get(a, a) != b) if isinstance(a, str) and isinstance(b, str) else np.nan
        for a, b in zip(ours, fdf["kernel_limited_by"])]
    if "limit_evidence" in fdf:
        kfr = fr.max(axis=1).to_numpy()
        fdf["limit_evidence"] = [
            f"{e}; the kernel's counters say {k} {f:.0%}" if d == 1.0 and isinstance(e, str)
            else e for e, d, k, f in zip(fdf["limit_evidence"], fdf["limit_disagrees"],
                                         fdf["kernel_limited_by"], kfr)]
    return fdf
