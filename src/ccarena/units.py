"""Units as people write them -> SI numbers, and SI numbers as people read them.

rate -> bit/s (int), time -> seconds (float), size -> bytes (int),
buffer -> ("packets", n) or ("bytes", n), fraction ("1%") -> float in [0, 1].
The vocabulary is tc(8)'s, so a study reads like the tc and netem commands it replaces;
a rate, time, buffer or loss needs its unit (a bare number is the classic trap: tc reads
10 as 10 bit/s or 10 us, netem reads loss 1 as 1 %). Every parser raises ValueError
saying what is accepted; the study layer adds the file and key."""
from __future__ import annotations

import difflib
import math
import re
from decimal import Decimal

_NUM = r"(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z%/µ]*)\s*$")

# The vocabulary of tc(8) ("RATES", "TIMES", "SIZES"), case-insensitive as tc reads it,
# plus the forms ccarena prints (Mbit/s). Note tc's meanings: "mbps" is megabytes per
# second, and sizes in k/kb/m/mb/g/gb are binary (1024-based).
RATE_UNITS = {
    "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024, "mibit": 1024**2, "gibit": 1024**3, "tibit": 1024**4,
    "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024, "mibps": 8 * 1024**2, "gibps": 8 * 1024**3, "tibps": 8 * 1024**4,
    "bit/s": 1, "kbit/s": 1e3, "mbit/s": 1e6, "gbit/s": 1e9, "tbit/s": 1e12,
}
TIME_UNITS = {"s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
              "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "ns": 1e-9, "nsec": 1e-9,
              "nsecs": 1e-9, "min": 60.0, "h": 3600.0}
SIZE_UNITS = {"b": 1, "byte": 1, "bytes": 1,
              "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
              "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3,
              "kbit": 1024 / 8, "mbit": 1024**2 / 8, "gbit": 1024**3 / 8}
PACKET_UNITS = {"p", "pkt", "pkts", "packet", "packets"}

_EXAMPLES = {
    "rate": "'10mbit', '1gbit', '500kbit' or '10Mbit/s'",
    "time": "'20ms', '1.5s', '250us'",
    "size": "'174KiB', '1MB', '1500' (bytes)",
    "buffer": "'100p' (packets) or '150KB' (bytes)",
    "fraction": "'1%' or '0.5%' (per cent)",
}
_HINTS = {   # units people write that mean something else, or nothing, here
    "time": {"m": "'m' is not a time unit: write 'ms' (milliseconds) or 'min' (minutes)",
             "sec.": "write 's'"},
    "rate": {"b/s": "write 'bit/s' (bits) or 'bps' (bytes per second, as tc reads it)"},
}


def _split(text, what: str, bare_ok: bool = False):
    """-> (number, unit in lower case). A bare number is refused unless `bare_ok` or it
    is zero (zero is zero in every unit)."""
    if isinstance(text, bool):
        raise ValueError(f"expected a {what} such as {_EXAMPLES[what]}, got a boolean")
    if isinstance(text, (int, float)):
        if bare_ok or text == 0:
            return float(text), ""
        raise ValueError(f"{text!r} needs a unit: write a {what} such as {_EXAMPLES[what]}"
                         f"{_BARE.get(what, '')}")
    if not isinstance(text, str):
        raise ValueError(f"expected a {what} such as {_EXAMPLES[what]}, got {text!r}")
    m = _RE.match(text)
    if not m:
        raise ValueError(f"cannot read {text!r} as a {what}; write it like {_EXAMPLES[what]}")
    v, u = float(m.group(1)), m.group(2).lower().replace("µ", "u")
    if u == "" and not bare_ok and v != 0:
        raise ValueError(f"{text!r} needs a unit: write a {what} such as {_EXAMPLES[what]}"
                         f"{_BARE.get(what, '')}")
    return v, u


_BARE = {"rate": " (tc reads a bare number as bit/s)",
         "time": " (tc reads a bare number as microseconds)",
         "fraction": " (netem reads 1 as 1 %)"}


def _unknown(what: str, u: str, text, table) -> ValueError:
    hint = _HINTS.get(what, {}).get(u)
    near = difflib.get_close_matches(u, list(table), n=1)
    return ValueError(f"unknown {what} unit {u!r} in {text!r}"
                      + (f": {hint}" if hint else f" (did you mean {near[0]!r}?)" if near
                         else "") + "; accepted: " + ", ".join(sorted(table)))


def parse_rate(text) -> int:
    """'10mbit' -> 10_000_000 bit/s (tc's RATES; 'mbps' is megabytes per second)."""
    v, u = _split(text, "rate")
    if u not in RATE_UNITS:
        if u == "":
            return 0
        raise _unknown("rate", u, text, RATE_UNITS)
    return int(round(v * RATE_UNITS[u]))


def parse_time(text) -> float:
    """'20ms' -> 0.02 s (tc's TIMES, plus min and h)."""
    v, u = _split(text, "time")
    if u == "":
        return 0.0
    if u not in TIME_UNITS:
        raise _unknown("time", u, text, TIME_UNITS)
    return v * TIME_UNITS[u]


def parse_size(text) -> int:
    """'174KiB' -> 178176 bytes (tc's SIZES: k/kb/m/mb/g/gb are 1024-based). Bare numbers
    are bytes, as in tc."""
    v, u = _split(text, "size", bare_ok=True)
    if u == "":
        return int(round(v))
    if u not in SIZE_UNITS:
        raise _unknown("size", u, text, SIZE_UNITS)
    return int(round(v * SIZE_UNITS[u]))


def parse_buffer(text) -> tuple[str, int]:
    """'100p' -> ('packets', 100); '150KB' -> ('bytes', 153600)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool) or (
            isinstance(text, str) and _RE.match(text) and not _RE.match(text).group(2)):
        raise ValueError(f"buffer {text!r} needs a unit: 'p' for packets or a size unit "
                         "such as 'KB'")
    v, u = _split(text, "buffer", bare_ok=True)
    if u in PACKET_UNITS:
        n, kind = int(round(v)), "packets"
    elif u in SIZE_UNITS:
        n, kind = int(round(v * SIZE_UNITS[u])), "bytes"
    else:
        raise _unknown("buffer", u, text, {**dict.fromkeys(PACKET_UNITS), **SIZE_UNITS})
    if n <= 0:
        raise ValueError(f"buffer must be at least 1 packet or 1 byte, got {text!r}")
    return kind, n


def parse_fraction(text) -> float:
    """'1%' -> 0.01 (a probability written in per cent, as netem and Mininet read it)."""
    v, u = _split(text, "fraction")
    if u == "%":
        v /= 100.0
    elif u != "":
        raise ValueError(f"cannot read {text!r} as a probability; write it in per cent, "
                         "like '1%'")
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"probability {text!r} is outside 0..100 %")
    return v


def format_rate(bps: float) -> str:
    for unit, m in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(bps) >= m:
            return f"{bps / m:.3g} {unit}"
    return f"{bps:.3g} bit/s"


def format_time(s: float) -> str:
    if s >= 1:
        return f"{s:.6g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def split_quantity(text: str) -> tuple[float, str]:
    """'5ms' -> (5.0, 'ms'): used by sweep generators to multiply a unit step."""
    m = _RE.match(str(text))
    if not m:
        raise ValueError(f"cannot read {text!r} as a number with a unit")
    return float(m.group(1)), m.group(2)


# -- display: how a metric stored in SI units is shown ------------------------------------
# One formatter for every place a person reads a number: `ccarena show`, the check lines,
# `compare`, `query`, the report's tables and its figures' axes.

# fractions shown in per cent (as `ccarena show` prints the loss)
_PERCENT = re.compile(r"(_ratio|_frac|^utilisation|^link_utilisation|^share|_loss|^loss_p)$")
# names people use for the metrics they read most (docs/metrics.md defines them all)
_NAMES = {
    "goodput_bps": "goodput", "goodput_dir0_bps": "goodput s→r",
    "flow_goodput_bps": "goodput per flow", "fair_share_bps": "fair share",
    "mathis_link_bps": "Mathis model", "mathis_bps": "Mathis model",
    "fct_goodput_bps": "download goodput", "rwnd_bound_bps": "receive-window bound",
    "cwnd_bound_bps": "cwnd bound", "rate_bps": "rate",
    "utilisation": "utilisation", "link_utilisation": "link utilisation",
    "jain": "Jain's index", "jain_cc": "Jain's index between algorithms",
    "jain_min_1s": "Jain's index, worst 1 s", "jain_conns": "Jain's index of connections",
    "convergence_s": "convergence time", "converged_at_s": "converged at",
    "rtt_mean_s": "mean RTT", "ping_rtt_mean_s": "mean ping RTT",
    "udp_rtt_mean_s": "mean UDP RTT", "rtt_min_s": "min RTT", "min_rtt_s": "min RTT (kernel)",
    "base_rtt_s": "base RTT", "rtt_inflation": "RTT inflation",
    "ping_rtt_inflation": "ping RTT inflation", "queue_delay_s": "queueing delay",
    "queue_delay_mean_s": "queueing delay", "loss_ratio": "loss",
    "retrans_ratio": "retransmitted", "mark_ratio": "ECN marked", "ce_ratio": "CE marked",
    "loss_p": "sender's loss estimate", "ping_loss": "ping loss", "udp_loss": "UDP loss",
    "queue_mean_pkts": "mean queue", "queue_p95_pkts": "queue p95",
    "queue_max_pkts": "max queue", "queue_mean_bytes": "mean queue",
    "power_norm": "normalised power", "power": "power", "fct_s": "download time",
    "fct_mean_s": "mean download time", "fct_p95_s": "download time p95",
    "fct_max_s": "max download time", "bdp_pkts": "BDP", "bdp_bytes": "BDP",
    "buffer_bdp": "buffer in BDPs", "share": "share", "cwnd_mean_pkts": "mean cwnd",
    "rtt_s": "RTT", "n_flows": "flows",
}
# what a metric cannot be, in SI units: an interval is clipped there (no loss below 0)
_UNIT_BOUND = {"%": (0.0, 1.0), "Mbit/s": (0.0, math.inf), "ms": (0.0, math.inf),
               "s": (0.0, math.inf), "kB": (0.0, math.inf), "packets": (0.0, math.inf)}


def display_unit(metric: str) -> tuple[float, str]:
    """(scale, unit) to show a metric stored in SI units: rates in Mbit/s, RTTs and
    delays in ms, other times in s, sizes in kB, packets as packets, fractions (ratios,
    utilisation, shares) in per cent; indices and counts as they are."""
    m = str(metric)
    if "/" in m:                    # a check's ratio of two columns: a plain number
        return 1.0, ""
    if m.endswith("_bps"):
        return 1e-6, "Mbit/s"
    if m.endswith("_s") and any(k in m for k in ("rtt", "delay", "latency")):
        return 1e3, "ms"
    if m.endswith("_s"):
        return 1.0, "s"
    if m.endswith("_bytes"):
        return 1e-3, "kB"
    if m.endswith("_pkts"):
        return 1.0, "packets"
    if _PERCENT.search(m):
        return 100.0, "%"
    return 1.0, ""


def metric_name(metric: str) -> str:
    """'rtt_p99_s' -> 'RTT p99', 'loss_ratio' -> 'loss': the metric in words."""
    m = str(metric)
    if m in _NAMES:
        return _NAMES[m]
    if "/" in m:                                    # a check's ratio of two columns
        return " / ".join(metric_name(x.strip()) for x in m.split("/", 1))
    name = re.sub(r"_(bps|s|bytes|pkts|ratio|frac)$", "", m)
    name = re.sub(r"(^|_)rtt(_|$)", r"\1RTT\2", name)
    return re.sub(r"_p(\d\d)$", r" p\1", name).replace("_", " ")


def metric_label(metric: str) -> str:
    """'goodput_bps' -> 'goodput (Mbit/s)', 'loss_ratio' -> 'loss (%)'."""
    _, unit = display_unit(metric)
    name = metric_name(metric)
    return f"{name} ({unit})" if unit else name


def metric_bounds(metric: str) -> tuple[float, float]:
    """The physical range of a metric in SI units: rates, times, sizes and queues are
    never negative, fractions and Jain's index lie in [0, 1]."""
    m = str(metric)
    if m.startswith("jain"):
        return 0.0, 1.0
    return _UNIT_BOUND.get(display_unit(m)[1], (-math.inf, math.inf))


def _num(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def plain(f: float, digits: int = 4) -> str:
    """`digits` significant digits in positional notation, never an exponent: 95590000,
    95.59, 0.002020 -> '0.00202'."""
    if f == 0 or math.isinf(f):
        return "0" if f == 0 else ("∞" if f > 0 else "−∞")
    s = format(Decimal(f"{f:.{max(digits, 1) - 1}e}"), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def format_number(v, digits: int = 4) -> str:
    """A number for people: `digits` significant digits, positional, '–' for a missing
    value."""
    if v is None:
        return "–"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "–" if math.isnan(f) else plain(f, digits)


def _decimals(h: float) -> int:
    """Decimal places of a value whose interval half-width is `h` (display units), after
    the Particle Data Group's rule: the interval keeps two significant digits when its
    three leading digits are 100-354, one when 355-949, and 950-999 round up to 1000
    with two."""
    e = math.floor(math.log10(h))
    lead = int(h / 10 ** (e - 2) + 1e-9)
    if lead >= 950:
        return -(e + 1) + 1
    return -e + (1 if lead <= 354 else 0)


def _fixed(f: float, dp: int) -> str:
    if dp > 0:
        s = f"{f:.{min(dp, 15)}f}"
    else:
        s = str(int(round(f, dp)))
    return "0" if s.strip("-0.") == "" else s


def is_constant(value, half) -> bool:
    """An interval no wider than floating-point noise: 173 ± 8.6e-14 is 173."""
    return half == 0 or abs(half) <= 1e-9 * max(abs(value), 1e-300)


def format_estimate(value, half=None, low=None, high=None, digits: int = 4,
                    unit: str = "") -> str:
    """A value in display units with its interval, both rounded to the interval's
    significant digits: '95.59 ± 0.12', an asymmetric or clipped interval as
    '0.0020 [0, 0.0042]'; a constant or a value without an interval alone, with `digits`
    significant digits ('173'); '–' when missing. `unit` is appended when given."""
    v = _num(value)
    if v is None:
        return "–"
    lo, hi, h = _num(low), _num(high), _num(half)
    if h is None and lo is not None and hi is not None:
        h = (hi - lo) / 2
    if h is None or is_constant(v, h) or (lo is not None and hi is not None and
                                          is_constant(v, max(hi - v, v - lo))):
        s = plain(v, digits)
    else:
        sym = lo is None or hi is None or math.isclose(hi - v, v - lo, rel_tol=1e-6,
                                                       abs_tol=1e-12 * max(abs(v), 1))
        if sym:
            dp = _decimals(abs(h))
            s = f"{_fixed(v, dp)} ± {_fixed(abs(h), dp)}"
        else:
            dp = _decimals((hi - lo) / 2)      # the interval's half-width sets the digits
            s = f"{_fixed(v, dp)} [{_fixed(lo, dp)}, {_fixed(hi, dp)}]"
    return f"{s} {unit}" if unit and s != "–" else s


def format_metric(metric: str, v, digits: int = 4, unit: bool = False) -> str:
    """A value in its metric's display unit (Mbit/s, ms, %, ...), with the unit if
    asked: format_metric('goodput_bps', 95.59e6, unit=True) -> '95.59 Mbit/s'."""
    scale, u = display_unit(metric)
    f = _num(v)
    if f is None:
        return format_number(v, digits)
    return format_estimate(f * scale, digits=digits, unit=u if unit else "")


def format_stat(metric: str, row, unit: bool = False, digits: int = 4) -> str:
    """A statistics row (analysis.cell_stats: mean or median, ci_low, ci_high, ci_half,
    center) as people read it, in the metric's display unit: its centre (the mean, or the
    median where `center` says so) with the interval clipped at the metric's physical
    bounds ('0.0020 [0, 0.0042] %': no loss below 0)."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    scale, u = display_unit(metric)
    center = get("center", "mean") or "mean"
    v = _num(get(center if center in ("mean", "median") else "mean"))
    if v is None:
        return "–"
    lo, hi = _num(get("ci_low")), _num(get("ci_high"))
    half = _num(get("ci_half"))
    if lo is None or hi is None:
        if half is None:
            return format_estimate(v * scale, digits=digits, unit=u if unit else "")
        lo, hi = v - half, v + half
    b_lo, b_hi = metric_bounds(metric)
    clo, chi = max(lo, b_lo), min(hi, b_hi)
    if clo == lo and chi == hi and math.isclose(hi - v, v - lo, rel_tol=1e-6,
                                                abs_tol=1e-12 * max(abs(v), 1)):
        return format_estimate(v * scale, half=(hi - lo) / 2 * scale, digits=digits,
                               unit=u if unit else "")
    return format_estimate(v * scale, low=clo * scale, high=chi * scale, digits=digits,
                           unit=u if unit else "")
