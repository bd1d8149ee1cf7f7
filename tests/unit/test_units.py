import math

import pytest

from ccarena import units


@pytest.mark.parametrize("text,bps", [("10mbit", 10_000_000), ("1gbit", 10**9),
                                      ("500kbit", 500_000), ("1.5Mbit", 1_500_000),
                                      ("64000", 64000), ("2 gbps", 2 * 10**9)])
def test_rates(text, bps):
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize("text,s", [("20ms", 0.02), ("1.5s", 1.5), ("250us", 250e-6),
                                    ("2min", 120.0), ("3", 3.0), ("100ns", 1e-7)])
def test_times(text, s):
    assert math.isclose(units.parse_time(text), s)


@pytest.mark.parametrize("text,b", [("174KiB", 174 * 1024), ("1MB", 10**6), ("1500", 1500),
                                    ("1MiB", 2**20)])
def test_sizes(text, b):
    assert units.parse_size(text) == b


def test_buffers():
    assert units.parse_buffer("100p") == ("packets", 100)
    assert units.parse_buffer("150KB") == ("bytes", 150_000)
    with pytest.raises(ValueError, match="needs a unit"):
        units.parse_buffer("100")
    with pytest.raises(ValueError, match="at least 1"):
        units.parse_buffer("0p")


def test_fractions():
    assert units.parse_fraction("1%") == pytest.approx(0.01)
    assert units.parse_fraction(0.05) == 0.05
    with pytest.raises(ValueError):
        units.parse_fraction("150%")


@pytest.mark.parametrize("fn,text,needle", [
    (units.parse_rate, "10 parsecs", "unknown rate unit 'parsecs'"),
    (units.parse_time, "10 parsecs", "unknown time unit 'parsecs'"),
    (units.parse_size, "3 furlongs", "unknown size unit"),
    (units.parse_rate, "fast", "cannot read 'fast'"),
])
def test_unknown_units_say_what_is_accepted(fn, text, needle):
    with pytest.raises(ValueError) as e:
        fn(text)
    assert needle in str(e.value)
    assert "accepted" in str(e.value) or "write it like" in str(e.value)
