// SPDX-License-Identifier: GPL-2.0
/*
 * cca_highspeed — HighSpeed TCP (S. Floyd, "HighSpeed TCP for Large Congestion Windows",
 * RFC 3649, 2003).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_highspeed.c). Its rules are the
 * RFC's Appendix B table read per ACK:
 *   - the table's rows are the windows at which a(w) reaches 1, 2, ..., 72 segments per
 *     RTT, each with its decrease b(w) in 1/256 (RFC 3649 App. B, b(w) * 256);
 *   - in congestion avoidance (only there) the row is updated to the first one whose
 *     window is at or above cwnd; each ACK (whatever it acknowledges) adds a(w) = row + 1
 *     to the counter snd_cwnd_cnt, and a full window's worth of it adds one segment;
 *   - in slow start, slow start up to ssthresh (segments beyond it are not spent);
 *   - on a loss ssthresh = max(cwnd - cwnd * b >> 8, 2) with the row last set in
 *     congestion avoidance: a loss out of the initial slow start halves (row 0), and one
 *     after an RTO's slow start uses the row of the window before it;
 *   - (init's cap of snd_cwnd_clamp at 2^32 / 128 is left out: see the init op.)
 * Undo: the window before the reduction.
 *
 * CCA_PAPER (cca_highspeed_p): the RFC's response function itself, §5 (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

/* RFC 3649 Appendix B: the window w at which a(w) = row + 1, and b(w) in 1/256 */
struct hs_rule {
	u32 w;
	u32 b;
};

#define HS_RULES 72

static const struct hs_rule hs_rules[HS_RULES] = {
	{    38, 128 },  /* a =  1 */
	{   118, 112 },  /* a =  2 */
	{   221, 104 },  /* a =  3 */
	{   347,  98 },  /* a =  4 */
	{   495,  93 },  /* a =  5 */
	{   663,  89 },  /* a =  6 */
	{   851,  86 },  /* a =  7 */
	{  1058,  83 },  /* a =  8 */
	{  1284,  81 },  /* a =  9 */
	{  1529,  78 },  /* a = 10 */
	{  1793,  76 },  /* a = 11 */
	{  2076,  74 },  /* a = 12 */
	{  2378,  72 },  /* a = 13 */
	{  2699,  71 },  /* a = 14 */
	{  3039,  69 },  /* a = 15 */
	{  3399,  68 },  /* a = 16 */
	{  3778,  66 },  /* a = 17 */
	{  4177,  65 },  /* a = 18 */
	{  4596,  64 },  /* a = 19 */
	{  5036,  62 },  /* a = 20 */
	{  5497,  61 },  /* a = 21 */
	{  5979,  60 },  /* a = 22 */
	{  6483,  59 },  /* a = 23 */
	{  7009,  58 },  /* a = 24 */
	{  7558,  57 },  /* a = 25 */
	{  8130,  56 },  /* a = 26 */
	{  8726,  55 },  /* a = 27 */
	{  9346,  54 },  /* a = 28 */
	{  9991,  53 },  /* a = 29 */
	{ 10661,  52 },  /* a = 30 */
	{ 11358,  52 },  /* a = 31 */
	{ 12082,  51 },  /* a = 32 */
	{ 12834,  50 },  /* a = 33 */
	{ 13614,  49 },  /* a = 34 */
	{ 14424,  48 },  /* a = 35 */
	{ 15265,  48 },  /* a = 36 */
	{ 16137,  47 },  /* a = 37 */
	{ 17042,  46 },  /* a = 38 */
	{ 17981,  45 },  /* a = 39 */
	{ 18955,  45 },  /* a = 40 */
	{ 19965,  44 },  /* a = 41 */
	{ 21013,  43 },  /* a = 42 */
	{ 22101,  43 },  /* a = 43 */
	{ 23230,  42 },  /* a = 44 */
	{ 24402,  41 },  /* a = 45 */
	{ 25618,  41 },  /* a = 46 */
	{ 26881,  40 },  /* a = 47 */
	{ 28193,  39 },  /* a = 48 */
	{ 29557,  39 },  /* a = 49 */
	{ 30975,  38 },  /* a = 50 */
	{ 32450,  38 },  /* a = 51 */
	{ 33986,  37 },  /* a = 52 */
	{ 35586,  36 },  /* a = 53 */
	{ 37253,  36 },  /* a = 54 */
	{ 38992,  35 },  /* a = 55 */
	{ 40808,  35 },  /* a = 56 */
	{ 42707,  34 },  /* a = 57 */
	{ 44694,  33 },  /* a = 58 */
	{ 46776,  33 },  /* a = 59 */
	{ 48961,  32 },  /* a = 60 */
	{ 51258,  32 },  /* a = 61 */
	{ 53677,  31 },  /* a = 62 */
	{ 56230,  30 },  /* a = 63 */
	{ 58932,  30 },  /* a = 64 */
	{ 61799,  29 },  /* a = 65 */
	{ 64851,  28 },  /* a = 66 */
	{ 68113,  28 },  /* a = 67 */
	{ 71617,  27 },  /* a = 68 */
	{ 75401,  26 },  /* a = 69 */
	{ 79517,  26 },  /* a = 70 */
	{ 84035,  25 },  /* a = 71 */
	{ 89053,  24 },  /* a = 72 */
};

struct highspeed {
	u32 row;   /* a(w) = row + 1; set in congestion avoidance only */
};
CCA_PRIV_CHECK(struct highspeed);

/* the first row whose window is at or above cwnd (the last row above its window) */
static __always_inline u32 hs_row_at_or_above(u32 cwnd)
{
	u32 lo = 0, hi = HS_RULES - 1, i;

	/* hs_rules[hi].w >= cwnd or hi is the last row; 7 halvings cover 72 rows */
#pragma unroll
	for (i = 0; i < 7; i++) {
		u32 mid = (lo + hi) / 2;

		if (lo < hi && mid < HS_RULES) {
			if (hs_rules[mid].w >= cwnd)
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	return hi < HS_RULES ? hi : HS_RULES - 1;
}

SEC("struct_ops")
void BPF_PROG(cca_highspeed_init, struct sock *sk)
{
	struct highspeed *ca = inet_csk_ca(sk);

	/* Linux's init also caps snd_cwnd_clamp at 2^32 / 128 so that cwnd * b cannot
	 * overflow; a struct_ops program may not write the clamp, and needs no cap: a window
	 * of 2^25 segments is beyond any real one (the guard's bound is 2^24, cca_common.h) */
	ca->row = 0;
}

/* growth rule, run by cca_highspeed_cong_control (cca_common.h) */
static __always_inline void highspeed_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct highspeed *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		cca_slow_start(tp, acked);
		return;
	}
	ca->row = hs_row_at_or_above(tp->snd_cwnd);
	if (tp->snd_cwnd >= tp->snd_cwnd_clamp)
		return;
	/* a(w) / cwnd per ACK */
	tp->snd_cwnd_cnt += ca->row + 1;
	if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		tp->snd_cwnd_cnt -= tp->snd_cwnd;
		tp->snd_cwnd++;
	}
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 highspeed_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct highspeed *ca = inet_csk_ca(sk);

	u32 row = ca->row;

	if (row >= HS_RULES)   /* never: the row is set by hs_row_at_or_above */
		row = HS_RULES - 1;
	return cca_max(cwnd - ((cwnd * hs_rules[row].b) >> 8), 2);
}

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   S. Floyd, "HighSpeed TCP for Large Congestion Windows", RFC 3649, 2003
 *   (§5 the response function, the increase a(w) and decrease b(w)).
 *
 *   Low_Window = 38, High_Window = 83000, High_Decrease = 0.1,
 *   Low_P = 1e-3, High_P = 1e-7 (§5), so that
 *   p(w) = 0.078 / w^1.2   (§5: w = 0.12 / p^0.835, the response function)
 *   b(w) = (High_Decrease - 0.5) (log w - log Low_Window)
 *          / (log High_Window - log Low_Window) + 0.5
 *   a(w) = w^2 p(w) 2 b(w) / (2 - b(w))
 *
 * Each RTT in congestion avoidance cwnd grows by a(w) segments; a loss sets
 * cwnd to (1 - b(w)) w. At or below Low_Window: standard TCP (a = 1, b = 0.5).
 * The table below was generated for ccarena from these formulas (64 windows spaced
 * geometrically from 38 to 83000, w_i = round(38 (83000/38)^(i/63)); a and b in 1/256,
 * rounded), cf. the RFC's Appendix B (a = 8 at w = 1058, 70.7 at 83000; the first row
 * is standard TCP); a window uses the row of the largest tabulated w not above it.
 * crates/cc-harness/tests/highspeed.rs checks every row against the formulas.
 */

#define HS_LOW_WINDOW 38u
#define HS_ROWS       64

struct hs_row {
	u32 w;
	u32 a;   /* segments per RTT, * 256 */
	u32 b;   /* decrease fraction, * 256 */
};

static const struct hs_row hs_table[HS_ROWS] = {
	{    38,   256, 128 },
	{    43,   265, 126 },
	{    49,   289, 125 },
	{    55,   312, 123 },
	{    62,   337, 121 },
	{    70,   365, 120 },
	{    79,   395, 118 },
	{    89,   427, 117 },
	{   101,   464, 115 },
	{   114,   502, 113 },
	{   129,   544, 112 },
	{   145,   587, 110 },
	{   164,   635, 109 },
	{   186,   689, 107 },
	{   210,   745, 105 },
	{   237,   805, 104 },
	{   268,   870, 102 },
	{   303,   941, 100 },
	{   342,  1016,  99 },
	{   386,  1097,  97 },
	{   436,  1184,  96 },
	{   493,  1279,  94 },
	{   557,  1380,  92 },
	{   629,  1489,  91 },
	{   711,  1606,  89 },
	{   803,  1732,  87 },
	{   908,  1868,  86 },
	{  1025,  2012,  84 },
	{  1159,  2168,  82 },
	{  1309,  2334,  81 },
	{  1479,  2512,  79 },
	{  1671,  2703,  78 },
	{  1888,  2907,  76 },
	{  2133,  3125,  74 },
	{  2410,  3357,  73 },
	{  2722,  3605,  71 },
	{  3076,  3870,  69 },
	{  3475,  4152,  68 },
	{  3926,  4452,  66 },
	{  4436,  4770,  65 },
	{  5012,  5109,  63 },
	{  5662,  5467,  61 },
	{  6397,  5847,  60 },
	{  7227,  6249,  58 },
	{  8166,  6674,  56 },
	{  9226,  7121,  55 },
	{ 10423,  7592,  53 },
	{ 11776,  8086,  52 },
	{ 13305,  8604,  50 },
	{ 15032,  9146,  48 },
	{ 16983,  9711,  47 },
	{ 19188, 10299,  45 },
	{ 21678, 10908,  43 },
	{ 24492, 11537,  42 },
	{ 27672, 12184,  40 },
	{ 31264, 12847,  39 },
	{ 35322, 13522,  37 },
	{ 39907, 14204,  35 },
	{ 45087, 14890,  34 },
	{ 50940, 15574,  32 },
	{ 57552, 16246,  30 },
	{ 65023, 16900,  29 },
	{ 73464, 17525,  27 },
	{ 83000, 18108,  26 },
};

struct highspeed {
	struct cca_frac frac;   /* fractional increase carried between ACKs */
};
CCA_PRIV_CHECK(struct highspeed);

/* index of the largest tabulated w <= cwnd (binary search, 6 steps) */
static __always_inline u32 hs_row_of(u32 cwnd)
{
	u32 lo = 0, step;

#pragma unroll
	for (step = HS_ROWS / 2; step >= 1; step >>= 1) {
		u32 probe = (lo + step) & (HS_ROWS - 1);

		if (lo + step < HS_ROWS && hs_table[probe].w <= cwnd)
			lo = probe;
	}
	return lo & (HS_ROWS - 1);
}

SEC("struct_ops")
void BPF_PROG(cca_highspeed_init, struct sock *sk)
{
	struct highspeed *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
}

/* growth rule, run by cca_highspeed_cong_control (cca_common.h) */
static __always_inline void highspeed_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct highspeed *ca = inet_csk_ca(sk);
	u32 a;

	if (!cca_grow_prologue(sk, &acked))
		return;
	if (tp->snd_cwnd <= HS_LOW_WINDOW) {
		cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	a = hs_table[hs_row_of(tp->snd_cwnd)].a;
	/* a / 256 segments per RTT = (a * 4) / 1024 */
	cca_cong_avoid_frac(tp, &ca->frac, (u64)a << 2, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 highspeed_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct highspeed *ca = inet_csk_ca(sk);
	u32 b;

	ca->frac.acc = 0;
	if (cwnd <= HS_LOW_WINDOW)
		return cca_rfc5681_ssthresh(cwnd);
	b = hs_table[hs_row_of(cwnd)].b;
	return cca_max(cwnd - (u32)((u64)cwnd * b >> 8), 2);
}

#endif /* CCA_PAPER */

CCA_SSTHRESH_OP(cca_highspeed, highspeed_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_highspeed)

CCA_STATE_GUARD_OP(cca_highspeed, highspeed_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_highspeed, highspeed_ssthresh_for, highspeed_cong_avoid)

CCA_OPS(cca_highspeed) = {
	.set_state  = (void *)cca_highspeed_state_guard,
	.init       = (void *)cca_highspeed_init,
	.ssthresh   = (void *)cca_highspeed_ssthresh,
	.cong_control = (void *)cca_highspeed_cong_control,
	.undo_cwnd  = (void *)cca_highspeed_undo_cwnd,
	.name       = CCA_NAME("cca_highspeed"),
};
