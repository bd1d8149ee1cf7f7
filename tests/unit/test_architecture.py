"""The layout docs/dev/architecture.md describes holds: stages import only earlier stages,
no import cycle, no module at the package root but errors, units and paths, and no source
file past the size a reader can hold in mind."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "ccarena"

# Lower stages never import higher ones. The algorithm catalog (cc) comes first: a study
# names algorithms, and the catalog knows which names exist. `run` orchestrates (it calls metrics, the store
# and the analysis), so it sits above them although its data flows earlier; `report` only
# reads through the store. The package's __init__ is the public API ("api": it may use
# every stage, and only the CLI, a thin layer over it, may use it); the modules at the
# root (errors, units, paths, version) are the floor every stage stands on.
STAGES = ["", "cc", "study", "testbed", "measure", "workload", "metrics", "store",
          "analysis", "report", "run", "vm", "api", "cli"]
ROOT_MODULES = {"__init__", "errors", "units", "paths", "version"}
MAX_LINES = 600


def modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(("ccarena",) + parts), p


def stage_of(mod: str) -> str:
    if mod == "ccarena":
        return "api"
    parts = mod.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in STAGES) else ""


def imports(mod: str, path: Path) -> set[str]:
    """Every ccarena module `mod` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ccarena")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] +
                                  ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("ccarena"):
                continue
            for a in node.names:        # `from ccarena.x import y`: y may be a module
                sub = f"{target}.{a.name}"
                out.add(sub if _is_module(sub) else target)
    return out


def _is_module(mod: str) -> bool:
    p = PKG.joinpath(*mod.split(".")[1:])
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


GRAPH = {m: imports(m, p) for m, p in modules()}


def test_every_package_is_a_known_stage():
    pkgs = {stage_of(m) for m in GRAPH} - {"api"}
    assert pkgs <= set(STAGES), f"packages without a stage: {pkgs - set(STAGES)}"


def test_only_errors_units_paths_at_the_root():
    root = {p.stem for m, p in modules() if p.parent == PKG}
    assert root <= ROOT_MODULES, f"modules at the package root: {root - ROOT_MODULES}"


@pytest.mark.parametrize("mod", sorted(GRAPH))
def test_no_stage_imports_a_later_one(mod):
    """The package's face included: a stage that imports `ccarena` itself (for its
    version, say) pulls the public API, and through it every stage, below it."""
    mine = STAGES.index(stage_of(mod))
    later = sorted(t for t in GRAPH[mod] if STAGES.index(stage_of(t)) > mine)
    assert not later, f"{mod} ({stage_of(mod) or 'root'}) imports later stages: {later}"


def cycles_of(graph: dict) -> list[list]:
    """Every cycle a depth-first walk of `graph` (node -> the nodes it uses) meets, each as
    the path from its first node back to it."""
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            visit(t)
        stack.pop()

    for m in sorted(graph):
        visit(m)
    return cycles


def test_no_import_cycle():
    g = {m: {t for t in ts if t in GRAPH and t != m} for m, ts in GRAPH.items()}
    cycles = cycles_of(g)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_code_in_package_inits():
    """A package's __init__ documents and re-exports; code lives in named modules."""
    for m, p in modules():
        if p.name != "__init__.py" or m == "ccarena":
            continue
        tree = ast.parse(p.read_text())
        defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert not defs, f"{p.relative_to(ROOT)} defines {defs}"


def source_files():
    for pattern in ("src/**/*.py", "crates/*/src/**/*.rs", "bpf/**/*.c", "bpf/**/*.h",
                    "benchmarks/**/*.py", "verify/**/*.py", "tools/**/*.py"):
        yield from ROOT.glob(pattern)


@pytest.mark.parametrize("path", sorted(source_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_source_files_stay_readable(path):
    n = len(path.read_text(errors="replace").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines (split it by " \
        f"responsibility below {MAX_LINES})"


# What docs, code, tests and study files must not carry: the story of how they came to be
# (it belongs in the project's issue notes), in the kinds it has taken.
HISTORY = [
    (r"session [0-9]|since session", "a working session"),
    (r"\bissue #?[0-9]+(\.[0-9]+)?\b", "an issue number"),
    (r"\bCI (measured|showed|failed|found)\b", "what CI measured once"),
    (r"\bearlier (quick )?runs gave\b|\buntil last (week|session)\b|\bused to\b",
     "what an earlier version did"),
    (r"working session|this project's (own )?(2-core )?(host|machine)",
     "the developers' own machine"),
]
# a stored results directory cited as evidence (<study>-YYYYmmdd-HHMMSS): not in the
# repository, so nobody can open it; the pages that show how to use results name
# example directories, which is fine
RESULTS_DIR = r"\b[a-z][a-z0-9-]*-20[0-9]{6}-[0-9]{6}\b"
RESULTS_EXAMPLES = {"docs/tutorial.md", "docs/report.md", "docs/metrics.md", "docs/running.md"}


def history_hits(rel: str, text: str) -> list[str]:
    import re
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        for pat, kind in HISTORY:
            if re.search(pat, line, re.I):
                out.append(f"{rel}:{i} ({kind})")
        if (rel.startswith(("docs/", "studies/")) and rel not in RESULTS_EXAMPLES
                and re.search(RESULTS_DIR, line)):
            out.append(f"{rel}:{i} (a results directory not in the repository)")
    return out


def test_no_development_history_in_docs_or_code():
    hits = []
    for d in ("docs", "src", "crates", "studies", "benchmarks", "verify", "tools", "bpf",
              "tests", "mk"):
        for p in (ROOT / d).rglob("*"):
            if p.is_file() and p.suffix in (".md", ".py", ".rs", ".toml", ".c", ".h", ".mk") \
                    and p != Path(__file__):
                hits += history_hits(str(p.relative_to(ROOT)),
                                     p.read_text(errors="replace"))
    assert not hits, "development history in: " + ", ".join(hits[:20])


@pytest.mark.parametrize("text,kind", [
    ("# fixed in session 12", "a working session"),
    ("// Issue 15.1: a flow in RTO backoff", "an issue number"),
    ("# CI measured Jain 0.77 where", "what CI measured once"),
    ("# where earlier quick runs gave 0.91", "what an earlier version did"),
    ("the largest scale that fits a working session", "the developers' own machine"),
    ("on this project's 2-core host", "the developers' own machine"),
])
def test_the_history_check_sees_each_kind(text, kind):
    assert any(kind in h for h in history_hits("src/x.py", text)), text
    assert history_hits("docs/studies/x.md", "results `virt-cc-20261122-033810`")
    assert not history_hits("docs/tutorial.md", "results: results/buffers-20261125-045836")


def test_the_architecture_page_maps_every_module():
    """docs/dev/architecture.md lists each module of a stage under its heading; a module
    added, moved or removed without the page changing fails here."""
    import re
    page = (ROOT / "docs" / "dev" / "architecture.md").read_text()
    listed: dict[str, set] = {}
    stage = None
    for line in page.splitlines():
        m = re.match(r"^### (\w+)", line)
        if m:
            stage = {"Root": ""}.get(m.group(1), m.group(1))
            listed.setdefault(stage, set())
            continue
        if line.startswith("## "):
            stage = None
        m = re.match(r"^- `([a-z_]+)`", line)
        if stage is not None and m:
            listed[stage] |= {x.strip(" `") for x in line[2:].split("—")[0].split(",")}
    have: dict[str, set] = {}
    for mod, p in modules():
        if p.name in ("__init__.py", "__main__.py"):
            continue
        have.setdefault(stage_of(mod), set()).add(p.stem)
    for st, mods in have.items():
        assert mods == listed.get(st, set()), (st or "root", mods ^ listed.get(st, set()))


def test_the_architecture_page_maps_every_folder_of_the_tree():
    """Each top-level folder of the checkout is a row of the page's table of the tree."""
    import re
    page = (ROOT / "docs" / "dev" / "architecture.md").read_text()
    rest = page[page.index("## The rest of the tree"):page.index("## The Rust crates")]
    listed = set(re.findall(r"^\| `([\w-]+)/` \|", rest, re.M))
    # what make and a study leave in a checkout is not part of the tree
    made = {"build", "target", "results", "bench-out"}
    have = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")
            and p.name not in made}
    assert listed == have, listed ^ have


# -- the Rust crates ---------------------------------------------------------------------------
CRATES = ROOT / "crates"


def rust_files(crate: Path) -> set[str]:
    """A crate's source files as the page names them: `src/a/b.rs` -> `a/b`, and the
    build script as `build.rs`."""
    out = {str(p.relative_to(crate / "src").with_suffix(""))
           for p in (crate / "src").rglob("*.rs")}
    return out | ({"build.rs"} if (crate / "build.rs").exists() else set())


def test_the_architecture_page_maps_every_rust_file():
    """docs/dev/architecture.md lists each Rust source file under its crate's heading
    (`### <package> (`crates/<dir>`)`), one line each, and every workspace crate is a row
    of its crate table; a file added, moved or removed without the page changing fails."""
    import re
    page = (ROOT / "docs" / "dev" / "architecture.md").read_text()
    rust = page[page.index("## The Rust crates"):]
    listed: dict[str, set] = {}
    crate = None
    for line in rust.splitlines():
        m = re.match(r"^### \S+ \(`crates/([\w-]+)`\)", line)
        if m:
            crate = m.group(1)
            listed.setdefault(crate, set())
            continue
        m = re.match(r"^- `([\w/.]+)` —", line)
        if crate is not None and m:
            listed[crate].add(m.group(1))
    table = set(re.findall(r"^\| `crates/([\w-]+)` \|", rust, re.M))
    have = {c.name: rust_files(c) for c in sorted(CRATES.iterdir()) if (c / "Cargo.toml").exists()}
    assert table == set(have), ("crate table", table ^ set(have))
    assert set(listed) == set(have), ("crate sections", set(listed) ^ set(have))
    for c, files in have.items():
        assert files == listed[c], (c, files ^ listed[c])


def rust_module_graph(crate: Path) -> dict[tuple, set[tuple]]:
    """Module -> the modules of the same crate it names through `crate::`, `super::` or
    `self::` paths (in `use` lines and in code; comments and `#[cfg(test)]` blocks left
    out). A module is its path under src/ (`flows/mod.rs` is ("flows",), lib.rs and
    main.rs the root ()); a path names the longest module prefix it starts with."""
    import re
    src = crate / "src"

    def name(p: Path) -> tuple:
        parts = p.relative_to(src).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "mod" else parts
        return () if parts in (("lib",), ("main",)) else parts

    files = {name(p): p for p in src.rglob("*.rs")}
    path = re.compile(r"\b(crate|super|self)::(\{(?:[^{}]|\{[^{}]*\})*\}|[\w:]+)")
    graph = {}
    for mod, p in files.items():
        text = re.sub(r"//.*", "", p.read_text())
        text = text.split("#[cfg(test)]")[0]
        out = set()
        for m in path.finditer(text):
            base = {"crate": (), "self": mod, "super": mod[:-1]}[m.group(1)]
            rest = m.group(2)
            items = [rest]
            if rest.startswith("{"):          # use crate::{a::X, b::{Y, Z}}
                items, depth, cur = [], 0, ""
                for ch in rest[1:-1] + ",":
                    depth += ch == "{"
                    depth -= ch == "}"
                    if ch == "," and depth == 0:
                        items.append(cur.split("::{")[0].strip())
                        cur = ""
                    else:
                        cur += ch
            for it in filter(None, items):
                segs = tuple(s for s in it.split("::") if s)
                for n in range(len(segs), -1, -1):
                    if base + segs[:n] in files:
                        out.add(base + segs[:n])
                        break
        graph[mod] = out - {mod}
    return graph


@pytest.mark.parametrize("crate", sorted(c.name for c in CRATES.iterdir() if (c / "src").is_dir()))
def test_no_rust_module_cycle(crate):
    """No two modules of a crate use each other, directly or around a ring. A module and
    its own submodules are one module split over files (a child uses its parent's shared
    types, the parent dispatches to its children), so edges between them do not count,
    nor edges to the crate root (lib.rs/main.rs only declares and starts)."""
    graph = rust_module_graph(CRATES / crate)

    def related(a, b):
        return a[:len(b)] == b or b[:len(a)] == a

    g = {m: {t for t in ts if t and not related(m, t)} for m, ts in graph.items() if m}
    cycles = cycles_of(g)
    assert not cycles, "module cycles: " + "; ".join(
        " -> ".join("::".join(x) for x in c) for c in cycles)


def test_the_suite_has_one_conftest():
    """Tests import helpers with `from conftest import …`; pytest registers every
    conftest.py as the module `conftest`, so a second one shadows the first for imports
    made after it was collected (inside a test or a fixture)."""
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("conftest.py"))
    assert found == ["tests/conftest.py"], found


def test_test_modules_have_names_of_their_own():
    """pytest imports test files by their base name (no packages under tests/): two
    test_x.py in different folders stop the whole suite at collection."""
    names: dict[str, list[str]] = {}
    for p in (ROOT / "tests").rglob("*.py"):
        names.setdefault(p.name, []).append(str(p.relative_to(ROOT)))
    same = {n: ps for n, ps in names.items() if len(ps) > 1 and n != "__init__.py"}
    assert not same, same


def test_every_import_of_a_ccarena_name_finds_it():
    """Imports inside functions (the CLI's lazy ones) run only when their command does:
    a name moved to another module must not wait for that command to fail."""
    import ast
    import importlib
    missing = []
    for p in sorted((ROOT / "src" / "ccarena").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "ccarena":
                mod = importlib.import_module(node.module)
                for a in node.names:
                    if a.name != "*" and not hasattr(mod, a.name):
                        try:
                            importlib.import_module(f"{node.module}.{a.name}")
                        except ImportError:
                            missing.append(f"{p.relative_to(ROOT)}:{node.lineno} "
                                           f"{node.module}.{a.name}")
    assert not missing, missing
