"""What `--resume` clears before it runs what is missing (the store's Writer.discard_in_flight):
a run in flight is removed; a damaged run and one whose process something outside killed
are moved whole under superseded/ and run again; temporary files of dead writers go;
intact runs are kept. And how a run knows a process of its was killed from outside
(testbed/proc.NsProcess.killed)."""
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from ccarena.run import resume
from ccarena.store import atomic
from ccarena.store.writer import Writer
from ccarena.testbed.proc import NsProcess

LABELS = ["c000-r1", "c000-r2", "c001-r1", "c001-r2", "c002-r1", "c002-r2"]


def store(res, label: str, **extra) -> dict:
    meta = {"run_id": f"id-{label}", "label": label, "cell": label[:4], "rep": 1,
            "valid": not extra.get("killed"), "invalid_reasons": [], **extra}
    w = Writer(res)
    rd = w.new_run(label)
    (rd / "raw").mkdir()
    (rd / "raw" / "x.bin").write_bytes(b"\0" * 10)
    flows = pd.DataFrame({"run_id": [meta["run_id"]], "flow": [0], "goodput_bps": [1e6]})
    w.write_run(rd, {"tcpinfo": pd.DataFrame({"t_ns": [1, 2]})}, flows,
                  {"goodput_bps": 1e6}, meta)
    return meta


@pytest.fixture
def damaged(tmp_path):
    res = Writer.create("r", tmp_path).results
    for label in LABELS:
        store(res, label, **({"killed": [{"process": "ccarena-link", "signal": "SIGKILL"}]}
                             if label == "c002-r1" else {}))
    runs = res.path / "runs"
    m = runs / "c000-r1" / "meta.json"
    m.write_bytes(m.read_bytes()[:20])                           # truncated manifest
    (runs / "c000-r2" / "meta.json").unlink()                    # manifest lost
    (runs / "c001-r1" / "tcpinfo.parquet").unlink()              # a table lost
    for f in runs.joinpath("c001-r2").iterdir():                 # in flight: raw only
        if f.name != "raw":
            f.unlink()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (res.path / f".runs.parquet.{dead}.abc123.tmp").write_bytes(b"half")
    (runs / "c002-r2" / f".meta.json.{os.getpid()}.abc123.tmp").write_bytes(b"mine")
    return res


def test_discard_sets_damaged_and_interrupted_runs_aside_and_keeps_the_rest(damaged):
    res = damaged
    done = Writer(res).discard_in_flight()
    sup = res.path / "superseded"
    assert sorted(p.name for p in sup.iterdir()) == [
        "c000-r1.damaged", "c000-r2.damaged", "c001-r1.damaged", "c002-r1.interrupted"]
    # moved whole, never deleted: the raw records go with them
    assert all((p / "raw" / "x.bin").exists() for p in sup.iterdir())
    assert sorted(p.name for p in (res.path / "runs").iterdir()) == ["c002-r2"]
    assert any("c001-r2" == x for x in done)                     # in flight: removed
    assert any("c002-r1" in x and "ccarena-link SIGKILL" in x for x in done)
    assert sum("damaged" in x for x in done) == 3
    # a dead writer's temporary file goes; a live one's stays
    assert [p.name for p in res.path.rglob(".*.tmp")] == \
        [f".meta.json.{os.getpid()}.abc123.tmp"]
    plan = SimpleNamespace(runs=[SimpleNamespace(label=x) for x in LABELS])
    assert [r.label for r in resume.todo(res, plan)] == [x for x in LABELS if x != "c002-r2"]


def test_a_second_discard_changes_nothing(damaged):
    Writer(damaged).discard_in_flight()
    before = sorted(str(p) for p in damaged.path.rglob("*"))
    assert Writer(damaged).discard_in_flight() == []
    assert sorted(str(p) for p in damaged.path.rglob("*")) == before


def test_a_damaged_record_of_earlier_resumes_does_not_stop_a_resume(tmp_path):
    res = Writer.create("r", tmp_path).results
    (res.path / "resumes.json").write_text('[{"at": ')
    resume.record(res, 3, ["c000-r1"], {"kernel": "k"}, {"kind": "local", "jobs": 2})
    [rec] = json.loads((res.path / "resumes.json").read_text())
    assert rec["complete_runs"] == 3 and rec["executor"]["jobs"] == 2


def test_stale_temporaries_are_only_those_of_dead_writers(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp_path / "a").mkdir()
    gone = tmp_path / "a" / f".meta.json.{dead}.0a0b0c.tmp"
    gone.write_text("x")
    (tmp_path / f".x.parquet.{os.getpid()}.0a0b0c.tmp").write_text("x")
    (tmp_path / ".hidden.tmp").write_text("not one of ours: no pid")
    assert atomic.stale_temporaries(tmp_path) == [gone]


def _proc(tmp_path, argv):
    return NsProcess("p", None, argv, tmp_path / "logs", stdin=False)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_process_killed_from_outside_says_so(tmp_path, sig):
    p = _proc(tmp_path, ["sleep", "30"])
    os.kill(p.p.pid, sig)
    p.p.wait(timeout=10)
    assert p.killed() == {"process": "p", "signal": sig.name}
    p.terminate()
    assert p.killed() == {"process": "p", "signal": sig.name}   # still: it was dead before


def test_a_process_ccarena_stops_or_that_fails_was_not_killed(tmp_path):
    p = _proc(tmp_path, ["sleep", "30"])
    assert p.killed() is None                                   # running
    p.terminate()
    assert p.p.returncode == -signal.SIGTERM and p.killed() is None
    p = _proc(tmp_path, ["sh", "-c", "exit 3"])
    p.p.wait(timeout=10)
    assert p.killed() is None                                   # failed by itself
    p = _proc(tmp_path, ["sleep", "30"])
    os.kill(p.p.pid, signal.SIGSEGV)                            # a crash: its own failure
    p.p.wait(timeout=10)
    assert p.killed() is None
    p.terminate()


def test_a_process_killed_before_ready_carries_it_in_the_error(tmp_path):
    from ccarena.errors import RunError
    p = NsProcess("eng", None, ["sleep", "30"], tmp_path / "logs")
    time.sleep(0.05)
    os.kill(p.p.pid, signal.SIGKILL)
    with pytest.raises(RunError) as e:
        p.wait_line("READY", 5.0)
    assert "exit -9" in str(e.value)
    assert e.value.killed == {"process": "eng", "signal": "SIGKILL"}
    p.terminate()


def test_discard_sets_a_run_ccarena_failed_aside_to_be_run_again(tmp_path):
    """A complete run marked unmeasured (ccarena failed it before t0 or in its metrics,
    run/one_run.py) is no result: moved whole under superseded/ and run again."""
    res = Writer.create("r", tmp_path).results
    store(res, "c000-r1")
    store(res, "c000-r2", valid=False, invalid_reasons=["ccarena-flow@r1: exited before "
          "READY (exit 2)"], unmeasured={"stage": "setup", "error": "ccarena-flow@r1: "
                                                                   "exited before READY"})
    done = Writer(res).discard_in_flight()
    assert done == ["c000-r2 (not measured: ccarena failed in its setup: moved to "
                    "superseded/c000-r2.unmeasured)"]
    assert (res.path / "superseded" / "c000-r2.unmeasured" / "meta.json").exists()
    assert sorted(m["label"] for m in res.metas.values()) == ["c000-r1"]
