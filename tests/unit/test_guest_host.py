"""VM hosts without booting anything: the clock translation, the QEMU devices, the
agent's request handling, the records in the host's clock, the CPU judgement, the study
keys, what `validate` warns of, and how guests are counted."""
import json
import random

import numpy as np
import pytest

from ccarena.errors import SpecError
from ccarena.measure import guest_cpu
from ccarena.measure.guest_records import append_bin, translate_conns, translate_dir
from ccarena.study.load import loads_study
from ccarena.study.model import VmSpec
from ccarena.testbed.guest import agent, attach, check, clock, qemu
from ccarena.testbed.guest.pool import demand, resolved
from ccarena.testbed.guest.vng import vng_argv


# -- the clock ---------------------------------------------------------------------------------
def _exchange(theta: int, t: int, up: int, think: int, down: int):
    """One request at host time t: `up` ns to reach the guest, which reads its clock after
    `think`, `down` ns back. -> (t_send, t_guest, t_recv)"""
    return t, t + up + think + theta, t + up + think + down


def test_the_offset_lies_within_the_uncertainty_whatever_the_delays():
    """The bound holds for any delays, however asymmetric: the guest read its clock
    between the request leaving and the answer arriving (RFC 5905 §10's reasoning)."""
    rng = random.Random(7)
    for _ in range(2000):
        theta = rng.randint(-10**15, 10**15)
        samples = [_exchange(theta, 10**12 + i * 10**7, rng.randint(0, 5 * 10**6),
                             rng.randint(0, 10**5), rng.randint(0, 5 * 10**6))
                   for i in range(rng.randint(1, 20))]
        o = clock.estimate(samples)
        assert abs(o.offset_ns - theta) <= o.uncertainty_ns
        assert o.rtt_ns == min(r - s for s, _, r in samples)
        assert o.samples == len(samples)


def test_the_shortest_round_trip_is_the_one_used():
    o = clock.estimate([(0, 5_000_100, 900), (1000, 5_001_050, 1100), (2000, 5_002_600, 3000)])
    assert o.rtt_ns == 100 and o.at_ns == 1050 and o.offset_ns == 5_000_000
    assert o.uncertainty_ns == 50


def test_answers_before_their_request_are_refused():
    with pytest.raises(ValueError, match="no usable clock exchange"):
        clock.estimate([(100, 5, 50)])


def test_a_drifting_guest_clock_is_followed_between_two_estimates():
    """Guest clock = host clock * (1 + 50e-6) + 3 s: two exact estimates 60 s apart give
    the rate, and every time in between translates back to the host's to the ns."""
    def g(t):
        return int(round(t * (1 + 50e-6))) + 3 * 10**9
    t1, t2 = 10**12, 10**12 + 60 * 10**9
    m = clock.ClockMap(clock.estimate([(t1, g(t1), t1)]), clock.estimate([(t2, g(t2), t2)]))
    assert m.rate_ppm == pytest.approx(50, abs=1e-3)
    for t in (t1, t1 + 17 * 10**9 + 3, t2):
        assert abs(m.to_guest(t) - g(t)) <= 1
        assert abs(m.to_host(g(t)) - t) <= 1
    arr = np.array([g(t1), g(t2)], dtype=np.int64)
    assert np.abs(m.to_host(arr) - np.array([t1, t2])).max() <= 1
    d = m.as_dict()
    assert d["uncertainty_ns"] == 0 and d["after"]["at_ns"] == t2


def test_one_estimate_translates_by_a_constant():
    m = clock.ClockMap(clock.Offset(offset_ns=-7, uncertainty_ns=3, at_ns=100, rtt_ns=6,
                                    samples=4))
    assert m.to_guest(1000) == 993 and m.to_host(993) == 1000
    assert m.rate_ppm == 0 and m.uncertainty_ns == 3 and m.as_dict()["rate_bound_ppm"] is None


# -- the QEMU devices ----------------------------------------------------------------------------
def test_without_offloads_the_nic_offers_none_either_way():
    o = qemu.nic_opts("cgabc123", "02:cc:0f:ab:c1:23", offloads=False)
    netdev, dev = o[1], o[3]
    assert o[0] == "-netdev" and o[2] == "-device"
    assert netdev.startswith("tap,id=hn0,ifname=cgabc123,script=no,downscript=no")
    assert "vhost=off" in netdev and "queues" not in netdev
    assert dev.startswith("virtio-net-pci,netdev=hn0,mac=02:cc:0f:ab:c1:23")
    for prop in qemu.OFFLOAD_PROPS:
        assert f",{prop}=off" in dev
    on = qemu.nic_opts("t", "02:cc:0f:00:00:01", offloads=True, vhost=True)
    assert "=off" not in on[3] and "vhost=on" in on[1]


def test_multiqueue_gives_the_tap_and_the_device_the_queues_and_vectors():
    o = qemu.nic_opts("t", "02:cc:0f:00:00:01", queues=4)
    assert ",queues=4" in o[1] and ",mq=on,vectors=10" in o[3]
    with pytest.raises(ValueError):
        qemu.nic_opts("t", "m", queues=0)
    with pytest.raises(ValueError):
        qemu.nic_opts("t", "m", queues=qemu.MAX_QUEUES + 1)


def test_the_agent_port_is_named_and_its_socket_is_the_hosts():
    o = qemu.agent_opts("/b/vm/guests/abc/agent.sock")
    assert "socket,id=ccarena-agent,path=/b/vm/guests/abc/agent.sock,server=on,wait=off" in o
    assert any(x.endswith(f"name={qemu.AGENT_PORT}") for x in o)
    assert qemu.name_opts("ccarena-guest-abc") == ["-name",
                                                   "ccarena-guest-abc,debug-threads=on"]


def test_guest_macs_and_taps_are_distinct_per_guest():
    assert qemu.guest_mac("00a1b2") == "02:cc:0f:00:a1:b2"
    assert qemu.guest_mac("00a1b2") != qemu.guest_mac("00a1b3")
    assert len(qemu.tap_name("ffffff")) <= 15       # IFNAMSIZ - 1


def test_virtio_feature_bits_are_named():
    bits = "1" + "0" * 4 + "1" + "0" * 26 + "1"      # CSUM, MAC, VERSION_1
    assert qemu.decode_features(bits) == ["CSUM", "MAC", "VERSION_1"]
    assert qemu.decode_features("0" * 25 + "1") == ["bit25"]


class _Img:
    vmlinuz = "/k/vmlinuz"


def test_the_devices_ride_in_the_same_qemu_options_as_tcgs():
    o = ["-device", "virtio-serial-pci,id=s"]
    tcg = vng_argv(_Img(), accel="tcg", cpus=1, memory="512M", rwdirs=["/g"], cwd="/g",
                   guest_cmd="sh /g/guest.sh", qemu_opts=o)
    assert "--qemu-opts=-accel tcg,thread=single -cpu max,avx2=off -device " \
           "virtio-serial-pci,id=s" in tcg
    kvm = vng_argv(_Img(), accel="kvm", cpus=1, memory="512M", rwdirs=["/g"], cwd="/g",
                   guest_cmd="true", qemu_opts=o)
    assert "--qemu-opts=-device virtio-serial-pci,id=s" in kvm
    assert kvm[-2:] == ["--exec", "true"]


def test_a_qemu_option_vngs_shell_would_split_is_refused():
    for bad in ("path=/a b", "x;rm", "$HOME", ""):
        with pytest.raises(ValueError):
            vng_argv(_Img(), accel="tcg", cpus=1, memory="1G", rwdirs=[], cwd="/",
                     guest_cmd="true", qemu_opts=["-chardev", bad])


# -- the agent (its pure parts) -------------------------------------------------------------
def test_the_agent_finds_its_port_by_name(tmp_path):
    for port, name in (("vport2p1", "virtme.stdin"), ("vport9p1", qemu.AGENT_PORT)):
        (tmp_path / port).mkdir()
        (tmp_path / port / "name").write_text(name + "\n")
    assert agent.find_port(root=str(tmp_path)) == "/dev/vport9p1"
    assert agent.find_port("nothing", root=str(tmp_path)) is None


def test_the_agent_answers_each_request_with_its_id_and_failures_as_errors(tmp_path):
    a = agent.Agent(str(tmp_path))
    out = json.loads(a.handle(b'{"id": 4, "op": "clock"}'))
    assert out["id"] == 4 and isinstance(out["t"], int)
    out = json.loads(a.handle(b'{"id": 5, "op": "fly"}'))
    assert out == {"id": 5, "error": "unknown op 'fly'"}
    out = json.loads(a.handle(b'{"id": 6, "op": "go", "t0_ns": 1}'))
    assert out["id"] == 6 and out["error"] == "go: go: no flow engine started"
    assert "bad request" in json.loads(a.handle(b"{nope"))["error"]


# -- records in the host's clock -----------------------------------------------------------------
def _tcpinfo_like(path, t_ns, extra_bytes=b""):
    dt = np.dtype([("t_ns", "<u8"), ("flow", "<u4"), ("srtt_us", "<u4")])
    arr = np.zeros(len(t_ns), dtype=dt)
    arr["t_ns"], arr["flow"], arr["srtt_us"] = t_ns, 1, 40000
    path.write_bytes(arr.tobytes() + extra_bytes)
    (path.parent / (path.name + ".schema.json")).write_text(json.dumps(
        {"version": 1, "record": "x", "fields": [["t_ns", "u64"], ["flow", "u32"],
                                                ["srtt_us", "u32"]]}))
    return dt


def test_records_move_into_the_hosts_clock_and_durations_stay(tmp_path):
    src, dst = tmp_path / "guest", tmp_path / "host"
    src.mkdir()
    m = clock.ClockMap(clock.Offset(offset_ns=5_000, uncertainty_ns=10, at_ns=0, rtt_ns=20,
                                    samples=1))
    dt = _tcpinfo_like(src / "tcpinfo.bin", [105_000, 205_000], extra_bytes=b"\x01\x02")
    (src / "conns.jsonl").write_text(json.dumps(
        {"flow": 0, "connect_start_ns": None, "connected_ns": 105_000, "end_ns": 305_000,
         "bytes": 10}) + "\n" + '{"cut')
    (src / "engine.json").write_text('{"samples": 2, "t0_ns": 5000, "max_tick_late_ns": 9}')
    got = translate_dir(src, dst, m)
    assert sorted(got["files"]) == ["conns.jsonl", "engine.json", "tcpinfo.bin"]
    arr = np.fromfile(dst / "tcpinfo.bin", dtype=dt)     # the partial record dropped
    assert list(arr["t_ns"]) == [100_000, 200_000] and list(arr["srtt_us"]) == [40000] * 2
    assert (dst / "tcpinfo.bin.schema.json").exists()
    c = json.loads((dst / "conns.jsonl").read_text().splitlines()[0])
    assert c["connected_ns"] == 100_000 and c["end_ns"] == 300_000
    assert c["connect_start_ns"] is None and c["bytes"] == 10
    assert json.loads((dst / "engine.json").read_text()) == {"samples": 2, "t0_ns": 0,
                                                              "max_tick_late_ns": 9}


def test_a_guests_trace_appends_to_the_runs_and_a_foreign_layout_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _tcpinfo_like(a / "tcpprobe.bin", [1, 2])
    _tcpinfo_like(b / "tcpprobe.bin", [3])
    assert append_bin(a / "tcpprobe.bin", tmp_path / "run.bin") == 2
    assert append_bin(b / "tcpprobe.bin", tmp_path / "run.bin") == 1
    assert (tmp_path / "run.bin").stat().st_size == 3 * 16
    (b / "tcpprobe.bin.schema.json").write_text(json.dumps(
        {"version": 1, "fields": [["t_ns", "u64"], ["x", "u64"]]}))
    with pytest.raises(ValueError, match="not laid out"):
        append_bin(b / "tcpprobe.bin", tmp_path / "run.bin")


def test_conns_lines_keep_their_nulls(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"first_byte_ns": null, "last_byte_ns": 7}\n')
    m = clock.ClockMap(clock.Offset(offset_ns=-3, uncertainty_ns=1, at_ns=0, rtt_ns=2,
                                    samples=1))
    assert translate_conns(tmp_path / "c.jsonl", tmp_path / "d.jsonl", m) == 1
    assert json.loads((tmp_path / "d.jsonl").read_text()) == {"first_byte_ns": None,
                                                               "last_byte_ns": 10}


# -- QEMU's threads -------------------------------------------------------------------------------
def test_qemus_threads_are_told_apart_by_name():
    assert guest_cpu.kind("CPU 1/KVM") == "vcpu" and guest_cpu.kind("ALL CPUs/TCG") == "vcpu"
    assert guest_cpu.kind("vhost-4242") == "vhost" and guest_cpu.kind("worker") == "qemu"
    assert guest_cpu.vcpus_of("ALL CPUs/TCG") is None and guest_cpu.vcpus_of("CPU 0/KVM") == 1


def _usage(busy_s, wait_s, wall_s=10.0, name="CPU 0/KVM"):
    T = guest_cpu.Thread
    before = {1: T(name, 10**9, 0), 2: T("vhost-9", 0, 0), 3: T("qemu-system-x86", 0, 0)}
    after = {1: T(name, 10**9 + int(busy_s * 1e9), int(wait_s * 1e9)),
             2: T("vhost-9", int(0.5e9), 0), 3: T("qemu-system-x86", int(0.25e9), 0),
             4: T("worker", int(0.1e9), 0)}        # a thread born during the run counts whole
    return guest_cpu.usage(before, after, wall_s)


def test_usage_sums_each_kind_over_the_run():
    u = _usage(4.0, 0.5)
    assert u["vcpu_s"] == 4.0 and u["vhost_s"] == 0.5 and u["qemu_s"] == 0.35
    assert u["vcpu_busy"] == 0.4 and u["vcpu_wait"] == 0.05 and u["vcpu_threads"] == 1


def test_a_tcg_guest_that_could_not_keep_up_fails_its_run_and_kvms_is_recorded():
    reasons, noise = guest_cpu.judge("r1", _usage(9.5, 0.0, name="ALL CPUs/TCG"), "tcg")
    assert len(reasons) == 1 and "r1" in reasons[0] and "95%" in reasons[0] and not noise
    assert guest_cpu.judge("r1", _usage(9.5, 0.0), "kvm") == ([], [])
    assert guest_cpu.judge("r1", _usage(8.9, 0.0, name="ALL CPUs/TCG"), "tcg") == ([], [])


def test_vcpus_starved_by_the_machine_are_noise_as_steal_time_is():
    reasons, noise = guest_cpu.judge("s2", _usage(2.0, 3.0), "kvm")
    assert not reasons and len(noise) == 1 and "30%" in noise[0] and "steal" in noise[0]
    assert guest_cpu.judge("s2", _usage(2.0, 2.0), "kvm") == ([], [])    # 20 %: within


# -- the study keys --------------------------------------------------------------------------
STUDY = """[study]
name = "x"
duration = "5s"
[[flow]]
name = "f"
from = "r1"
to = "s1"
kind = "download"
size = 1000
"""


def test_a_vm_host_gets_its_spec_and_true_means_the_defaults():
    s = loads_study(STUDY + '[hosts.r1]\nvm = { cpus = 3, memory = "4GiB", queues = 2, '
                            'offloads = true, vhost = false }\n[hosts.s1]\nvm = true\n')
    assert s.hosts["r1"].vm == VmSpec(cpus=3, memory=4 << 30, queues=2, offloads=True,
                                      vhost="off")
    assert s.hosts["s1"].vm == VmSpec()
    assert set(s.vm_hosts) == {"r1", "s1"}


@pytest.mark.parametrize("extra,needle", [
    ('[hosts.r1]\nvm = { cpu = 2 }', "hosts.r1.vm: unknown key 'cpu' (did you mean 'cpus'?)"),
    ('[hosts.r1]\nvm = { cpus = 0 }', "hosts.r1.vm: cpus: must be at least 1"),
    ('[hosts.r1]\nvm = { memory = "64MiB" }', "below 128MiB"),
    ('[hosts.r1]\nvm = { accel = "hvf" }', "accel: 'hvf' is not one of: auto, kvm, tcg"),
    ('[hosts.r1]\nvm = { vhost = "yes" }', 'expected true, false or "auto"'),
    ('[hosts.r1]\nvm = 2', "hosts.r1.vm: expected a table"),
    ('[hosts.r1]\ncpus = 1.5\nvm = {}', "hosts.r1.cpus: a VM host's cpus are whole vCPUs"),
    ('[hosts.r1]\ncpuset = "0"\nvm = {}', "hosts.r1.cpuset: does not apply to a VM host"),
    ('[hosts.r1]\ncpus = 2\nvm = { cpus = 1 }', "hosts.r1.cpus: says 2 and hosts.r1.vm.cpus "
                                                 "says 1: give one"),
    ('[hosts.r1]\nmemory = "64MiB"\nvm = {}', "a VM host's memory is its guest's"),
    ('[hosts.r1]\nvm = { kernel = "nowhere/bzImage" }', "hosts.r1.vm.kernel: no such kernel"),
    ('[hosts.s1]\nvm = {}\n[[probe]]\nkind = "ping"\nfrom = "s1"\nto = "r1"',
     'probe[0].from: s1 is a VM host: ping runs in a namespace; ping it from another host'),
    ('[hosts.s1]\nvm = {}\n[[flow]]\nname = "c"\nkind = "command"\nhost = "s1"\nrun = "true"',
     "flow.c.host: s1 is a VM host"),
])
def test_vm_mistakes_name_the_key(extra, needle):
    with pytest.raises(SpecError) as e:
        loads_study(STUDY + extra + "\n")
    assert needle in str(e.value)


def test_a_vm_hosts_cpus_and_memory_size_its_guest():
    """A study sweeps the guest's size with the keys its namespace realisation limits
    (kvm-download's `vm` scale adds only the vm table)."""
    s = loads_study(STUDY + '[hosts.r1]\ncpus = 2\nmemory = "4GiB"\n[sweep]\n'
                            '"hosts.r1.cpus" = [1, 2]\n[scale.vm]\nhosts = { r1 = { vm = '
                            '{ accel = "tcg" } } }\n')
    assert s.hosts["r1"].vm is None and s.hosts["r1"].cpus == 2
    from ccarena.study.load import apply_scale, parse_study
    raw, _ = apply_scale(s.raw, "vm", "<s>")
    v = parse_study(raw)
    assert [c.study.hosts["r1"].vm for c in v.cells] == [
        VmSpec(cpus=n, memory=4 << 30, accel="tcg") for n in (1, 2)]
    assert all(c.study.hosts["r1"].cpus is None for c in v.cells)   # no cgroup quota


def test_testbed_vm_makes_every_host_a_guest_and_a_hosts_own_overrides():
    s = loads_study(STUDY.replace("[study]", "[topology]\npairs = 1\n[study]")
                    + '[testbed]\nvm = { cpus = 1, memory = "1GiB" }\n[hosts.r1]\nvm = '
                      '{ cpus = 2 }\n[sweep]\n"topology.pairs" = [1, 2]\n')
    two = s.cells[1].study
    assert set(two.vm_hosts) == {"s1", "s2", "r1", "r2"}
    assert two.hosts["r1"].vm == VmSpec(cpus=2, memory=1 << 30)
    assert two.hosts["s2"].vm == VmSpec(cpus=1, memory=1 << 30)


def test_a_guests_size_is_sweepable():
    s = loads_study(STUDY + '[hosts.r1]\nvm = { memory = "1GiB" }\n[sweep]\n'
                            '"hosts.r1.vm.cpus" = [1, 2]\n"hosts.r1.vm.memory" = ["1GiB", '
                            '"2GiB"]\n')
    got = sorted((c.study.hosts["r1"].vm.cpus, c.study.hosts["r1"].vm.memory >> 30)
                 for c in s.cells)
    assert got == [(1, 1), (1, 2), (2, 1), (2, 2)]
    # a sweep may make a host a guest that the file leaves a namespace
    s = loads_study(STUDY + '[sweep]\n"hosts.r1.vm.cpus" = [1]\n')
    assert s.cells[0].study.hosts["r1"].vm.cpus == 1
    with pytest.raises(SpecError, match="a host's vm has no setting 'cpu'"):
        loads_study(STUDY + '[sweep]\n"hosts.r1.vm.cpu" = [1]\n')


def test_guests_are_counted_by_spec_in_the_busiest_cell():
    s = loads_study(STUDY.replace("[study]", "[topology]\npairs = 2\n[study]")
                    + '[hosts.r1]\nvm = {}\n[hosts.r2]\nvm = {}\n[hosts.s1]\nvm = '
                    '{ cpus = 1 }\n[sweep]\n"hosts.r2.vm.cpus" = [2, 3]\n')
    need = demand(s)
    two, one, three = (resolved(VmSpec(cpus=c), s) for c in (2, 1, 3))
    assert need == {two: 2, one: 1, three: 1}
    assert two.offloads is False        # the study's testbed.offloads


# -- validate ---------------------------------------------------------------------------------
def test_validate_warns_of_a_tcg_guest_on_a_fast_bottleneck_only():
    s = loads_study(STUDY.replace('duration = "5s"', 'duration = "5s"\nsample_interval = '
                                  '"50ms"') + '[hosts.r1]\nvm = {}\n[bottleneck]\nrate = '
                    '"2mbit"\n[sweep]\n"bottleneck.rate" = ["2mbit", "100mbit"]\n')
    tcg = {"accel": {"auto:k": {"accel": "tcg", "why": "KVM unusable", "kernel": "k"}},
           "guests": 1, "memory_bytes": 2 << 30}
    kvm = {"accel": {"auto:k": {"accel": "kvm", "why": "ok", "kernel": "k"}},
           "guests": 1, "memory_bytes": 2 << 30}
    w = check.advice(s, tcg)
    assert len(w) == 1 and "bottleneck.rate=100mbit" in w[0] and "100 Mbit/s" in w[0]
    assert "flagged invalid" in w[0]
    assert check.advice(s, kvm) == [] and check.advice(s, None) == []
    fine = loads_study(STUDY + '[hosts.r1]\nvm = {}\n[bottleneck]\nrate = "2mbit"\n')
    assert "samples every 10 ms" in check.advice(fine, tcg)[0]
    lines = check.describe(tcg)
    assert "tcg (KVM unusable)" in lines[0] and "5 Mbit/s" in lines[0]
    assert "1 guest at once, 2.0 GiB" in lines[1]


# -- the bridge ----------------------------------------------------------------------------------
def test_the_namespace_side_of_the_bridge_takes_another_mac():
    m = attach.side_mac("02:cc:02:00:01:02")
    assert m == "02:cc:12:00:01:02" and m != "02:cc:02:00:01:02"


def test_only_a_shutdown_request_ends_the_agent():
    assert agent._shutdown_id(b'{"id": 9, "op": "shutdown"}') == 9
    assert agent._shutdown_id(b'{"id": 9, "op": "clock"}') is None
    assert agent._shutdown_id(b'{nope') is None and agent._shutdown_id(b'[1]') is None


def test_a_study_with_vm_hosts_is_not_run_inside_the_vm():
    from ccarena.vm.session import VmError, run_plan
    s = loads_study(STUDY + '[hosts.r1]\nvm = {}\n')
    with pytest.raises(VmError, match="has VM hosts"):
        run_plan(s)


def test_cleanup_of_some_runs_touches_only_theirs(tmp_path, monkeypatch):
    """`ccarena cleanup --run ID`: only the named dead runs' namespaces, cgroups, records
    and recorded folders go; other dead runs' stay for a plain cleanup."""
    from ccarena.testbed import cgroups, leftovers
    runs = tmp_path / "runs"
    runs.mkdir()
    folder = tmp_path / "guest-aaaaaa"
    folder.mkdir()
    for rid, extra in (("aaaaaa", {"dirs": [str(folder)]}), ("bbbbbb", {})):
        (runs / f"{rid}.json").write_text(json.dumps({"run_id": rid, "pid": 2**22 + 7,
                                                      "namespaces": [], **extra}))
    names = ["ccaaaaaaa-vm", "ccaaaaaaa-s1", "ccabbbbbb-s1", "other"]
    removed_ns, removed_cg = [], []
    monkeypatch.setattr(leftovers, "RUNS_DIR", str(runs))
    monkeypatch.setattr(leftovers, "list_names", lambda prefix="": list(names))
    monkeypatch.setattr(leftovers, "remove", removed_ns.append)
    monkeypatch.setattr(leftovers, "pid_alive", lambda pid: False)
    monkeypatch.setattr(cgroups, "cleanup_stale",
                        lambda live, only=None: removed_cg.append(only) or [])
    got = leftovers.cleanup(only={"aaaaaa"})
    assert removed_ns == ["ccaaaaaaa-vm", "ccaaaaaaa-s1"] and removed_cg == [{"aaaaaa"}]
    assert str(folder) in got and not folder.exists()
    assert sorted(p.name for p in runs.iterdir()) == ["bbbbbb.json"]


# -- the pool (fake guests: no boot) -------------------------------------------------------
class _FakeGuest:
    made: list = []

    def __init__(self, spec, fail=False):
        self.spec, self.up, self.fail, self.stopped = spec, False, fail, None
        self.runs = 0
        self.facts = {"kernel": "k", "boot_s": 1.0}
        self.gid, self.accel = f"g{len(_FakeGuest.made)}", "tcg"
        self.proc = None
        self.channel = self         # close() asks every guest at once: send("shutdown")
        _FakeGuest.made.append(self)

    def send(self, op):
        pass

    def launch(self):
        self.up = True

    def wait_booted(self, deadline):
        if self.fail:
            from ccarena.testbed.guest.machine import GuestError
            raise GuestError("no boot")

    def alive(self):
        return self.up and self.stopped is None

    def shutdown(self):
        self.stopped = "shutdown"

    def kill(self):
        self.stopped = self.stopped or "killed"


@pytest.fixture
def fake_guests(monkeypatch):
    from ccarena.testbed.guest import pool
    _FakeGuest.made = []
    monkeypatch.setattr(pool, "Guest", _FakeGuest)
    monkeypatch.setattr(pool, "MAX_IDLE", 1)
    return pool


def test_the_pool_reuses_a_guest_of_the_same_spec_and_boots_the_rest(fake_guests):
    p = fake_guests.Pool()
    a, b = VmSpec(cpus=1, offloads=False), VmSpec(cpus=2, offloads=False)
    first = p.take({"r1": a, "r2": b})
    assert len(_FakeGuest.made) == 2 and first["r1"].spec == a
    p.give_back(first.values())
    again = p.take({"r1": a})
    assert again["r1"] is first["r1"] and len(_FakeGuest.made) == 2
    # one idle guest may wait while a run runs: r2's stays, nothing else to evict
    assert p.idle == [first["r2"]] and first["r2"].stopped is None
    p.give_back(again.values())
    third = p.take({"s1": VmSpec(cpus=3, offloads=False)})
    # two idle, one allowed: the least recently used (r2's) is shut down
    assert first["r2"].stopped == "shutdown" and first["r1"].stopped is None
    p.give_back(third.values())
    p.close()
    assert all(g.stopped for g in _FakeGuest.made)


def test_a_dead_guest_is_not_reused_and_a_failed_boot_leaves_nothing(fake_guests):
    p = fake_guests.Pool()
    a = VmSpec(cpus=1, offloads=False)
    g = p.take({"r1": a})["r1"]
    g.up = False                            # QEMU died during the run
    p.give_back([g])
    assert g.stopped == "killed" and p.idle == []
    h = p.take({"r1": a})["r1"]
    assert h is not g
    p.give_back([h])
    _FakeGuest.__init__.__defaults__ = (True,)      # every boot from here fails
    try:
        with pytest.raises(Exception, match="no boot"):
            p.take({"r1": a, "r2": VmSpec(cpus=2, offloads=False)})
    finally:
        _FakeGuest.__init__.__defaults__ = (False,)
    assert all(x.stopped == "killed" for x in _FakeGuest.made[2:])
    assert p.idle == [h] and p.busy == []     # the guest taken is given back, not lost


def test_the_pool_boots_what_a_run_needs_before_it(fake_guests):
    """ready(): the guests a cell needs and no idle guest offers are booted before its
    run (the run then only takes them)."""
    p = fake_guests.Pool()
    s = loads_study(STUDY.replace("[study]", "[topology]\npairs = 2\n[study]")
                    + '[testbed]\nvm = { cpus = 1 }\n')
    p.ready(s)
    assert len(_FakeGuest.made) == 4 and len(p.idle) == 4
    p.ready(s)                                  # all there: nothing more
    assert len(_FakeGuest.made) == 4
    got = p.take({h: resolved(v, s) for h, v in s.vm_hosts.items()})
    assert set(got.values()) == set(_FakeGuest.made) and p.idle == []
