"""Units as people write them -> SI numbers.

rate -> bit/s (int), time -> seconds (float), size -> bytes (int),
buffer -> ("packets", n) or ("bytes", n), fraction ("1%", "0.01") -> float in [0, 1].
Every parser raises ValueError with a message saying what is accepted; the spec layer
adds the file and key."""
from __future__ import annotations

import math
import re

_NUM = r"(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z%/]*)\s*$")

RATE_UNITS = {
    "bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6,
    "gbit": 1e9, "gbps": 1e9, "tbit": 1e12,
    "kibit": 1024, "mibit": 1024**2, "gibit": 1024**3,
}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
              "min": 60.0, "m": 60.0, "h": 3600.0}
SIZE_UNITS = {"b": 1, "byte": 1, "bytes": 1, "k": 1000, "kb": 1000, "m": 1e6, "mb": 1e6,
              "g": 1e9, "gb": 1e9, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
PACKET_UNITS = {"p", "pkt", "pkts", "packet", "packets"}


def _split(text, what: str):
    if isinstance(text, bool):
        raise ValueError(f"expected a {what}, got a boolean")
    if isinstance(text, (int, float)):
        return float(text), ""
    if not isinstance(text, str):
        raise ValueError(f"expected a {what} such as {_EXAMPLES[what]}, got {text!r}")
    m = _RE.match(text.replace("µ", "u") if what != "time" else text)
    if not m:
        raise ValueError(f"cannot read {text!r} as a {what}; write it like {_EXAMPLES[what]}")
    return float(m.group(1)), m.group(2).lower()


_EXAMPLES = {
    "rate": "'10mbit', '1gbit', '500kbit'",
    "time": "'20ms', '1.5s', '250us'",
    "size": "'174KiB', '1MB', '1500' (bytes)",
    "buffer": "'100p' (packets) or '150KB' (bytes)",
    "fraction": "'1%' or 0.01",
}


def parse_rate(text) -> int:
    """'10mbit' -> 10_000_000 bit/s. Bare numbers are bit/s."""
    v, u = _split(text, "rate")
    if u == "":
        mult = 1
    elif u in RATE_UNITS:
        mult = RATE_UNITS[u]
    else:
        raise ValueError(f"unknown rate unit {u!r} in {text!r}; accepted: "
                         + ", ".join(sorted(RATE_UNITS)))
    return int(round(v * mult))


def parse_time(text) -> float:
    """'20ms' -> 0.02 s. Bare numbers are seconds."""
    v, u = _split(text, "time")
    u = u.replace("µ", "u")
    if u == "":
        return v
    if u not in TIME_UNITS:
        raise ValueError(f"unknown time unit {u!r} in {text!r}; accepted: "
                         + ", ".join(k for k in TIME_UNITS if k != "µs"))
    return v * TIME_UNITS[u]


def parse_size(text) -> int:
    """'174KiB' -> 178176 bytes. Bare numbers are bytes."""
    v, u = _split(text, "size")
    if u == "":
        return int(round(v))
    if u not in SIZE_UNITS:
        raise ValueError(f"unknown size unit {u!r} in {text!r}; accepted: "
                         + ", ".join(sorted(SIZE_UNITS)))
    return int(round(v * SIZE_UNITS[u]))


def parse_buffer(text) -> tuple[str, int]:
    """'100p' -> ('packets', 100); '150KB' -> ('bytes', 150000)."""
    v, u = _split(text, "buffer")
    if u in PACKET_UNITS:
        n, kind = int(round(v)), "packets"
    elif u in SIZE_UNITS:
        n, kind = int(round(v * SIZE_UNITS[u])), "bytes"
    elif u == "":
        raise ValueError(f"buffer {text!r} needs a unit: 'p' for packets or a size unit "
                         "such as 'KB'")
    else:
        raise ValueError(f"unknown buffer unit {u!r} in {text!r}; accepted: 'p' (packets) or "
                         + ", ".join(sorted(SIZE_UNITS)))
    if n <= 0:
        raise ValueError(f"buffer must be at least 1 packet or 1 byte, got {text!r}")
    return kind, n


def parse_fraction(text) -> float:
    """'1%' -> 0.01; 0.01 -> 0.01."""
    v, u = _split(text, "fraction")
    if u == "%":
        v /= 100.0
    elif u != "":
        raise ValueError(f"cannot read {text!r} as a probability; write '1%' or 0.01")
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
        return f"{s:.3g} s"
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
