"""`ccarena doctor`'s terminal table: every fact on its own row, values printed as they
are (never read as markup), what is missing said in red words, within 80 columns."""
import io

from rich.console import Console

from ccarena.cli.doctor import facts_table

FACTS = {
    "kernel": "6.18.0-[test]", "root": True, "netns": True, "veth": True,
    "qdiscs": {"htb": True, "netem": False}, "netem": False, "probe_error": None,
    "cgroup": "v2", "tracefs": "absent",
    "binaries": {"ccarena-flow": "/opt/ccarena-flow", "ccarena-link": None},
    "algorithms": {"reno": {"source": "kernel"}, "vegas": {"source": "bpf"}},
    "af_xdp": {"sockets": True, "tx_metadata": True, "selected": "af_xdp"},
}


def render(*args) -> str:
    out = io.StringIO()
    Console(file=out, width=80).print(facts_table(*args))
    return out.getvalue()


def test_every_fact_has_its_row():
    text = render(FACTS, {"backends": {0: {"backend": "user", "why": "no netem"}},
                          "algorithms": {"vegas": {"source": "bpf", "kernel_name": "cca_vegas"}}},
                  ["ccarena-flow is not built (make build)"])
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    first = {line.split("  ")[0].strip() for line in lines}
    assert {"kernel", "root", "network namespaces", "veth", "qdiscs", "netem", "cgroup",
            "tracefs", "ccarena-flow", "ccarena-link", "link backends", "user link I/O",
            "algorithms (kernel)", "algorithms (bpf)", "study cell 0",
            "study algorithm vegas", "missing"} <= first, text
    assert "6.18.0-[test]" in text                     # a value is not markup
    assert "not found" in text and "ccarena-flow is not built" in text
    assert "cca_vegas" in text


def test_a_failed_study_and_a_probe_error_are_shown():
    text = render({**FACTS, "probe_error": "veth: [Errno 1] no"}, {"error": "bad study"})
    assert "veth: [Errno 1] no" in text and "bad study" in text
