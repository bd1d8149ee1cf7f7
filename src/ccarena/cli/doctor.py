"""`ccarena doctor`: what this machine offers (probed, not guessed) and, for a study, which
link backend and which algorithm source it will use. Exit 1 when something essential
(root, namespaces, veth, the flow engine) is missing."""
from __future__ import annotations

import json
import os
import platform
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table


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


def doctor(study_path: str | None = None, as_json: bool = False) -> int:
    f = facts()
    essential = essential_missing(f)
    study_info = None
    if study_path:
        from ccarena.study.catalog import resolve_study_path
        from ccarena.run.preflight import preflight
        from ccarena.study.load import load_study
        st = load_study(resolve_study_path(study_path))
        try:
            pf = preflight(st)
            study_info = {"backends": pf["cells"], "algorithms": pf["algorithms"]}
        except Exception as e:
            study_info = {"error": str(e)}
    if as_json:
        print(json.dumps({**f, "study": study_info, "essential_missing": essential}, indent=1))
        return 1 if essential else 0
    # logs and pipes are not 80 columns wide: do not fold there (as the other commands)
    Console(width=None if sys.stdout.isatty() else 160).print(
        facts_table(f, study_info, essential))
    return 1 if essential else 0


def facts_table(f: dict, study_info: dict | None = None, essential=()) -> Table:
    """What doctor prints (facts() -> a two-column rich Table, one row per fact)."""
    ok = lambda b: "[green]yes[/green]" if b else "[red]no[/red]"  # noqa: E731
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    t.add_row("kernel", escape(f["kernel"]))
    t.add_row("root", ok(f["root"]))
    t.add_row("network namespaces", ok(f["netns"]))
    t.add_row("veth", ok(f["veth"]))
    t.add_row("qdiscs", "  ".join(f"{q} {ok(v)}" for q, v in f["qdiscs"].items()))
    t.add_row("netem", ok(f["netem"]))
    if f.get("probe_error"):
        t.add_row("probe", f"[red]{escape(f['probe_error'])}[/red]")
    t.add_row("cgroup", escape(f["cgroup"]))
    t.add_row("tracefs", escape(f["tracefs"]))
    for b, p in f["binaries"].items():
        t.add_row(b, escape(p) if p else "[red]not found[/red]")
    link = "user-space ccarena-link" if f["binaries"]["ccarena-link"] else "none built"
    t.add_row("link backends", f"kernel (htb{'+netem' if f['netem'] else ', no delay/loss'}), "
              f"user: {link}; studies with delay/loss/AQM use "
              f"{'the kernel' if f['netem'] else 'the user-space link'}")
    x = f["af_xdp"]
    t.add_row("user link I/O", f"{escape(str(x['selected']))} (CCARENA_LINK_IO); AF_XDP sockets "
              f"{ok(x['sockets'])}, TX checksum metadata (kernel >= 6.8) {ok(x['tx_metadata'])}"
              + ("" if x["sockets"] and x["tx_metadata"] else "; 'auto' will use AF_PACKET")
              + ("" if f["root"] else " (sockets probed without root: run as root to know)"))
    if "error" in f["algorithms"]:
        t.add_row("algorithms", f"[red]{escape(f['algorithms']['error'])}[/red]")
    else:
        for src in ("kernel", "bpf", "unavailable"):
            names = [n for n, a in sorted(f["algorithms"].items()) if a["source"] == src]
            if names:
                t.add_row(f"algorithms ({src})", " ".join(names))
    if study_info:
        if "error" in study_info:
            t.add_row("study", f"[red]{escape(study_info['error'])}[/red]")
        else:
            for i, b in study_info["backends"].items():
                io = f", packet I/O {b['io']}" if b.get("io") else ""
                t.add_row(f"study cell {i}", escape(f"link backend {b['backend']} ({b['why']}){io}"))
            for n, a in study_info["algorithms"].items():
                t.add_row(f"study algorithm {n}", escape(f"{a['source']} as {a['kernel_name']}"))
    for e in essential:
        t.add_row("[red]missing[/red]", escape(e))
    return t
