// SPDX-License-Identifier: GPL-2.0
/*
 * cca_highspeed — HighSpeed TCP, written from
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
#include "cca_common.h"

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
	.name       = "cca_highspeed",
};
