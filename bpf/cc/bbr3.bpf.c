// SPDX-License-Identifier: GPL-2.0
/*
 * cca_bbr3 — BBRv3, written from the specification
 *   N. Cardwell, I. Swett, J. Beshay (eds.), "BBR Congestion Control",
 *   draft-ietf-ccwg-bbr-06, July 2026 (it specifies version 3 of BBR).
 *
 * A model of the path (the windowed max of the delivery rate over two ProbeBW cycles,
 * the min RTT over 10 s, the data in flight that losses showed too high, the recent
 * aggregation) sets the pacing rate (gain × bw, 1 % below), the cwnd (gain × BDP +
 * extra_acked, bounded by the model) and the send quantum; a state machine runs Startup
 * (pacing gain 2.77, left on a bandwidth plateau over 3 rounds or on more than 2 % loss
 * per round), Drain (0.5, until in-flight data fits the BDP or for 3 rounds), the
 * ProbeBW cycle (DOWN 0.9, CRUISE 1.0, REFILL 1.0 for a round, UP 1.25 with cwnd gain
 * 2.25), probing again after 2–3 s or min(BDP, 63) rounds, and ProbeRTT (cwnd at half
 * the BDP for 200 ms and a round, when min_rtt was not refreshed for 5 s).
 * The model, the signals, the state machine and the control are in bbr_model.h,
 * bbr_signals.h, bbr_machine.h and bbr_control.h, shared with bbr2.bpf.c; what the
 * kernel's rate sample lacks (RS.lost, RS.tx_in_flight) is estimated there
 * (bbr_loss_sample). ECN: bbr_signals.h.
 */
#include "cca_common.h"

#define BBR_V                  3
#define BBR_ECN                1
#define BBR_P_STARTUP_PACING   2770   /* §2.5: 4 ln 2, the least gain that doubles the rate per round */
#define BBR_P_STARTUP_CWND     2000   /* §2.6: DefaultCwndGain */
#define BBR_P_DRAIN_PACING     500    /* §2.5: DrainPacingGain */
#define BBR_P_DOWN_PACING      900    /* §5.3.3.1 */
#define BBR_P_UP_CWND          2250   /* §5.3.3.5 */
#define BBR_P_FULL_LOSS_CNT    6      /* §5.3.1.3: BBRStartupFullLossCnt */

#define bbr_state_map bbr3_state
#include "bbr_model.h"
#include "bbr_signals.h"
#include "bbr_machine.h"
#include "bbr_control.h"

CCA_BBR_OPS(cca_bbr3);
