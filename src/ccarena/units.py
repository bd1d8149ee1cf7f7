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


# -- display: how a metric stored in SI units is shown (tables, checks, figures) ----------
def display_unit(metric: str) -> tuple[float, str]:
    """(scale, unit) to show a metric stored in SI units: rates in Mbit/s, RTTs and
    delays in ms, other times in s, sizes in kB; ratios and counts as they are."""
    m = str(metric)
    if m.endswith("_bps"):
        return 1e-6, "Mbit/s"
    if m.endswith("_s") and any(k in m for k in ("rtt", "delay", "latency")):
        return 1e3, "ms"
    if m.endswith("_s"):
        return 1.0, "s"
    if m.endswith("_bytes"):
        return 1e-3, "kB"
    return 1.0, ""


def metric_label(metric: str) -> str:
    """'goodput_bps' -> 'goodput (Mbit/s)'."""
    _, unit = display_unit(metric)
    name = re.sub(r"_(bps|s|bytes)$", "", str(metric)).replace("_", " ")
    return f"{name} ({unit})" if unit else name


def format_number(v, digits: int = 4) -> str:
    """A number for people: `digits` significant digits, exponent only when needed,
    '–' for a missing value."""
    if v is None:
        return "–"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return "–"
    if math.isinf(f):
        return "∞" if f > 0 else "−∞"
    if f != 0 and (abs(f) >= 1e6 or abs(f) < 1e-3):
        return f"{f:.{digits - 1}e}"
    return f"{f:.{digits}g}"


def format_metric(metric: str, v, digits: int = 4, unit: bool = False) -> str:
    """A value in its metric's display unit (Mbit/s, ms, ...), with the unit if asked."""
    scale, u = display_unit(metric)
    try:
        s = format_number(float(v) * scale, digits)
    except (TypeError, ValueError):
        return str(v)
    return f"{s} {u}" if unit and u and s != "–" else s
