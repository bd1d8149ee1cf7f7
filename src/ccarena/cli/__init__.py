"""The `ccarena` command: a thin layer over the Python API (cli.main builds the parser)."""
