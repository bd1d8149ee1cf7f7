"""ccarena's version, written in this one place (pyproject.toml reads it too). It sits at
the bottom of the package, like errors, units and paths, so every stage may record it
without importing the package's public face."""
__version__ = "0.1.0"
