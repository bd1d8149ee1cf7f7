# ccarena — everything a fresh Debian/Ubuntu machine needs, then the demo or the tests.
#   make demo    install everything, run studies/quickstart.toml, print its table
#   make test    install everything and the test tools (chromium), run the whole test suite
#                (unit + namespaces + quick studies)
#   make install system packages (apt), Rust binaries, BPF objects, Python venv with the
#                library versions of requirements.lock
#   make lock    re-resolve requirements.lock from pyproject.toml (pip-compile)
#   make vm      QEMU, virtme-ng and the reference kernel for `ccarena vm` (mk/vm.mk, docs/vm.md)
#   make cc-traces  re-record the Linux modules' call traces the replay tests use (mk/cctraces.mk)
#   make bench   benchmarks (not tests)
# Root is needed (network namespaces, BPF, apt): run as root, or as a user with sudo —
# then make re-runs itself under sudo (keeping PATH, so a rustup cargo is still found).

SHELL := /bin/bash

ifneq ($(shell id -u),0)
.PHONY: $(or $(MAKECMDGOALS),install)
$(or $(MAKECMDGOALS),install):
	@command -v sudo >/dev/null || { echo "make: ccarena needs root (network namespaces): run this as root" >&2; exit 1; }
	sudo env "PATH=$$PATH" $(MAKE) --no-print-directory $@
else

VENV ?= .venv
PY := $(VENV)/bin/python
APT_PACKAGES := iproute2 iputils-ping ethtool iperf3 curl wget tcpdump procps \
  clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config python3-venv python3-pip \
  build-essential
# only for the tests: the report's rendering test opens report.html in headless chromium
TEST_APT_PACKAGES := chromium
STAMP := build/.stamps

.PHONY: install deps test-deps build python lock demo test test-unit test-min bench clean mutants mutants-cc

install: deps build python

$(STAMP)/apt:
	@mkdir -p $(STAMP)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v cargo >/dev/null || { echo "apt: installing cargo"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo; }
	@touch $@

deps: $(STAMP)/apt

$(STAMP)/apt-test: $(STAMP)/apt
	@missing=""; for p in $(TEST_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "apt (tests): installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@touch $@

test-deps: $(STAMP)/apt-test

build: deps
	cargo build --release -p ccarena-flow -p ccarena-link -p ccarena-trace
	$(MAKE) --no-print-directory bpf

# requirements.lock pins every library (and what they need) to the versions the tests
# passed with, so a study re-runs with the same libraries; `make lock` re-resolves it
$(STAMP)/venv: pyproject.toml requirements.lock
	@mkdir -p $(STAMP)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c requirements.lock -e '.[cluster,test]'
	@touch $@

lock: $(STAMP)/venv
	$(PY) -m pip install -q pip-tools
	$(VENV)/bin/pip-compile --quiet --extra cluster --extra test --strip-extras --no-emit-index-url \
	  --no-emit-find-links --output-file requirements.lock pyproject.toml

python: deps $(STAMP)/venv

demo: install
	$(VENV)/bin/ccarena run quickstart

test: install test-deps vm
	cargo test --release -q -p ccarena-sys -p ccarena-flow -p ccarena-link -p ccarena-trace -p ccarena-cc-harness \
	  -p ccarena-cc-record
	cargo build --release -q -p ccarena-cc --features testing --bin ccarena-cc-testaid
	# the unit tests (no network, no shared state) on both CPUs; the rest one at a time,
	# as each runs real traffic whose timing another test would disturb
	CCARENA_REQUIRE_CHROMIUM=1 $(VENV)/bin/pytest -q -ra --durations=10 -n 2 tests/unit
	$(VENV)/bin/pytest -q -ra --durations=25 -m 'not verify' tests/integration tests/vm tests/study

# The lowest library versions pyproject.toml allows, tested once (docs/dev/libraries.md):
# a venv with every direct dependency at its minimum (uv's lowest-direct resolution) runs
# the unit tests (but the one that checks the recorded versions are the lock's). Not part of `make test`: it downloads a second set of libraries.
MIN_VENV ?= build/venv-min
UV_VERSION := 0.13.9
test-min: deps
	test -x $(MIN_VENV)/bin/python || python3 -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q 'uv==$(UV_VERSION)'
	$(MIN_VENV)/bin/uv pip install -q --python $(MIN_VENV)/bin/python --resolution lowest-direct \
	  -e '.[cluster,test]'
	$(MIN_VENV)/bin/pytest -q -p no:cacheprovider tests/unit \
	  --deselect tests/unit/test_packaging.py::test_a_study_records_the_python_libraries_it_ran_with

# no root needed: Python unit tests and the BPF congestion controls in user space
# (crates/cc-harness, docs/dev/cc-harness.md)
test-unit: python
	cargo test -q -p ccarena-cc-harness
	$(VENV)/bin/pytest -q -ra tests/unit

bench: install
	@for b in benchmarks/*.sh; do [ -x "$$b" ] && echo "== $$b" && "$$b"; done; \
	for b in benchmarks/*.py; do echo "== $$b" && $(PY) "$$b"; done

# Mutation testing of the link core (docs/dev/testing.md); slow, not part of `make test`.
# One file at a time: make mutants MUTANTS_FILES=crates/link/src/queue/red.rs
MUTANTS_FILES ?= crates/link/src/queue/*.rs crates/link/src/link.rs crates/link/src/link/*.rs \
  crates/link/src/transmitter.rs crates/link/src/impair/*.rs
mutants:
	@command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
	CARGO_PROFILE_DEV_DEBUG=0 cargo mutants -p ccarena-link --jobs 1 --timeout 15 \
	  --output build/mutants $(addprefix -f ,$(wildcard $(MUTANTS_FILES)))

# Mutation testing of the BPF congestion controls through the user-space harness
# (tools/mutants/cc_mutants.py, docs/dev/testing.md); slow, not part of `make test`.
# Some algorithms: make mutants-cc CC_MUTANTS="lp yeah"; a header: CC_MUTANTS=cca_common.h
CC_MUTANTS ?= all
mutants-cc:
	nice -n 19 python3 tools/mutants/cc_mutants.py $(CC_MUTANTS)

clean:
	rm -rf build target $(VENV)

include mk/bpf.mk
include mk/trace.mk
include mk/vm.mk
include mk/cctraces.mk
endif
