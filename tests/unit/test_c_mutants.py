"""The C mutant generator of tools/mutants/cc_mutants.py (tools/mutants/c_source.py):
mutants only where the algorithm's logic is, each one a single well-formed edit."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "mutants"))

from c_source import apply, mutants_of  # noqa: E402

SRC = """/* a comment with a < b and 1 + 2 that must not be mutated */
#include "cca_common.h"
#define LOW_WINDOW 14u
#define UNUSED_CONSTANT 7
struct demo { u32 w; };   /* no mutant in a struct */

static u32 demo_ssthresh(u32 cwnd)
{
	// a line comment: x - y
	if (cwnd < LOW_WINDOW)
		return cwnd >> 1;
	return cwnd - (cwnd >> 3);
}
"""


def _by_op(ms):
    out = {}
    for m in ms:
        out.setdefault(m.op, []).append(m)
    return out


def test_mutants_sit_in_function_bodies_and_used_integer_defines_only():
    ms = mutants_of(SRC, "demo.bpf.c", every=SRC)
    assert ms
    body = SRC.index("{\n\t// a line")
    for m in ms:
        if m.func == "#define":
            assert SRC[m.start:m.end] == "14u", m.describe()   # UNUSED_CONSTANT is skipped
        else:
            assert m.start > body and m.func == "demo_ssthresh", m.describe()
        # never inside a comment
        assert "comment" not in SRC[SRC.rfind("\n", 0, m.start):m.start], m.describe()
    ops = _by_op(ms)
    # the boundary shift and the negation of the comparison, both shifts swapped,
    # the subtraction turned into an addition, LOW_WINDOW as 0, 13 and 15
    assert {m.repl for m in ops["relational"]} == {"<=", ">="}
    assert {m.repl for m in ops["shift"]} == {"<<"}
    assert "+" in {m.repl for m in ops["arithmetic"]}
    assert sorted(m.repl for m in ms if m.func == "#define") == ["0u", "13u", "15u"]


def test_a_mutant_is_one_edit_at_its_place():
    ms = mutants_of(SRC, "demo.bpf.c", every=SRC)
    ids = [m.id for m in ms]
    assert ids == list(range(len(ms)))
    for m in ms:
        out = apply(SRC, m)
        assert out != SRC, m.describe()
        assert out[:m.start] == SRC[:m.start] and out[m.start + len(m.repl):] == SRC[m.end:]
        assert SRC[m.start:m.end] == m.orig
        assert SRC.count("\n", 0, m.start) + 1 == m.line


def test_every_algorithm_of_the_pack_has_mutants():
    cc = ROOT / "bpf" / "cc"
    every = "".join(p.read_text() for p in sorted(cc.glob("*.bpf.c")))
    every += "".join(p.read_text() for p in sorted(cc.glob("*.h")))
    for p in sorted(cc.glob("*.bpf.c")):
        ms = mutants_of(p.read_text(), p.name, every)
        assert len(ms) >= 5, p.name
        assert all(m.orig != m.repl for m in ms), p.name
