"""Reports of a stored study: report.html (page), its figures, and the terminal summary."""
from ccarena.report.page import write_report  # noqa: F401
