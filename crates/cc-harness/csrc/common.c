/*
 * cca_common.h's arithmetic and window helpers, exported one by one so the harness can
 * test them directly (tests/common.rs): compiled by build.rs against the same header as
 * the algorithms (from $CCARENA_CC_DIR when set, so the mutation runner's mutants of the
 * header reach these functions too).
 */
#define _license cch_license_common
#define cca_guard cca_guard_common
#define cca_prr_state cca_prr_state_common
#include "cca_common.h"

u32 cch_sqrt(u64 x) { return cca_sqrt(x); }
u32 cch_cbrt(u64 x) { return cca_cbrt(x); }
u32 cch_ilog2(u64 x) { return cca_ilog2(x); }
u64 cch_nz(u64 y) { return cca_nz(y); }
u64 cch_ltu(u64 a, u64 b) { return cca_ltu(a, b); }
int cch_seq_after(u32 a, u32 b) { return cca_seq_after(a, b); }

/* the window helpers, on the model socket (struct cch_sock starts with its tcp_sock) */
void cch_set_cwnd(struct sock *sk, u32 cwnd) { cca_set_cwnd(tcp_sk(sk), cwnd); }
u32 cch_slow_start(struct sock *sk, u32 acked) { return cca_slow_start(tcp_sk(sk), acked); }
void cch_cong_avoid_ai(struct sock *sk, u32 w, u32 acked) { cca_cong_avoid_ai(tcp_sk(sk), w, acked); }
void cch_cong_avoid_frac(struct sock *sk, struct cca_frac *f, u64 inc_fp, u32 acked)
{
	cca_cong_avoid_frac(tcp_sk(sk), f, inc_fp, acked);
}
u64 cch_frac_credit(struct sock *sk, struct cca_frac *f) { return cca_frac_credit(tcp_sk(sk), f); }
void cch_cong_avoid_frac_one(struct sock *sk, struct cca_frac *f, u64 inc_fp, u32 acked)
{
	cca_cong_avoid_frac_one(tcp_sk(sk), f, inc_fp, acked);
}
/* 1 and the segments left for congestion avoidance in *acked, or 0 */
int cch_grow_prologue(struct sock *sk, u32 *acked) { return cca_grow_prologue(sk, acked); }
u32 cch_half_cwnd(struct sock *sk) { return cca_half_cwnd(tcp_sk(sk)); }
