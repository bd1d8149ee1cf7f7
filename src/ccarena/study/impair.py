"""netem's impairments as a study writes them, for every backend alike (docs/link.md,
"Impairments"; tc-netem(8)).

    DELAY_DISTRIBUTIONS                 the shapes of the jitter around the delay
    parse_loss_model(table) -> model    bottleneck.loss_model: BernoulliLoss, GilbertLoss
                                        or FourStateLoss, netem's defaults applied;
                                        ImpairError(key, reason) naming the key inside
    mean_loss(model) -> float           the long-run fraction of packets it loses
    jitter_extent_s(link) -> (below, above)   how far a delay may fall below / rise above
                                        the configured one (one way)
    random_impairments(link) -> bool    anything random on the path (loss, jitter, ...)
    record(link) -> dict                the settings, for a run's metadata
    describe(link) -> list[str]         the settings in words (dry run, `validate`)

The loss models are netem's: Gilbert-Elliott as `loss gemodel p r 1-h 1-k` (p = P(good ->
bad), r = P(bad -> good), loss_bad = 1-h and loss_good = 1-k the loss in each state;
tc's defaults r = 1 - p, loss_bad = 100 %, loss_good = 0 %), the 4-state model of S.
Salsano, F. Ludovici, A. Ordine ("Definition of a general and intuitive loss model for
packet networks and its implementation in the Netem module in the Linux kernel") as
`loss state p13 p31 p32 p23 p14` (tc's defaults p31 = 1 - p13, p32 = 0, p23 = 100 %,
p14 = 0)."""
from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass

from ccarena import units

DELAY_DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")
# how far a draw lies below and above the delay, in units of the jitter: uniform ±1;
# netem's tables hold standardised quantiles clipped to ±4 (pareto's never below -2/3,
# paretonormal's never below -1.5; crates/link/src/impair/quantile.rs)
SPREAD = {"uniform": (1.0, 1.0), "normal": (4.0, 4.0), "pareto": (2 / 3, 4.0),
          "paretonormal": (1.5, 4.0)}


class ImpairError(ValueError):
    """A bad impairment setting: `key` under bottleneck.loss_model (or ""), and why."""

    def __init__(self, key: str, reason: str):
        self.key, self.reason = key, reason
        super().__init__(f"{key}: {reason}" if key else reason)


@dataclass(frozen=True)
class BernoulliLoss:
    p: float
    kind: str = "bernoulli"


@dataclass(frozen=True)
class GilbertLoss:
    p: float               # P(good -> bad) per packet
    r: float               # P(bad -> good)
    loss_bad: float = 1.0  # netem's 1-h
    loss_good: float = 0.0  # netem's 1-k
    kind: str = "gilbert"


@dataclass(frozen=True)
class FourStateLoss:
    p13: float
    p31: float
    p32: float
    p23: float
    p14: float
    kind: str = "4state"


LossModel = BernoulliLoss | GilbertLoss | FourStateLoss
# each kind's keys: required first, then the optional ones
LOSS_MODEL_KEYS = {"bernoulli": (("p",), ()),
                   "gilbert": (("p",), ("r", "loss_bad", "loss_good")),
                   "4state": (("p13",), ("p31", "p32", "p23", "p14"))}


def _prob(t: dict, k: str, default: float | None = None) -> float:
    if k not in t:
        if default is None:
            raise ImpairError(k, "is required")
        return default
    try:
        return units.parse_fraction(t[k])
    except ValueError as e:
        raise ImpairError(k, str(e)) from None


def parse_loss_model(t) -> LossModel:
    """A `loss_model` table -> its model (ImpairError naming the key inside)."""
    if not isinstance(t, dict):
        raise ImpairError("", "expected a table such as { kind = \"gilbert\", p = \"1%\", "
                          "r = \"25%\" }")
    kind = t.get("kind")
    if kind not in LOSS_MODEL_KEYS:
        near = difflib.get_close_matches(str(kind), LOSS_MODEL_KEYS, n=1)
        raise ImpairError("kind", ("is required; " if kind is None else f"{kind!r} is not a "
                                   "loss model") + (f" (did you mean {near[0]!r}?)" if near
                                                    else "") + "; accepted: "
                          + ", ".join(LOSS_MODEL_KEYS))
    need, opt = LOSS_MODEL_KEYS[kind]
    for k in t:
        if k != "kind" and k not in need + opt:
            near = difflib.get_close_matches(str(k), need + opt, n=1)
            raise ImpairError(k, f"not a parameter of the {kind} model"
                              + (f" (did you mean {near[0]!r}?)" if near else "")
                              + "; it takes: " + ", ".join(need + opt))
    if kind == "bernoulli":
        return BernoulliLoss(_prob(t, "p"))
    if kind == "gilbert":
        p = _prob(t, "p")
        return GilbertLoss(p, _prob(t, "r", 1 - p), _prob(t, "loss_bad", 1.0),
                           _prob(t, "loss_good", 0.0))
    p13 = _prob(t, "p13")
    m = FourStateLoss(p13, _prob(t, "p31", 1 - p13), _prob(t, "p32", 0.0),
                      _prob(t, "p23", 1.0), _prob(t, "p14", 0.0))
    for a, b in (("p13", "p14"), ("p31", "p32")):
        if getattr(m, a) + getattr(m, b) > 1 + 1e-12:
            raise ImpairError(b, f"{a} + {b} = {getattr(m, a) + getattr(m, b):.4g}: the "
                              "probabilities of leaving one state add up to more than 100 %")
    return m


def mean_loss(m: LossModel | None) -> float:
    """The long-run fraction lost (the chain started as netem starts it)."""
    if m is None:
        return 0.0
    if isinstance(m, BernoulliLoss):
        return m.p
    if isinstance(m, GilbertLoss):
        return m.loss_good if m.p + m.r == 0 else (m.r * m.loss_good + m.p * m.loss_bad) \
            / (m.p + m.r)
    # 4-state: states 1 (received, gap), 2 (received, burst), 3 (lost, burst), 4 (lost,
    # isolated); balance: pi4 = p14 pi1, pi1 p13 = pi3 p31, pi2 p23 = pi3 p32
    if m.p13 == 0:
        return m.p14 / (1 + m.p14)
    if m.p31 + m.p32 == 0:
        return 1.0
    if m.p32 > 0 and m.p23 == 0:
        return 0.0
    if m.p31 == 0:
        return m.p23 / (m.p23 + m.p32)
    w1, w3, w4 = m.p31, m.p13, m.p14 * m.p31
    w2 = m.p13 * m.p32 / m.p23 if m.p32 > 0 else 0.0
    return (w3 + w4) / (w1 + w2 + w3 + w4)


def jitter_extent_s(link) -> tuple[float, float]:
    """(below, above): how far one direction's delay may lie below and above `delay`."""
    lo, hi = SPREAD[link.delay_distribution]
    return lo * link.jitter_s, hi * link.jitter_s


def random_impairments(link) -> bool:
    """Does anything random act on the path (loss of any model, jitter, reordering,
    duplication, corruption)? Such a path loses or resends by itself, whatever the CPU."""
    return bool(link.loss or link.loss_model or link.jitter_s or link.reorder
                or link.duplicate or link.corrupt)


def record(link) -> dict:
    """The impairment settings of a link, as a run's metadata stores them."""
    m = link.loss_model
    return {"reverse_delay_s": link.reverse_delay_s, "delay_distribution":
            link.delay_distribution, "delay_correlation": link.delay_correlation,
            "loss_model": asdict(m) if m is not None else None,
            "reorder": link.reorder, "reorder_correlation": link.reorder_correlation,
            "reorder_gap": link.reorder_gap, "duplicate": link.duplicate,
            "duplicate_correlation": link.duplicate_correlation, "corrupt": link.corrupt,
            "corrupt_correlation": link.corrupt_correlation}


def _pc(p: float) -> str:
    return f"{p * 100:.4g} %"


def _corr(c: float) -> str:
    return f", correlation {_pc(c)}" if c > 0 else ""


def describe_jitter(link) -> str:
    """The jitter in words where it is more than netem's plain `delay D J` ("" else)."""
    if link.jitter_s > 0 and (link.delay_distribution != "uniform" or link.delay_correlation):
        lo, hi = jitter_extent_s(link)
        return (f"delay distribution {link.delay_distribution}, jitter "
                f"{link.jitter_s * 1e3:.4g} ms{_corr(link.delay_correlation)} (each way "
                f"from {lo * 1e3:.4g} ms below to {hi * 1e3:.4g} ms above the delay)")
    return ""


def describe(link) -> list[str]:
    """Lines saying what the impairments of `link` are, for people."""
    out = [describe_jitter(link)] if describe_jitter(link) else []
    m = link.loss_model
    if m is not None:
        params = ", ".join(f"{k} {_pc(v)}" for k, v in asdict(m).items() if k != "kind")
        extra = ""
        if isinstance(m, GilbertLoss) and m.r > 0 and m.loss_bad == 1 and m.loss_good == 0:
            extra = f", bursts of {1 / m.r:.3g} packets on average"
        elif isinstance(m, FourStateLoss) and m.p31 + m.p32 > 0:
            extra = f", bursts of {1 / (m.p31 + m.p32):.3g} packets on average"
        out.append(f"loss model {m.kind}: {params} (mean loss {_pc(mean_loss(m))}{extra}; "
                   "s->r)")
    if link.reorder > 0:
        share = link.reorder / (1 + (link.reorder_gap - 1) * link.reorder)
        out.append(f"reorder {_pc(link.reorder)}{_corr(link.reorder_correlation)}, gap "
                   f"{link.reorder_gap}: {_pc(share)} of the packets sent without the delay "
                   "(s->r)")
    for k in ("duplicate", "corrupt"):
        if getattr(link, k) > 0:
            out.append(f"{k} {_pc(getattr(link, k))}{_corr(getattr(link, f'{k}_correlation'))}"
                       " (s->r)")
    return out
