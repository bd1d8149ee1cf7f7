//! The kernel's delivery rate sampling (net/ipv4/tcp_rate.c, as draft-ietf-ccwg-bbr-06
//! §4.1.2 describes it) and the `struct rate_sample` it hands to a `cong_control` op.
//!
//! Each transmission records a snapshot of the connection's delivery state
//! ([`RateState::on_send`], `tcp_rate_skb_sent`); an ACK picks the most recently sent
//! packet among those it delivers ([`RsBuilder::delivered`], `tcp_rate_skb_delivered`)
//! and turns the snapshot into a sample ([`RateState::generate`], `tcp_rate_gen`):
//! delivered = C.delivered − P.delivered over interval = max(send interval, ACK
//! interval), no sample (interval −1) when the interval is shorter than the minimum RTT.
//! [`Conn::ack`](crate::Conn::ack) and the packet simulator ([`crate::sim`]) both use it.
use crate::Conn;

/// `struct rate_sample` as the C model passes it to the op (declared with the C call
/// that takes it).
pub use crate::ffi::RateSample;

impl RateSample {
    /// An ACK without a delivery sample (as the kernel reports one whose packets carry no
    /// snapshot): `acked` segments (S)ACKed, `losses` newly marked lost, an RTT sample
    /// (≤ 0: none).
    pub fn no_sample(acked: u32, losses: i32, rtt_us: i32) -> RateSample {
        RateSample {
            delivered: -1,
            interval_us: -1,
            rtt_us: if rtt_us > 0 { rtt_us as i64 } else { -1 },
            losses,
            acked_sacked: acked,
            ..Default::default()
        }
    }

    /// A sample of `delivered` segments over `interval_us` (the rate
    /// delivered/interval), the newest delivered packet sent when C.delivered was
    /// `prior_delivered`; `acked` segments on this ACK, an RTT sample `rtt_us`.
    pub fn of(prior_delivered: u32, delivered: u32, interval_us: u64, acked: u32, rtt_us: u64) -> RateSample {
        RateSample {
            prior_mstamp: 1,
            prior_delivered,
            delivered: delivered as i32,
            interval_us: interval_us as i64,
            snd_interval_us: interval_us as u32,
            rcv_interval_us: interval_us as u32,
            rtt_us: rtt_us as i64,
            acked_sacked: acked,
            ..Default::default()
        }
    }
}

/// A packet's snapshot of the delivery state when it was (re)transmitted.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxInfo {
    pub sent_ns: u64,
    pub first_tx_ns: u64,
    pub delivered_mstamp_ns: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub app_limited: bool,
    pub retrans: bool,
    /// its end sequence number (the kernel's tiebreak between equal send times)
    pub end_seq: u64,
}

/// The connection's part of the sampler: tp->first_tx_mstamp, tp->delivered_mstamp,
/// and the minimum RTT the kernel judges intervals by (tcp_min_rtt).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateState {
    pub first_tx_ns: u64,
    pub delivered_mstamp_ns: u64,
    pub min_rtt_us: Option<u64>,
}

/// The newest packet an ACK delivers, collected over its delivered packets.
#[derive(Clone, Copy, Debug, Default)]
pub struct RsBuilder {
    newest: Option<TxInfo>,
}

impl RsBuilder {
    /// tcp_rate_skb_delivered: keep the packet sent last (ties: the higher sequence).
    pub fn delivered(&mut self, tx: &TxInfo) {
        let newer = match self.newest {
            None => true,
            Some(n) => tx.sent_ns > n.sent_ns || (tx.sent_ns == n.sent_ns && tx.end_seq > n.end_seq),
        };
        if newer {
            self.newest = Some(*tx);
        }
    }
    pub fn newest(&self) -> Option<TxInfo> {
        self.newest
    }
}

impl RateState {
    /// tcp_rate_skb_sent: the snapshot of a packet sent at `now_ns` when `packets_out`
    /// packets were outstanding; with none, the sampling interval starts now.
    pub fn on_send(&mut self, now_ns: u64, packets_out: u32, delivered: u32, delivered_ce: u32,
                   app_limited: bool, retrans: bool, end_seq: u64) -> TxInfo {
        if packets_out == 0 {
            self.first_tx_ns = now_ns;
            self.delivered_mstamp_ns = now_ns;
        }
        TxInfo {
            sent_ns: now_ns,
            first_tx_ns: self.first_tx_ns,
            delivered_mstamp_ns: self.delivered_mstamp_ns,
            delivered,
            delivered_ce,
            app_limited,
            retrans,
            end_seq,
        }
    }

    /// An RTT sample for tcp_min_rtt.
    pub fn rtt_sample(&mut self, rtt_us: u64) {
        self.min_rtt_us = Some(self.min_rtt_us.map_or(rtt_us, |m| m.min(rtt_us)));
    }

    /// tcp_rate_gen: the sample of an ACK at `now_ns` that (S)ACKed `acked` segments and
    /// marked `losses` lost, C.delivered (C.delivered_ce) already counting them.
    pub fn generate(&mut self, b: &RsBuilder, now_ns: u64, delivered: u32, delivered_ce: u32,
                    acked: u32, losses: u32, rtt_us: i64) -> RateSample {
        let mut rs = RateSample::no_sample(acked, losses as i32, 0);
        rs.rtt_us = rtt_us;
        if acked > 0 {
            self.delivered_mstamp_ns = now_ns;
        }
        let Some(p) = b.newest() else { return rs };
        self.first_tx_ns = p.sent_ns;
        rs.prior_mstamp = p.delivered_mstamp_ns / 1000;
        rs.prior_delivered = p.delivered;
        rs.prior_delivered_ce = p.delivered_ce;
        rs.is_app_limited = p.app_limited as u8;
        rs.is_retrans = p.retrans as u8;
        rs.last_end_seq = p.end_seq as u32;
        rs.delivered = delivered.wrapping_sub(p.delivered) as i32;
        rs.delivered_ce = delivered_ce.wrapping_sub(p.delivered_ce) as i32;
        let snd_us = p.sent_ns.saturating_sub(p.first_tx_ns) / 1000;
        let ack_us = now_ns.saturating_sub(p.delivered_mstamp_ns) / 1000;
        rs.snd_interval_us = snd_us as u32;
        rs.rcv_interval_us = ack_us as u32;
        rs.interval_us = snd_us.max(ack_us) as i64;
        if rs.interval_us < self.min_rtt_us.unwrap_or(0) as i64 {
            rs.interval_us = -1;
        }
        rs
    }
}

impl Conn {
    /// The cong_control op with a full rate sample (one kernel call, nothing else).
    pub fn cong_control_rs(&self, flag: i32, rs: &RateSample) {
        let ack = self.get(crate::Field::SndUna) as u32;
        self.s.op_cong_control_rs(ack, flag, rs)
    }

    /// The min_tso_segs op (panics if the algorithm has none).
    pub fn min_tso_segs(&self) -> u32 {
        self.s.op_min_tso_segs().unwrap_or_else(|| panic!("{}: no min_tso_segs op", self.algo))
    }
}
