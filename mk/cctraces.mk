# mk/cctraces.mk — the call traces of Linux's own congestion-control modules, which the
# replay tests hold ccarena's BPF algorithms to (docs/dev/cc-replay.md).
#   make cc-record   target/release/ccarena-cc-record (crates/cc-record: fentry/fexit on the
#                    module's ops and the kernel's per-ACK code, bpf/record/ccrecord.bpf.c)
#   make cc-traces   records every scenario of every algorithm in the reference kernel
#                    (`make vm`; under TCG about 15 minutes per algorithm) into
#                    crates/cc-harness/traces/<algorithm>/<scenario>.csv.gz.
#                    CC_TRACE_ALGOS=bic,reno and CC_TRACE_SCENARIOS=bulk,rto choose some.

CC_TRACE_ALGOS ?=
CC_TRACE_SCENARIOS ?=

.PHONY: cc-record cc-traces

cc-record:
	cargo build --release -p ccarena-cc-record

cc-traces: vm cc-record
	$(VENV)/bin/ccarena vm -- $(PY) crates/cc-record/scenarios/record.py \
	  $(if $(CC_TRACE_ALGOS),--algos $(CC_TRACE_ALGOS)) \
	  $(if $(CC_TRACE_SCENARIOS),--scenarios $(CC_TRACE_SCENARIOS))
