# mk/vm.mk — the reference kernel in a VM (docs/vm.md): `ccarena vm -- CMD`, `ccarena run --vm`.
#   make vm        QEMU, kmod and busybox (virtme-ng's initramfs), virtme-ng pinned into the
#                  venv, and the reference kernel (Debian's 6.12 from bookworm-backports)
#                  downloaded once into ~/.cache/ccarena/vm or $$CCARENA_VM_DIR (verified by
#                  apt, never installed as the host's kernel). Idempotent: a second run
#                  fetches nothing.
#   make vm-check  boots it once and prints what the guest offers (ccarena doctor)
#   make verify    the reference matrices in the VM (below)

VM_APT_PACKAGES := qemu-system-x86 kmod busybox-static file
VIRTME_NG_VERSION := 1.42

.PHONY: vm vm-check

$(STAMP)/vm-apt:
	@mkdir -p $(STAMP)
	@missing=""; for p in $(VM_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "vm: installing$$missing"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; } \
	    || { echo "make vm: apt-get install$$missing failed" >&2; exit 1; }; \
	fi
	@touch $@

$(STAMP)/vm-venv: $(STAMP)/venv mk/vm.mk
	@$(PY) -m pip show virtme-ng 2>/dev/null | grep -qx 'Version: $(VIRTME_NG_VERSION)' \
	  || $(PY) -m pip install -q 'virtme-ng==$(VIRTME_NG_VERSION)' \
	  || { echo "make vm: pip install virtme-ng==$(VIRTME_NG_VERSION) failed" >&2; exit 1; }
	@touch $@

vm: python $(STAMP)/vm-apt $(STAMP)/vm-venv
	@$(PY) -c 'import sys; from ccarena.testbed.guest.image import main; sys.exit(main(["fetch"]))'

vm-check: vm
	$(VENV)/bin/ccarena vm -- ccarena doctor

# make verify — the reference matrices in the VM (docs/vm.md, docs/link.md): the user-space
# link against the kernel's qdiscs, the BPF algorithms against the kernel's modules, and
# all the kernel backend's link tests, and the suite's tests marked `verify`; tables in
# build/verify/. Under TCG: hours (docs/vm.md has the measured times).
VERIFY_REPS ?= 3
.PHONY: verify
verify: install vm
	@mkdir -p build/verify
	set -o pipefail; $(VENV)/bin/ccarena vm -- $(PY) verify/link_vs_kernel.py --reps $(VERIFY_REPS) \
	  | tee build/verify/link-vs-kernel.md
	set -o pipefail; $(VENV)/bin/ccarena vm -- $(PY) verify/bpf_vs_native.py --reps $(VERIFY_REPS) \
	  | tee build/verify/bpf-vs-native.md
	CCARENA_VM_FULL=1 $(VENV)/bin/pytest -q -ra -m verify tests
