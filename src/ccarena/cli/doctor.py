"""`ccarena doctor`: run/doctor.py's facts (what this machine offers, probed, not guessed;
for a study, which link backend and which algorithm source it will use) as a table or JSON.
Exit 1 when something essential (root, namespaces, veth, the flow engine) is missing."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def doctor(study_path: str | None = None, as_json: bool = False) -> int:
    import ccarena
    r = ccarena.doctor(study_path)
    f = {k: v for k, v in r.items() if k not in ("study", "essential_missing")}
    essential = r["essential_missing"]
    if as_json:
        print(json.dumps(r, indent=1))
        return 1 if essential else 0
    # logs and pipes are not 80 columns wide: do not fold there (as the other commands)
    Console(width=None if sys.stdout.isatty() else 160).print(
        facts_table(f, r["study"], essential))
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
