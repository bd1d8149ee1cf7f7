// SPDX-License-Identifier: GPL-2.0
/*
 * cca_bbr2 — BBRv2, written from its specification
 *   N. Cardwell, Y. Cheng, S. Hassas Yeganeh, I. Swett, V. Jacobson, "BBR Congestion
 *   Control", draft-cardwell-iccrg-bbr-congestion-control-02, March 2022 (BBRv2),
 * with the constants of Google's BBRv2 release (github.com/google/bbr, branch
 * v2alpha, the parameter table of net/ipv4/tcp_bbr2.c), the BBRv2 that published
 * evaluations ran, where they differ from the draft's text: Startup's pacing and cwnd
 * gain 2.885 (2/ln 2; the draft gives 2.77 and 2), Drain's 1/2.885 (the draft: 0.5),
 * ProbeBW_DOWN's 0.75 (the draft: 0.9) and 8 loss events to end Startup (the draft: 3).
 *
 * The algorithm is the one BBRv3 (bbr3.bpf.c) refined, and shares its code
 * (bbr_model.h, bbr_signals.h, bbr_machine.h, bbr_control.h); where v2 differs the
 * code branches on BBR_V:
 *   - the full-pipe test judges BBR.max_bw's growth, in Startup only; ProbeBW_UP ends
 *     after a min_rtt with an estimated queue of 0.25 BDP (in-flight > 1.25 BDP), or on
 *     loss (v3: on a bandwidth plateau, and a precautionary early end after a probe that
 *     went too high), with cwnd gain 2 (v3: 2.25);
 *   - Drain has no 3-round limit; Startup's loss exit leaves inflight_hi unset;
 *   - fast recovery keeps packet conservation for a round (v3: the model's bounds only);
 *     a spurious recovery restores cwnd only (v3: the model too);
 *   - the send quantum may be one segment below 1.2 Mbit/s; no ECN response.
 * Where the -02 text leaves a gap, ccarena follows the closest documented behaviour,
 * [v3]'s (see bbr_adapt_long_term_model: the ACK phase after a probe's feedback, and
 * bw_hi, which the text never sets).
 */
#include "cca_common.h"

#define BBR_V                  2
#define BBR_ECN                0
#define BBR_P_STARTUP_PACING   2885   /* 2/ln 2 */
#define BBR_P_STARTUP_CWND     2885
#define BBR_P_DRAIN_PACING     347    /* 1/2.885 */
#define BBR_P_DOWN_PACING      750
#define BBR_P_UP_CWND          2000
#define BBR_P_FULL_LOSS_CNT    8

#define bbr_state_map bbr2_state
#include "bbr_model.h"
#include "bbr_signals.h"
#include "bbr_machine.h"
#include "bbr_control.h"

CCA_BBR_OPS(cca_bbr2);
