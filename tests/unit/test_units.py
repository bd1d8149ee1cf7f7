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


# -- display: one formatter for the terminal and the report -------------------------------

@pytest.mark.parametrize("value,half,shown", [
    (95.5873, 0.1234, "95.59 ± 0.12"),          # two digits of an interval led by 1..354
    (9.6911, 0.067, "9.69 ± 0.07"),             # one digit when led by 355..949
    (0.9560, 0.00033, "0.95600 ± 0.00033"),
    (0.9560, 0.000951, "0.9560 ± 0.0010"),      # 950..999 round up to two digits of 1000
    (1234.5, 123.0, "1230 ± 120"),
    (173.0, 8.6e-14, "173"),                    # floating-point noise is no interval
    (173.0, 0.0, "173"),                        # a constant has none either
    (95.59, None, "95.59"),
])
def test_values_round_to_their_intervals_digits(value, half, shown):
    assert units.format_estimate(value, half) == shown


def test_metrics_in_their_display_units_never_in_scientific_notation():
    assert units.format_metric("goodput_bps", 9.559e7, unit=True) == "95.59 Mbit/s"
    assert units.format_metric("rtt_p95_s", 0.02134, unit=True) == "21.34 ms"
    assert units.format_metric("loss_ratio", 0.03263, unit=True) == "3.263 %"
    assert units.format_metric("jain", 0.95612) == "0.9561"
    for v in (9.559e7, 2.02e-5, 1.5e-9, 3.2e12):
        assert not re.search(r"e[+-]?\d", units.format_number(v)), units.format_number(v)
    assert units.format_number(2.02e-5) == "0.0000202"
    assert units.format_number(None) == units.format_number(float("nan")) == "–"


def test_statistics_rows_read_as_people_write_them():
    row = {"mean": 95.59e6, "ci_half": 0.12e6, "ci_low": 95.47e6, "ci_high": 95.71e6}
    assert units.format_stat("goodput_bps", row, unit=True) == "95.59 ± 0.12 Mbit/s"
    # an interval that would reach below 0 stops there: no loss below 0 %
    loss = {"mean": 2.02e-5, "ci_half": 2.2e-5, "ci_low": -0.18e-5, "ci_high": 4.22e-5}
    assert units.format_stat("loss_ratio", loss, unit=True) == "0.0020 [0, 0.0042] %"
    # nor Jain's index above 1
    jain = {"mean": 0.99, "ci_half": 0.03, "ci_low": 0.96, "ci_high": 1.02}
    assert units.format_stat("jain", jain) == "0.990 [0.960, 1.000]"
    # a percentile metric's median with its bootstrap interval
    p95 = {"mean": 0.0300, "median": 0.0291, "center": "median", "ci_low": 0.0285,
           "ci_high": 0.0330, "ci_half": 0.00225}
    assert units.format_stat("rtt_p95_s", p95, unit=True) == "29.1 [28.5, 33.0] ms"
    # a constant without an interval, a single run without one
    assert units.format_stat("bdp_pkts", {"mean": 17.27, "ci_half": 0.0}) == "17.27"
    assert units.format_stat("goodput_bps", {"mean": 9e6, "ci_half": float("nan")}) == "9"


def test_metric_labels_in_words():
    assert units.metric_label("goodput_bps") == "goodput (Mbit/s)"
    assert units.metric_label("loss_ratio") == "loss (%)"
    assert units.metric_label("rtt_p99_s") == "RTT p99 (ms)"
    assert units.metric_label("ping_rtt_p95_s") == "ping RTT p95 (ms)"
    assert units.metric_label("jain") == "Jain's index"
    assert units.metric_label("queue_mean_pkts") == "mean queue (packets)"
    # a check's ratio of two columns is a plain number
    assert units.display_unit("goodput_bps / rwnd_bound_bps") == (1.0, "")
    assert units.metric_bounds("loss_ratio") == (0.0, 1.0)
    assert units.metric_bounds("rtt_mean_s") == (0.0, math.inf)
