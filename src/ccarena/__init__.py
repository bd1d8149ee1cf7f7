"""ccarena: a laboratory for TCP congestion-control experiments.

The Python API is what the CLI uses:

    from ccarena import load_study, run_study, open_results
    study = load_study("studies/quickstart.toml")
    results = run_study(study)            # -> ResultsDir
    runs = open_results(results.path).runs   # pandas DataFrame
"""
__version__ = "0.1.0"

from ccarena.errors import CcarenaError, SpecError, CommandError  # noqa: E402,F401


def load_study(path, **kw):
    from ccarena.study.load import load_study as _load
    return _load(path, **kw)


def run_study(study, **kw):
    from ccarena.run.executor import run_study as _run
    return _run(study, **kw)


def open_results(path):
    from ccarena.store.results import open_results as _open
    return _open(path)
