"""The results store: one directory per study execution (docs/dev/contracts.md §5)."""
from ccarena.store.results import ResultsDir, open_results, list_results  # noqa: F401
