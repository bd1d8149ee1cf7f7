"""ccarena in a VM with the reference kernel (docs/vm.md): a stock Debian 6.12 kernel that
has netem, RED, CoDel, FQ-CoDel and every kernel congestion control, booted under QEMU
(KVM where it works, TCG otherwise) over the host's own files.

    run(["ccarena", "doctor"]) -> VmResult                 any command, as root, inside
    run_plan(study, results_base="results") -> ResultsDir   a study's runs inside; results on the host
    plan_runner(config)                                     the same, as run_study's runner

testbed/guest/image.py finds and fetches the kernel, boot.py boots it, guest.py is the guest's
side."""
from ccarena.vm.boot import VmConfig, VmError, VmResult  # noqa: F401
from ccarena.testbed.guest.image import ImageError, ImageMissing, KernelImage, locate  # noqa: F401
from ccarena.vm.session import config_from_env, plan_runner, run, run_plan  # noqa: F401

__all__ = ["VmConfig", "VmError", "VmResult", "ImageError", "ImageMissing", "KernelImage",
           "locate", "run", "run_plan", "plan_runner", "config_from_env"]
