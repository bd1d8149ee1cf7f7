"""Reference counting of BPF congestion controls (ccarena.cc.refcount and the
acquire/release logic), in a temporary directory with the loader mocked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ccarena.cc.hold as acq
from ccarena.cc import loader
from ccarena.cc.refcount import AlgoDir, algo_dirs, pid_alive, proc_start
from ccarena.cc.catalog import Algo


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_live_and_dead_processes():
    assert pid_alive(os.getpid())
    assert pid_alive(os.getpid(), proc_start(os.getpid()))
    assert not pid_alive(os.getpid(), 1)  # wrong start time: a recycled pid
    assert not pid_alive(dead_pid())


def test_add_remove_counts(tmp_path):
    d = AlgoDir("cca_x", tmp_path)
    with d.lock():
        assert d.add("run1") == 1
        assert d.add("run2") == 1
        assert d.add("run1") == 2  # nested acquire by the same run
        assert sum(h.count for h in d.live_holders()) == 3
        assert d.remove("run1") == 2
        assert d.remove("run1") == 1
        assert d.remove("run2") == 0
        assert d.holders() == []


def test_dead_holder_counts_as_gone(tmp_path):
    d = AlgoDir("cca_x", tmp_path)
    with d.lock():
        d.add("crashed", pid=dead_pid())
        d.add("alive")
        assert [h.run_id for h in d.live_holders()] == ["alive"]
        assert d.remove("alive") == 0
        assert d.prune() == ["crashed"]
        assert d.holders() == []


def test_holder_files_are_not_run_files(tmp_path):
    """holder.pid / holder.log / holder.repairs and stray files never count as runs
    (a repairs count "19" once read as pid 19, a live kernel thread)."""
    d = AlgoDir("cca_x", tmp_path)
    with d.lock():
        d.set_holder(os.getpid())
        (d.path / "holder.repairs").write_text("19\n")
        (d.path / "holder.log").write_text("")
        (d.path / "stray").write_text("1\n")
        assert d.live_holders() == []
        assert d.holder_alive()


def test_bad_names_rejected(tmp_path):
    with pytest.raises(ValueError, match=r"kernel name '\.\./etc': only \[A-Za-z0-9_\.-\] allowed"):
        AlgoDir("../etc", tmp_path)
    d = AlgoDir("cca_x", tmp_path)
    with d.lock(), pytest.raises(ValueError):
        d.add("holder.pid")


def test_lock_is_exclusive_across_processes(tmp_path):
    d = AlgoDir("cca_x", tmp_path)
    probe = (f"import fcntl, os, sys\n"
             f"fd = os.open({str(d.path / '.lock')!r}, os.O_RDWR)\n"
             f"try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('got')\n"
             f"except BlockingIOError:\n    print('busy')\n")
    with d.lock():
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert out.strip() == "busy"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert out.strip() == "got"


def test_idle_directory_is_removed_and_lock_starts_over(tmp_path):
    d = AlgoDir("cca_x", tmp_path)
    with d.lock():
        d.add("run1")
        assert not d.remove_if_idle()  # a run holds it
        d.remove("run1")
        assert d.remove_if_idle()
    assert not d.path.exists()
    # a waiter that got the lock of the removed directory starts over on a new one
    with d.lock():
        assert (d.path / ".lock").exists()
        d.add("run2")
        assert [h.run_id for h in d.live_holders()] == ["run2"]


def test_algo_dirs_lists_bookkeeping(tmp_path):
    for k in ("cca_a", "cca_b"):
        with AlgoDir(k, tmp_path).lock():
            pass
    assert [d.kernel_name for d in algo_dirs(tmp_path)] == ["cca_a", "cca_b"]


class FakeKernel:
    """Stands in for the loader: a 'holder' is a sleeping process; registration
    is a set that start/stop update."""

    def __init__(self):
        self.names: set[str] = set()
        self.procs: dict[int, tuple[subprocess.Popen, str]] = {}
        self.starts = 0

    def start_holder(self, obj, kernel_name, watch, log=None):
        if "fail" in kernel_name:
            raise acq.CCError(f"load {obj}: boom")
        p = subprocess.Popen(["sleep", "60"])
        self.procs[p.pid] = (p, kernel_name)
        self.names.add(kernel_name)
        self.starts += 1
        return p.pid

    def stop_holder(self, pid, start=0, timeout=5.0):
        if pid in self.procs:
            p, name = self.procs.pop(pid)
            p.kill()
            p.wait()
            self.names.discard(name)

    def close(self):
        for p, _ in self.procs.values():
            p.kill()
            p.wait()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    k = FakeKernel()
    monkeypatch.setenv("CCARENA_CC_RUN_DIR", str(tmp_path))
    monkeypatch.setattr(loader, "start_holder", k.start_holder)
    monkeypatch.setattr(loader, "stop_holder", k.stop_holder)
    monkeypatch.setattr(loader, "registered", lambda: set(k.names))
    monkeypatch.setattr(loader, "holder_processes", lambda exe=None: [])
    monkeypatch.setattr(loader, "tcp_struct_ops", lambda: [])
    yield k
    k.close()


def algo(name="x"):
    return Algo(name, "bpf", f"cca_{name}", "obj", bpf_object="/nonexistent.bpf.o")


def test_first_acquire_registers_last_release_unregisters(fake, tmp_path):
    a = algo()
    acq.acquire_bpf(a, "run1", base=tmp_path)
    acq.acquire_bpf(a, "run2", base=tmp_path)
    assert fake.starts == 1 and "cca_x" in fake.names
    assert acq.release_bpf("cca_x", "run1", base=tmp_path) is False
    assert "cca_x" in fake.names
    assert acq.release_bpf("cca_x", "run2", base=tmp_path) is True
    assert fake.names == set()
    assert not (tmp_path / "cca_x").exists()  # leave no trace


def test_failed_registration_leaves_no_reference(fake, tmp_path):
    with pytest.raises(acq.CCError):
        acq.acquire_bpf(algo("fail"), "run1", base=tmp_path)
    assert AlgoDir("cca_fail", tmp_path).holders() == []


def test_holder_that_died_is_restarted(fake, tmp_path):
    a = algo()
    acq.acquire_bpf(a, "run1", base=tmp_path)
    (pid, _) = AlgoDir("cca_x", tmp_path).holder_process()
    fake.stop_holder(pid)  # the holder crashed: the kernel unregistered the algorithm
    acq.acquire_bpf(a, "run2", base=tmp_path)
    assert fake.starts == 2 and "cca_x" in fake.names


def test_context_manager_maps_names_and_releases(fake, monkeypatch):
    monkeypatch.setattr(acq, "resolve", lambda n, f=None, extra_dirs=None, strict=False:
                        Algo(n, "kernel", n, "built in") if n == "reno" else algo(n))
    with acq.acquire(["reno", "vegas", "vegas"], "r1") as m:
        assert m == {"reno": "reno", "vegas": "cca_vegas"}
        assert fake.names == {"cca_vegas"}
    assert fake.names == set()


def test_context_manager_releases_on_error(fake, monkeypatch):
    monkeypatch.setattr(acq, "resolve", lambda n, f=None, extra_dirs=None, strict=False: algo(n))
    with pytest.raises(RuntimeError):
        with acq.acquire(["a", "b"], "r1"):
            raise RuntimeError("run failed")
    assert fake.names == set()


def test_partial_acquire_is_rolled_back(fake, monkeypatch):
    monkeypatch.setattr(acq, "resolve", lambda n, f=None, extra_dirs=None, strict=False: algo(n))
    with pytest.raises(acq.CCError):
        with acq.acquire(["a", "fail"], "r1"):
            pass
    assert fake.names == set()


def test_cleanup_stale_stops_unheld_and_keeps_held(fake, tmp_path):
    acq.acquire_bpf(algo("a"), "live", base=tmp_path)
    acq.acquire_bpf(algo("b"), "crashed", base=tmp_path)
    d = AlgoDir("cca_b", tmp_path)
    with d.lock():
        d.add("crashed2", pid=dead_pid())
        d.remove("crashed")
    cleaned = acq.cleanup_stale(base=tmp_path)
    assert cleaned == ["cca_b"]
    assert fake.names == {"cca_a"}
    acq.release_bpf("cca_a", "live", base=tmp_path)
    assert fake.names == set()


def test_guard_counts_are_per_network_namespace_and_a_run_sums_its_own(tmp_path, monkeypatch):
    """holder.repairs: "<netns inode> <late> <at_entry>" per line. A run adds up only the
    namespaces it built, so a neighbour's repairs never flag it."""
    from ccarena.cc import hold
    d = AlgoDir("cca_x", tmp_path)
    d.path.mkdir(parents=True)
    assert hold.guard_counts("cca_x", tmp_path) is None          # no holder
    (d.path / "holder.repairs").write_text("")
    assert hold.guard_counts("cca_x", tmp_path) == {}            # held, nothing repaired
    (d.path / "holder.repairs").write_text("4026531840 0 2\n4026532999 1 0\n7\n")
    g = hold.guard_counts("cca_x", tmp_path)
    assert g == {4026531840: hold.GuardCounts(0, 2), 4026532999: hold.GuardCounts(1, 0)}
    monkeypatch.setattr(hold, "guard_counts", lambda k: g)
    assert hold.run_guard_counts("cca_x", [4026531840, 1]) == hold.GuardCounts(0, 2)
    assert hold.run_guard_counts("cca_x", [4026532999]) == hold.GuardCounts(1, 0)
    # the holder's current lines also say what the late repairs found and in which CA
    # states; a run sums the counts and merges the states
    monkeypatch.undo()
    (d.path / "holder.repairs").write_text("11 2 0 0 2 16\n12 1 3 1 0 8\n13 9 9 9 9 9\n")
    g = hold.guard_counts("cca_x", tmp_path)
    monkeypatch.setattr(hold, "guard_counts", lambda k: g)
    assert g[11] == hold.GuardCounts(2, 0, late_ssthresh=0, late_cwnd=2, late_states=16)
    assert hold.run_guard_counts("cca_x", [11, 12]) == hold.GuardCounts(3, 3, 1, 2, 24)


def test_holder_processes_finds_live_holders_by_their_command_line(tmp_path):
    """A process whose command line is `…/ccarena-cc hold … --name N …` is a holder of N
    while it runs; once it has ended (a zombie not yet reaped included) it is not."""
    (tmp_path / "hold").write_text("import time\ntime.sleep(60)\n")   # what python runs
    p = subprocess.Popen([str(tmp_path / "ccarena-cc"), "hold", "--name", "cca_fake", "x"],
                         executable=sys.executable, cwd=tmp_path)
    try:
        assert (p.pid, "cca_fake") in loader.holder_processes()
        p.kill()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)           # dead, not reaped
        assert p.pid not in {pid for pid, _ in loader.holder_processes()}
    finally:
        p.kill()
        p.wait()


def test_the_name_of_a_registered_algorithm_is_read_from_bpftool_json():
    """bpftool's `struct_ops dump` prints its parts as comma-joined JSON objects; the name
    is the struct_ops value's data.name, read as JSON whatever the fields' order."""
    from ccarena.cc.loader import struct_ops_name
    dump = ('{"bpf_map_info":{"type":26,"id":76,"name":"cca_reno_ops"}},'
            '{"bpf_struct_ops_tcp_congestion_ops":{"common":{"state":"READY"},"data":{'
            '"owner":0,"ssthresh":"u32 (struct sock *) cca_reno_ssthresh/prog_id:184",'
            '"name":"cca_reno","flags":0}}}')
    assert struct_ops_name(dump) == "cca_reno"
    assert struct_ops_name("[" + dump + "]") == "cca_reno"
    assert struct_ops_name('{"bpf_map_info":{"name":"x"}}') is None
    assert struct_ops_name("not json") is None
