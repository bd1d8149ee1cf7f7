"""Study files: TOML in, validated `Study` objects out (see model.py for the shapes)."""
from .load import load_study, parse_study  # noqa: F401
from .model import Study  # noqa: F401
