"""Helpers for test_cc_signatures.py: small studies through the user-space link, and the
per-ACK (tcp_probe) and TCP_INFO traces cut into what a congestion-control paper talks
about — window reductions, congestion-avoidance epochs, growth per RTT."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

MSS = 1448                 # TCP payload of a full segment (1500 MTU, timestamps on)
FRAME = 1514               # the frame the link's rate counts
PAYLOAD_SHARE = MSS / FRAME
OPEN, CWR, RECOVERY, LOSS = 0, 2, 3, 4
ABSURD = 1 << 24           # a window above this is the kernel fault the BPF guard repairs


def study_text(bottleneck: str, flows: str, *, name="sig", duration="10s", warmup="2s",
               tcp: str = "", sweep: str = "", trace=True, pairs=1) -> str:
    """One study: a user-space-link dumbbell with `bottleneck` (TOML lines), `flows`
    ([[flow]] tables), optionally a tcp_probe trace of every sender and a sweep.
    reruns = 0: the one attempt is what the test judges (`check_valid`), never a second
    try that the noise re-run would give."""
    text = textwrap.dedent(f'''
        [study]
        name = "{name}"
        duration = "{duration}"
        warmup = "{warmup}"
        repetitions = 1
        reruns = 0
        seed = 7
        [topology]
        pairs = {pairs}
        [bottleneck]
        backend = "user"
        ''') + textwrap.dedent(bottleneck).strip() + "\n"
    if tcp:
        text += "[tcp]\n" + textwrap.dedent(tcp).strip() + "\n"
    text += textwrap.dedent(flows).strip() + "\n"
    if trace:
        text += '[[probe]]\nkind = "tcp_probe"\nhosts = [' + ", ".join(
            f'"s{i + 1}"' for i in range(pairs)) + "]\n"
    if sweep:
        text += "[sweep]\n" + textwrap.dedent(sweep).strip() + "\n"
    return text


def bulk(cc: str, name="bulk", src="s1", dst="r1", extra="") -> str:
    return (f'[[flow]]\nname = "{name}"\nfrom = "{src}"\nto = "{dst}"\ncc = "{cc}"\n'
            + textwrap.dedent(extra).strip() + "\n")


def run(text: str, tmp_path, force_cc="bpf"):
    """Run a study; the BPF pack's algorithms by default (force_cc="bpf": `reno` is
    cca_reno, a kernel module of the same name is never chosen instead)."""
    return run_study(loads_study(text), results_base=tmp_path, progress=False,
                     force_cc=force_cc)


# Why a run may be invalid and still judged: the machine's timing noise. The link released
# packets late, or the hypervisor stole CPU time from the machine (which shows as late
# releases, late ACKs and late samples): either delays the events an algorithm reacts to;
# neither changes the reaction (a ratio at a reduction, growth per *measured* RTT, the
# link's own queue counts), so a check built on those cannot pass falsely. Every other
# reason (a failed process, another algorithm than asked, a late guard repair, lost trace
# events, missed sampling ticks) means the run did not measure what it claims.
LATE = "released late"
STEAL = "CPU steal"


def check_valid(meta: dict, tolerate=(LATE, STEAL)):
    """Assert the run is valid, apart from the reasons in `tolerate`."""
    bad = [r for r in meta["invalid_reasons"] if not any(t in r for t in tolerate)]
    assert not bad, f"invalid run: {bad} {note(meta)}"


def runs_by_cc(res, flow=0) -> dict[str, dict]:
    """{cc of flow `flow`: meta} over the study's runs (a sweep over flow.<name>.cc)."""
    out = {}
    for d in res.run_dirs():
        meta = res.run_meta(d)
        meta["_dir"] = d
        out[meta["flows"][flow]["cc"]] = meta
    return out


def table(meta: dict, name: str) -> pd.DataFrame:
    p = meta["_dir"] / f"{name}.parquet"
    return pd.read_parquet(p) if p.exists() else pd.DataFrame()


def flow_metrics(meta: dict) -> pd.DataFrame:
    f = pd.read_parquet(meta["_dir"] / "flow_metrics.parquet")
    return f[f["conn"] == -1].set_index("flow") if "conn" in f else f.set_index("flow")


def run_metrics(meta: dict) -> dict:
    """The run's metrics (docs/metrics.md, per-run), e.g. the link's queue occupancy."""
    import json
    return json.loads((meta["_dir"] / "metrics.json").read_text())


def note(meta: dict) -> str:
    """What to print with a failed assertion: the run's validity and the machine's state."""
    return (f"[run {meta['label']} cc={[f['cc_kernel'] for f in meta['flows']]} "
            f"valid={meta['valid']} {meta['invalid_reasons']} "
            f"cpu={meta.get('cpu', {})} repairs={meta.get('cc_repairs')}]")


def sender_trace(meta: dict, flow=0) -> pd.DataFrame:
    """The data sender's socket of flow `flow` in the per-ACK trace (one row per ACK, the
    values *before* that ACK is processed), time-ordered."""
    tr = table(meta, "tcpprobe")
    tr = tr[tr["dport"] == 5000 + flow]
    return tr.sort_values("t_ns", kind="stable").reset_index(drop=True)


def reductions(tr: pd.DataFrame, min_cwnd=8) -> pd.DataFrame:
    """Every entry into CWR / Recovery / Loss: t, the window just before (w), the
    ssthresh chosen (ssthresh), ratio = ssthresh / w, the srtt before, the state.
    Entries whose values are the kernel fault the BPF guard repairs (> 2^24) are left
    out (docs/algorithms.md, Known issue), as are windows below `min_cwnd` (rounding)."""
    st = tr["ca_state"].to_numpy()
    cw = tr["snd_cwnd"].to_numpy().astype(float)
    ss = tr["ssthresh"].to_numpy().astype(float)
    idx = np.flatnonzero((st[1:] >= CWR) & (st[:-1] < CWR)) + 1
    rows = []
    for i in idx:
        w, s = cw[i - 1], ss[i]
        if w >= ABSURD or s >= ABSURD or w < min_cwnd:
            continue
        rows.append(_event(tr, i, w, s))
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


EVENT_COLUMNS = ["i", "t", "w", "ssthresh", "ratio", "srtt_s", "state"]


def _event(tr: pd.DataFrame, i: int, w: float, s: float) -> dict:
    """One congestion event at row i: the window the ssthresh call saw, its result."""
    return {"i": i, "t": tr["t"].iat[i], "w": w, "ssthresh": s, "ratio": s / w,
            "srtt_s": tr["srtt_us"].iat[i - 1] / 1e6, "state": tr["ca_state"].iat[i]}


def congestion_events(tr: pd.DataFrame, min_cwnd=8) -> pd.DataFrame:
    """Every call of the algorithm's ssthresh, as `reductions` gives them plus those the
    state column cannot show: an ACK that ends a recovery and finds new losses (packets
    sent during the recovery) leaves Recovery and enters it again within one ACK, so no
    sample is Open; only the lower ssthresh betrays the second congestion event. The
    kernel set cwnd to the old ssthresh when the first recovery ended
    (tcp_end_cwnd_reduction), so that is the window the second call saw. A recovery
    escalating to Loss (an RTO) calls ssthresh with the window it had (the sample before)."""
    st = tr["ca_state"].to_numpy()
    cw = tr["snd_cwnd"].to_numpy().astype(float)
    ss = tr["ssthresh"].to_numpy().astype(float)
    rows = reductions(tr, min_cwnd).to_dict("records")
    idx = np.flatnonzero((st[1:] >= CWR) & (st[:-1] >= CWR) & (ss[1:] < ss[:-1])) + 1
    for i in idx:
        if ss[i - 1] >= ABSURD or ss[i] >= ABSURD:
            continue
        w = ss[i - 1] if st[i] == st[i - 1] else cw[i - 1]
        if w < min_cwnd:
            continue
        rows.append(_event(tr, i, w, ss[i]))
    out = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    return out.sort_values("i", kind="stable").reset_index(drop=True)


def ca_epochs(tr: pd.DataFrame, t_from=1.0, min_s=0.5) -> list[pd.DataFrame]:
    """Stretches of congestion avoidance (state Open, cwnd >= ssthresh) after `t_from`,
    at least `min_s` long, each with `since` = time since the reduction that began it."""
    st = tr["ca_state"].to_numpy()
    ca = ((st == OPEN) & (tr["snd_cwnd"].to_numpy() >= tr["ssthresh"].to_numpy())
          & (tr["t"].to_numpy() > t_from))
    red = tr["t"].to_numpy()[np.flatnonzero((st[1:] >= CWR) & (st[:-1] < CWR)) + 1]
    out = []
    edges = np.flatnonzero(np.diff(ca.astype(int)) != 0) + 1
    for seg in np.split(np.arange(len(ca)), edges):
        if not len(seg) or not ca[seg[0]]:
            continue
        e = tr.iloc[seg].copy()
        if e["t"].iat[-1] - e["t"].iat[0] < min_s:
            continue
        before = red[red <= e["t"].iat[0]]
        e["since"] = e["t"] - (before[-1] if len(before) else np.nan)
        out.append(e)
    return out


def per_rtt_increase(e: pd.DataFrame) -> float:
    """Window growth per RTT over a stretch: slope of cwnd against time (segments per
    second) times the mean srtt of the stretch."""
    if len(e) < 10 or e["t"].iat[-1] - e["t"].iat[0] <= 0:
        return float("nan")
    slope = np.polyfit(e["t"].to_numpy(), e["snd_cwnd"].to_numpy().astype(float), 1)[0]
    return float(slope * e["srtt_us"].mean() / 1e6)


def queue_pkts(ti: pd.DataFrame, rate_bps: float) -> pd.Series:
    """Packets a flow keeps queued, from TCP_INFO: (srtt - min_rtt) / time of one frame."""
    return (ti["srtt_us"] - ti["min_rtt_us"]) / 1e6 / (FRAME * 8 / rate_bps)
