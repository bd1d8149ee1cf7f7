# mk/bpf.mk — build ccarena's BPF congestion controls and their loader.
#   make bpf          vmlinux.h from the running kernel's BTF, bpf/cc/*.bpf.c → build/bpf/cc/*.bpf.o
#                     (each algorithm's default: Linux's behaviour where converted), and the
#                     sources with a paper variant (`#ifdef CCA_PAPER`) once more with
#                     -DCCA_PAPER → build/bpf/cc/paper/*.bpf.o (ccarena.cc.variants),
#                     and the loader target/release/ccarena-cc (crates/cc, libbpf-rs, vendored libbpf);
#                     bpf/test/*.bpf.c (test aids, e.g. the CE marker) → build/bpf/test/
#   make bpf-objects  only the BPF objects            make bpf-clean   remove them
# Needs: clang (>= 14), bpftool, and for the loader: cargo, libelf-dev, zlib1g-dev, pkg-config.
# Keep BPF_CFLAGS in step with ccarena.cc.registry.compile_flags() (user *.bpf.c use the same).

BPF_CLANG   ?= clang
BPFTOOL     ?= bpftool
BPF_BUILD   ?= build
BPF_ARCH    ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS  ?= -O2 -g -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Wno-unused-function
BPF_SRCS    := $(wildcard bpf/cc/*.bpf.c)
BPF_OBJS    := $(patsubst bpf/cc/%.bpf.c,$(BPF_BUILD)/bpf/cc/%.bpf.o,$(BPF_SRCS))
BPF_PAPER_SRCS := $(shell grep -l '^\#if.*CCA_PAPER' $(BPF_SRCS) /dev/null)
BPF_PAPER_OBJS := $(patsubst bpf/cc/%.bpf.c,$(BPF_BUILD)/bpf/cc/paper/%.bpf.o,$(BPF_PAPER_SRCS))
BPF_TEST_SRCS := $(wildcard bpf/test/*.bpf.c)
BPF_TEST_OBJS := $(patsubst bpf/test/%.bpf.c,$(BPF_BUILD)/bpf/test/%.bpf.o,$(BPF_TEST_SRCS))
BPF_VMLINUX := $(BPF_BUILD)/vmlinux.h
CC_LOADER   := target/release/ccarena-cc

.PHONY: bpf bpf-objects bpf-loader bpf-clean

bpf: bpf-objects bpf-loader

bpf-objects: $(BPF_OBJS) $(BPF_PAPER_OBJS) $(BPF_TEST_OBJS)

$(BPF_VMLINUX):
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp
	mv $@.tmp $@

$(BPF_BUILD)/bpf/cc/%.bpf.o: bpf/cc/%.bpf.c bpf/cc/cca_common.h bpf/cc/cca_cong_control.h $(BPF_VMLINUX)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -I$(BPF_BUILD) -Ibpf/cc -c $< -o $@

$(BPF_BUILD)/bpf/cc/paper/%.bpf.o: bpf/cc/%.bpf.c bpf/cc/cca_common.h bpf/cc/cca_cong_control.h $(BPF_VMLINUX)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -DCCA_PAPER -I$(BPF_BUILD) -Ibpf/cc -c $< -o $@

$(BPF_BUILD)/bpf/test/%.bpf.o: bpf/test/%.bpf.c $(BPF_VMLINUX)
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -I$(BPF_BUILD) -c $< -o $@

bpf-loader:
	cargo build --release -p ccarena-cc

bpf-clean:
	rm -rf $(BPF_BUILD)/bpf/cc $(BPF_BUILD)/bpf/cc-extra $(BPF_BUILD)/bpf/test $(BPF_VMLINUX)

# CUBIC's paper variant is a header of its own
$(BPF_BUILD)/bpf/cc/cubic.bpf.o $(BPF_BUILD)/bpf/cc/paper/cubic.bpf.o: bpf/cc/cubic_paper.h

# BBRv2 and BBRv3 share their model and state machine
$(BPF_BUILD)/bpf/cc/bbr2.bpf.o $(BPF_BUILD)/bpf/cc/bbr3.bpf.o: $(wildcard bpf/cc/bbr_*.h)
