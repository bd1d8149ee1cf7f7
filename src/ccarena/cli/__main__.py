"""`python -m ccarena.cli` runs the command line like the `ccarena` script."""
import sys

from ccarena.cli.main import main

sys.exit(main())
