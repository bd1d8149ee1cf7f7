//! One flow of the simulation: a TCP sender around a [`Conn`] and its receiver.
//!
//! What the algorithm sees follows the kernel: the ops in tcp_ack()'s order
//! (pkts_acked, the state changes of loss recovery with the ssthresh op first,
//! in_ack_event, cong_control with the rate sample of net/ipv4/tcp_rate.c), the
//! CA_EVENT_TX_START event when data is sent with nothing in flight, CA_EVENT_LOSS and
//! the Loss state on a retransmission time-out, the socket's counters (delivered,
//! delivered_ce, lost, packets_out, sacked_out, lost_out, retrans_out, app_limited,
//! is_cwnd_limited). Pacing is the stack's internal pacing: once sk_pacing_status asks
//! for it, each segment after the first ten departs segment/pacing_rate after the
//! previous (tcp_update_skb_after_send). The TCP around it is simplified: one ACK per
//! data packet carrying that packet's SACK and its CE mark (an exact ECN echo, as
//! DCTCP's receiver gives), a segment is lost once three later ones are SACKed (the
//! retransmission of a lost segment is left to the time-out if it is lost again), and
//! the RTO is max(200 ms, srtt + 4 rttvar), doubled after each time-out.
use std::collections::{BTreeSet, VecDeque};

use super::MSS;
use crate::rate::{RateState, RsBuilder, TxInfo};
use crate::{Conn, Field, Op, CA_ACK_ECE, CA_ACK_WIN_UPDATE, CA_EVENT_LOSS, CA_EVENT_TX_START, CWR, DISORDER, FLAG_DATA_ACKED,
            FLAG_DATA_SACKED, FLAG_ECE, FLAG_SND_UNA_ADVANCED, LOSS, OPEN, RECOVERY};

const DUPTHRESH: u64 = 3;
const MIN_RTO_NS: u64 = 200_000_000;
const SK_PACING_NEEDED: u64 = 1;
const TCP_ECN_OK: u64 = 1;

#[derive(Clone, Copy, Debug)]
struct Pkt {
    tx: TxInfo,
    sacked: bool,
    lost: bool,
    /// in flight as a retransmission
    retrans: bool,
}

pub struct Flow {
    pub conn: Conn,
    pub rtt_ns: u64,
    /// the connection negotiated ECN (the bottleneck may mark its packets)
    pub ect: bool,
    /// segments the application has left to send (None: always more)
    pub app_data: Option<u64>,
    pub(super) wake_at: Option<u64>,
    una: u64,
    nxt: u64,
    pkts: VecDeque<Pkt>,
    rate: RateState,
    next_send_ns: u64,
    sent_segs: u64,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    delivered: u32,
    delivered_ce: u32,
    lost: u32,
    app_limited: u32,
    high_seq: u64,
    highest_sacked: u64,
    srtt_us: f64,
    rttvar_us: f64,
    rto_ns: u64,
    progress_ns: u64,
    cwnd_usage_seq: u64,
    is_cwnd_limited: bool,
    rcv_nxt: u64,
    ooo: BTreeSet<u64>,
    /// RTT samples seen (µs): count and sum, for a mean
    pub rtt_n: u64,
    pub rtt_sum_us: u64,
    /// the largest RTT sample, µs
    pub rtt_max_us: u64,
}

impl Flow {
    pub(super) fn new(conn: Conn, rtt_ns: u64) -> Flow {
        let delivered = conn.get(Field::Delivered) as u32;
        let srtt = conn.srtt_us() as f64;
        conn.set_app_unlimited(false);
        conn.set(Field::PacketsOut, 0);
        Flow {
            conn,
            rtt_ns,
            ect: false,
            app_data: None,
            wake_at: None,
            una: 0,
            nxt: 0,
            pkts: VecDeque::new(),
            rate: RateState::default(),
            next_send_ns: 0,
            sent_segs: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered,
            delivered_ce: 0,
            lost: 0,
            app_limited: 0,
            high_seq: 0,
            highest_sacked: 0,
            srtt_us: srtt,
            rttvar_us: srtt / 2.0,
            rto_ns: 1_000_000_000,
            progress_ns: 0,
            cwnd_usage_seq: 0,
            is_cwnd_limited: false,
            rcv_nxt: 0,
            ooo: BTreeSet::new(),
            rtt_n: 0,
            rtt_sum_us: 0,
            rtt_max_us: 0,
        }
    }

    /// Mark the connection ECN-capable (tp->ecn_flags TCP_ECN_OK).
    pub fn set_ect(&mut self, on: bool) {
        self.ect = on;
        self.conn.set(Field::EcnFlags, if on { TCP_ECN_OK } else { 0 });
    }

    /// tcp_packets_in_flight()
    pub fn inflight(&self) -> u32 {
        (self.nxt - self.una) as u32 - (self.sacked_out + self.lost_out) + self.retrans_out
    }
    /// segments delivered since the flow began (tp->delivered's growth)
    pub fn delivered(&self) -> u32 {
        self.delivered
    }
    /// segments marked lost (tp->lost)
    pub fn lost(&self) -> u32 {
        self.lost
    }
    pub fn mean_rtt_us(&self) -> f64 {
        self.rtt_sum_us as f64 / self.rtt_n.max(1) as f64
    }

    /// The receiver: the cumulative ACK after segment `seq` arrives, and its SACK.
    pub(super) fn receive(&mut self, seq: u64) -> (u64, u64) {
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            while self.ooo.remove(&self.rcv_nxt) {
                self.rcv_nxt += 1;
            }
        } else if seq > self.rcv_nxt {
            self.ooo.insert(seq);
        }
        (self.rcv_nxt, seq)
    }

    fn sync(&self) {
        let c = &self.conn;
        c.set(Field::SndUna, (self.una * MSS as u64) & 0xffff_ffff);
        c.set(Field::SndNxt, (self.nxt * MSS as u64) & 0xffff_ffff);
        c.set(Field::PacketsOut, self.nxt - self.una);
        c.set(Field::SackedOut, self.sacked_out as u64);
        c.set(Field::LostOut, self.lost_out as u64);
        c.set(Field::RetransOut, self.retrans_out as u64);
        c.set(Field::Delivered, self.delivered as u64);
        c.set(Field::DeliveredCe, self.delivered_ce as u64);
        c.set(Field::Lost, self.lost as u64);
        c.set(Field::AppLimited, self.app_limited as u64);
        c.set(Field::IsCwndLimited, self.is_cwnd_limited as u64);
        c.set(Field::HighSeq, (self.high_seq * MSS as u64) & 0xffff_ffff);
    }

    fn enter_state(&mut self, st: u8) {
        if st >= CWR {
            let c = &self.conn;
            c.set(Field::PriorCwnd, c.cwnd() as u64);
            c.set(Field::PriorSsthresh, c.ssthresh().max(c.cwnd() * 3 / 4) as u64);
            c.set(Field::UndoMarker, (self.una * MSS as u64 & 0xffff_ffff).max(1));
            c.set(Field::PrrOut, 0);
            self.high_seq = self.nxt;
            self.sync();
            let ss = c.op_ssthresh();
            c.set_ssthresh(ss);
        }
        self.sync();
        self.conn.set_ca_state(st);
    }

    /// Send what cwnd, pacing and the application allow; returns when to wake up next
    /// (a paced departure or the retransmission timer).
    pub(super) fn transmit(&mut self, now: u64, out: &mut Vec<u64>) -> Option<u64> {
        let pacing = self.conn.get(Field::PacingStatus) == SK_PACING_NEEDED;
        let mut paced_wait = None;
        let mut cwnd_limited = false;
        loop {
            if self.inflight() >= self.conn.cwnd() {
                cwnd_limited = true;
                break;
            }
            let rexmit = self.pkts.iter().position(|p| p.lost && !p.retrans && !p.sacked);
            if rexmit.is_none() && self.app_data == Some(0) {
                // tcp_rate_check_app_limited: out of data with room in cwnd
                if self.lost_out <= self.retrans_out {
                    self.app_limited = (self.delivered + self.inflight()).max(1);
                }
                break;
            }
            if pacing && self.sent_segs >= 10 && now < self.next_send_ns {
                paced_wait = Some(self.next_send_ns);
                break;
            }
            if self.inflight() == 0 {
                self.sync();
                self.conn.cwnd_event(CA_EVENT_TX_START);
            }
            let packets_out = (self.nxt - self.una) as u32;
            let seq = match rexmit {
                Some(k) => self.una + k as u64,
                None => {
                    self.nxt += 1;
                    if let Some(d) = self.app_data.as_mut() {
                        *d -= 1;
                    }
                    self.nxt - 1
                }
            };
            let tx = self.rate.on_send(now, packets_out, self.delivered, self.delivered_ce, self.app_limited != 0,
                                       rexmit.is_some(), seq + 1);
            match rexmit {
                Some(k) => {
                    let p = &mut self.pkts[k];
                    p.tx = tx;
                    p.retrans = true;
                    self.retrans_out += 1;
                }
                None => self.pkts.push_back(Pkt { tx, sacked: false, lost: false, retrans: false }),
            }
            if packets_out == 0 {
                self.progress_ns = now;
            }
            self.sent_segs += 1;
            if matches!(self.conn.state(), CWR | RECOVERY) {
                self.conn.set(Field::PrrOut, self.conn.get(Field::PrrOut) + 1);
            }
            if pacing && self.sent_segs > 10 {
                let rate = self.conn.get(Field::PacingRate).max(1) as f64;
                let len_ns = (MSS as f64 * 1e9 / rate) as u64;
                self.next_send_ns = self.next_send_ns.max(now) + len_ns;
            }
            out.push(seq);
        }
        // tcp_cwnd_validate: cwnd-limited at any time in the window just sent
        if self.una >= self.cwnd_usage_seq || cwnd_limited {
            self.is_cwnd_limited = cwnd_limited;
            self.cwnd_usage_seq = self.nxt;
        }
        self.sync();
        let rto = (self.nxt > self.una).then(|| self.progress_ns + self.rto_ns);
        match (paced_wait, rto) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(super) fn rto_due(&self, now: u64) -> bool {
        self.nxt > self.una && now >= self.progress_ns + self.rto_ns
    }

    /// tcp_enter_loss: every outstanding segment not SACKed is lost; cwnd = 1.
    pub(super) fn on_rto(&mut self, now: u64) {
        let st = self.conn.state();
        if st != LOSS {
            self.enter_loss_state(now);
        } else {
            self.mark_all_lost();
            self.conn.cwnd_event(CA_EVENT_LOSS);
            self.conn.set_cwnd(self.inflight() + 1);
        }
        self.rto_ns = (self.rto_ns * 2).min(60_000_000_000);
        self.progress_ns = now;
    }

    fn mark_all_lost(&mut self) {
        for p in self.pkts.iter_mut() {
            if !p.sacked {
                if !p.lost {
                    p.lost = true;
                    self.lost_out += 1;
                    self.lost += 1;
                }
                if p.retrans {
                    p.retrans = false;
                    self.retrans_out -= 1;
                }
            }
        }
    }

    fn enter_loss_state(&mut self, _now: u64) {
        let c = &self.conn;
        c.set(Field::PriorCwnd, c.cwnd() as u64);
        c.set(Field::PriorSsthresh, c.ssthresh().max(c.cwnd() * 3 / 4) as u64);
        c.set(Field::UndoMarker, (self.una * MSS as u64 & 0xffff_ffff).max(1));
        self.sync();
        let ss = c.op_ssthresh();
        c.set_ssthresh(ss);
        c.cwnd_event(CA_EVENT_LOSS);
        self.mark_all_lost();
        self.high_seq = self.nxt;
        self.sync();
        self.conn.set_cwnd(self.inflight() + 1);
        self.conn.set_ca_state(LOSS);
    }

    fn rtt_estimate(&mut self, rtt_us: u64) {
        let r = rtt_us as f64;
        if self.srtt_us == 0.0 {
            self.srtt_us = r;
            self.rttvar_us = r / 2.0;
        } else {
            self.rttvar_us = 0.75 * self.rttvar_us + 0.25 * (self.srtt_us - r).abs();
            self.srtt_us = 0.875 * self.srtt_us + 0.125 * r;
        }
        self.rto_ns = ((self.srtt_us + 4.0 * self.rttvar_us) * 1000.0) as u64;
        self.rto_ns = self.rto_ns.max(MIN_RTO_NS);
        self.conn.set(Field::SrttUs, self.srtt_us.max(1.0) as u64);
        self.rate.rtt_sample(rtt_us);
        self.rtt_n += 1;
        self.rtt_sum_us += rtt_us;
        self.rtt_max_us = self.rtt_max_us.max(rtt_us);
    }

    /// One ACK: cumulative `cum`, SACK of segment `sack`, `ce` echoed for it.
    pub(super) fn on_ack(&mut self, now: u64, cum: u64, sack: u64, ce: bool) {
        let prior_in_flight = self.inflight();
        let mut b = RsBuilder::default();
        let (mut acked, mut losses) = (0u32, 0u32);
        let mut newest_rtt: Option<(u64, u64)> = None;
        let mut flag = 0;
        let mut note = |p: &Pkt, b: &mut RsBuilder, acked: &mut u32| {
            b.delivered(&p.tx);
            *acked += 1;
            if !p.retrans && newest_rtt.is_none_or(|(t, _)| p.tx.sent_ns > t) {
                newest_rtt = Some((p.tx.sent_ns, (now - p.tx.sent_ns) / 1000));
            }
        };
        let ce_newly = ce && sack >= self.una && sack < self.nxt && !self.pkts[(sack - self.una) as usize].sacked;
        while self.una < cum && self.una < self.nxt {
            let p = self.pkts.pop_front().unwrap();
            if p.sacked {
                self.sacked_out -= 1;
            } else {
                self.delivered += 1;
                note(&p, &mut b, &mut acked);
            }
            if p.lost {
                self.lost_out -= 1;
            }
            if p.retrans {
                self.retrans_out -= 1;
            }
            self.una += 1;
            self.progress_ns = now;
            flag |= FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED;
        }
        if sack >= self.una && sack < self.nxt {
            let p = &mut self.pkts[(sack - self.una) as usize];
            if !p.sacked {
                p.sacked = true;
                let p = *p;
                self.sacked_out += 1;
                self.delivered += 1;
                if p.lost {
                    self.lost_out -= 1;
                    self.pkts[(sack - self.una) as usize].lost = false;
                }
                if p.retrans {
                    self.retrans_out -= 1;
                    self.pkts[(sack - self.una) as usize].retrans = false;
                }
                note(&p, &mut b, &mut acked);
                self.highest_sacked = self.highest_sacked.max(sack);
                flag |= FLAG_DATA_SACKED;
            }
        }
        if ce_newly {
            self.delivered_ce += 1;
        }
        let rtt = newest_rtt.map(|(_, r)| r);
        if let Some(r) = rtt {
            self.rtt_estimate(r);
        }
        // the end of a reduction, then new losses (tcp_fastretrans_alert)
        let st = self.conn.state();
        if st >= CWR && self.una >= self.high_seq {
            self.enter_state(OPEN);
        }
        if self.highest_sacked >= self.una + DUPTHRESH {
            let end = (self.highest_sacked + 1 - DUPTHRESH - self.una) as usize;
            for k in 0..end.min(self.pkts.len()) {
                let p = &mut self.pkts[k];
                if !p.sacked && !p.lost && !p.retrans {
                    p.lost = true;
                    self.lost_out += 1;
                    self.lost += 1;
                    losses += 1;
                }
            }
        }
        let st = self.conn.state();
        if losses > 0 && st < RECOVERY {
            self.enter_state(RECOVERY);
        } else if ce && self.ect && (st == OPEN || st == DISORDER) {
            self.enter_state(CWR);
        }
        if self.app_limited != 0 && self.delivered.wrapping_sub(self.app_limited) as i32 > 0 {
            self.app_limited = 0;
        }
        self.sync();
        if acked > 0 {
            self.conn.pkts_acked(acked, rtt.map_or(-1, |r| r as i32), prior_in_flight);
        }
        let mut ev = CA_ACK_WIN_UPDATE;
        if ce {
            ev |= CA_ACK_ECE;
            flag |= FLAG_ECE;
        }
        self.conn.in_ack_event(ev);
        let mut rs = self.rate.generate(&b, now, self.delivered, self.delivered_ce, acked, losses,
                                        rtt.map_or(-1, |r| r as i64));
        rs.prior_in_flight = prior_in_flight;
        if self.conn.has_op(Op::CongControl) {
            self.conn.cong_control_rs(flag, &rs);
        } else if acked > 0 {
            self.conn.cong_avoid(acked);
        }
    }
}
