"""What a guest cost the host: the CPU time of its QEMU threads over a run, and whether
the guest could keep up.

    snapshot(qemu_pid) -> {tid: Thread}              the threads' CPU and run-queue wait
    usage(before, after, wall_s) -> dict             per kind: vcpu, vhost, qemu (the rest)
    judge(host, usage, accel) -> (reasons, noise)    validity (measure/validity.py's terms)

A vCPU is a host thread: QEMU names it "CPU <n>/KVM" under KVM, "CPU <n>/TCG" under
multi-threaded TCG and "ALL CPUs/TCG" when one thread runs every vCPU (ccarena's TCG,
vng.py); with vhost-net the kernel moves the NIC's packets in a thread "vhost-<qemu pid>"
of QEMU's. (QEMU names its threads with `-name ...,debug-threads=on`, qemu.py.) The
scheduler's statistics give each thread's time on a CPU and its time waiting for one
(/proc/<pid>/task/<tid>/schedstat: run time, run-queue wait, in ns)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ccarena.measure.validity import STEAL_MAX

# a vCPU thread on a CPU this much of the run could not keep up under TCG (it emulates
# every instruction: past this, the guest's timers and packets wait for it)
TCG_BUSY_MAX = 0.9
# A vCPU thread runnable but waiting for a host CPU is what a guest calls steal time:
# judged as the machine's steal is (validity.STEAL_MAX)
WAIT_MAX = STEAL_MAX


@dataclass(frozen=True)
class Thread:
    name: str
    cpu_ns: int         # time on a CPU
    wait_ns: int        # time runnable, waiting for a CPU


def kind(name: str) -> str:
    """vcpu, vhost or qemu (the main loop, I/O and RCU threads)."""
    if name.endswith("/KVM") or name.endswith("/TCG"):
        return "vcpu"
    if name.startswith("vhost-"):
        return "vhost"
    return "qemu"


def vcpus_of(name: str) -> int | None:
    """How many vCPUs a vCPU thread runs: 1, or None for all of them ("ALL CPUs/TCG")."""
    return None if name.startswith("ALL CPUs") else 1


def snapshot(pid: int) -> dict[int, Thread]:
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                run_ns, wait_ns, _ = (int(x) for x in f.read().split()[:3])
        except (OSError, ValueError):
            continue        # the thread ended between the listing and the read
        out[int(t)] = Thread(name, run_ns, wait_ns)
    return out


def usage(before: dict[int, Thread], after: dict[int, Thread], wall_s: float) -> dict:
    """CPU seconds per kind over the interval, and per thread; `busy` and `wait` are
    fractions of the interval (the busiest vCPU thread's, and the longest wait)."""
    threads = []
    for tid, a in after.items():
        b = before.get(tid, Thread(a.name, 0, 0))
        threads.append({"name": a.name, "kind": kind(a.name),
                        "cpu_s": (a.cpu_ns - b.cpu_ns) / 1e9,
                        "wait_s": (a.wait_ns - b.wait_ns) / 1e9})
    threads.sort(key=lambda t: (t["kind"] != "vcpu", t["name"]))
    out = {"wall_s": round(wall_s, 3)}
    for k in ("vcpu", "vhost", "qemu"):
        out[f"{k}_s"] = round(sum(t["cpu_s"] for t in threads if t["kind"] == k), 4)
    vcpu = [t for t in threads if t["kind"] == "vcpu"]
    out["vcpu_threads"] = len(vcpu)
    out["vcpu_busy"] = round(max((t["cpu_s"] for t in vcpu), default=0.0) / wall_s, 4) \
        if wall_s > 0 else None
    out["vcpu_wait"] = round(max((t["wait_s"] for t in vcpu), default=0.0) / wall_s, 4) \
        if wall_s > 0 else None
    out["threads"] = [{**t, "cpu_s": round(t["cpu_s"], 4), "wait_s": round(t["wait_s"], 4)}
                      for t in threads]
    return out


def judge(host: str, u: dict, accel: str) -> tuple[list[str], list[str]]:
    """-> (reasons, noise). Under TCG a vCPU thread busy nearly all the run means the
    emulation could not keep up with the run: the run measured the emulator (a failure of
    the setup, not the machine's noise; `validate` warns of it). Under KVM a busy vCPU
    is what the guest's size allows — the experiment's own result — and is only recorded.
    vCPU threads that waited long for a host CPU were starved by the rest of the machine
    (the guest's steal time): noise, run again."""
    reasons, noise = [], []
    busy, wait = u.get("vcpu_busy"), u.get("vcpu_wait")
    if accel == "tcg" and busy is not None and busy >= TCG_BUSY_MAX:
        reasons.append(f"guest {host}: its vCPU thread was busy {busy:.0%} of the run under "
                       "TCG: the emulated guest could not keep up (lower the rate; "
                       "docs/vm.md)")
    if wait is not None and wait > WAIT_MAX:
        noise.append(f"guest {host}: its vCPUs waited {wait:.0%} of the run for a host CPU "
                     f"(the guest's steal time; limit {WAIT_MAX:.0%})")
    return reasons, noise
