"""Study files: TOML in, validated `Study` objects out (see model.py for the shapes)."""
from ccarena.study.load import load_study, parse_study  # noqa: F401
from ccarena.study.model import Study  # noqa: F401
