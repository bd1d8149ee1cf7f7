/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stand-in for libbpf's <bpf/bpf_tracing.h> (crates/cc-harness): BPF_PROG(name,
 * args...) declares the plain static function name(args...), so a struct_ops program is an
 * ordinary C function with the signature the kernel's struct tcp_congestion_ops expects,
 * and the ops struct built by CCA_OPS() holds pointers the harness can call.
 */
#ifndef CCA_HARNESS_BPF_TRACING_H
#define CCA_HARNESS_BPF_TRACING_H

/* static: the paper variant of a source (-DCCA_PAPER) is compiled into the same library,
 * so the programs must not be global symbols; the ops struct is all that refers to them.
 * ("u32 static f(...)": a storage class may follow the type.) */
#define BPF_PROG(name, args...) static name(args)

#endif
