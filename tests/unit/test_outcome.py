"""What a stored study answers of its plan (ResultsDir.outcome) and the exit status that
says it (cli/exits.py): a cell with no valid run is never a plain success, with or without
checks; planned runs missing come first, then cells without a valid run, then checks."""
import shutil

import pytest

from ccarena.analysis.synthetic import write_synthetic_study
from ccarena.cli import exits
from ccarena.cli.main import main
from ccarena.store.results import open_results

def study(tmp_path, invalid=()):
    return write_synthetic_study(tmp_path / "s", buffers=(20,), reps=1, n_flows=1,
                                 duration_s=3.0, invalid=tuple(invalid))


@pytest.mark.parametrize("invalid,outcome,code", [
    ((), "complete", exits.OK),
    (("buf20-reno-r0",), "partial", exits.PARTIAL),
    (("buf20-reno-r0", "buf20-cubic-r0"), "failed", exits.FAILED)])
def test_a_cell_without_a_valid_run_is_not_a_success_without_checks(tmp_path, capsys,
                                                                    invalid, outcome, code):
    d = study(tmp_path, invalid)
    res = open_results(d)
    assert res.outcome == outcome
    assert exits.of_study(res, None) == code
    assert main(["check", str(d)]) == code
    err = capsys.readouterr().err
    if outcome == "partial":
        assert "the study is partial: 1 of 2 cells have no valid run (buf20-reno)" in err
    elif outcome == "failed":
        assert "the study failed: no cell has a valid run" in err
    else:
        assert "ccarena:" not in err


def test_missing_runs_come_before_cells_without_a_valid_run_and_checks(tmp_path):
    d = study(tmp_path, ("buf20-reno-r0",))
    shutil.rmtree(next((d / "runs").glob("*buf20-cubic*")))
    res = open_results(d)
    assert res.outcome == "incomplete"
    assert exits.of_study(res, False) == exits.INCOMPLETE
    res = open_results(study(tmp_path / "b", ("buf20-reno-r0",)))
    assert exits.of_study(res, False) == exits.PARTIAL
    res = open_results(study(tmp_path / "c"))
    assert exits.of_study(res, False) == exits.CHECKS
    assert exits.of_study(res, True) == exits.OK
