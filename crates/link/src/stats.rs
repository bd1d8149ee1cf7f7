//! Counters, per-interval records and the optional per-packet event log (contracts §3).
//!
//! Contract: `Sink` is owned by one direction of the core; queues report drops and marks
//! into it. Records are encoded little-endian, packed, exactly as the sidecar schemas
//! returned by `stats_schema()` / `events_schema()` describe.

use serde::Serialize;

pub const EV_ENQ: u8 = 0;
pub const EV_DEQ: u8 = 1;
pub const EV_DROP_QUEUE: u8 = 2;
pub const EV_DROP_LOSS: u8 = 3;
pub const EV_MARK: u8 = 4;
pub const EV_DROP_AQM: u8 = 5;

/// One `link_stats.bin` record (48 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsRecord {
    pub t_ns: u64,
    pub dir: u8,
    pub qlen_pkts: u32,
    pub qlen_bytes: u64,
    pub arrivals: u32,
    pub departures: u32,
    pub drops: u32,
    pub marks: u32,
    pub bytes_out: u64,
}

pub const STATS_RECORD_LEN: usize = 48;
pub const EVENT_RECORD_LEN: usize = 24;

impl StatsRecord {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.t_ns.to_le_bytes());
        out.push(self.dir);
        out.extend_from_slice(&[0u8; 3]);
        out.extend_from_slice(&self.qlen_pkts.to_le_bytes());
        out.extend_from_slice(&self.qlen_bytes.to_le_bytes());
        out.extend_from_slice(&self.arrivals.to_le_bytes());
        out.extend_from_slice(&self.departures.to_le_bytes());
        out.extend_from_slice(&self.drops.to_le_bytes());
        out.extend_from_slice(&self.marks.to_le_bytes());
        out.extend_from_slice(&self.bytes_out.to_le_bytes());
    }
}

/// One `link_events.bin` record (24 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventRecord {
    pub t_ns: u64,
    pub dir: u8,
    pub ev: u8,
    pub flow_hash: u32,
    pub size: u32,
    pub qlen_pkts: u32,
}

impl EventRecord {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.t_ns.to_le_bytes());
        out.push(self.dir);
        out.push(self.ev);
        out.extend_from_slice(&[0u8; 2]);
        out.extend_from_slice(&self.flow_hash.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.qlen_pkts.to_le_bytes());
    }
}

pub fn stats_schema() -> serde_json::Value {
    serde_json::json!({"version": 1, "record": "link_stats", "fields": [
        ["t_ns", "u64"], ["dir", "u8"], ["_pad", "u8[3]"], ["qlen_pkts", "u32"],
        ["qlen_bytes", "u64"], ["arrivals", "u32"], ["departures", "u32"], ["drops", "u32"],
        ["marks", "u32"], ["bytes_out", "u64"]]})
}

pub fn events_schema() -> serde_json::Value {
    serde_json::json!({"version": 1, "record": "link_events", "fields": [
        ["t_ns", "u64"], ["dir", "u8"], ["ev", "u8"], ["_pad", "u16"], ["flow_hash", "u32"],
        ["size", "u32"], ["qlen_pkts", "u32"]]})
}

/// Totals over the whole run for one direction (written to link.json).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    pub arrivals: u64,
    pub bytes_in: u64,
    /// Packets that left the queue for the transmitter.
    pub departures: u64,
    pub bytes_out: u64,
    /// Packets handed back to the shell after the delay line.
    pub released: u64,
    /// Buffer full (tail drop, or FQ-CoDel's drop from the fattest flow).
    pub drops_queue: u64,
    /// Random loss (link or per-host model).
    pub drops_loss: u64,
    /// AQM drops (RED, CoDel, step marker on Not-ECT packets).
    pub drops_aqm: u64,
    /// Delay line full (memory bound; should stay 0).
    pub drops_delay_line: u64,
    pub marks: u64,
    /// Copies made by duplication (released besides their originals).
    pub duplicated: u64,
    /// Packets (copies included) with a bit flipped by corruption.
    pub corrupted: u64,
    /// Packets sent at once, without the delay, by reordering.
    pub reordered: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Interval {
    arrivals: u32,
    departures: u32,
    drops: u32,
    marks: u32,
    bytes_out: u64,
}

/// Where one direction's queue reports what happens to packets.
#[derive(Debug)]
pub struct Sink {
    pub dir: u8,
    pub log: bool,
    pub events: Vec<EventRecord>,
    pub totals: Totals,
    iv: Interval,
}

impl Sink {
    pub fn new(dir: u8, log: bool) -> Sink {
        Sink {
            dir,
            log,
            events: Vec::new(),
            totals: Totals::default(),
            iv: Interval::default(),
        }
    }

    fn event(&mut self, t_ns: u64, ev: u8, hash: u32, size: usize, qlen: usize) {
        if self.log {
            self.events.push(EventRecord {
                t_ns,
                dir: self.dir,
                ev,
                flow_hash: hash,
                size: size as u32,
                qlen_pkts: qlen as u32,
            });
        }
    }

    pub fn arrival(&mut self, size: usize) {
        self.iv.arrivals += 1;
        self.totals.arrivals += 1;
        self.totals.bytes_in += size as u64;
    }

    pub fn enqueued(&mut self, t: u64, hash: u32, size: usize, qlen: usize) {
        self.event(t, EV_ENQ, hash, size, qlen);
    }

    pub fn dequeued(&mut self, t: u64, hash: u32, size: usize, qlen: usize) {
        self.iv.departures += 1;
        self.iv.bytes_out += size as u64;
        self.totals.departures += 1;
        self.totals.bytes_out += size as u64;
        self.event(t, EV_DEQ, hash, size, qlen);
    }

    /// `ev` is one of EV_DROP_QUEUE, EV_DROP_LOSS, EV_DROP_AQM.
    pub fn dropped(&mut self, t: u64, ev: u8, hash: u32, size: usize, qlen: usize) {
        self.iv.drops += 1;
        match ev {
            EV_DROP_QUEUE => self.totals.drops_queue += 1,
            EV_DROP_LOSS => self.totals.drops_loss += 1,
            _ => self.totals.drops_aqm += 1,
        }
        self.event(t, ev, hash, size, qlen);
    }

    pub fn delay_line_drop(&mut self, t: u64, hash: u32, size: usize) {
        self.iv.drops += 1;
        self.totals.drops_delay_line += 1;
        self.event(t, EV_DROP_QUEUE, hash, size, 0);
    }

    pub fn marked(&mut self, t: u64, hash: u32, size: usize, qlen: usize) {
        self.iv.marks += 1;
        self.totals.marks += 1;
        self.event(t, EV_MARK, hash, size, qlen);
    }

    /// Close the current interval at `t_ns` with the given queue occupancy.
    pub fn close_interval(&mut self, t_ns: u64, qlen_pkts: usize, qlen_bytes: u64) -> StatsRecord {
        let iv = std::mem::take(&mut self.iv);
        StatsRecord {
            t_ns,
            dir: self.dir,
            qlen_pkts: qlen_pkts as u32,
            qlen_bytes,
            arrivals: iv.arrivals,
            departures: iv.departures,
            drops: iv.drops,
            marks: iv.marks,
            bytes_out: iv.bytes_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_the_contract_sizes() {
        let mut v = Vec::new();
        StatsRecord::default().encode(&mut v);
        assert_eq!(v.len(), STATS_RECORD_LEN);
        v.clear();
        EventRecord::default().encode(&mut v);
        assert_eq!(v.len(), EVENT_RECORD_LEN);
    }
}
