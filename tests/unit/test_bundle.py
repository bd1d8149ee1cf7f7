"""A results directory packed into one file (`ccarena archive`) and opened again, read-only,
by open_results and by every command that reads results."""
import tarfile

import pandas as pd
import pytest

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.cli.main import main
from ccarena.errors import ResultsError
from ccarena.store import bundle as archive
from ccarena.store.atomic import StoreError
from ccarena.store.results import open_results
from ccarena.store.writer import Writer


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    base = tmp_path_factory.mktemp("arch")
    d = write_synthetic_study(base / "results" / "synthetic-20261122-000000", reps=2,
                              duration_s=4.0, invalid=("buf20-reno-r1",))
    out = base / "out" / "synthetic.ccarena.tar.xz"
    mp = pytest.MonkeyPatch()
    mp.setenv("CCARENA_CACHE", str(base / "cache"))
    assert main(["archive", str(d), "-o", str(out)]) == 0
    yield base, d, out
    mp.undo()


def test_archive_is_one_xz_tar_holding_the_whole_directory(packed):
    _, d, out = packed
    assert out.is_file() and out.read_bytes()[:6] == b"\xfd7zXZ\x00"
    with tarfile.open(out) as t:
        names = set(t.getnames())
    files = {f"{d.name}/{p.relative_to(d)}" for p in d.rglob("*")}
    assert files <= names and f"{d.name}/ccarena-results.json" in names


def test_the_archive_opens_as_the_same_data_read_only(packed):
    base, d, out = packed
    a, b = open_results(d), open_results(out)
    assert b.readonly and b.source == out.absolute() and not a.readonly
    assert b.path.is_relative_to(base / "cache")
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    rid = sorted(a.metas)[0]
    for name, df in a.run_tables(rid).items():
        pd.testing.assert_frame_equal(df, b.run_tables(rid)[name])
    assert a.factors == b.factors and a.study == b.study and a.plan == b.plan
    # modification times travel with the files: the stored summaries are trusted
    assert "_stale" not in b.__dict__
    with pytest.raises(StoreError, match="read-only"):
        Writer(b).write_checks([])
    with pytest.raises(StoreError, match="read-only"):
        Writer(b).rebuild_summaries()


def test_opening_again_reuses_the_extracted_copy_keyed_by_content(packed, tmp_path):
    base, d, out = packed
    first = open_results(out).path
    assert open_results(out).path == first
    assert len([p for p in (base / "cache" / "archives").iterdir()]) == 1
    other = tmp_path / "other.ccarena.tar.xz"
    archive.write_archive(d, other, preset=0)      # other bytes, the same directory
    assert open_results(other).path != first


def test_every_reading_command_takes_the_archive(packed, capsys, monkeypatch):
    base, _, out = packed
    monkeypatch.chdir(base)
    assert main(["show", str(out)]) == 0
    assert "synthetic-20261122-000000" in capsys.readouterr().out
    assert main(["query", str(out), "SELECT count(*) AS n FROM runs"]) == 0
    assert capsys.readouterr().out.split() == ["n", "8"]
    assert main(["check", str(out)]) == 0
    assert "declares no checks" in capsys.readouterr().out
    assert main(["report", str(out), "--max-timeseries", "1"]) == 0
    report = out.parent / "synthetic.report.html"      # beside the archive
    assert capsys.readouterr().out.strip() == str(report) and report.exists()
    assert main(["plot", str(out), "box", "-o", str(base / "box.svg")]) == 0
    assert (base / "box.svg").read_text().lstrip().startswith("<?xml")
    assert main(["export", str(out), "--tables", "runs"]) == 0
    assert (out.parent / "synthetic-csv" / "runs.csv").exists()


def test_a_damaged_archive_is_one_clear_error(tmp_path, packed, capsys):
    _, _, out = packed
    bad = tmp_path / "bad.ccarena.tar.xz"
    bad.write_bytes(out.read_bytes()[:5000])
    with pytest.raises(ResultsError, match="bad.ccarena.tar.xz"):
        open_results(bad)
    assert main(["show", str(bad)]) == 1
    assert capsys.readouterr().err.startswith("ccarena: opening archive")


def test_an_archive_is_never_written_into_its_own_directory(packed):
    _, d, _ = packed
    with pytest.raises(ResultsError, match="inside the directory"):
        archive.write_archive(d, d / "x.ccarena.tar.xz")


def test_unused_extracted_copies_are_pruned(tmp_path):
    import os
    import time
    old, fresh = tmp_path / "a", tmp_path / "b"
    for p in (old, fresh):
        p.mkdir()
        (p / ".complete").write_text("x")
    t = time.time() - 30 * 86400
    os.utime(old / ".complete", (t, t))
    assert archive.prune(tmp_path) == [old]
    assert fresh.exists() and not old.exists()


def test_an_output_directory_gets_the_archive_inside_it(packed, tmp_path, capsys):
    """`archive -o newdir/` (a name ending in a slash, made if need be) and `-o existing`
    both write <name>.ccarena.tar.xz inside that directory, never a file named newdir."""
    _, d, _ = packed
    new = tmp_path / "newdir"
    assert main(["archive", str(d), "-o", f"{new}/"]) == 0
    assert new.is_dir() and [p.name for p in new.iterdir()] == [d.name + archive.SUFFIX]
    assert capsys.readouterr().out.startswith(str(new / (d.name + archive.SUFFIX)))
    existing = tmp_path / "existing"
    existing.mkdir()
    assert archive.write_archive(d, existing) == existing / (d.name + archive.SUFFIX)
