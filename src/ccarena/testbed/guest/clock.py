"""A guest's CLOCK_MONOTONIC against the host's (pure; unit-tested).

All namespaces share the host kernel's clock; a guest has its own. The host asks the
guest for its clock several times over the control channel: each exchange gives
(t_send, t_guest, t_recv), the host's clock before the request left and after the answer
came, and the guest's clock when it answered. Whatever the channel's delays, the guest read
its clock between t_send and t_recv, so the offset (guest - host) lies within
[t_guest - t_recv, t_guest - t_send]: the exchange with the shortest round trip bounds it
best (NTP's minimum-delay filter, Mills, RFC 5905 §10). Its midpoint is the estimate and
half its round trip the uncertainty — a bound, not a standard deviation.

Two estimates, before and after a run, give the guest clock's rate against the host's
(a guest kernel calibrates its TSC at boot; under TCG the calibration can be off by a
few parts per million); translation interpolates between them.

    estimate(samples) -> Offset
    ClockMap(before, after=None).to_guest(t_host), .to_host(t_guest), .uncertainty_ns"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Offset:
    """guest clock - host clock at host time `at_ns`, within ± uncertainty_ns."""
    offset_ns: int
    uncertainty_ns: int
    at_ns: int              # host clock at the midpoint of the exchange used
    rtt_ns: int             # its round trip
    samples: int            # exchanges it was chosen from

    def as_dict(self) -> dict:
        return asdict(self)


def estimate(samples: list[tuple[int, int, int]]) -> Offset:
    """The offset from (t_send_host, t_guest, t_recv_host) exchanges: the one with the
    shortest round trip. Exchanges whose answer came before the request left (a broken
    clock) are not used."""
    good = [(r - s, s, g, r) for s, g, r in samples if r >= s]
    if not good:
        raise ValueError("no usable clock exchange (each answer came before its request)")
    rtt, s, g, r = min(good)
    mid = s + rtt // 2
    return Offset(offset_ns=g - mid, uncertainty_ns=(rtt + 1) // 2, at_ns=mid,
                  rtt_ns=rtt, samples=len(samples))


@dataclass(frozen=True)
class ClockMap:
    """Host <-> guest times from one or two offsets."""
    before: Offset
    after: Offset | None = None

    @property
    def slope(self) -> float:
        """d(offset)/d(host time): how much faster the guest's clock runs (0 with one
        estimate)."""
        a, b = self.before, self.after
        if b is None or b.at_ns == a.at_ns:
            return 0.0
        return (b.offset_ns - a.offset_ns) / (b.at_ns - a.at_ns)

    @property
    def rate_ppm(self) -> float:
        return self.slope * 1e6

    @property
    def uncertainty_ns(self) -> int:
        """The bound on a translated time's error: the larger of the two estimates'
        (a linear interpolation between two intervals stays within the larger)."""
        return max(self.before.uncertainty_ns,
                   self.after.uncertainty_ns if self.after else 0)

    def to_guest(self, t_host):
        """Guest time at host time `t_host` (an int, or a numpy int64 array)."""
        a = self.before
        return t_host + a.offset_ns + _round(self.slope * (t_host - a.at_ns))

    def to_host(self, t_guest):
        """Host time at guest time `t_guest` (an int, or a numpy int64 array): the inverse
        of to_guest, computed on differences so nanoseconds survive float arithmetic."""
        a = self.before
        d = t_guest - (a.at_ns + a.offset_ns)
        return a.at_ns + _round(d / (1.0 + self.slope))

    @property
    def rate_bound_ppm(self) -> float | None:
        """How far the rate may be off: a rate within ± this of 0 is no measured drift."""
        a, b = self.before, self.after
        if b is None or b.at_ns == a.at_ns:
            return None
        return (a.uncertainty_ns + b.uncertainty_ns) / abs(b.at_ns - a.at_ns) * 1e6

    def as_dict(self) -> dict:
        bound = self.rate_bound_ppm
        return {"before": self.before.as_dict(),
                "after": self.after.as_dict() if self.after else None,
                "rate_ppm": round(self.rate_ppm, 3),
                "rate_bound_ppm": round(bound, 3) if bound is not None else None,
                "uncertainty_ns": self.uncertainty_ns}


def _round(x):
    """Round a float, or a numpy array of floats, to int64 nanoseconds."""
    if hasattr(x, "astype"):
        import numpy as np
        return np.rint(x).astype("int64")
    return int(round(x))
