"""Load a study file: read TOML, resolve `extends`, validate the base and every sweep cell.

`load_study(path)` returns a Study whose `.cells` lists a Cell (index, params, Study) each, so a
study that loads has no invalid cell left to fail half-way through a sweep."""
from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

from ccarena.errors import SpecError
from ccarena.study.catalog import resolve_study_path
from ccarena.study.expect import check_cells
from ccarena.study.model import Cell, Study
from ccarena.study.keys import EXPECT_KEYS, text
from ccarena.study.schema import Ctx, _take, build_study
from ccarena.study.sweep import cells as sweep_cells

MAX_EXTENDS_DEPTH = 8


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(path, "", "no such study file") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, "", f"not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(path, "", f"not a text file (byte {e.start} is not UTF-8); a study "
                        "is a TOML file") from None
    except OSError as e:
        raise SpecError(path, "", f"cannot read: {e.strerror}") from None


REPLACED_WHOLE = {"sweep"}   # a child's sweep is its own: parent keys may name its flows


def merge(base: dict, over: dict, top: bool = True) -> dict:
    """Tables merge key by key; everything else (arrays of [[flow]] included) is replaced,
    and so are a child's [sweep] and each of its [scale.<name>] tables."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if top and k in REPLACED_WHOLE:
            out[k] = copy.deepcopy(v)
        elif top and k == "scale" and isinstance(v, dict):
            out[k] = {**copy.deepcopy(out.get(k, {})), **copy.deepcopy(v)}
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v, top=False)
        else:
            out[k] = copy.deepcopy(v)
    return out


def resolve_extends(path: Path, depth: int = 0) -> dict:
    raw = _read_toml(path)
    ext = raw.get("study", {}).get("extends") if isinstance(raw.get("study"), dict) else None
    if ext is None:
        return raw
    if depth >= MAX_EXTENDS_DEPTH:
        raise SpecError(path, "study.extends", f"more than {MAX_EXTENDS_DEPTH} levels (a cycle?)")
    base_path = (path.parent / ext).resolve()
    if not base_path.exists():
        raise SpecError(path, "study.extends", f"no such file {str(base_path)!r}")
    base = resolve_extends(base_path, depth + 1)
    merged = merge(base, raw)
    merged["study"].pop("extends", None)
    return merged


def parse_study(raw: dict, path: str = "<string>", extra_algorithms=()) -> Study:
    """Validate a raw dict (already merged) including every sweep cell."""
    # the user's own BPF algorithms (a <name>.bpf.c in CCARENA_CC_PATH or
    # ~/.config/ccarena/cc) count as known through cc.catalog.known_names
    study = build_study({k: v for k, v in raw.items() if k != "sweep"}, path, extra_algorithms)
    algorithms = frozenset(Ctx(path, extra_algorithms).algorithms)     # looked up once
    study.raw = raw
    study.sweep = {}
    cells = []
    for params, cell_raw in sweep_cells(raw, path):
        try:
            cell = build_study(cell_raw, path, extra_algorithms, algorithms)
        except SpecError as e:
            if params:
                where = ", ".join(f"{k} = {v!r}" for k, v in params.items())
                raise SpecError(path, e.key, f"{e.reason} (in the sweep cell {where})") from None
            raise
        cell.raw = cell_raw
        cells.append(Cell(index=len(cells), params=params, study=cell))
    for k in raw.get("sweep", {}):
        study.sweep[k] = [c.params[k] for c in cells]
    study.cells = cells
    check_cells(study, path)
    return study


def apply_scale(raw: dict, scale: str | None, path: str) -> tuple[dict, str | None]:
    """`[scale.<name>]` tables override the study (merged like `extends`); the scale is
    `scale`, else `study.default_scale`, else none (the study as written)."""
    scales = raw.get("scale", {})
    if not isinstance(scales, dict) or not all(isinstance(v, dict) for v in scales.values()):
        raise SpecError(path, "scale", "expected tables like [scale.quick]")
    st = raw.get("study", {}) if isinstance(raw.get("study"), dict) else {}
    name = scale or st.get("default_scale")
    out = {k: v for k, v in raw.items() if k != "scale"}
    if name is None:
        return out, None
    if name not in scales:
        if name == "full" and scales:
            return out, "full"      # the study as written is the full scale
        if scale is None:
            raise SpecError(path, "study.default_scale", f"no [scale.{name}] table")
        raise SpecError(path, "scale", f"no scale {name!r}; this study has: "
                        + (", ".join(sorted(scales)) or "none"))
    over = scales[name]
    merged = merge(out, {k: v for k, v in over.items() if k not in ("sweep", "expect")})
    if "sweep" in over:          # a scale's sweep replaces the listed keys, keeps the others
        merged["sweep"] = {**out.get("sweep", {}), **over["sweep"]}
    if "expect" in over:
        merged["expect"] = scale_checks(out.get("expect", []), over["expect"], name, path)
    return merged, name


def scale_checks(base: list, over, scale: str, path: str) -> list:
    """A scale's [[scale.<name>.expect]] checks join the study's: one with
    `replaces = "<name of a study check>"` takes that check's place, any other is added.
    A scale can so weaken one check (a short run cannot promise what a long one can)
    without repeating the others."""
    key = f"scale.{scale}.expect"
    if not isinstance(over, list) or not all(isinstance(e, dict) for e in over):
        raise SpecError(path, key, "write a scale's checks as [[scale.<name>.expect]] tables")
    if not isinstance(base, list):
        return over     # the study's own expect is malformed: build_study names it
    out = copy.deepcopy(base)
    names = [e.get("name") if isinstance(e, dict) else None for e in out]
    ctx = Ctx(path)
    for i, e in enumerate(over):
        # checked here, where the error can name the scale's key; the merged list is
        # checked again as the study's own
        _take(ctx, e, f"{key}[{i}]", {**EXPECT_KEYS, "replaces": text("the study check this one replaces")},
              required=("metric",))
        e = copy.deepcopy(e)
        target = e.pop("replaces", None)
        if target is None:
            if e.get("name") is not None and e.get("name") in names:
                raise SpecError(path, f"{key}[{i}].name",
                                f"the study already has a check named {e['name']!r}; "
                                f"to change it write replaces = {e['name']!r}")
            out.append(e)
            names.append(e.get("name"))
        elif target in names:
            j = names.index(target)
            out[j] = e
            names[j] = e.get("name")
        else:
            have = ", ".join(repr(n) for n in names if n) or "none"
            raise SpecError(path, f"{key}[{i}].replaces",
                            f"the study has no check named {target!r}; its checks: {have}")
    return out


def load_study(path, overrides: dict | None = None, extra_algorithms=(),
               scale: str | None = None) -> Study:
    """A study from a file, or a built-in study by name (see `ccarena studies`)."""
    p = resolve_study_path(path)
    raw = resolve_extends(p)
    scaled, chosen = apply_scale(raw, scale, str(p))
    if overrides:
        scaled = merge(scaled, overrides)
    study = parse_study(scaled, str(p), extra_algorithms)
    study.scale = chosen
    study.other_checks = check_scales(raw, chosen, str(p), extra_algorithms)
    return study


def check_scales(raw: dict, chosen: str | None, path: str, extra_algorithms=()) -> dict:
    """The study at every scale it has, and as written, is valid: a typo in a scale
    is found when the study is validated, not when someone first runs that scale.
    -> {scale: its checks} (for the checks of metric names, analysis.check_spec).
    Resolving every cell of every scale takes a second for a large study: a process that
    loads the same study again (the API, a notebook, the tests) reuses the answer for the
    same text."""
    from ccarena.cc.catalog import known_names
    # the algorithm names a study may use depend on the user's directories of their own
    key = (path, json.dumps(raw, sort_keys=True, default=str), chosen, tuple(extra_algorithms),
           tuple(sorted(known_names())))
    if key not in _checked:
        if len(_checked) >= 64:
            _checked.pop(next(iter(_checked)))
        _checked[key] = _check_scales(raw, chosen, path, extra_algorithms)
    return copy.deepcopy(_checked[key])


_checked: dict[tuple, dict] = {}


def _check_scales(raw: dict, chosen: str | None, path: str, extra_algorithms=()) -> dict:
    out = {}
    scales = raw.get("scale", {})
    names = [n for n in scales if n != chosen]
    if scales and "full" not in scales and chosen not in (None, "full"):
        names.append("full")        # the study as written, as --scale full gives it
    for name in names:
        try:
            out[name] = parse_study(apply_scale(raw, name, path)[0], path,
                                    extra_algorithms).expect
        except SpecError as e:
            top = e.key.split(".")[0].split("[")[0]
            key = f"scale.{name}.{e.key}" if name in scales and top in scales[name] \
                else e.key
            raise SpecError(path, key, f"{e.reason} (at --scale {name})") from None
    return out


def loads_study(text: str, path: str = "<string>") -> Study:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, "", f"not valid TOML: {e}") from None
    return parse_study(raw, path)
