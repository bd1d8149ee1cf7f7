"""Which link backend a study gets, decided before anything is built.

kernel: htb (rate) + pfifo/bfifo (buffer) on the bottleneck ports, netem for delay, jitter
        and netem's other impairments where the kernel has it, kernel AQM qdiscs where it
        has them.
user:   ccarena-link in its own namespace: every feature but corruption of offloaded
        super-packets, exact per-packet logs.
`auto` takes the kernel when it can meet every need of the study, else the user link."""
from __future__ import annotations

from ccarena.errors import PreflightError
from ccarena.paths import find_binary
from ccarena.study.impair import BernoulliLoss, random_impairments
from ccarena.study.model import Study

KERNEL_AQM = {"red": "red", "codel": "codel", "fq_codel": "fq_codel"}


def kernel_gaps(study: Study, caps: dict) -> list[str]:
    """What the kernel backend cannot do for this study (empty: it can do everything)."""
    b = study.bottleneck
    q = caps.get("qdiscs", {})
    gaps = []
    if b.rate_bps is not None and not q.get("htb"):
        gaps.append("a rate limit needs the htb qdisc, which this kernel lacks")
    needs_netem = b.delay_s > 0 or b.reverse_delay > 0 or random_impairments(b) or any(
        h.delay_s > 0 or h.loss > 0 for h in study.hosts.values())
    if needs_netem and not caps.get("netem"):
        gaps.append("delay, jitter, loss and netem's other impairments need netem, which "
                    "this kernel lacks")
    if b.loss_model is not None and not isinstance(b.loss_model, BernoulliLoss):
        lossy = sorted(h for h, hs in study.hosts.items() if h.startswith("r") and hs.loss > 0)
        if lossy:
            gaps.append(f"bottleneck.loss_model with a loss of its own on receiver "
                        f"{', '.join(lossy)}: netem takes one loss model per port")
    if b.queue in KERNEL_AQM and not q.get(KERNEL_AQM[b.queue]):
        gaps.append(f"queue {b.queue!r} needs the {KERNEL_AQM[b.queue]} qdisc, which this "
                    "kernel lacks")
    if b.queue in ("step", "classes"):
        gaps.append(f"queue {b.queue!r} exists only in the user-space link")
    if b.trace or b.rate_schedule:
        gaps.append("a rate trace or schedule exists only in the user-space link")
    if b.ecn and b.queue == "droptail":
        gaps.append("ECN marking needs an AQM")
    return gaps


def user_gaps(study: Study) -> list[str]:
    """What the user-space link cannot do for this study (empty: it can do everything)."""
    if study.bottleneck.corrupt > 0 and study.offloads:
        return ["corruption with testbed.offloads = true: the user-space link cannot "
                "segment a corrupted super-packet (the kernel's netem does)"]
    return []


def choose(study: Study, caps: dict) -> tuple[str, str]:
    """-> (backend, why). Raises PreflightError when no backend can run the study."""
    want = study.bottleneck.backend
    gaps = kernel_gaps(study, caps)
    ugaps = user_gaps(study)
    user_bin = find_binary("ccarena-link")
    if want == "kernel":
        if gaps:
            raise PreflightError(f"{study.path}: bottleneck.backend = \"kernel\" cannot run "
                                 "this study: " + "; ".join(gaps))
        return "kernel", "asked for by the study"
    if want == "user":
        if ugaps:
            raise PreflightError(f"{study.path}: bottleneck.backend = \"user\" cannot run "
                                 "this study: " + "; ".join(ugaps))
        if not user_bin:
            raise PreflightError(f"{study.path}: bottleneck.backend = \"user\" needs "
                                 "ccarena-link, which is not built (run `make build`)")
        return "user", "asked for by the study"
    if not gaps:
        return "kernel", "the kernel has everything this study needs"
    if user_bin and not ugaps:
        return "user", "the kernel cannot: " + "; ".join(gaps)
    raise PreflightError(f"{study.path}: no link backend can run this study: the kernel "
                         "cannot (" + "; ".join(gaps) + ") and " + ("; ".join(ugaps) if ugaps
                         else "ccarena-link is not built (run `make build`)"))
