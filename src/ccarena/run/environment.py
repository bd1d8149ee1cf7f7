"""What a run records about the machine so it can be re-run and judged: kernel, tool
versions, sysctls of each host, offloads on the emulated path."""
from __future__ import annotations

import functools
import json
import os
import platform
import subprocess

from ccarena.version import __version__
from ccarena.testbed import netns

HOST_SYSCTLS = (
    "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_ecn", "net.ipv4.tcp_sack", "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_timestamps", "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_autocorking",
    "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_mtu_probing", "net.ipv4.tcp_pacing_ss_ratio", "net.ipv4.tcp_pacing_ca_ratio",
)


def _version(argv) -> str | None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=5)
        return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr) else None
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.lru_cache(maxsize=1)
def machine() -> dict:
    from ccarena.paths import find_binary
    u = platform.uname()
    tools = {"ccarena": __version__, "python": platform.python_version()}
    tools["ccarena_commit"] = _git_commit()
    for name in ("ccarena-flow", "ccarena-link", "ccarena-trace", "ccarena-cc"):
        b = find_binary(name)
        tools[name] = _version([b, "--version"]) if b else None
    for name, argv in (("iproute2", ["ip", "-V"]), ("ping", ["ping", "-V"]),
                       ("iperf3", ["iperf3", "--version"])):
        tools[name] = _version(argv)
    try:
        import pyroute2
        tools["pyroute2"] = pyroute2.__version__
    except Exception:
        pass
    tools["python_packages"] = python_packages()
    out = {"kernel": u.release, "kernel_version": u.version, "machine": u.machine,
           "hostname": u.node, "cpus": os.cpu_count(), "tools": tools}
    # in ccarena's VM (ccarena vm, run --vm): the accelerator, boot time, image, host kernel
    vm = vm_record()
    if vm:
        out["vm"] = vm
    return out


def vm_record() -> dict | None:
    """The VM this process runs in, as the host described it at boot (CCARENA_VM: the
    accelerator, boot time, image, host kernel, tool versions), or None outside
    ccarena's VM (docs/vm.md)."""
    raw = os.environ.get("CCARENA_VM")
    if not raw:
        return None
    try:
        d = json.loads(raw)
    except ValueError:
        d = {"error": f"unreadable CCARENA_VM: {raw[:80]!r}"}
    return {"in_vm": True, "guest_kernel": platform.release(), **d}


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@functools.lru_cache(maxsize=1)
def worker() -> dict:
    """Where a run ran (meta["worker"]): what must be alike for runs from several machines
    to be compared (docs/scale-out.md)."""
    m = machine()
    return {"host": m["hostname"], "kernel": m["kernel"], "cpu_model": cpu_model(),
            "cpus": m["cpus"], "ccarena": m["tools"]["ccarena"],
            "commit": m["tools"].get("ccarena_commit")}


def python_packages() -> dict[str, str]:
    """Every Python distribution installed beside ccarena, name -> version (what `pip
    freeze` lists): with requirements.lock, what a re-run installs to use the same
    libraries."""
    from importlib import metadata
    out = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and name.lower() != "ccarena":
            out[name.lower()] = d.version
    return dict(sorted(out.items()))


def _git_commit() -> str | None:
    """The commit of the ccarena checkout in use (with '+dirty' when it has changes)."""
    from ccarena.paths import repo_root
    root = repo_root()
    if not (root / ".git").exists():
        return None
    sha = _version(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"])
    if sha is None:
        return None
    try:
        # --no-optional-locks: a status refreshes a stale index and writes it back under
        # .git/index.lock; killed by the time-out (a slow guest over a shared folder) it
        # would leave the lock in the user's checkout. Reading the commit writes nothing.
        dirty = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "status",
                                "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        dirty = ""
    return sha + ("+dirty" if dirty else "")


def host_state(topo) -> dict:
    sysctls = {h: netns.sysctl_get(ns, HOST_SYSCTLS) for h, ns in topo.hosts.items()}
    offloads = {}
    for pair in topo.veths:
        for end in (pair.a, pair.b):
            try:
                offloads[f"{end.ns}/{end.name}"] = netns.get_offloads(end.ns, end.name)
            except Exception as e:
                offloads[f"{end.ns}/{end.name}"] = {"error": str(e)}
    return {"sysctls": sysctls, "offloads": offloads}
