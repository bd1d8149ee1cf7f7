"""The study format described from its declarations (study.keys), for editors and people:

    json_schema() -> dict     a JSON Schema (draft 2020-12) of a study file; editors that
                              read TOML through JSON Schema (Taplo, "Even Better TOML")
                              complete and check keys with it (`ccarena schema`)
    markdown() -> str         docs/study-keys.md: every key with type, unit, range, default
                              and meaning (a unit test keeps the page equal to this)"""
from __future__ import annotations

from ccarena.study.keys import (EXPECT_KEYS, FLOW_KEYS, HOST_KEYS, LINK_KEYS, PROBE_KEYS,
                                STUDY_KEYS, TABLES, TCP_KEYS, TESTBED_KEYS, TOPOLOGY_KEYS, VM_KEYS,
                                Key)
from ccarena.study.impair import LOSS_MODEL_KEYS
from ccarena.study.resolve import AQM_KEYS

UNITS = {
    "rate": "bit (or bit/s), kbit, mbit, gbit, tbit; kibit, mibit, gibit; bps, kbps, mbps, "
            "gbps (bytes per second, as tc reads them); kbit/s, Mbit/s, Gbit/s",
    "time": "s, sec, ms, msec, us, usec, ns, min, h (0 needs none)",
    "size": "b or a bare number (bytes), k/kb/KiB, m/mb/MiB, g/gb/GiB (1024-based, as in "
            "tc), kbit, mbit, gbit",
    "buffer": "p (packets) or a size",
    "probability": "per cent, e.g. '1%' (0 needs none)",
}
_NUMBER_WITH_UNIT = {"type": "string", "pattern": r"^\s*-?[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?"
                     r"\s*[A-Za-zµ%/]+\s*$"}


def _key_schema(k: Key) -> dict:
    doc = k.doc + (f" (default: {k.default})" if k.default else "") \
        + (f"; unit: {k.unit}" if k.unit else "") + (f"; range: {k.range}" if k.range else "")
    t = k.type
    if t in UNITS:
        s = {"anyOf": [_NUMBER_WITH_UNIT, {"const": 0}]} if t in ("time", "probability") \
            else dict(_NUMBER_WITH_UNIT)
        if t == "size":
            s = {"anyOf": [_NUMBER_WITH_UNIT, {"type": "integer", "minimum": 1}]}
        doc += f"; units: {UNITS[t]}"
    elif t == "integer":
        s = {"type": "integer"}
    elif t == "number":
        s = {"type": "number"}
    elif t == "true/false":
        s = {"type": "boolean"}
    elif t == "table":
        s = {"type": "object"}
    elif t in ("list", "sizes"):
        s = {"type": ["array", "string"]}
    elif t == "bound":
        s = {"type": ["number", "string"]}
    else:
        s = {"type": "string"}
    s.update(dict(k.json))
    s["description"] = doc
    return s


def _table(keys: dict, required=()) -> dict:
    out = {"type": "object", "additionalProperties": False,
           "properties": {n: _key_schema(k) for n, k in keys.items()}}
    if required:
        out["required"] = list(required)
    return out


def json_schema() -> dict:
    study = _table(STUDY_KEYS, required=("name",))    # duration may come from `extends`
    link = _table(LINK_KEYS)
    link["properties"]["aqm"]["properties"] = {
        k: {"description": f"parameter of queue(s): {', '.join(q for q, ks in AQM_KEYS.items() if k in ks)}"}
        for k in sorted(set().union(*AQM_KEYS.values()))}
    link["properties"]["aqm"]["additionalProperties"] = False
    lm = link["properties"]["loss_model"]
    lm["properties"] = {"kind": {"enum": list(LOSS_MODEL_KEYS), "description": "the model"}}
    lm["properties"].update({
        k: {**_key_schema(LINK_KEYS["loss"]), "description": "parameter of loss model(s): "
            + ", ".join(m for m, (need, opt) in LOSS_MODEL_KEYS.items() if k in need + opt)}
        for k in sorted({k for need, opt in LOSS_MODEL_KEYS.values() for k in need + opt})})
    lm["additionalProperties"] = False
    lm["required"] = ["kind"]
    host = _table(HOST_KEYS)
    host["properties"]["vm"] = {"anyOf": [_table(VM_KEYS), {"const": True}],
                                "description": HOST_KEYS["vm"].doc}
    partial = {"type": "object", "description": "keys of the study to override at this "
               "scale (tables as above; [[scale.<name>.expect]] may `replaces` a check)"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ccarena study",
        "description": "A ccarena study file (TOML); docs/study-format.md",
        "type": "object", "additionalProperties": False, "required": ["study"],
        "properties": {
            "study": study, "topology": _table(TOPOLOGY_KEYS), "bottleneck": link,
            "tcp": _table(TCP_KEYS), "testbed": _table(TESTBED_KEYS),
            "hosts": {"type": "object", "additionalProperties": False,
                      "patternProperties": {"^[sr][0-9]+$": host}},
            "flow": {"type": "array", "items": _table(FLOW_KEYS)},
            "probe": {"type": "array", "items": _table(PROBE_KEYS, required=("kind",))},
            "expect": {"type": "array", "items": _table(EXPECT_KEYS, required=("metric",))},
            "sweep": {"type": "object", "description": "dotted key -> list of values, or a "
                      "generator table (docs/study-format.md)",
                      "additionalProperties": {"type": ["array", "object"]}},
            "scale": {"type": "object", "additionalProperties": partial},
        },
    }


def markdown() -> str:
    lines = ["# Study keys",
             "",
             "Every key a study file accepts, with its type, unit, range, default and meaning "
             "(generated "
             "from the declarations in `src/ccarena/study/keys.py`; `ccarena schema` prints "
             "the same as a JSON Schema for editors). How the tables fit together, sweeps, "
             "scales and checks: [study-format.md](study-format.md).",
             "",
             "## Units",
             "",
             "Written as tc(8) writes them, case-insensitive. A rate, time, buffer or loss "
             "needs its unit: a bare number is refused (tc reads `10` as 10 bit/s or 10 µs, "
             "netem reads loss `1` as 1 %), except 0. The unit column says what a key's "
             "value counts, whatever unit it is written in; the range column what the parser "
             "accepts (a..b inclusive).",
             "",
             "| type | units |", "| --- | --- |"]
    lines += [f"| {t} | {u} |" for t, u in UNITS.items()]
    for name, keys in TABLES.items():
        title = f"[[{name[1:-1]}]]" if name.startswith("[") else f"[{name}]"
        lines += ["", f"## {title}", "", "| key | type | unit | range | default | meaning |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for k, key in keys.items():
            lines.append(f"| `{k}` | {key.type} | {key.unit or '–'} | {key.range or '–'} | "
                         f"{key.default or '–'} | {key.doc} |")
    lines += ["", "## bottleneck.aqm", "", "| queue | keys |", "| --- | --- |"]
    lines += [f"| {q} | {', '.join(f'`{k}`' for k in sorted(ks)) or '–'} |"
              for q, ks in AQM_KEYS.items()]
    lines += ["", "Defaults of the queue parameters: [study-format.md](study-format.md#queue-"
              "parameters-bottleneckaqm).",
              "", "## bottleneck.loss_model", "", "| kind | keys (required first) |",
              "| --- | --- |"]
    lines += [f"| {m} | {', '.join(f'`{k}`' for k in need + opt)} |"
              for m, (need, opt) in LOSS_MODEL_KEYS.items()]
    lines += ["", "Probabilities in per cent; meaning and defaults: [study-format.md]"
              "(study-format.md#impairments)."]
    return "\n".join(lines) + "\n"

