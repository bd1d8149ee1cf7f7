"""The kernel backend's link tests (test_kernel_link.py) run inside the reference kernel.
Under TCG they take 10-20 minutes, past the test suite's budget for the VM: `make verify`
runs this (CCARENA_VM_FULL=1); the suite keeps the smoke test (test_vm_smoke.py)."""
import os

import pytest

from ccarena import vm
from ccarena.paths import repo_root

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("CCARENA_VM_FULL") != "1",
    reason="the kernel backend's link tests in the VM: make verify (CCARENA_VM_FULL=1)")]


def test_the_kernel_backend_passes_the_link_tests_in_the_reference_kernel():
    r = vm.run(["python", "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider",
                "tests/vm/test_kernel_link.py"], vm.config_from_env(cwd=str(repo_root())),
               capture=True)
    print(r.stdout[-4000:])     # the guest's summary: which tests ran, which skipped and why
    assert r.rc == 0, r.stdout[-4000:] + r.stderr[-2000:]
