"""The store owns its format: the names of a results directory's files are spelled only in
store/ (store/layout.py declares them), and every key the runner writes into a run's
manifest is one store/manifest.py declares, with its type."""
import ast
import re
from pathlib import Path

import pytest

from ccarena.store import layout, manifest
from ccarena.store.atomic import StoreError

PKG = Path(__file__).resolve().parents[2] / "src" / "ccarena"
NAMES = {v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str)}


def _string_constants(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_module_outside_the_store_spells_a_results_file_name():
    # "runs" and "raw" are also ordinary words (a table, a study key): the path forms
    # are what must not appear, and every file name ending in .json/.toml/.html
    files = {n for n in NAMES if "." in n}
    hits = []
    for p in sorted(PKG.rglob("*.py")):
        if p.parent.name == "store":
            continue
        for line, s in _string_constants(p):
            if s in files:
                hits.append(f"{p.relative_to(PKG)}:{line}: {s!r}")
        text = p.read_text()
        for m in re.finditer(r'/ "(runs|superseded)"', text):
            hits.append(f"{p.relative_to(PKG)}: path / {m.group(1)!r}")
    assert not hits, "results file names outside store/: " + "; ".join(hits)


def _written_keys():
    """Keys assigned into a run's manifest anywhere in the package: meta["k"] = ...,
    ctx.meta["k"] = ..., meta.setdefault("k", ...), meta.update(k=...), and the keys
    of the dict literal run/one_run.py starts it from."""
    keys = {}
    for p in sorted(PKG.rglob("*.py")):
        if p.parent.name == "store":
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            tgt = None
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Subscript) and _is_meta(t.value) and \
                            isinstance(t.slice, ast.Constant):
                        keys.setdefault(t.slice.value, f"{p.name}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    _is_meta(node.func.value):
                if node.func.attr == "setdefault" and node.args and \
                        isinstance(node.args[0], ast.Constant):
                    keys.setdefault(node.args[0].value, f"{p.name}:{node.lineno}")
                if node.func.attr == "update":
                    for kw in node.keywords:
                        keys.setdefault(kw.arg, f"{p.name}:{node.lineno}")
            if isinstance(node, ast.FunctionDef) and node.name == "_initial_meta":
                for r in ast.walk(node):
                    if isinstance(r, ast.Return) and isinstance(r.value, ast.Dict):
                        for k in r.value.keys:
                            keys.setdefault(k.value, f"{p.name}:{node.lineno}")
            del tgt
    return keys


def _is_meta(node) -> bool:
    return (isinstance(node, ast.Name) and node.id == "meta") or \
        (isinstance(node, ast.Attribute) and node.attr == "meta")


def test_every_manifest_key_the_runner_writes_is_declared():
    keys = _written_keys()
    assert {"run_id", "valid", "cpu", "killed", "t0_ns"} <= set(keys)   # the scan sees them
    undeclared = {k: w for k, w in keys.items() if k not in manifest.KEYS}
    assert not undeclared, f"undeclared run manifest keys: {undeclared}"


def test_the_manifest_refuses_an_undeclared_key_or_a_wrong_type():
    manifest.check({"run_id": "abc123", "valid": True, "rep": 1}, "m.json")
    with pytest.raises(StoreError, match=r"m\.json: run manifest key 'vaild' is not declared"):
        manifest.check({"vaild": True}, "m.json")
    with pytest.raises(StoreError, match="'rep' is a str, declared int"):
        manifest.check({"rep": "1"}, "m.json")
    with pytest.raises(StoreError, match="'rep' is a bool"):
        manifest.check({"rep": True}, "m.json")


def test_a_run_with_an_undeclared_manifest_key_is_not_stored(tmp_path):
    from ccarena.store.writer import Writer
    w = Writer.create("s", tmp_path)
    rd = w.new_run("c000-r1")
    with pytest.raises(StoreError, match="not declared"):
        w.write_run(rd, {}, None, None, {"run_id": "abc123", "label": "c000-r1",
                                         "surprise": 1})
    assert not (rd / layout.RUN_MANIFEST).exists()
    assert w.results.run_dirs() == []
