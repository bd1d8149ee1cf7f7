// SPDX-License-Identifier: GPL-2.0
/*
 * cca_highspeed — HighSpeed TCP, written from
 *   S. Floyd, "HighSpeed TCP for Large Congestion Windows", RFC 3649, 2003
 *   (§5 the response function, the increase a(w) and decrease b(w)).
 *
 *   Low_Window = 38, High_Window = 83000, High_Decrease = 0.1,
 *   Low_P = 1.5 / Low_Window^2 (standard TCP at Low_Window), High_P = 1e-7
 *   p(w) = Low_P * (w / Low_Window)^(1/S),  S = (log High_Window - log Low_Window)
 *                                               / (log High_P - log Low_P)
 *   b(w) = (High_Decrease - 0.5) (log w - log Low_Window)
 *          / (log High_Window - log Low_Window) + 0.5
 *   a(w) = w^2 p(w) 2 b(w) / (2 - b(w))
 *
 * Each RTT in congestion avoidance cwnd grows by a(w) segments; a loss sets
 * cwnd to (1 - b(w)) w. At or below Low_Window: standard TCP (a = 1, b = 0.5).
 * The table below was generated for ccarena from these formulas (64 windows spaced
 * geometrically from 38 to 83000; a and b in 1/256), cf. the RFC's Appendix B;
 * a window uses the row of the largest tabulated w not above it.
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
	{    43,   278, 126 },
	{    49,   303, 125 },
	{    55,   326, 123 },
	{    62,   353, 121 },
	{    70,   382, 120 },
	{    79,   413, 118 },
	{    89,   447, 117 },
	{   101,   485, 115 },
	{   114,   524, 113 },
	{   129,   568, 112 },
	{   145,   612, 110 },
	{   164,   663, 109 },
	{   186,   718, 107 },
	{   210,   776, 105 },
	{   237,   838, 104 },
	{   268,   907, 102 },
	{   303,   980, 100 },
	{   342,  1058,  99 },
	{   386,  1141,  97 },
	{   436,  1232,  96 },
	{   493,  1330,  94 },
	{   557,  1435,  92 },
	{   629,  1547,  91 },
	{   711,  1669,  89 },
	{   803,  1799,  87 },
	{   908,  1939,  86 },
	{  1025,  2088,  84 },
	{  1159,  2249,  82 },
	{  1309,  2421,  81 },
	{  1479,  2604,  79 },
	{  1671,  2801,  78 },
	{  1888,  3012,  76 },
	{  2133,  3236,  74 },
	{  2410,  3476,  73 },
	{  2722,  3731,  71 },
	{  3076,  4004,  69 },
	{  3475,  4294,  68 },
	{  3926,  4603,  66 },
	{  4436,  4931,  65 },
	{  5012,  5279,  63 },
	{  5662,  5648,  61 },
	{  6397,  6038,  60 },
	{  7227,  6451,  58 },
	{  8166,  6887,  56 },
	{  9226,  7346,  55 },
	{ 10423,  7828,  53 },
	{ 11776,  8335,  52 },
	{ 13305,  8866,  50 },
	{ 15032,  9421,  48 },
	{ 16983, 10000,  47 },
	{ 19188, 10602,  45 },
	{ 21678, 11225,  43 },
	{ 24492, 11868,  42 },
	{ 27672, 12530,  40 },
	{ 31264, 13206,  39 },
	{ 35322, 13895,  37 },
	{ 39907, 14592,  35 },
	{ 45087, 15292,  34 },
	{ 50940, 15988,  32 },
	{ 57552, 16673,  30 },
	{ 65023, 17338,  29 },
	{ 73464, 17972,  27 },
	{ 83000, 18564,  26 },
};

struct highspeed {
	u64 acc;   /* fractional increase carried between ACKs */
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

	ca->acc = 0;
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
	cca_cong_avoid_frac(tp, &ca->acc, (u64)a << 2, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 highspeed_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct highspeed *ca = inet_csk_ca(sk);
	u32 b;

	ca->acc = 0;
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
