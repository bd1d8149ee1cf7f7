"""A guest's record files in the host's clock (testbed/guest/clock.py).

    translate_dir(src, dst, clock) -> {"files": [...], "records": n}

The flow engine and the tracer in a guest write what they write in a namespace host
(docs/dev/contracts.md §2, §6), stamped with the guest's CLOCK_MONOTONIC. Here each
timestamp becomes the host's (clock.to_host), so a guest's samples line up with every
other host's as the namespaces' do: the `t_ns` field of every binary record file, the
instants of conns.jsonl and engine.json's t0 and end. Durations (latencies, round trips, `*_us` fields) are the same on
either clock and stay. Record files keep their layout and schema sidecars; the rest is
copied as it is."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from ccarena.measure.records import dtype_from_schema

TIME_FIELD = "t_ns"         # the instant of a record, in every record file
# the instants of a connection's line in conns.jsonl
CONN_INSTANTS = ("connect_start_ns", "connected_ns", "first_byte_ns", "last_byte_ns",
                 "end_ns")
# the instants of engine.json (the rest are counts and durations)
ENGINE_INSTANTS = ("t0_ns", "end_ns")
SCHEMA_SUFFIX = ".schema.json"


def translate_bin(src: Path, dst: Path, clock) -> int:
    """A record file with its sidecar, t_ns translated; -> the records written (a
    trailing partial record is dropped, as a reader would)."""
    sch = Path(str(src) + SCHEMA_SUFFIX)
    schema = json.loads(sch.read_text())
    dt = dtype_from_schema(schema, str(src))
    raw = np.fromfile(src, dtype=np.uint8)
    n = len(raw) // dt.itemsize
    arr = raw[: n * dt.itemsize].view(dt).copy()
    if TIME_FIELD in dt.names and n:
        t = arr[TIME_FIELD].astype(np.int64)
        arr[TIME_FIELD] = np.asarray(clock.to_host(t), dtype=np.int64).astype(
            arr[TIME_FIELD].dtype)
    arr.tofile(dst)
    shutil.copyfile(sch, Path(str(dst) + SCHEMA_SUFFIX))
    return int(n)


def translate_conns(src: Path, dst: Path, clock) -> int:
    lines = []
    for line in src.read_text().splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue        # a line cut by a crash, as the reader skips it
        for k in CONN_INSTANTS:
            if d.get(k) is not None:
                d[k] = int(clock.to_host(int(d[k])))
        lines.append(json.dumps(d))
    dst.write_text("".join(x + "\n" for x in lines))
    return len(lines)


def translate_engine(src: Path, dst: Path, clock) -> None:
    d = json.loads(src.read_text())
    for k in ENGINE_INSTANTS:
        if isinstance(d.get(k), int):
            d[k] = int(clock.to_host(d[k]))
    dst.write_text(json.dumps(d, indent=1))


def translate_dir(src: Path, dst: Path, clock) -> dict:
    """Every file of `src` into `dst`, in the host's clock where it holds instants."""
    dst.mkdir(parents=True, exist_ok=True)
    files, records = [], 0
    for p in sorted(src.iterdir()):
        if not p.is_file() or p.name.endswith(SCHEMA_SUFFIX):
            continue
        out = dst / p.name
        if p.suffix == ".bin" and Path(str(p) + SCHEMA_SUFFIX).exists():
            records += translate_bin(p, out, clock)
        elif p.name == "conns.jsonl":
            records += translate_conns(p, out, clock)
        elif p.name == "engine.json":
            translate_engine(p, out, clock)
        else:
            shutil.copyfile(p, out)
        files.append(p.name)
    return {"files": files, "records": records}


def append_bin(src: Path, dst: Path) -> int:
    """Append `src`'s records to `dst` (same layout: its sidecar must match, or `dst`
    must not exist yet, and gets `src`'s); -> records appended."""
    sch_src = Path(str(src) + SCHEMA_SUFFIX)
    sch_dst = Path(str(dst) + SCHEMA_SUFFIX)
    schema = json.loads(sch_src.read_text())
    size = dtype_from_schema(schema, str(src)).itemsize
    data = src.read_bytes()
    data = data[: len(data) // size * size]
    if sch_dst.exists():
        if json.loads(sch_dst.read_text())["fields"] != schema["fields"]:
            raise ValueError(f"{dst}: its records are not laid out as {src}'s")
    else:
        shutil.copyfile(sch_src, sch_dst)
    with open(dst, "ab") as f:
        f.write(data)
    return len(data) // size
