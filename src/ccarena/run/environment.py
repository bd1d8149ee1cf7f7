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


# not recorded: a secret, and settings that say nothing about one connection's behaviour
UNRECORDED = ("net.ipv4.tcp_fastopen_key",)


def tcp_sysctl_names(ns: str | None = None) -> list[str]:
    """Every net.ipv4.tcp_* sysctl this kernel has (inside namespace ns), with
    HOST_SYSCTLS and the reference's net.core ones."""
    from ccarena.study.tcp_reference import INITCWND, REFERENCE_TCP
    def listing():
        try:
            return sorted(f"net.ipv4.{n}" for n in os.listdir("/proc/sys/net/ipv4")
                          if n.startswith("tcp_"))
        except OSError:
            return []
    if ns is None:
        names = listing()
    else:
        with netns.enter(ns):
            names = listing()
    extra = [k for k in (*HOST_SYSCTLS, *REFERENCE_TCP) if k != INITCWND]
    return [k for k in dict.fromkeys(names + extra) if k not in UNRECORDED]


def _routes(ns: str) -> list[str]:
    """The host's routes as `ip route` shows them (an initcwnd pinned by the study shows)."""
    try:
        r = subprocess.run(["ip", "-n", ns, "route", "show"], capture_output=True, text=True,
                           timeout=5)
        return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        return [f"error: {e}"]


def initcwnd_of(routes: list[str]) -> str:
    """The initial window a host's data routes give: the `initcwnd` they carry, else the
    kernel's TCP_INIT_CWND (10)."""
    vals = {ln.split("initcwnd", 1)[1].split()[0] for ln in routes if " initcwnd " in
            f" {ln} "}
    return ",".join(sorted(vals)) if vals else "10"


def tcp_settings_here() -> dict[str, str | None]:
    """The TCP settings a run's host would get on this machine: read in a fresh network
    namespace (`unshare --net`, gone when it exits) when running as root, which is what a
    run's hosts start from; else in this process's namespace."""
    from ccarena.study.tcp_reference import INITCWND
    keys = tcp_sysctl_names()
    paths = " ".join("/proc/sys/" + k.replace(".", "/") for k in keys)
    script = f'for p in {paths}; do printf "%s\\t" "$p"; tr "\\t\\n" "  " < "$p" ' \
             '2>/dev/null; echo; done'
    argv = (["unshare", "--net", "sh", "-c", script] if os.geteuid() == 0
            else ["sh", "-c", script])
    out: dict[str, str | None] = dict.fromkeys(keys)
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        text = r.stdout if r.returncode == 0 else subprocess.run(
            ["sh", "-c", script], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return out
    for line in text.splitlines():
        p, _, v = line.partition("\t")
        k = p.removeprefix("/proc/sys/").replace("/", ".")
        if k in out and v.strip():
            out[k] = " ".join(v.split())
    out[INITCWND] = "10"      # no route of a fresh host carries one: the kernel's
    return out


def host_state(topo) -> dict:
    """Each host's effective TCP sysctls (every net.ipv4.tcp_* and the net.core buffer
    limits), its routes and the initial window they give, and the offloads of the path."""
    from ccarena.study.tcp_reference import INITCWND
    sysctls = {}
    routes = {}
    for h, ns in topo.hosts.items():
        sysctls[h] = netns.sysctl_get(ns, tcp_sysctl_names(ns))
        routes[h] = _routes(ns)
        sysctls[h][INITCWND] = initcwnd_of(routes[h])
    offloads = {}
    for pair in topo.veths:
        for end in (pair.a, pair.b):
            try:
                offloads[f"{end.ns}/{end.name}"] = netns.get_offloads(end.ns, end.name)
            except Exception as e:
                offloads[f"{end.ns}/{end.name}"] = {"error": str(e)}
    return {"sysctls": sysctls, "routes": routes, "offloads": offloads}
