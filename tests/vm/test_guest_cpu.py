"""Inside the reference kernel under TCG (test_kernel_link_in_vm.py runs this file there):
the guest's CPU computes what the analysis needs. QEMU 7.2 emulates AVX2's masked
gathers wrongly, so a guest CPU offering AVX2 made numpy's argsort (vpgatherqq) return
unsorted indices; ccarena's VM offers none (vm/boot.py)."""
import os

import numpy as np
import pytest

pytestmark = [pytest.mark.vm_ci, pytest.mark.skipif(
    not os.environ.get("CCARENA_VM"), reason="checks the CPU of ccarena's VM: run inside it")]


def test_numpy_sorts_int64_correctly_in_the_guest():
    rng = np.random.default_rng(1)
    for n in range(1, 4000, 7):
        a = rng.integers(0, 1 << 40, size=n)
        assert (np.diff(a[np.argsort(a)]) >= 0).all(), f"argsort of {n} int64 values"
