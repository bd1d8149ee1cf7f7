"""The mutation scores and survivors the docs state are those of the current sources.

docs/dev/testing.md's table of the BPF pack has a row per file, or per variant of a file
with a paper variant (tools/mutants/cc_mutants.parts); docs/dev/cc-survivors.md lists the
survivors under the file's heading. For every row: its count is the number of mutants
the runner makes of that part today; a measured row adds up and its `missed` is the
number of survivors listed in its id range; a row "not measured" has none listed; and
every listed survivor is the runner's mutant of that id, word for word. A source changed
without re-running its mutants fails here, naming the file and what to run."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "mutants"))
import cc_mutants  # noqa: E402

TESTING = (ROOT / "docs" / "dev" / "testing.md").read_text()
SURVIVORS = (ROOT / "docs" / "dev" / "cc-survivors.md").read_text()
NUM = r"(\d+|–)"
ROW = re.compile(r"^\| `([\w.]+\.(?:bpf\.c|h))`(?: (Linux|paper) variant, ids (\d+)–(\d+))?"
                 rf"(?: \([^|]*\))? \| (\d+) \| {NUM} \| {NUM} \| {NUM} \| {NUM} \| ([^|]+) \|$",
                 re.M)
FULL = re.compile(r"#(\d+) ([\w.]+\.(?:bpf\.c|h)):(\d+) (.*?) ``")


def sources() -> list[str]:
    return sorted(p.name for p in cc_mutants.CC_DIR.iterdir() if p.name.endswith((".bpf.c", ".h")))


def rows() -> list[dict]:
    out = []
    for m in ROW.finditer(TESTING):
        fname, part, lo, hi, n, *counts, score = m.groups()
        measured = "not measured" not in score
        out.append({"file": fname, "part": part and part.lower(), "n": int(n),
                    "ids": range(int(lo), int(hi) + 1) if lo else None,
                    "counts": [int(c) for c in counts] if measured else None,
                    "line": m.group(0)})
    return out


def survivors() -> dict[str, dict]:
    """file -> {"ids": every id listed, "full": {id: description as listed}}"""
    out: dict[str, dict] = {}
    fname = None
    for line in SURVIVORS.splitlines():
        h = re.match(r"^## `([\w.]+)`", line)
        if h:
            fname = h.group(1)
            out.setdefault(fname, {"ids": [], "full": {}})
        elif line.startswith("- `` #"):
            assert fname, f"a survivor before any file's heading: {line[:80]}"
            head = line.split(" — ", 1)[0]
            out[fname]["ids"] += [int(i) for i in re.findall(r"#(\d+)", head)]
            for i, f, ln, desc in FULL.findall(head):
                assert f == fname, f"{fname}'s section lists a mutant of {f}: #{i}"
                out[fname]["full"][int(i)] = f"{f}:{ln} {desc}"
    return out


def mutants(fname: str) -> dict[int, str]:
    src = (cc_mutants.CC_DIR / fname).read_text()
    return {m.id: m.describe()
            for m in cc_mutants.mutants_of(src, fname, cc_mutants.every_source())}


def test_the_table_parses():
    # every row of the table is read (a row the pattern misses would escape the checks)
    lines = [ln for ln in TESTING.splitlines()
             if re.match(r"^\| `[\w.]+\.(bpf\.c|h)`", ln)]
    assert len(lines) == len(rows()) and lines


def test_every_source_has_rows_that_cover_its_mutants_once():
    by_file: dict[str, list[dict]] = {}
    for r in rows():
        by_file.setdefault(r["file"], []).append(r)
    assert set(by_file) == set(sources()), set(by_file) ^ set(sources())
    for fname, rs in by_file.items():
        n = len(mutants(fname))
        ids = sorted(i for r in rs for i in (r["ids"] if r["ids"] is not None else range(n)))
        assert ids == list(range(n)), f"{fname}: its rows cover ids {ids[:3]}… of {n}"


@pytest.mark.parametrize("fname", sorted({r["file"] for r in rows()}))
def test_rows_and_survivors_are_of_the_current_source(fname):
    now = mutants(fname)
    parts = cc_mutants.parts(fname)
    listed = survivors().get(fname, {"ids": [], "full": {}})
    assert len(set(listed["ids"])) == len(listed["ids"]), f"{fname}: a survivor listed twice"
    again = f"make mutants-cc CC_MUTANTS={fname}"
    for r in (r for r in rows() if r["file"] == fname):
        ids = r["ids"] if r["ids"] is not None else range(len(now))
        if r["part"]:
            assert ids == parts[r["part"]], (f"{fname}: the {r['part']} variant's ids are "
                                             f"{parts[r['part']]}, the row says {ids}")
        assert r["n"] == len(ids), f"{r['line']}: {len(ids)} mutants in that range"
        inside = [i for i in listed["ids"] if i in ids]
        if r["counts"] is None:
            assert not inside, f"{fname}: survivors {inside} listed for a part not measured"
            continue
        caught, timeouts, missed, unviable = r["counts"]
        assert caught + timeouts + missed + unviable == r["n"], f"{r['line']}: does not add up"
        assert len(inside) == missed, (f"{fname}: {missed} missed in the table, "
                                       f"{len(inside)} survivors listed in ids {ids}")
    for i in listed["ids"]:
        assert i in now, f"{fname}: survivor #{i} is not a mutant of the current source ({again})"
    wrong = {i: d for i, d in listed["full"].items() if now.get(i) != d}
    assert not wrong, f"{fname}: survivors that are not the runner's mutant of that id " + \
        f"(re-run: {again}): " + "; ".join(f"#{i} listed as {d!r}, now {now.get(i)!r}"
                                            for i, d in wrong.items())
