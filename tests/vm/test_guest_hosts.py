"""Hosts that are QEMU guests (docs/hosts.md, `[hosts.X] vm = {...}`): booted with the
reference kernel, their NIC bridged where the host's namespace interface is, their flow
engine and per-ACK tracer run by the guest's agent, their records in the host's clock.

Under TCG (where KVM does not work, as under nested virtualisation) at what a TCG guest
carries (2 Mbit/s, sampled every 50 ms; docs/vm.md). Boots are shared: one study of
three runs on two guests (1 and 2 vCPUs) gives the physics, the guests' sizes, the
sampling, the clock alignment and the reuse of a booted guest, and its third run has a
guest killed in the middle; a second study is crashed outright for `ccarena cleanup`.
Needs `make vm` (make test installs it)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ccarena.run.study import run_study
from ccarena.study.load import loads_study
from ccarena.testbed import leftovers
from ccarena.testbed.guest import image
from ccarena.testbed.guest.machine import guests_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from linkhelpers import MSS, failed_parts, run_table  # noqa: E402

pytestmark = [pytest.mark.root, pytest.mark.slow]

RATE, RTT, SAMPLE = 2e6, 0.040, 0.050
SIZE = 150_000
MEMORY = {"r1": 512, "r2": 768}          # MiB
CPUS = {"r1": 1, "r2": 2}

STUDY = f"""
[study]
name = "guest-hosts"
duration = "12s"
repetitions = 3
reruns = 0
shuffle = false
seed = 5
sample_interval = "{int(SAMPLE * 1e3)}ms"
[topology]
pairs = 2
[bottleneck]
rate = "2mbit"
rtt = "{int(RTT * 1e3)}ms"
buffer = "30p"
[hosts.r1]
vm = {{ cpus = {CPUS['r1']}, memory = "{MEMORY['r1']}MiB", accel = "tcg" }}
[hosts.r2]
vm = {{ cpus = {CPUS['r2']}, memory = "{MEMORY['r2']}MiB", accel = "tcg" }}
[[flow]]
name = "wget"
from = "r1"
to = "s1"
kind = "download"
size = {SIZE}
count = 2
every = "5s"
[[flow]]
name = "up"
from = "s2"
to = "r2"
kind = "bulk"
bytes = 100000
start = "1s"
[[probe]]
kind = "tcp_probe"
hosts = ["r1"]
"""


def guest_processes() -> dict[int, str]:
    """pid -> command line of every process of a guest host (vng and QEMU carry the
    guest's name, ccarena-guest-<id>)."""
    r = subprocess.run(["pgrep", "-af", "ccarena-guest-[0-9a-f]{6}"], capture_output=True,
                       text=True)
    return {int(ln.split()[0]): ln for ln in r.stdout.splitlines() if ln.strip()}


def ours(before: set, text: str = "") -> dict:
    return {p: c for p, c in guest_processes().items() if p not in before and text in c}


def _qemu_of(gid: str) -> int | None:
    for pid in ours(set(), f"ccarena-guest-{gid}"):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("qemu-system"):
                return pid
        except OSError:
            continue
    return None


def _nothing_left(before_procs: set, gids: set[str]):
    assert not ours(before_procs), f"guest processes left: {ours(before_procs)}"
    from ccarena.testbed import netns
    left = [n for g in gids for n in netns.list_names(f"cca{g}-")]
    assert not left, f"guest namespaces left: {left}"
    assert not [g for g in gids if (guests_dir() / g).exists()], "guest folders left"
    assert not [g for g in gids if os.path.exists(os.path.join(leftovers.RUNS_DIR,
                                                               f"{g}.json"))], \
        "guest records left"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The study's three runs; the third has r1's QEMU killed about 3 s into its
    workload. -> (ResultsDir, {label: meta}, {label: run dir}, the guest ids, guest
    processes before, {"pid": the QEMU killed})"""
    image.locate()          # make vm
    base = tmp_path_factory.mktemp("guest-hosts")
    before = set(guest_processes())
    done, killed = [], {}

    def killer():
        """Once two runs are stored, wait for the third run's namespace flow engine (the
        parts start it after the guests' engines are READY), let the run reach t0 and
        go on a little, then kill r1's QEMU as something outside would (SIGKILL)."""
        while len(done) < 2:
            time.sleep(0.2)
        gid = done[0]["guests"]["r1"]["guest_id"]
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            r = subprocess.run(["pgrep", "-f", "ccarena-flow --config .*/runs/c000-r3/raw/s1/"],
                               capture_output=True, text=True)
            if r.stdout.strip():
                break
            time.sleep(0.2)
        time.sleep(3.0)
        pid = _qemu_of(gid)
        if pid:
            os.kill(pid, signal.SIGKILL)
            killed["pid"] = pid

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    res = run_study(loads_study(STUDY), results_base=base, progress=False,
                    on_run=lambda r, meta: done.append(meta))
    t.join(timeout=5)
    metas = {res.run_meta(d)["label"]: res.run_meta(d) for d in res.run_dirs()}
    dirs = {res.run_meta(d)["label"]: d for d in res.run_dirs()}
    gids = {m["guests"][h]["guest_id"] for m in metas.values()
            for h in m.get("guests", {}) if "guest_id" in m["guests"][h]}
    return res, metas, dirs, gids, before, killed


def measured(study):
    """The two runs nobody disturbed."""
    res, metas, dirs, *_ = study
    return [(metas[lb], dirs[lb]) for lb in sorted(metas)[:2]]


def test_a_download_from_a_guest_server_obeys_the_physics(study):
    """ccarena-flow's HTTP server in the guest r1 serves a namespace client: every
    download completes, no faster than its bytes at the bottleneck's rate plus the
    handshake's and the request's round trips."""
    for meta, d in measured(study):
        assert not failed_parts(meta), failed_parts(meta)
        conns = run_table(d, "conns")
        got = conns[(conns["host"] == "s1") & (conns["role"] == "client")]
        assert len(got) == 2, got
        assert (got["bytes"] == SIZE).all() and got["error"].isna().all(), got
        fct = (got["last_byte_ns"] - got["connect_start_ns"]) / 1e9
        floor = 2 * RTT + (SIZE - MSS) * 8 / RATE
        assert (fct >= floor).all(), f"download times {list(fct)} < {floor:.3f} s"
        served = conns[(conns["host"] == "r1") & (conns["role"] == "server")]
        assert sorted(served["bytes"]) == [SIZE, SIZE]
        # the guest as a receiver: s2's bulk flow into r2 arrived whole
        up = conns[(conns["host"] == "r2") & (conns["side"] == "recv")]
        assert up["bytes"].sum() == 100_000, up


def test_guests_have_the_vcpus_and_memory_they_were_given(study):
    for meta, _ in measured(study):
        for h in ("r1", "r2"):
            g = meta["guests"][h]
            assert g["accel"] == "tcg" and g["kernel"] == image.locate().release
            assert g["nproc"] == CPUS[h] and g["vcpus"] == CPUS[h], g
            # what the kernel reports is what QEMU gave it less what it reserves
            given = MEMORY[h] << 20
            assert g["memory_bytes"] == given and 0.75 * given < g["mem_total_bytes"] <= given
            # no offloads asked: the NIC offers none
            feats = set(g["nic"]["virtio_features"])
            assert "VERSION_1" in feats and not feats & {"CSUM", "HOST_TSO4", "GUEST_TSO4"}
            assert g["nic"]["offloads"]["tcp-segmentation-offload"] is False
            # the host side: QEMU's one TCG thread for all vCPUs was measured
            cpu = g["host_cpu"]
            assert cpu["vcpu_threads"] == 1 and cpu["vcpu_s"] > 0, cpu


def test_a_guests_flows_are_sampled_at_the_requested_interval(study):
    """The guest's engine samples TCP_INFO on the grid t0 + k·50 ms of its clock: a
    connection's samples, in the host's clock, span as many grid intervals as they are
    samples apart, give or take the ticks the engine says it served late (its largest
    lateness at either end) or skipped (its missed ticks) — neither more often than the
    interval nor less. The last sample, taken as the connection closes, is off the grid."""
    for meta, d in measured(study):
        e = meta["engines"]["r1"]
        assert e["sample_interval_ns"] == int(SAMPLE * 1e9)
        late, missed = e["max_tick_late_ns"] / 1e9, e["missed_ticks"]
        ti = run_table(d, "tcpinfo")
        ti = ti[ti["host"] == "r1"]
        assert len(ti) >= 10, len(ti)
        for conn, c in ti.groupby("conn"):
            # the engine samples a connection a last time as it closes (or as its flow
            # ends), off the grid, so totals are exact: the grid's samples are the others
            t = np.sort(c["t_ns"].to_numpy())[:-1] / 1e9
            if len(t) < 2:
                continue
            span, n = t[-1] - t[0], len(t)
            assert n - 1 <= (span + late) / SAMPLE + 1e-9, \
                f"conn {conn}: {n} samples in {span:.3f} s: more often than every {SAMPLE} s"
            assert n - 1 + missed >= (span - late) / SAMPLE - 1e-9, \
                f"conn {conn}: {n} samples in {span:.3f} s, {missed} ticks missed: sparser"


def _pairs(conns, client: str, server: str):
    """The (client row, server row) of each connection between the two hosts."""
    c = conns[conns["host"] == client].set_index(["flow", "conn"])
    s = conns[conns["host"] == server].set_index(["flow", "conn"])
    return [(c.loc[k], s.loc[k]) for k in c.index.intersection(s.index)]


def test_a_guests_samples_line_up_with_its_namespace_peers(study):
    """Instants the guest stamped in its own clock, translated, against its namespace
    peers' in the host's, where causality orders them. Each bound holds whatever either
    side's scheduling delays (a stamp is read before the write it marks, after the
    arrival it marks), so a translation off by more than its uncertainty U breaks one:
    - download from the guest r1: its response's first byte left after the client's
      request could reach it (client connected + one-way delay), and reached the client
      one one-way delay after it left;
    - bulk into the guest r2: its first and last bytes arrived one one-way delay after
      the namespace sender wrote them."""
    owd = RTT / 2
    for meta, d in measured(study):
        conns = run_table(d, "conns")
        for h in ("r1", "r2"):
            u = meta["guests"][h]["clock"]["uncertainty_ns"]
            assert 0 < u < 20e6, f"{h}: clock offset known only to ±{u / 1e6:.1f} ms"
        u1 = meta["guests"]["r1"]["clock"]["uncertainty_ns"] / 1e9
        u2 = meta["guests"]["r2"]["clock"]["uncertainty_ns"] / 1e9
        got = _pairs(conns, "s1", "r1")
        assert len(got) == 2, got
        for c, s in got:
            sent = s["first_byte_ns"] / 1e9
            assert sent >= c["connected_ns"] / 1e9 + owd - u1, (c, s)
            assert c["first_byte_ns"] / 1e9 >= sent + owd - u1, (c, s)
        got = _pairs(conns, "s2", "r2")
        assert len(got) == 1, got
        for c, s in got:
            for k in ("first_byte_ns", "last_byte_ns"):
                assert s[k] / 1e9 >= c[k] / 1e9 + owd - u2, (k, c, s)


def test_a_booted_guest_serves_the_next_run(study):
    (m1, _), (m2, _) = measured(study)
    for h in ("r1", "r2"):
        assert m1["guests"][h]["guest_id"] == m2["guests"][h]["guest_id"]
        assert m2["guests"][h]["runs_before"] == m1["guests"][h]["runs_before"] + 1
        # a fresh TCP state each run: the sockets are new (new client ports), the metrics
        # cache flushed (no ssthresh carried over: the first sample is in slow start)
    for meta, d in measured(study):
        ti = run_table(d, "tcpinfo")
        first = ti[ti["host"] == "r1"].sort_values("t_ns").iloc[0]
        assert first["ssthresh"] >= 2**30, first["ssthresh"]


def test_the_per_ack_tracer_runs_in_the_guest(study):
    """tcp:tcp_probe fires in the guest's kernel for each segment r1's established
    server sockets receive (the HTTP server closes its side once the body is queued, so
    the tail of a download, in FIN-WAIT, is not traced — as in a namespace host): the
    records are r1's, in the host's clock, the first of each connection (the request)
    between the client's connect plus a one-way delay and the server's response."""
    owd = RTT / 2
    for meta, d in measured(study):
        u = meta["guests"]["r1"]["clock"]["uncertainty_ns"] / 1e9
        tr = run_table(d, "tcpprobe")
        assert len(tr) and (tr["saddr"] == 0x0A020102).all() and (tr["sport"] == 5000).all()
        conns = run_table(d, "conns")
        for c, s in _pairs(conns, "s1", "r1"):
            mine = tr[tr["dport"] == int(c["local"].rsplit(":", 1)[1])].sort_values("t_ns")
            assert len(mine) >= 10, len(mine)
            assert np.all(np.diff(mine["snd_una"].astype(np.int64)) >= 0)
            first = mine["t_ns"].iloc[0] / 1e9
            assert mine["data_len"].iloc[0] > 0         # the request
            assert c["connected_ns"] / 1e9 + owd - u <= first <= s["first_byte_ns"] / 1e9 + u


def test_a_guest_killed_mid_run_makes_the_run_invalid_and_leaves_nothing(study):
    res, metas, dirs, gids, before, killed = study
    assert killed.get("pid"), "the third run's guest was never found to kill"
    meta = metas[sorted(metas)[2]]
    assert meta["valid"] is False
    assert any("guest r1" in r for r in failed_parts(meta)), meta["invalid_reasons"]
    # the study went on and closed: no QEMU, no tap (they live in the guests'
    # namespaces, gone), no namespace, no folder, no record
    _nothing_left(before, gids)


CRASH = """
[study]
name = "guest-crash"
duration = "60s"
repetitions = 1
sample_interval = "50ms"
[bottleneck]
rate = "2mbit"
rtt = "40ms"
[hosts.r1]
vm = { cpus = 1, memory = "512MiB", accel = "tcg" }
[[flow]]
from = "s1"
to = "r1"
kind = "bulk"
"""


def test_cleanup_removes_the_guests_of_a_crashed_study(tmp_path):
    """ccarena killed outright mid-run: its guest powers off by itself (the agent's
    channel closed), and `ccarena cleanup` removes what is left: the guest's namespace,
    its folder, the run's namespaces and records."""
    (tmp_path / "s.toml").write_text(CRASH)
    before = set(guest_processes())
    p = subprocess.Popen([sys.executable, "-m", "ccarena.cli", "run", str(tmp_path / "s.toml"),
                          "--results", str(tmp_path)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    ids = set()
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and p.poll() is None:
            recs = _records_of(p.pid)
            if any("guest" not in r for r in recs) and any("guest" in r for r in recs):
                ids = {r["run_id"] for r in recs}
                break           # the guest booted and the run is on
            time.sleep(0.5)
        assert ids, "the study never got its run going"
        time.sleep(5)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    gids = {r["run_id"] for r in _records_of(p.pid) if "guest" in r}
    assert gids, "no guest record"
    deadline = time.monotonic() + 120
    while ours(before) and time.monotonic() < deadline:
        time.sleep(1)
    assert not ours(before), f"the guest outlived its orchestrator: {ours(before)}"
    from ccarena.testbed import netns
    left = [n for i in ids for n in netns.list_names(f"cca{i}-")]
    assert left, "the crash left nothing for cleanup to find"
    r = subprocess.run([sys.executable, "-m", "ccarena.cli", "cleanup", *sum(
        (["--run", i] for i in sorted(ids)), [])], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert any(f"cca{g}-vm" in r.stdout for g in gids), r.stdout
    _nothing_left(before, ids)
    assert not [n for i in ids for n in netns.list_names(f"cca{i}-")]


def _records_of(pid: int) -> list[dict]:
    """The live-run records (runs and guests) of the ccarena process `pid`."""
    out = []
    if not os.path.isdir(leftovers.RUNS_DIR):
        return out
    for fn in os.listdir(leftovers.RUNS_DIR):
        if not fn.endswith(".json"):
            continue
        try:
            rec = json.loads(Path(leftovers.RUNS_DIR, fn).read_text())
        except (OSError, ValueError):
            continue
        if rec.get("pid") == pid:
            out.append(rec)
    return out
