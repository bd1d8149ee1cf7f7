# mk/trace.mk — ccarena-trace, the per-ACK tcp:tcp_probe tracer (crates/trace, bpf/probe).
#   make trace         target/release/ccarena-trace. Its build.rs compiles
#                      bpf/probe/tcpprobe.bpf.c with clang and embeds the object in the
#                      binary (vmlinux.h: build/vmlinux.h from `make bpf` if present, else
#                      generated with bpftool into cargo's OUT_DIR).
#   make trace-check   namespace checks (root): verify/trace_verify.py
#   make trace-bench   events/s vs ACK rate, cost: benchmarks/trace_rate.py
# Needs what mk/bpf.mk needs: clang (>= 14), bpftool, libbpf headers (libbpf-dev),
# libelf-dev, zlib1g-dev, pkg-config; and a kernel with BTF (/sys/kernel/btf/vmlinux).

.PHONY: trace trace-check trace-bench

trace:
	cargo build --release -p ccarena-trace

trace-check: trace
	python3 verify/trace_verify.py

trace-bench: trace
	python3 benchmarks/trace_rate.py
