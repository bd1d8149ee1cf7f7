"""tests/vm: the reference kernel (ccarena.vm). Host-side tests boot it; test_kernel_link.py
runs inside it (skipped on a kernel without netem and the AQM qdiscs). They share the
user-space link tests' helpers."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
