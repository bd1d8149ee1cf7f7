"""Unsafe Rust lives in ccarena-sys (docs/dev/libraries.md, "Unsafe code"): every other
crate root forbids or denies `unsafe_code`, no file outside crates/sys writes `unsafe`
except the listed exceptions (each allowing it in one module, under a comment that says
why), and every unsafe block or impl there and in sys carries a `SAFETY:` comment."""
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CRATES = ROOT / "crates"
SYS = "sys"
# crate directory -> the files allowed to hold unsafe code, with `#![allow(unsafe_code)]`
EXCEPTIONS = {
    "cc-harness": {"src/ffi.rs"},
}
FENCE = re.compile(r"#!\[(forbid|deny)\(unsafe_code\)\]")
ALLOW = re.compile(r"#!?\[allow\(unsafe_code\)\]")


def code_only(text: str) -> str:
    """`text` with comments, string and char literals blanked (newlines kept, so line
    numbers stay), leaving the tokens the compiler reads."""
    out, i, n = [], 0, len(text)

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif c == "'" and (m := re.compile(r"'(\\.[^']*|[^\\'\n])'").match(text, i)):
            j = m.end()  # a char literal (a lifetime has no closing quote)
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank(text[i:j]))
        i = j
    return "".join(out)


def unsafe_lines(text: str) -> list[int]:
    """1-based lines where the keyword `unsafe` appears in code."""
    code = code_only(text)
    return [code.count("\n", 0, m.start()) + 1 for m in re.finditer(r"\bunsafe\b", code)]


def crates():
    return sorted(c for c in CRATES.iterdir() if (c / "Cargo.toml").exists())


def crate_roots(crate: Path) -> list[Path]:
    """The library and binary roots Cargo builds from the crate's own sources."""
    man = tomllib.loads((crate / "Cargo.toml").read_text())
    paths = [crate / man.get("lib", {}).get("path", "src/lib.rs")]
    paths += [crate / b["path"] for b in man.get("bin", []) if "path" in b]
    paths.append(crate / "src" / "main.rs")
    return sorted({p for p in paths if p.exists()})


def rust_sources(crate: Path):
    for p in sorted(crate.rglob("*.rs")):
        if "target" not in p.relative_to(crate).parts:
            yield p


def test_the_scanner_sees_code_not_comments_or_strings():
    text = ('let s = "unsafe { }"; // unsafe\n'
            "/* unsafe /* nested */ unsafe */ let c = 'u';\n"
            'let r = r#"unsafe"#; let b = b"unsafe";\n'
            "fn f<'a>(x: &'a u8) { unsafe { g(x) } }\n"
            "let not_unsafe_at_all = 1; unsafe impl Send for X {}\n")
    assert unsafe_lines(text) == [4, 5]


@pytest.mark.parametrize("crate", [c for c in crates() if c.name != SYS], ids=lambda c: c.name)
def test_every_crate_but_sys_fences_unsafe_code_at_its_roots(crate):
    roots = crate_roots(crate)
    assert roots, f"{crate.name}: no crate root found"
    for r in roots:
        assert FENCE.search(code_only(r.read_text())), \
            f"{r.relative_to(ROOT)}: no #![forbid(unsafe_code)] or #![deny(unsafe_code)]"


@pytest.mark.parametrize("crate", [c for c in crates() if c.name != SYS], ids=lambda c: c.name)
def test_no_unsafe_outside_sys_but_the_commented_exceptions(crate):
    allowed = EXCEPTIONS.get(crate.name, set())
    hits, allows = [], []
    for p in rust_sources(crate):
        rel = str(p.relative_to(crate))
        text = p.read_text()
        code = code_only(text)
        if ALLOW.search(code):
            allows.append(rel)
        if rel not in allowed:
            hits += [f"{p.relative_to(ROOT)}:{n}" for n in unsafe_lines(text)]
    assert not hits, f"unsafe outside ccarena-sys (move it behind a safe sys wrapper): {hits}"
    assert set(allows) <= allowed, f"allow(unsafe_code) outside the listed exceptions: {set(allows) - allowed}"
    for rel in allowed:
        lines = (crate / rel).read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if ALLOW.search(line))
        assert at > 0 and lines[at - 1].lstrip().startswith("//"), \
            f"{crate.name}/{rel}: the allow(unsafe_code) needs the comment that says why, right above it"


def test_the_exceptions_are_documented():
    page = (ROOT / "docs" / "dev" / "libraries.md").read_text()
    for crate, files in EXCEPTIONS.items():
        for f in files:
            assert f"crates/{crate}/{f}" in page, f"docs/dev/libraries.md does not name crates/{crate}/{f}"


def safety_files():
    yield from rust_sources(CRATES / SYS)
    for crate, files in EXCEPTIONS.items():
        yield from (CRATES / crate / f for f in sorted(files))


@pytest.mark.parametrize("path", sorted(safety_files()), ids=lambda p: str(p.relative_to(CRATES)))
def test_every_unsafe_block_says_why_it_is_sound(path):
    """An `unsafe {` block or `unsafe impl` has a comment with `SAFETY:` in the lines of
    comment right above the line it is on (what clippy's undocumented_unsafe_blocks asks)."""
    text = path.read_text()
    lines = text.splitlines()
    code = code_only(text).splitlines()
    missing = []
    for n in unsafe_lines(text):
        if not re.search(r"\bunsafe\s*(\{|impl\b)", code[n - 1]) and not (
                code[n - 1].rstrip().endswith("unsafe") and n < len(code) and code[n].lstrip().startswith("{")):
            continue  # an unsafe fn's declaration or an fn-pointer type
        block, i = [], n - 2
        while i >= 0 and lines[i].lstrip().startswith("//"):
            block.append(lines[i])
            i -= 1
        if not any("SAFETY:" in b for b in block):
            missing.append(f"{path.relative_to(ROOT)}:{n}")
    assert not missing, f"unsafe without a SAFETY: comment right above: {missing}"
