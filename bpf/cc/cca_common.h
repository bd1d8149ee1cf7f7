/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cca_common.h — shared helpers for ccarena's congestion controls written as
 * BPF struct_ops (struct tcp_congestion_ops).
 *
 * Contract with every bpf/cc/<name>.bpf.c:
 *   - include this header first (it pulls in vmlinux.h generated from the
 *     running kernel's BTF, and libbpf's bpf_helpers.h / bpf_tracing.h);
 *   - keep the per-connection state in a struct that fits in
 *     CCA_PRIV_SIZE bytes (the kernel's icsk_ca_priv[]), checked with
 *     CCA_PRIV_CHECK(struct my_state);
 *   - declare the ops with CCA_OPS(<name>) { ... } so the struct_ops map lands in
 *     the ".struct_ops.link" section: the loader gets a BPF link whose release
 *     (also when the holding process dies) unregisters the algorithm;
 *   - register as CCA_NAME("cca_<name>") (TCP_CA_NAME_MAX is 16 bytes including the NUL,
 *     so <name> is at most 11 characters; 9 for an algorithm with a paper variant);
 *   - by default behave as Linux's own module in the reference kernel (Linux 6.12; proven
 *     by replaying traces recorded from it: docs/dev/cc-replay.md); where the paper's
 *     algorithm differs, put the paper's behaviour under `#ifdef CCA_PAPER`: mk/bpf.mk
 *     then builds a second object with -DCCA_PAPER, registered as "cca_<name>_p";
 *   - write the loss response as `static u32 <name>_ssthresh_for(sk, cwnd)` and the
 *     growth rule as `static void <name>_cong_avoid(sk, ack, acked)`, and register
 *     CCA_CONG_CONTROL_OP(cca_<name>, <name>_ssthresh_for, <name>_cong_avoid) as the
 *     cong_control op (not cong_avoid: see "The per-ACK window update" below for why);
 *     run CCA_STATE_GUARD(sk, new_state, <name>_ssthresh_for) first in set_state
 *     (CCA_STATE_GUARD_OP gives a set_state op that does only that);
 *     CCA_SSTHRESH_OP gives the ssthresh op that applies the rule to the current cwnd.
 *     (The older contract, cong_avoid plus CCA_GUARD_OP as in_ack_event, still works
 *     but can only repair a corrupted value after it acted.)
 *
 * Optional shorthands for the parts most algorithms share with Reno:
 * cca_grow_prologue() (the start of cong_avoid: cwnd-limited check and slow
 * start), cca_rfc5681_ssthresh() (halving) and CCA_UNDO_PRIOR_OP (undo to
 * tp->prior_cwnd). An algorithm that differs in any of these writes its own.
 *
 * Everything here is integer arithmetic: BPF has no floating point, and clang 14
 * (Debian 12) emits no signed division for BPF, so only unsigned u64/u32 divisions
 * are used. Times are microseconds of bpf_ktime_get_ns() (CLOCK_MONOTONIC, the
 * clock of the kernel's TCP timestamps).
 *
 * The helpers below implement the generic rules of RFC 5681 (slow start, additive
 * increase counted in acked segments); they are written for ccarena and do not
 * call the kernel's own tcp_slow_start()/tcp_cong_avoid_ai() kfuncs, so a BPF
 * reno is an independent check of the kernel's reno.
 */
#ifndef CCA_COMMON_H
#define CCA_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/*
 * A bitfield of a kernel struct, read so that CO-RE relocates all of it: the byte
 * offset, the size and the bit position. A plain `tp->is_cwnd_limited` relocates only
 * the containing byte and keeps the bit where the BTF it was built against had it:
 * built against 6.18 (whose byte begins with `repair`) and loaded on 6.12 (whose byte
 * begins with the two bits of `chrono_type`), it read `tcp_usec_ts` instead — always 0,
 * so no algorithm of the pack grew its window in congestion avoidance there. (The
 * user-space harness, crates/cc-harness, compiles this for the host: a plain read.)
 */
#ifdef __bpf__
#include <bpf/bpf_core_read.h>
#define CCA_BITFIELD(s, field) ((u32)BPF_CORE_READ_BITFIELD(s, field))
#else
#define CCA_BITFIELD(s, field) ((u32)(s)->field)
#endif

char _license[] SEC("license") = "GPL";

/* --- constants that vmlinux.h does not carry (they are #defines in the kernel) --- */
#define CCA_PRIV_SIZE          104u    /* sizeof(icsk_ca_priv) = 13 * u64 */
#define CCA_INFINITE_SSTHRESH  0x7fffffffu
#define CCA_TCP_CONG_NEEDS_ECN 0x2
#define CCA_TCP_ECN_OK         1
#define CCA_TCP_ECN_QUEUE_CWR  2
#define CCA_TCP_ECN_DEMAND_CWR 4
#define CCA_USEC_PER_SEC       1000000ull

#define CCA_PRIV_CHECK(type) \
	_Static_assert(sizeof(type) <= CCA_PRIV_SIZE, #type " does not fit icsk_ca_priv")

/* The name an object registers: the paper variant's gets "_p" (src/ccarena/cc/variants.py) */
#ifdef CCA_PAPER
#define CCA_NAME(name) name "_p"
#else
#define CCA_NAME(name) name
#endif

/* The struct_ops map; ".struct_ops.link" needs libbpf >= 1.2 at load time. */
#define CCA_OPS(algo) SEC(".struct_ops.link") struct tcp_congestion_ops algo##_ops

/* --- socket accessors --- */
static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline u8 cca_ca_state(const struct sock *sk)
{
	return CCA_BITFIELD(inet_csk(sk), icsk_ca_state);
}

/* --- small arithmetic --- */
static __always_inline u32 cca_min(u32 a, u32 b) { return a < b ? a : b; }
static __always_inline u32 cca_max(u32 a, u32 b) { return a > b ? a : b; }
static __always_inline u64 cca_min64(u64 a, u64 b) { return a < b ? a : b; }
static __always_inline u64 cca_max64(u64 a, u64 b) { return a > b ? a : b; }

/* Now, in microseconds of CLOCK_MONOTONIC (the clock TCP's own timestamps use). */
static __always_inline u64 cca_now_us(void)
{
	return bpf_ktime_get_ns() / 1000;
}

/*
 * The kernel's tick rate (CONFIG_HZ), for rules Linux writes in jiffies. A BPF program
 * cannot read the kernel's configuration, but the socket carries a constant made of it:
 * tcp_init_sock() starts icsk_delack_max at TCP_DELACK_MAX, which is HZ/5
 * (include/net/tcp.h, Linux 6.12 and later), and only a BPF sockops program's
 * TCP_BPF_DELACK_MAX changes it (ccarena runs none).
 */
static __always_inline u32 cca_hz(const struct sock *sk)
{
	return inet_csk(sk)->icsk_delack_max * 5;
}

/* jiffies as TCP keeps them (tcp_jiffies32) */
static __always_inline u32 cca_jiffies32(void)
{
	return (u32)bpf_jiffies64();
}

/* Sequence-number order, modulo 2^32 (RFC 1982 style). */
static __always_inline bool cca_seq_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}
static __always_inline bool cca_seq_after(u32 a, u32 b)
{
	return cca_seq_before(b, a);
}

/* Smoothed RTT in microseconds (the kernel keeps it scaled by 8). */
static __always_inline u32 cca_srtt_us(const struct tcp_sock *tp)
{
	return tp->srtt_us >> 3;
}

/* --- RFC 5681 building blocks --- */
static __always_inline bool cca_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/*
 * Is the sender using its window? Growing cwnd while the application (or the
 * receiver window) limits the flow would inflate it without evidence
 * (RFC 7661 §4.1); the kernel reports the fact in tp->is_cwnd_limited. During
 * slow start the kernel also allows growth up to twice the largest flight seen.
 */
static __always_inline bool cca_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (CCA_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (cca_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

static __always_inline void cca_set_cwnd(struct tcp_sock *tp, u32 cwnd)
{
	if (cwnd < 1)
		cwnd = 1;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
}

/*
 * Slow start (RFC 5681 §3.1, with appropriate byte counting per RFC 3465 in
 * segments): cwnd grows by the number of newly acked segments but not beyond
 * ssthresh. Returns the acked segments left over once ssthresh is reached, so
 * the caller can spend them in congestion avoidance.
 */
static __always_inline u32 cca_slow_start(struct tcp_sock *tp, u32 acked)
{
	u32 cwnd = tp->snd_cwnd + acked;
	u32 left = 0;

	if (cwnd > tp->snd_ssthresh) {
		left = cwnd - tp->snd_ssthresh;
		cwnd = tp->snd_ssthresh;
	}
	cca_set_cwnd(tp, cwnd);
	return cca_min(left, acked);
}

/*
 * Additive increase counted in acked segments: one segment per `w` acked
 * segments (w = cwnd gives RFC 5681's one segment per RTT). snd_cwnd_cnt
 * carries the remainder between ACKs.
 */
static __always_inline void cca_cong_avoid_ai(struct tcp_sock *tp, u32 w, u32 acked)
{
	if (w < 1)
		w = 1;
	/* a window that shrank under us: start counting anew */
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		cca_set_cwnd(tp, tp->snd_cwnd + 1);
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		u32 inc = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= inc * w;
		cca_set_cwnd(tp, tp->snd_cwnd + inc);
	}
}

/*
 * Fractional additive increase: `inc_fp` / 1024 segments per RTT, spread over
 * the cwnd segments acked in one RTT. struct cca_frac (in the algorithm's private
 * state, zeroed at init) keeps the remainder in units of 1/1024 segment-acks and the
 * window it was counted at: a remainder of c is c / cwnd of a segment at that window.
 *
 * A window found smaller than the one the remainder was counted at drops it. Without a
 * loss (the algorithms drop it in their ssthresh rule) that is the restart after an
 * idle period, RFC 5681 §4.1 (or the kernel's decay of a window the application left
 * unused): the window starts over because what the sender knew of the path is stale,
 * and the credit is part of that knowledge, earned by the ACKs of a window the path
 * carried before. Spent at the smaller window it would also be worth more, c / w > c / W,
 * up to more than a whole segment at once: growth beyond the rule at the new window on
 * no evidence from the path now (the concern of RFC 7661, see cca_is_cwnd_limited).
 * Applying an over-full remainder as one segment (as cca_cong_avoid_ai does with
 * snd_cwnd_cnt) would still add that segment; dropping it costs at most the fraction of
 * one segment, and the first round at the new window grows by exactly its rule.
 */
struct cca_frac {
	u64 acc;     /* 1/1024 segment-acks, less than one segment of `cwnd` */
	u32 cwnd;    /* the window it was counted at */
};

/* The remainder, dropped first if the window is smaller than the one it was counted
 * at (see above): for a rule that reads the window with its fraction. */
static __always_inline u64 cca_frac_credit(const struct tcp_sock *tp, struct cca_frac *f)
{
	if (tp->snd_cwnd < f->cwnd)
		f->acc = 0;
	return f->acc;
}

static __always_inline void cca_cong_avoid_frac(struct tcp_sock *tp, struct cca_frac *f,
						u64 inc_fp, u32 acked)
{
	u64 unit = (u64)cca_max(tp->snd_cwnd, 1) << 10;
	u64 acc = cca_frac_credit(tp, f) + (u64)acked * inc_fp;

	if (acc >= unit) {
		u64 n = acc / unit;

		acc -= n * unit;
		cca_set_cwnd(tp, tp->snd_cwnd + (u32)cca_min64(n, 0xffff));
	}
	f->acc = acc;
	f->cwnd = tp->snd_cwnd;
}

/*
 * cca_cong_avoid_frac for a rule that grows at most one segment per ACK, as Linux's
 * tcp_htcp does (it counts acked segments and adds one segment when the count reaches
 * cwnd/alpha, then starts counting anew). Per acked segment alpha/cwnd is the same rule
 * on ordinary ACKs; a stretch ACK differs. Without SACK, the retransmission that fills
 * the hole after a time-out is acknowledged together with everything received behind
 * it, hundreds of segments in one ACK: counted in full at a window of 2 and an alpha of
 * tens, it would make a window of thousands at once. Credit beyond the one segment is
 * dropped, so it cannot be spent on the ACKs that follow either. A window found
 * smaller than the one the remainder was counted at drops it (cca_frac_credit).
 */
static __always_inline void cca_cong_avoid_frac_one(struct tcp_sock *tp, struct cca_frac *f,
						    u64 inc_fp, u32 acked)
{
	u64 unit = (u64)cca_max(tp->snd_cwnd, 1) << 10;
	u64 acc = cca_frac_credit(tp, f) + (u64)acked * inc_fp;

	if (acc >= unit) {
		acc = (acc - unit) % unit;
		cca_set_cwnd(tp, tp->snd_cwnd + 1);
	}
	f->acc = acc;
	f->cwnd = tp->snd_cwnd;
}

/*
 * The opening of a Reno-style cong_avoid, shared by most algorithms: no growth
 * unless the sender uses its window (cca_is_cwnd_limited); in slow start, cwnd
 * grows by the acked segments up to ssthresh (cca_slow_start). Returns false
 * when nothing is left to do (not cwnd-limited, or slow start used every acked
 * segment); otherwise true, with *acked the segments left for congestion
 * avoidance — unchanged outside slow start, where it may also be 0 (so a bare
 * "segments left, or 0" return value could not tell the two cases apart).
 * Use:  if (!cca_grow_prologue(sk, &acked)) return;  then the increase rule.
 */
static __always_inline bool cca_grow_prologue(struct sock *sk, u32 *acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_is_cwnd_limited(sk))
		return false;
	if (cca_in_slow_start(tp)) {
		*acked = cca_slow_start(tp, *acked);
		if (!*acked)
			return false;
	}
	return true;
}

/*
 * RFC 5681 eq. (4) on a loss: ssthresh = max(FlightSize / 2, 2 * SMSS), with the
 * window `cwnd` for FlightSize, in segments. The Reno loss response, and the
 * fallback of most algorithms (small windows, nothing measured yet).
 */
static __always_inline u32 cca_rfc5681_ssthresh(u32 cwnd)
{
	return cca_max(cwnd >> 1, 2);
}

/* The same for the current window. */
static __always_inline u32 cca_half_cwnd(const struct tcp_sock *tp)
{
	return cca_rfc5681_ssthresh(tp->snd_cwnd);
}

/*
 * The ssthresh op of an algorithm whose loss response is
 * `static u32 ssthresh_for(sk, cwnd)` (see the contract above): it applies the
 * rule to the current cwnd. CCA_SSTHRESH_OP(cca_x, x_ssthresh_for) defines the op
 * cca_x_ssthresh.
 */
#define CCA_SSTHRESH_OP(algo, ssthresh_for)                                            \
	SEC("struct_ops")                                                              \
	u32 BPF_PROG(algo##_ssthresh, struct sock *sk)                                 \
	{                                                                              \
		return ssthresh_for(sk, tcp_sk(sk)->snd_cwnd);                         \
	}

/*
 * The undo_cwnd op that restores the window before a reduction found spurious
 * (RFC 3522 Eifel detection, RFC 2883 D-SACK): the kernel remembered it in
 * tp->prior_cwnd; never shrink below the current cwnd. CCA_UNDO_PRIOR_OP(cca_x)
 * defines the op cca_x_undo_cwnd.
 */
#define CCA_UNDO_PRIOR_OP(algo)                                                        \
	SEC("struct_ops")                                                              \
	u32 BPF_PROG(algo##_undo_cwnd, struct sock *sk)                                \
	{                                                                              \
		const struct tcp_sock *__tp = tcp_sk(sk);                              \
	                                                                               \
		return cca_max(__tp->snd_cwnd, __tp->prior_cwnd);                      \
	}

/*
 * Branch-free helpers. BPF has no conditional move, and a loop whose body
 * branches on data multiplies the states the verifier must walk (2^rounds);
 * so the bit-by-bit roots below decide each bit arithmetically.
 */
/* 1 if a < b (unsigned), else 0 — Hacker's Delight §2-12, without a branch. */
static __always_inline u64 cca_ltu(u64 a, u64 b)
{
	return ((~a & b) | ((~a | b) & (a - b))) >> 63;
}

/* 1 if y != 0, else 0. */
static __always_inline u64 cca_nz(u64 y)
{
	return (y | (0 - y)) >> 63;
}

/* Integer cube root of a u64 (floor): 22 rounds cover 2^64's cube root (< 2^22). */
static __always_inline u32 cca_cbrt(u64 x)
{
	u64 r = 0;
	int i;

#pragma unroll
	for (i = 21; i >= 0; i--) {
		u64 t = r | (1ull << i);
		/* 2642245^3 < 2^64 < 2642246^3: a larger t would overflow; masked out */
		u64 ok = cca_ltu(t, 2642246) & (1 - cca_ltu(x, t * t * t));

		r |= (1ull << i) * ok;
	}
	return (u32)r;
}

/* Integer square root (floor) of a u64; 32 rounds. */
static __always_inline u32 cca_sqrt(u64 x)
{
	u64 r = 0;
	int i;

#pragma unroll
	for (i = 31; i >= 0; i--) {
		u64 t = r | (1ull << i);
		u64 ok = 1 - cca_ltu(x, t * t);

		r |= (1ull << i) * ok;
	}
	return (u32)r;
}

/* Floor of log2 for a non-zero u64 (0 for 0). */
static __always_inline u32 cca_ilog2(u64 x)
{
	u32 r = 0;
	int i;

#pragma unroll
	for (i = 32; i >= 1; i >>= 1) {
		u32 sh = (u32)cca_nz(x >> i) * i;

		x >>= sh;
		r += sh;
	}
	return r;
}

/*
 * Guard against a corrupted ssthresh (docs/algorithms.md, "Known issue"): on this
 * kernel a struct_ops ssthresh call occasionally yields a garbage value (seen:
 * 0x81104110) without our program having run; PRR would then inflate cwnd to ~1e9.
 * A ssthresh or cwnd above CCA_SANE_MAX segments (16 M segments = 24 GB in flight)
 * cannot be real. Three checks, all counted per network namespace in the map cca_guard
 * (the holder publishes it, ccarena.cc.guard_counts() reads it, and a run adds up the
 * namespaces it built, so concurrent runs never see each other's repairs): CCA_CHECK at
 * the start of cong_control (described there, at the end of this file), and:
 *
 * - at entry (CCA_STATE_GUARD, in set_state): every kernel path that calls the
 *   ssthresh op (tcp_init_cwnd_reduction for CWR and Recovery, tcp_enter_loss) first
 *   sets tp->prior_cwnd = cwnd and then calls tcp_set_ca_state(), with nothing in
 *   between that reads ssthresh. So set_state sees the value before anything uses it,
 *   and runs the skipped op's rule itself for the window the op would have seen
 *   (prior_cwnd), side effects included: the connection continues exactly as if the
 *   op had run. Counted in at_entry; a run is not invalid for it.
 * - late (CCA_GUARD, in in_ack_event on every ACK, for algorithms on the older
 *   contract): the backstop for anything the entry check did not see (a garbage
 *   undo_cwnd, or set_state skipped as well, which is what this kernel does). The
 *   bad value may have been used for one ACK; ssthresh is recomputed for prior_cwnd,
 *   cwnd brought back to at most that window. Counted in late; ccarena
 *   marks a run that needed it invalid.
 */
#define CCA_SANE_MAX (1u << 24)

struct cca_guard_count {
	u64 late;       /* repairs by CCA_GUARD (the bad value may have acted for an ACK) */
	u64 at_entry;   /* skipped ssthresh ops redone by CCA_STATE_GUARD before any use */
	/* what the late repairs found, to tell where the fault enters (a corrupted
	 * ssthresh points at the ssthresh op, a corrupted cwnd with a sane ssthresh at
	 * undo_cwnd or PRR), and the CA states they were made in (bit s: state s) */
	u64 late_ssthresh;
	u64 late_cwnd;
	u64 late_states;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);                        /* the socket's network namespace inode */
	__type(value, struct cca_guard_count);
} cca_guard SEC(".maps");

/* late: a CCA_GUARD repair that found ssthresh (bad_ss) and/or cwnd (bad_cwnd) corrupted;
 * otherwise a CCA_STATE_GUARD redo */
static __always_inline void cca_count_guard(struct sock *sk, bool late, bool bad_ss,
					    bool bad_cwnd)
{
	u32 ino = sk->__sk_common.skc_net.net->ns.inum;
	struct cca_guard_count zero = {}, *c;

	c = bpf_map_lookup_elem(&cca_guard, &ino);
	if (!c) {
		bpf_map_update_elem(&cca_guard, &ino, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&cca_guard, &ino);
		if (!c)
			return;
	}
	if (!late) {
		__sync_fetch_and_add(&c->at_entry, 1);
		return;
	}
	__sync_fetch_and_add(&c->late, 1);
	if (bad_ss)
		__sync_fetch_and_add(&c->late_ssthresh, 1);
	if (bad_cwnd)
		__sync_fetch_and_add(&c->late_cwnd, 1);
	/* not atomic (an OR needs BPF v3): a lost bit between two CPUs is acceptable here */
	c->late_states |= 1ULL << (cca_ca_state(sk) & 7);
}

static __always_inline bool cca_insane_ssthresh(u32 ss)
{
	return ss > CCA_SANE_MAX && ss != CCA_INFINITE_SSTHRESH;
}

/* tp->prior_cwnd, or 10 segments if that is not a window either */
static __always_inline u32 cca_sane_prior_cwnd(const struct tcp_sock *tp)
{
	u32 prior = tp->prior_cwnd;

	return (prior < 2 || prior > CCA_SANE_MAX) ? 10 : prior;
}

/*
 * The repair both per-ACK checks share: a corrupted ssthresh is recomputed for the
 * window before the reduction, cwnd brought back to at most that window, and the repair
 * counted; `late` (an expression that may use __bad_ss and __bad_cwnd) says whether the
 * bad value may have acted.
 */
#define CCA_REPAIR(sk, ssthresh_for, late)                                            \
	do {                                                                          \
		struct tcp_sock *__tp = tcp_sk(sk);                                   \
		bool __bad_ss = cca_insane_ssthresh(__tp->snd_ssthresh);              \
		bool __bad_cwnd = __tp->snd_cwnd > CCA_SANE_MAX;                      \
		if (__bad_ss || __bad_cwnd) {                                         \
			u32 __prior = cca_sane_prior_cwnd(__tp);                      \
			if (__bad_ss)                                                 \
				__tp->snd_ssthresh = ssthresh_for(sk, __prior);       \
			if (__tp->snd_cwnd > __prior)                                 \
				cca_set_cwnd(__tp, __prior);                          \
			cca_count_guard(sk, (late), __bad_ss, __bad_cwnd);            \
		}                                                                     \
	} while (0)

/* The late check, in in_ack_event (older contract): always counted as late. */
#define CCA_GUARD(sk, ssthresh_for) CCA_REPAIR(sk, ssthresh_for, true)

static __always_inline void cca_state_change(struct sock *sk, u8 new_state);

/* Run first in set_state(sk, new_state); see above. Also does, for a cong_control
 * algorithm, what the kernel then leaves out at the state change (cca_state_change). */
#define CCA_STATE_GUARD(sk, new_state, ssthresh_for)                                  \
	do {                                                                          \
		struct tcp_sock *__tp = tcp_sk(sk);                                   \
		if ((new_state) >= TCP_CA_CWR &&                                      \
		    cca_insane_ssthresh(__tp->snd_ssthresh)) {                        \
			__tp->snd_ssthresh = ssthresh_for(sk, cca_sane_prior_cwnd(__tp)); \
			cca_count_guard(sk, false, true, false);                      \
		}                                                                     \
		cca_state_change(sk, (new_state));                                    \
	} while (0)

/* An in_ack_event op that only runs the guard, for algorithms without their own. */
#define CCA_GUARD_OP(algo, ssthresh_for)                                               \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_guard, struct sock *sk, u32 flags)                        \
	{                                                                              \
		CCA_GUARD(sk, ssthresh_for);                                           \
	}

/* A set_state op that only runs the entry check, for algorithms without their own. */
#define CCA_STATE_GUARD_OP(algo, ssthresh_for)                                         \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_state_guard, struct sock *sk, u8 new_state)               \
	{                                                                              \
		CCA_STATE_GUARD(sk, new_state, ssthresh_for);                          \
	}

/*
 * The check at the start of cong_control (CCA_CONG_CONTROL_OP): before any use on this
 * ACK. A corrupted ssthresh with a sane cwnd has not acted yet (nothing between the
 * skipped op and here reads it to send): repaired and counted with at_entry. A
 * corrupted cwnd (e.g. from a skipped undo_cwnd) may have been used if an earlier
 * cong_control call was skipped too: repaired and counted as late, and the run is
 * invalid (conservative: on the same ACK it has not acted yet).
 */
#define CCA_CHECK(sk, ssthresh_for) CCA_REPAIR(sk, ssthresh_for, __bad_cwnd)

/* the per-ACK window update (the cong_control op): PRR, growth, pacing rate */
#include "cca_cong_control.h"

#endif /* CCA_COMMON_H */
