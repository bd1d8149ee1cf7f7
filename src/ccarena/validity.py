"""When a run is invalid: the machine or the tools failed the experiment, not the network.

A run is flagged (never silently averaged in) when
- the hypervisor stole the CPU for more than STEAL_MAX of the run (busy time is recorded
  but not judged: a busy machine matters only when it makes the tools late, which the
  sampling-gap and link-lateness checks see directly);
- a flow engine missed more than SAMPLE_GAP_MAX of its sampling ticks;
- the user-space link lost packets in its own receive or send path, or released more than LATE_MAX of
  packets later than its tolerance (testbed/user_link.late_tolerance_ns);
- a socket ran another congestion control than the one the study asked for;
- a process failed."""
from __future__ import annotations

STEAL_MAX = 0.25
SAMPLE_GAP_MAX = 0.10
LINK_RING_DROP_MAX = 0.001
LATE_MAX = 0.02


def check_cpu(cpu: dict) -> list[str]:
    out = []
    if cpu.get("steal_frac", 0) > STEAL_MAX:
        out.append(f"CPU steal {cpu['steal_frac']:.0%} of the run (limit {STEAL_MAX:.0%})")
    return out


def check_engine(host: str, engine: dict) -> list[str]:
    n = engine.get("samples", 0) or 0
    gaps = engine.get("sample_gaps", 0) or 0
    if n and gaps / max(n, 1) > SAMPLE_GAP_MAX:
        return [f"flow engine on {host} missed {gaps} of {n} sampling ticks"]
    return []


def check_link(link: dict) -> list[str]:
    out = []
    for d, s in (link.get("directions") or {}).items() if isinstance(link.get("directions"),
                                                                      dict) else []:
        fwd = s.get("forwarded", 0) or 0
        drops = s.get("rx_ring_drops", 0) or 0
        late = s.get("late_packets", 0) or 0
        if fwd and drops / fwd > LINK_RING_DROP_MAX:
            out.append(f"link {d}: {drops} packets lost in its own receive path")
        if fwd and late / fwd > LATE_MAX:
            out.append(f"link {d}: {late} of {fwd} packets released late")
    fwd = link.get("forwarded", 0) or 0
    drops = link.get("rx_ring_drops", 0) or 0
    tx_lost = link.get("tx_errors", 0) or 0
    late = link.get("late_packets", 0) or 0
    if fwd and drops / fwd > LINK_RING_DROP_MAX:
        out.append(f"link: {drops} packets lost in its own receive path")
    # packets the kernel refused to take from the emulator (e.g. the receiving CPU's
    # backlog full for longer than the emulator waits): lost, and not by the model
    if fwd and tx_lost / fwd > LINK_RING_DROP_MAX:
        out.append(f"link: {tx_lost} packets lost in its own send path")
    if fwd and late / fwd > LATE_MAX:
        out.append(f"link: {late} of {fwd} packets released late")
    return out
