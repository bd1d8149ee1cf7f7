"""What this machine offers, probed rather than guessed, and how a study would run on it
(`ccarena doctor`, `ccarena.doctor`).

Contract: `facts()` -> a dict (kernel, root, namespaces, veth, qdiscs, netem, cgroup,
tracefs, binaries, algorithms, AF_XDP); `essential_missing(facts)` -> what the machine
lacks to run any study, one line each; `study_setup(study)` -> the link backend of each
cell and where each algorithm comes from (preflight; needs root), or {"error": ...};
`report(study=None)` -> all of it as one dict."""
from __future__ import annotations

import os
import platform


def _cgroup() -> str:
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "v2"
    if os.path.isdir("/sys/fs/cgroup/cpu") or os.path.isdir("/sys/fs/cgroup/memory"):
        return "v1" + (" (+v2 at /sys/fs/cgroup/unified)" if os.path.exists(
            "/sys/fs/cgroup/unified/cgroup.controllers") else "")
    return "none"


def _tracefs() -> str:
    for p in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.exists(os.path.join(p, "events/tcp/tcp_probe")):
            return f"mounted at {p}, tcp:tcp_probe present"
    if os.path.isdir("/sys/kernel/tracing"):
        return "not mounted (ccarena mounts it at /sys/kernel/tracing when a study traces)"
    return "absent"


def facts() -> dict:
    from ccarena import cc
    from ccarena.paths import find_binary
    from ccarena.testbed import caps
    c = caps.probe()
    try:
        algs = {n: {"source": a.source, "kernel_name": a.kernel_name, "why": a.why}
                for n, a in cc.available().items()}
    except Exception as e:
        algs = {"error": str(e)}
    return {
        "kernel": platform.release(), "root": os.geteuid() == 0,
        "netns": c["netns"], "veth": c["veth"], "qdiscs": c["qdiscs"], "netem": c["netem"],
        "probe_error": c.get("error"), "cgroup": _cgroup(), "tracefs": _tracefs(),
        "binaries": {b: find_binary(b) for b in ("ccarena-flow", "ccarena-link", "ccarena-trace", "ccarena-cc", "iperf3",
                                                  "ping", "curl", "tc", "bpftool")},
        "algorithms": algs,
        "af_xdp": _af_xdp(),
    }


def _af_xdp() -> dict:
    """Whether the user-space link can use AF_XDP here (docs/link.md, I/O design): the
    socket family exists and the kernel takes TX checksum metadata (6.8+). Native XDP on
    veth is not probed; `auto` falls back if attaching fails, and says so in link.json."""
    import socket
    from ccarena.testbed.user_link import link_io
    import re
    try:
        socket.socket(44, socket.SOCK_RAW, 0).close()      # AF_XDP (needs CAP_NET_RAW)
        sockets = True
    except OSError:
        sockets = False
    m = re.match(r"(\d+)\.(\d+)", platform.release())
    meta = bool(m) and (int(m.group(1)), int(m.group(2))) >= (6, 8)
    try:
        sel = link_io()
    except ValueError as e:
        sel = f"invalid: {e}"
    return {"sockets": sockets, "tx_metadata": meta, "selected": sel}


def essential_missing(f: dict) -> list[str]:
    """What this machine lacks to run any study (facts() -> one line each)."""
    essential = []
    if not f["root"]:
        essential.append("run as root (namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)")
    if not f["netns"]:
        essential.append("network namespaces do not work here")
    if not f["veth"]:
        essential.append("veth interfaces cannot be created here")
    if not f["binaries"]["ccarena-flow"]:
        essential.append("ccarena-flow is not built (make build)")
    return essential


def study_setup(study) -> dict:
    """How `study` would run here: each cell's link backend (and packet I/O) and each
    algorithm's source, as the preflight decides them; {"error": ...} when it cannot."""
    from ccarena.run.preflight import preflight
    try:
        pf = preflight(study)
        return {"backends": pf["cells"], "algorithms": pf["algorithms"]}
    except Exception as e:  # noqa: BLE001 — any failure is what doctor reports
        return {"error": str(e)}


def report(study=None) -> dict:
    """facts(), with "study" (study_setup, or None) and "essential_missing"."""
    f = facts()
    return {**f, "study": study_setup(study) if study is not None else None,
            "essential_missing": essential_missing(f)}
