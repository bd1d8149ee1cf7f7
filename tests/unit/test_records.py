import json

import numpy as np
import pytest

from ccarena.errors import ResultsError
from ccarena.measure.records import dtype_from_schema, read_bin


def test_schema_with_padding_reads_packed_records(tmp_path):
    schema = {"version": 1, "record": "x", "record_size": 16,
              "fields": [["t_ns", "u64"], ["flow", "u32"], ["state", "u8"], ["_pad", "u8", 3]]}
    dt = dtype_from_schema(schema)
    assert dt.itemsize == 16
    arr = np.zeros(3, dtype=dt)
    arr["t_ns"] = [10, 20, 30]
    arr["flow"] = [1, 2, 3]
    arr["state"] = [4, 5, 6]
    p = tmp_path / "x.bin"
    # a trailing partial record (a crash mid-write) is ignored
    p.write_bytes(arr.tobytes() + b"\x01\x02\x03")
    (tmp_path / "x.bin.schema.json").write_text(json.dumps(schema))
    df = read_bin(p)
    assert list(df.columns) == ["t_ns", "flow", "state"]
    assert df["t_ns"].tolist() == [10, 20, 30] and df["state"].tolist() == [4, 5, 6]


def test_newer_format_is_refused_with_advice():
    with pytest.raises(ResultsError, match="upgrade ccarena"):
        dtype_from_schema({"version": 99, "fields": [["a", "u8"]]})


def test_inconsistent_record_size_is_an_error(tmp_path):
    (tmp_path / "y.bin").write_bytes(b"")
    (tmp_path / "y.bin.schema.json").write_text(json.dumps(
        {"version": 1, "record_size": 9, "fields": [["a", "u64"]]}))
    with pytest.raises(ResultsError, match="add up to 8"):
        read_bin(tmp_path / "y.bin")
