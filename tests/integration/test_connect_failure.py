"""A flow that never connects: behind a bottleneck that loses every packet, the client's
SYN is never answered. The connection's record says so (error "timed out", an end time),
the flow's goodput is 0, and the run lists the anomalies wherever it is shown."""
import textwrap

import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study

from conftest import ccarena_cli

pytestmark = pytest.mark.root


def test_a_flow_behind_a_link_that_loses_everything_times_out(tmp_path, no_leaks):
    study = loads_study(textwrap.dedent('''
        [study]
        name = "blackhole"
        duration = "3s"
        warmup = "0s"
        repetitions = 1
        reruns = 0
        seed = 3
        [bottleneck]
        rate = "10mbit"
        delay = "5ms"
        buffer = "50p"
        loss = "100%"
        backend = "user"
        [[flow]]
        name = "bulk"
        from = "s1"
        to = "r1"
        cc = "cubic"
        '''))
    res = run_study(study, results_base=tmp_path, progress=False)
    (run_id, meta), = res.metas.items()
    t0, duration_ns = int(meta["t0_ns"]), int(3e9)

    conns = res.run_tables(run_id)["conns"]
    client = conns[(conns["role"] == "client")]
    assert len(client) == 1, client
    c = client.iloc[0]
    assert str(c["error"]).startswith("timed out: "), c.to_dict()
    assert c["connected_ns"] is None or c["connected_ns"] != c["connected_ns"], c.to_dict()
    # gave up at the flow's stop (the run's end), not before; the record has its end time
    assert int(c["end_ns"]) >= t0 + duration_ns, (int(c["end_ns"]) - t0) / 1e9
    assert int(c["bytes"]) == 0
    # nothing ever reached the receiver: no server-side connection at all
    assert (conns["role"] == "server").sum() == 0, conns

    flows = res.flows
    f = flows[flows["name"] == "bulk"]
    assert len(f) == 1 and float(f["goodput_bps"].iloc[0]) == 0.0, f.to_dict("records")

    kinds = {a["kind"] for a in meta["anomalies"]}
    assert {"connect_failed", "no_delivery"} <= kinds, meta["anomalies"]
    failed = next(a for a in meta["anomalies"] if a["kind"] == "connect_failed")
    assert failed["flow"] == "bulk" and "timed out" in failed["what"], failed

    out = ccarena_cli("show", res.path).stdout
    lines = [ln for ln in out.splitlines() if ln.startswith("anomaly run ")]
    assert any("never connected" in ln and "timed out" in ln for ln in lines), out
    assert any("got no data" in ln for ln in lines), out
