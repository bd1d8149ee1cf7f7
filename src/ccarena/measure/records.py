"""Read the parts' binary record files (`x.bin` + `x.bin.schema.json`, contract §0) into
DataFrames with numpy.fromfile: no text parsing. A trailing partial record is ignored."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ccarena.errors import ResultsError

TYPES = {"u8": "u1", "u16": "<u2", "u32": "<u4", "u64": "<u8", "i32": "<i4", "i64": "<i8",
         "f64": "<f8", "i8": "i1", "i16": "<i2", "f32": "<f4"}
SUPPORTED_VERSION = 1


def dtype_from_schema(schema: dict, where: str = "") -> np.dtype:
    if schema.get("version", 1) > SUPPORTED_VERSION:
        raise ResultsError(f"{where}: record format version {schema['version']} is newer than "
                           f"this ccarena reads ({SUPPORTED_VERSION}); upgrade ccarena")
    fields = []
    for f in schema["fields"]:
        # ["name", "u8"], ["name", "u8", 3] or ["name", "u8[3]"] (an array of 3)
        name, typ = f[0], f[1]
        m = typ.rstrip("]").split("[")
        base = TYPES.get(m[0])
        if base is None:
            raise ResultsError(f"{where}: unknown field type {typ!r}")
        count = int(f[2]) if len(f) > 2 else int(m[1]) if len(m) == 2 else 1
        if count != 1 or len(m) == 2 or len(f) > 2:
            fields.append((name, base, (count,)))
        else:
            fields.append((name, base))
    return np.dtype(fields)


def read_bin(path: Path) -> pd.DataFrame | None:
    path = Path(path)
    sch = Path(str(path) + ".schema.json")
    if not sch.exists():
        alt = path.with_suffix(".schema.json")
        sch = alt if alt.exists() else sch
    if not path.exists() or not sch.exists():
        return None
    schema = json.loads(sch.read_text())
    dt = dtype_from_schema(schema, str(path))
    if schema.get("record_size") not in (None, dt.itemsize):
        raise ResultsError(f"{path}: schema says {schema['record_size']}-byte records, its "
                           f"fields add up to {dt.itemsize}")
    raw = np.fromfile(path, dtype=np.uint8)
    n = len(raw) // dt.itemsize
    arr = raw[: n * dt.itemsize].view(dt)
    cols = {name: arr[name] for name in dt.names if not name.startswith("_")
            and arr[name].ndim == 1}
    return pd.DataFrame(cols)


def read_jsonl(path: Path) -> pd.DataFrame | None:
    path = Path(path)
    if not path.exists():
        return None
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash
    return pd.DataFrame(rows)
