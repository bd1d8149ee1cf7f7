import math

from ccarena.measure.ping import parse

OUT = """PING 10.2.1.2 (10.2.1.2) 56(84) bytes of data.
[1700000000.100000] 64 bytes from 10.2.1.2: icmp_seq=1 ttl=62 time=20.5 ms
[1700000000.300000] no answer yet for icmp_seq=2
[1700000000.320000] 64 bytes from 10.2.1.2: icmp_seq=3 ttl=62 time=20.1 ms
"""


def test_replies_and_unanswered_probes():
    df = parse(OUT, mono_minus_real_ns=-1_699_999_000_000_000_000)
    assert df["seq"].tolist() == [1, 2, 3]
    assert df["rtt_s"].iloc[0] == 0.0205
    assert math.isnan(df["rtt_s"].iloc[1])
    # send time = reply stamp - rtt, shifted onto CLOCK_MONOTONIC
    assert df["t_ns"].iloc[0] == 1_000_100_000_000 - 20_500_000
