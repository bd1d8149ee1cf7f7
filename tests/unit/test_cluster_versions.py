"""A cluster whose machines run different versions of ccarena, dask or distributed is
refused when a study connects, with one line naming the machine and the package."""
from ccarena.run.scaleout.cluster import SAME_VERSIONS, version_mismatch


def _v(**pk):
    return {"packages": {"ccarena": "0.1.0", "dask": "2026.8.0", "distributed": "2026.8.0",
                         **pk}}


def test_the_same_versions_everywhere_pass():
    assert version_mismatch({"client": _v(), "scheduler": _v(),
                             "workers": {"tcp://10.0.0.2:1": _v(), "tcp://10.0.0.3:1": _v()}}) \
        is None


def test_each_mismatch_names_the_machine_and_the_package():
    for name in SAME_VERSIONS:
        line = version_mismatch({"client": _v(), "scheduler": _v(),
                                 "workers": {"tcp://10.0.0.3:1": _v(**{name: "9.9"})}})
        assert line == f"worker tcp://10.0.0.3:1 runs {name} 9.9, this machine " + \
            _v()["packages"][name]
    assert version_mismatch({"client": _v(), "scheduler": _v(dask="2025.1.0")}) == \
        "the scheduler runs dask 2025.1.0, this machine 2026.8.0"
    # a worker without ccarena (a plain dask worker without the preload) is a mismatch
    assert "runs ccarena (none)" in version_mismatch(
        {"client": _v(), "scheduler": _v(), "workers": {"w": _v(ccarena=None)}})


def test_without_dask_the_cluster_options_say_which_extra_to_install(monkeypatch):
    import builtins

    import pytest

    from ccarena.errors import PreflightError
    from ccarena.run.scaleout import remote
    real = builtins.__import__

    def no_dask(name, *a, **kw):
        if name in ("dask", "distributed"):
            raise ImportError(name)
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(PreflightError, match=r"--jobs needs Dask: .*ccarena\[cluster\]"):
        remote.require_dask("--jobs")
