"""What a re-run installs: the Python libraries pinned by requirements.lock (used by the
Makefile's venv) and recorded with every study; chromium only on the tests' path."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_every_dependency_is_pinned_in_the_lock():
    pp = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = pp["dependencies"] + [d for ds in pp["optional-dependencies"].values() for d in ds]
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower().replace("_", "-")
             for d in wanted}
    missing = names - set(pins())
    assert not missing, f"not pinned in requirements.lock: {sorted(missing)} (make lock)"


def test_the_package_states_minimums_and_leaves_exact_pins_to_the_lock():
    """ccarena installs beside other software: its metadata asks for lowest versions,
    never exact ones, and Dask (scale-out only) is an extra, not a requirement."""
    pp = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    every = pp["dependencies"] + [d for ds in pp["optional-dependencies"].values() for d in ds]
    assert not [d for d in every if "==" in d], every
    names = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in pp["dependencies"]}
    assert not names & {"dask", "distributed"}, "Dask is the cluster extra's, not required"
    assert {re.split(r"[<>=]", d)[0] for d in pp["optional-dependencies"]["cluster"]} == \
        {"dask", "distributed"}
    assert pp["requires-python"] == ">=3.11.4"     # tarfile's extractall(filter="data")


def test_the_venv_is_built_with_the_lock_as_constraints():
    mk = (ROOT / "Makefile").read_text()
    target = mk[mk.index("$(STAMP)/venv:"):]
    target = target[:target.index("\n\n")]
    assert "requirements.lock" in target.splitlines()[0], "the venv must be rebuilt when " \
        "the lock changes"
    assert "-c requirements.lock" in target


def test_chromium_is_installed_for_the_tests_only():
    mk = (ROOT / "Makefile").read_text()
    apt = mk[mk.index("APT_PACKAGES :="):mk.index("STAMP :=")]
    base = " ".join(ln for ln in apt[:apt.index("TEST_APT_PACKAGES")].splitlines()
                    if not ln.lstrip().startswith("#"))
    assert "chromium" not in base, "chromium is on `make demo`'s path"
    assert re.search(r"TEST_APT_PACKAGES := .*chromium", apt)
    test = re.search(r"^test: (.*)$", mk, re.M).group(1)
    assert "test-deps" in test
    assert "CCARENA_REQUIRE_CHROMIUM=1" in mk[mk.index("\ntest: "):]


def test_a_study_records_the_python_libraries_it_ran_with():
    import pandas

    from ccarena.run import environment
    pk = environment.python_packages()
    assert pk["pandas"] == pandas.__version__ and "ccarena" not in pk
    # the tested set is the locked set
    assert pk["pandas"] == pins()["pandas"]
