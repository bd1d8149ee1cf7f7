"""Sustained overload: 20x the link's rate in UDP for seconds. The emulator drops and
counts the excess, keeps its accounting balanced, does not crash and keeps its memory
bounded (its buffer limit is hard)."""
import json
import textwrap

import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

pytestmark = pytest.mark.root


def test_overload_is_dropped_and_counted_with_bounded_memory(tmp_path, no_leaks):
    study = loads_study(textwrap.dedent('''
        [study]
        name = "overload"
        duration = "5s"
        reruns = 0          # the overload may flag the run; it is what is judged here
        [bottleneck]
        rate = "10mbit"
        rtt = "10ms"
        buffer = "100p"
        backend = "user"
        [[flow]]
        name = "sink"
        kind = "command"
        host = "r1"
        check = false
        run = "iperf3 -s -1 -p 6000"
        [[flow]]
        name = "flood"
        kind = "command"
        host = "s1"
        start = "0.5s"
        run = "iperf3 -u -b 200M -l 1400 -t 3 -c {r1} -p 6000"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    meta = res.run_meta(res.run_dirs()[0])
    reasons = " ".join(meta["invalid_reasons"])
    assert "ccarena-link exit" not in reasons and "failed" not in reasons, reasons
    link = meta["link"]
    # what the routers' ports failed to hand to the link is counted, per direction, and
    # on this kernel their hand-off fifo was in place (docs/link.md)
    assert set(meta["link_ingress"]) == {"w2e", "e2w"}, meta.get("link_ingress")
    from ccarena.testbed.user_link import (HANDOFF_MIN_KERNEL, HANDOFF_QDISC_LIMIT, kernel_version)
    cfg = json.loads((res.run_dirs()[0] / "raw" / "link" / "link.config.json").read_text())
    want = HANDOFF_QDISC_LIMIT if kernel_version() >= HANDOFF_MIN_KERNEL else None
    assert cfg["handoff_fifo"] == want
    w2e = link["w2e"]
    assert w2e["drops_queue"] > 0.5 * w2e["arrivals"]       # 20x overload: most is dropped
    # every packet that arrived is accounted for: sent on, dropped, or still held at exit
    held = w2e.get("qlen_pkts_end", 0) + w2e.get("in_flight_end", 0)
    dropped = sum(w2e.get(k, 0) for k in ("drops_queue", "drops_aqm", "drops_loss",
                                          "drops_delay_line"))
    assert w2e["arrivals"] == w2e["departures"] + dropped + held
    # the queue limit is hard: never more than 100 packets queued
    ls = res.table("link_stats")
    assert ls[ls["dir"] == 0]["qlen_pkts"].max() <= 100
    # memory bounded: the link's memory is its fixed receive rings (2 x 16384 frames,
    # mapped at start and touched once full) plus its 100-packet buffer; it must not
    # grow with the excess offered (3 s x 200 Mbit/s = 75 MB more would be unbounded)
    assert link["max_rss_kib"] < 512 * 1024
