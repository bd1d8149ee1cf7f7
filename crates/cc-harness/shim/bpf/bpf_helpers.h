/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stand-in for libbpf's <bpf/bpf_helpers.h>, used only by ccarena's user-space
 * harness (crates/cc-harness): the same bpf/cc/<name>.bpf.c files compile for the host against the
 * kernel's vmlinux.h, with this directory first on the include path.
 *
 * - SEC() places nothing anywhere: every program is a plain C function;
 * - map definitions keep libbpf's shape (__uint/__type members), so the harness can
 *   learn key and value sizes from the map object at each call;
 * - the helpers the pack calls are ordinary functions of the harness's socket model
 *   (csrc/model.c), driven by its fake clock.
 * A helper the pack starts to use must be added here and in model.c, or the host build
 * fails at link time (never silently).
 */
#ifndef CCA_HARNESS_BPF_HELPERS_H
#define CCA_HARNESS_BPF_HELPERS_H

#define SEC(name)
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __array(name, val) typeof(val) *name[]

/* time: the harness's fake clock */
u64 bpf_ktime_get_ns(void);
u64 bpf_jiffies64(void);

/* maps: a small store keyed by (map object, key bytes) */
void *cch_map_lookup(void *map, const void *key, u32 key_size, u32 value_size);
long cch_map_update(void *map, const void *key, const void *value, u64 flags,
		    u32 key_size, u32 value_size);
void *cch_sk_storage_get(void *map, void *sk, void *value, u64 flags, u32 value_size);

#define bpf_map_lookup_elem(m_, k_) \
	cch_map_lookup((void *)(m_), (k_), sizeof(*(m_)->key), sizeof(*(m_)->value))
#define bpf_map_update_elem(m_, k_, v_, f_) \
	cch_map_update((void *)(m_), (k_), (v_), (f_), sizeof(*(m_)->key), sizeof(*(m_)->value))
#define bpf_sk_storage_get(m_, sk_, v_, f_) \
	cch_sk_storage_get((void *)(m_), (void *)(sk_), (v_), (f_), sizeof(*(m_)->value))

/* randomness: a seeded sequence of the model (cch_set_prandom_seed) */
u32 bpf_get_prandom_u32(void);

/* the kfunc-like helper DCTCP's receiver uses: recorded by the model */
long bpf_tcp_send_ack(void *tp, u32 rcv_nxt);

#define bpf_printk(fmt, ...) ((void)0)

#endif
