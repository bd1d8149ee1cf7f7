"""The kernel backend's link tests (test_kernel_link.py, test_kernel_impairments.py) run
inside the reference kernel, by `make verify` (the test suite's check of the kernel
backend in the reference kernel is test_vm_smoke.py: netem's delay and loss and htb's
rate in one study).

`make verify` runs those marked `vm_ci` (delay, rate, loss, the buffer's limit, RED, a
delay per direction, Gilbert-Elliott bursts: conditions a guest under TCG carries in
minutes) and all of them (CCARENA_VM_FULL=1). Either way a test the guest skipped is a failure here, not a pass:
inside the reference kernel nothing may skip (the guest's pytest writes a JUnit report
that this test reads)."""
import os
import secrets
import xml.etree.ElementTree as ET

import pytest

from ccarena import vm
from ccarena.paths import build_dir, repo_root

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.verify]


def _in_vm(select: list[str]) -> None:
    report = build_dir() / "vm" / f"kernel-link-{secrets.token_hex(4)}.xml"
    report.parent.mkdir(parents=True, exist_ok=True)
    try:
        r = vm.run(["python", "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider",
                    f"--junitxml={report}", *select, "tests/vm/test_guest_cpu.py",
                    "tests/vm/test_kernel_link.py", "tests/vm/test_kernel_impairments.py"],
                   vm.config_from_env(cwd=str(repo_root())), capture=True)
        print(r.stdout[-6000:])     # the guest's summary: what ran, and each failure's figures
        assert report.exists(), "the guest's pytest wrote no report:\n" + r.stdout[-4000:] \
            + r.stderr[-2000:]
        cases = ET.parse(report).getroot().iter("testcase")
        got = {c.get("name"): [e.tag for e in c if e.tag in ("failure", "error", "skipped")]
               for c in cases}
    finally:
        report.unlink(missing_ok=True)
    assert got, "no test ran in the guest:\n" + r.stdout[-4000:]
    skipped = sorted(n for n, t in got.items() if "skipped" in t)
    failed = sorted(n for n, t in got.items() if "failure" in t or "error" in t)
    assert not skipped, f"skipped in the reference kernel (a skip is no pass): {skipped}"
    assert not failed and r.rc == 0, f"failed in the reference kernel: {failed}\n" \
        + r.stdout[-6000:]


def test_the_kernel_backend_passes_the_ci_link_tests_in_the_reference_kernel():
    _in_vm(["-m", "vm_ci"])


@pytest.mark.skipif(os.environ.get("CCARENA_VM_FULL") != "1",
                    reason="all the kernel backend's link tests in the VM: make verify "
                           "(CCARENA_VM_FULL=1)")
def test_the_kernel_backend_passes_all_link_tests_in_the_reference_kernel():
    _in_vm([])
