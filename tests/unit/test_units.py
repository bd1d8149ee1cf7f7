import math
import re

import pytest

from ccarena import units


@pytest.mark.parametrize("text,bps", [("10mbit", 10_000_000), ("1gbit", 10**9),
                                      ("500kbit", 500_000), ("1.5Mbit", 1_500_000),
                                      ("64000bit", 64000), ("10Mbit/s", 10**7),
                                      ("1 Gbit/s", 10**9), ("1kibit", 1024),
                                      # tc: bps are BYTES per second
                                      ("2 gbps", 16 * 10**9), ("10mbps", 80 * 10**6)])
def test_rates_read_as_tc_reads_them(text, bps):
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize("fn,value,needle", [
    (units.parse_rate, "10", "needs a unit"), (units.parse_rate, 10, "needs a unit"),
    (units.parse_time, "10", "microseconds"), (units.parse_time, 20, "needs a unit"),
    (units.parse_time, "10m", "'ms' (milliseconds) or 'min'"),
    (units.parse_fraction, 1, "netem reads 1 as 1 %"),
    (units.parse_fraction, 0.01, "needs a unit"), (units.parse_fraction, "0.01", "needs a unit"),
    (units.parse_buffer, 100, "needs a unit"), (units.parse_buffer, "100", "needs a unit"),
])
def test_bare_numbers_are_refused_where_they_are_a_trap(fn, value, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        fn(value)


def test_zero_needs_no_unit():
    assert units.parse_time(0) == 0 and units.parse_fraction(0) == 0


@pytest.mark.parametrize("text,s", [("20ms", 0.02), ("1.5s", 1.5), ("250us", 250e-6),
                                    ("2min", 120.0), ("3sec", 3.0), ("100ns", 1e-7),
                                    ("5msec", 0.005), ("7usecs", 7e-6), ("4µs", 4e-6)])
def test_times(text, s):
    assert math.isclose(units.parse_time(text), s)


@pytest.mark.parametrize("text,b", [("174KiB", 174 * 1024), ("1500", 1500), ("1MiB", 2**20),
                                    # tc: k/kb/m/mb/g/gb are 1024-based; kbit is bits
                                    ("1MB", 2**20), ("2k", 2048), ("8kbit", 1024),
                                    ("1g", 2**30), (1500, 1500)])
def test_sizes(text, b):
    assert units.parse_size(text) == b


def test_buffers():
    assert units.parse_buffer("100p") == ("packets", 100)
    assert units.parse_buffer("150KB") == ("bytes", 150 * 1024)
    with pytest.raises(ValueError, match="needs a unit"):
        units.parse_buffer("100")
    with pytest.raises(ValueError, match="at least 1"):
        units.parse_buffer("0p")


def test_fractions():
    assert units.parse_fraction("1%") == pytest.approx(0.01)
    assert units.parse_fraction("5%") == pytest.approx(0.05)
    with pytest.raises(ValueError, match=r"probability '150%' is outside 0\.\.100 %"):
        units.parse_fraction("150%")


@pytest.mark.parametrize("fn,text,needle", [
    (units.parse_rate, "10 parsecs", "unknown rate unit 'parsecs'"),
    (units.parse_time, "10 parsecs", "unknown time unit 'parsecs'"),
    (units.parse_time, "10msc", "did you mean 'msec'"),
    (units.parse_size, "3 furlongs", "unknown size unit"),
    (units.parse_rate, "fast", "cannot read 'fast'"),
])
def test_unknown_units_say_what_is_accepted(fn, text, needle):
    with pytest.raises(ValueError) as e:
        fn(text)
    assert needle in str(e.value)
    assert "accepted" in str(e.value) or "write it like" in str(e.value)
