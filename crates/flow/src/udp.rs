//! Contract: the pure parts of the UDP RTT probe (`udp_probe` flows and `udp_echo`
//! listeners, docs/dev/contracts.md §2). No I/O, no clock: times are passed in.
//! - Datagram: `b"CCAU"`, u32 flow, u32 seq, u32 0, u64 send time (CLOCK_MONOTONIC ns),
//!   little endian, then zeros up to the flow's `size`. The echo side returns it as is.
//! - `Schedule`: sends on the grid `first + k·interval` (absolute, never drifts). A send
//!   served more than one interval late skips the grid points it missed (counted), it
//!   does not burst to catch up; lateness is measured against the grid point. When the
//!   probe ends (`skip_until` its stop), the grid points it had not reached by then are
//!   skipped too, so sends + skipped = the grid points before the stop, whatever the
//!   scheduling delays; a point is skipped only when its time passed without a send.
//! - `Window`: the send times of the last `cap` datagrams, matched against echoes by
//!   seq (and send time, so a stray or duplicated datagram never matches). Records leave
//!   it in send order, each once: answered (`rtt_ns`), or unanswered when pushed out by
//!   newer sends or at the end (`rtt_ns = LOST`). Fixed memory, allocated once.

pub const MAGIC: &[u8; 4] = b"CCAU";
pub const HEADER_LEN: usize = 24;
/// `rtt_ns` of a datagram whose echo never came back.
pub const LOST: u64 = u64::MAX;
/// A window covers at least this long (or 1024 sends), at most 2^20 sends.
pub const WINDOW_SPAN_NS: u64 = 10_000_000_000;

/// Write the probe header into the first 24 bytes of `buf` (the rest stays as is: zeros).
pub fn encode(buf: &mut [u8], flow: u32, seq: u32, t_ns: u64) {
    buf[0..4].copy_from_slice(MAGIC);
    buf[4..8].copy_from_slice(&flow.to_le_bytes());
    buf[8..12].copy_from_slice(&seq.to_le_bytes());
    buf[12..16].copy_from_slice(&0u32.to_le_bytes());
    buf[16..24].copy_from_slice(&t_ns.to_le_bytes());
}

/// (flow, seq, send time) of a probe datagram, None if it is not one.
pub fn decode(b: &[u8]) -> Option<(u32, u32, u64)> {
    if b.len() < HEADER_LEN || &b[0..4] != MAGIC {
        return None;
    }
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    Some((u32_at(4), u32_at(8), u64::from_le_bytes(b[16..24].try_into().unwrap())))
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schedule {
    pub next_due: u64,
    pub interval: u64,
    pub sends: u64,
    /// Grid points skipped because a send came more than one interval late.
    pub skipped: u64,
    pub max_late_ns: u64,
    pub sum_late_ns: u64,
}

impl Schedule {
    pub fn new(first: u64, interval: u64) -> Schedule {
        Schedule { next_due: first, interval, ..Default::default() }
    }

    /// At `now`: the grid point to send for (None if not yet due); advances the grid.
    pub fn take(&mut self, now: u64) -> Option<u64> {
        if now < self.next_due {
            return None;
        }
        let behind = (now - self.next_due) / self.interval;
        self.skipped += behind;
        let due = self.next_due + behind * self.interval;
        self.next_due = due + self.interval;
        self.sends += 1;
        let late = now - due;
        self.max_late_ns = self.max_late_ns.max(late);
        self.sum_late_ns += late;
        Some(due)
    }

    /// The probe ends at `t`: every grid point before `t` not yet served is skipped.
    pub fn skip_until(&mut self, t: u64) {
        if self.interval == 0 || self.next_due >= t {
            return;
        }
        let n = (t - self.next_due).div_ceil(self.interval);
        self.skipped += n;
        self.next_due += n * self.interval;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    pub t_ns: u64,
    pub seq: u32,
    pub rtt_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// Matched an outstanding datagram: its RTT.
    Rtt(u64),
    /// Already answered (a duplicate), in the window or emitted.
    Duplicate,
    /// Not ours: never sent, not our send time, emitted as lost, or a cap or more behind.
    Stray,
}

pub struct Window {
    /// (send time, rtt; 0 = outstanding) by seq % cap.
    slots: Vec<(u64, u64)>,
    mask: u64,
    /// Oldest seq not yet emitted, next seq to send (u64: no wrap inside the window).
    oldest: u64,
    next: u64,
    /// Sent, still in the window, no echo yet.
    unanswered: u64,
}

pub fn window_cap(interval_ns: u64) -> usize {
    let want = (WINDOW_SPAN_NS / interval_ns.max(1)).max(1024);
    want.next_power_of_two().min(1 << 20) as usize
}

impl Window {
    pub fn new(cap: usize) -> Window {
        assert!(cap.is_power_of_two());
        Window { slots: vec![(0, 0); cap], mask: cap as u64 - 1, oldest: 0, next: 0, unanswered: 0 }
    }

    pub fn cap(&self) -> usize {
        self.slots.len()
    }

    /// The seq to put into the next datagram.
    pub fn next_seq(&self) -> u32 {
        self.next as u32
    }

    /// Datagrams sent whose echo has not come (and that are still in the window).
    pub fn outstanding(&self) -> u64 {
        self.unanswered
    }

    /// Note the send of `next_seq()` at `t_ns`. If the window is full, the oldest
    /// record is emitted first (lost if it never got its echo).
    pub fn sent(&mut self, t_ns: u64) -> Option<Rec> {
        let evicted = if self.next - self.oldest == self.slots.len() as u64 { self.emit_oldest() } else { None };
        self.slots[(self.next & self.mask) as usize] = (t_ns, 0);
        self.next += 1;
        self.unanswered += 1;
        evicted
    }

    /// An echo of `seq` carrying send time `t_ns` arrived at `now`.
    pub fn echo(&mut self, seq: u32, t_ns: u64, now: u64) -> Echo {
        // how far behind the next seq: a slot keeps its record until seq + cap is sent, so
        // a record already emitted is still known while it is less than cap behind
        let back = (self.next as u32).wrapping_sub(seq) as u64;
        if back == 0 || back > self.next || back > self.slots.len() as u64 {
            return Echo::Stray;
        }
        let s = self.next - back;
        let slot = &mut self.slots[(s & self.mask) as usize];
        if slot.0 != t_ns {
            return Echo::Stray;
        }
        if slot.1 != 0 {
            // a second copy of an answered datagram (the path duplicated it), whether its
            // record is still in the window or already emitted
            return Echo::Duplicate;
        }
        if s < self.oldest {
            return Echo::Stray; // emitted as lost: an echo later than the window waited
        }
        let rtt = now.saturating_sub(t_ns).max(1);
        slot.1 = rtt;
        self.unanswered -= 1;
        Echo::Rtt(rtt)
    }

    fn emit_oldest(&mut self) -> Option<Rec> {
        if self.oldest == self.next {
            return None;
        }
        let (t, rtt) = self.slots[(self.oldest & self.mask) as usize];
        if rtt == 0 {
            self.unanswered -= 1;
        }
        let r = Rec { t_ns: t, seq: self.oldest as u32, rtt_ns: if rtt == 0 { LOST } else { rtt } };
        self.oldest += 1;
        Some(r)
    }

    /// The next record that is final now (answered, in send order), if any.
    pub fn pop_answered(&mut self) -> Option<Rec> {
        if self.oldest < self.next && self.slots[(self.oldest & self.mask) as usize].1 != 0 {
            self.emit_oldest()
        } else {
            None
        }
    }

    /// At the end: the next record, answered or lost.
    pub fn pop_any(&mut self) -> Option<Rec> {
        self.emit_oldest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_round_trips_and_rejects_others() {
        let mut b = [0u8; 64];
        encode(&mut b, 7, 0xFFFF_FFFE, 123_456_789);
        assert_eq!(decode(&b), Some((7, 0xFFFF_FFFE, 123_456_789)));
        assert_eq!(&b[0..4], b"CCAU");
        assert!(b[24..].iter().all(|&x| x == 0));
        assert_eq!(decode(&b[..23]), None);
        b[0] = b'X';
        assert_eq!(decode(&b), None);
    }

    #[test]
    fn schedule_keeps_the_grid_and_skips_rather_than_bursts() {
        let mut s = Schedule::new(1_000, 100);
        assert_eq!(s.take(999), None);
        assert_eq!(s.take(1_000), Some(1_000));
        assert_eq!(s.take(1_130), Some(1_100)); // 30 late, grid unchanged
        assert_eq!(s.next_due, 1_200);
        assert_eq!(s.take(1_450), Some(1_400)); // 1200, 1300 skipped
        assert_eq!(s.skipped, 2);
        assert_eq!(s.next_due, 1_500);
        assert_eq!((s.sends, s.max_late_ns, s.sum_late_ns), (3, 50, 80));
        // stopped at 1_800, last served 1_400: 1500, 1600, 1700 were never reached
        s.skip_until(1_800);
        assert_eq!((s.sends + s.skipped, s.next_due), (8, 1_800));
        s.skip_until(1_800); // once only
        assert_eq!(s.skipped, 5);
        let mut s = Schedule::new(1_000, 100);
        s.skip_until(1_001); // stopped right after the first grid point: it is skipped
        assert_eq!((s.sends, s.skipped), (0, 1));
    }

    #[test]
    fn window_matches_echoes_and_emits_in_send_order() {
        let mut w = Window::new(4);
        for t in [100, 200, 300] {
            assert_eq!(w.sent(t), None);
        }
        assert_eq!(w.echo(1, 200, 250), Echo::Rtt(50));
        assert_eq!(w.pop_answered(), None, "seq 0 still outstanding");
        assert_eq!(w.echo(0, 100, 400), Echo::Rtt(300));
        assert_eq!(w.pop_answered(), Some(Rec { t_ns: 100, seq: 0, rtt_ns: 300 }));
        assert_eq!(w.pop_answered(), Some(Rec { t_ns: 200, seq: 1, rtt_ns: 50 }));
        assert_eq!(w.pop_answered(), None);
        assert_eq!(w.echo(1, 200, 500), Echo::Duplicate, "already emitted: a second copy");
        assert_eq!(w.echo(2, 999, 500), Echo::Stray, "wrong send time");
        assert_eq!(w.echo(9, 300, 500), Echo::Stray, "never sent");
        assert_eq!(w.echo(2, 300, 310), Echo::Rtt(10));
        assert_eq!(w.echo(2, 300, 320), Echo::Duplicate);
        assert_eq!(w.outstanding(), 0);
    }

    #[test]
    fn full_window_evicts_the_oldest_as_lost_and_end_drains_everything() {
        let mut w = Window::new(2);
        w.sent(10);
        w.sent(20);
        assert_eq!(w.outstanding(), 2);
        assert_eq!(w.sent(30), Some(Rec { t_ns: 10, seq: 0, rtt_ns: LOST }));
        assert_eq!(w.echo(2, 30, 35), Echo::Rtt(5));
        assert_eq!(w.pop_any(), Some(Rec { t_ns: 20, seq: 1, rtt_ns: LOST }));
        assert_eq!(w.outstanding(), 0);
        assert_eq!(w.pop_any(), Some(Rec { t_ns: 30, seq: 2, rtt_ns: 5 }));
        assert_eq!(w.pop_any(), None);
    }

    #[test]
    fn a_second_copy_is_a_duplicate_after_its_record_left_the_window() {
        let mut w = Window::new(4);
        w.sent(10);
        w.sent(20);
        assert_eq!(w.echo(0, 10, 15), Echo::Rtt(5));
        assert_eq!(w.pop_answered().map(|r| r.seq), Some(0));
        // the path's copy of seq 0 comes after its record was emitted
        assert_eq!(w.echo(0, 10, 16), Echo::Duplicate);
        assert_eq!(w.echo(0, 11, 16), Echo::Stray, "not our send time");
        // seq 1 emitted as lost: its late echo is not a duplicate
        assert_eq!(w.pop_any(), Some(Rec { t_ns: 20, seq: 1, rtt_ns: LOST }));
        assert_eq!(w.echo(1, 20, 90), Echo::Stray);
        // seqs 2-5 sent: seq 0 is more than a window behind
        for t in [30, 40, 50, 60] {
            w.sent(t);
        }
        assert_eq!(w.echo(0, 10, 99), Echo::Stray, "a whole window behind");
        assert_eq!(w.echo(4, 50, 99), Echo::Rtt(49));
        assert_eq!(w.echo(6, 50, 99), Echo::Stray, "never sent");
    }

    #[test]
    fn seq_wraps_at_2_pow_32() {
        let mut w = Window::new(4);
        w.oldest = u32::MAX as u64;
        w.next = u32::MAX as u64;
        assert_eq!(w.next_seq(), u32::MAX);
        w.sent(1);
        assert_eq!(w.next_seq(), 0);
        w.sent(2);
        assert_eq!(w.echo(0, 2, 5), Echo::Rtt(3));
        assert_eq!(w.echo(u32::MAX, 1, 5), Echo::Rtt(4));
        assert_eq!(w.pop_answered().map(|r| r.seq), Some(u32::MAX));
        assert_eq!(w.pop_answered().map(|r| r.seq), Some(0));
    }

    #[test]
    fn window_covers_ten_seconds() {
        assert_eq!(window_cap(10_000_000), 1024);
        assert_eq!(window_cap(1_000_000), 16384);
        assert_eq!(window_cap(10_000), 1 << 20);
    }
}
