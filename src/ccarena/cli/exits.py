"""The exit statuses of `ccarena` (docs/running.md)."""
OK = 0
ERROR = 1            # something failed; one line says what
USAGE = 2            # bad command line
CHECKS = 3           # a study's check failed or could not be evaluated
INCOMPLETE = 4       # planned runs are missing (interrupted, or a run never stored)
INTERRUPTED = 130    # Ctrl-C or SIGTERM
