//! Contract: turn a socket's `struct tcp_info` into a `TcpInfoRec`, and keep the
//! sampling clock honest.
//! - `decode_tcp_info` reads the kernel's struct by the offsets of
//!   include/uapi/linux/tcp.h; a field past the length the kernel filled in (older
//!   kernels) reads as 0. One getsockopt per socket per tick, no allocation.
//! - `with_meminfo` adds the socket's send buffer and the memory queued in it (SO_MEMINFO):
//!   with TCP_INFO's in-flight and unsent counts they say whether the send buffer held the
//!   sender back (docs/metrics.md, "What limited a flow").
//! - `Ticker` schedules ticks on the grid `first + k·interval` (absolute, so lateness
//!   never accumulates). When a tick is served late it records the lateness; a tick
//!   more than one interval late is a *gap* (the grid points it skipped are counted in
//!   `missed`) — the numbers `engine.json` reports so a CPU-starved run can be flagged.

use crate::records::TcpInfoRec;

/// Byte offsets in `struct tcp_info` (include/uapi/linux/tcp.h).
mod off {
    pub const CA_STATE: usize = 1;
    pub const SND_MSS: usize = 16;
    pub const UNACKED: usize = 24;
    pub const SACKED: usize = 28;
    pub const LOST: usize = 32;
    pub const RETRANS: usize = 36;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_SSTHRESH: usize = 76;
    pub const SND_CWND: usize = 80;
    pub const TOTAL_RETRANS: usize = 100;
    pub const PACING_RATE: usize = 104;
    pub const BYTES_ACKED: usize = 120;
    pub const NOTSENT_BYTES: usize = 144;
    pub const MIN_RTT: usize = 148;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const DELIVERED: usize = 192;
    pub const DELIVERED_CE: usize = 196;
    pub const BYTES_SENT: usize = 200;
    pub const BYTES_RETRANS: usize = 208;
    pub const SND_WND: usize = 228;
    pub const RCV_WND: usize = 232;
}

fn u32_at(b: &[u8], len: usize, o: usize) -> u32 {
    if o + 4 > len {
        return 0;
    }
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], len: usize, o: usize) -> u64 {
    if o + 8 > len {
        return 0;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_ne_bytes(a)
}

pub fn decode_tcp_info(t_ns: u64, flow: u32, conn: u32, b: &[u8], len: usize) -> TcpInfoRec {
    let len = len.min(b.len());
    TcpInfoRec {
        t_ns,
        flow,
        conn,
        cwnd: u32_at(b, len, off::SND_CWND),
        ssthresh: u32_at(b, len, off::SND_SSTHRESH),
        srtt_us: u32_at(b, len, off::RTT),
        rttvar_us: u32_at(b, len, off::RTTVAR),
        min_rtt_us: u32_at(b, len, off::MIN_RTT),
        mss: u32_at(b, len, off::SND_MSS),
        total_retrans: u32_at(b, len, off::TOTAL_RETRANS),
        lost: u32_at(b, len, off::LOST),
        unacked: u32_at(b, len, off::UNACKED),
        sacked: u32_at(b, len, off::SACKED),
        ca_state: if len > off::CA_STATE { b[off::CA_STATE] } else { 0 },
        snd_wnd: u32_at(b, len, off::SND_WND),
        rcv_wnd: u32_at(b, len, off::RCV_WND),
        delivery_rate: u64_at(b, len, off::DELIVERY_RATE),
        pacing_rate: u64_at(b, len, off::PACING_RATE),
        bytes_acked: u64_at(b, len, off::BYTES_ACKED),
        bytes_sent: u64_at(b, len, off::BYTES_SENT),
        bytes_retrans: u64_at(b, len, off::BYTES_RETRANS),
        busy_us: u64_at(b, len, off::BUSY_TIME),
        rwnd_limited_us: u64_at(b, len, off::RWND_LIMITED),
        sndbuf_limited_us: u64_at(b, len, off::SNDBUF_LIMITED),
        delivered: u32_at(b, len, off::DELIVERED),
        delivered_ce: u32_at(b, len, off::DELIVERED_CE),
        notsent_bytes: u32_at(b, len, off::NOTSENT_BYTES),
        retrans: u32_at(b, len, off::RETRANS),
        sndbuf: 0,
        wmem_queued: 0,
    }
}

/// SO_MEMINFO's slots (include/uapi/linux/sock_diag.h, SK_MEMINFO_*).
const SK_MEMINFO_SNDBUF: usize = 3;
const SK_MEMINFO_WMEM_QUEUED: usize = 5;

/// The record with `sndbuf` and `wmem_queued` from SO_MEMINFO's `n` filled slots (a
/// kernel that filled fewer leaves them 0: unknown).
pub fn with_meminfo(mut rec: TcpInfoRec, mem: &[u32], n: usize) -> TcpInfoRec {
    let n = n.min(mem.len());
    if n > SK_MEMINFO_WMEM_QUEUED {
        rec.sndbuf = mem[SK_MEMINFO_SNDBUF];
        rec.wmem_queued = mem[SK_MEMINFO_WMEM_QUEUED];
    }
    rec
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Ticks served.
    pub samples: u64,
    /// Ticks served more than one interval late.
    pub gaps: u64,
    /// Grid points skipped because of those gaps.
    pub missed: u64,
    pub max_late_ns: u64,
}

#[derive(Debug, Clone)]
pub struct Ticker {
    interval_ns: u64,
    next_ns: u64,
    pub stats: TickStats,
}

impl Ticker {
    pub fn new(first_ns: u64, interval_ns: u64) -> Ticker {
        assert!(interval_ns > 0);
        Ticker { interval_ns, next_ns: first_ns, stats: TickStats::default() }
    }

    pub fn due_ns(&self) -> u64 {
        self.next_ns
    }

    /// Serve the due tick at `now_ns` (>= due); returns the grid time of the tick.
    pub fn fire(&mut self, now_ns: u64) -> u64 {
        let grid = self.next_ns;
        let late = now_ns.saturating_sub(grid);
        self.stats.samples += 1;
        self.stats.max_late_ns = self.stats.max_late_ns.max(late);
        let skipped = late / self.interval_ns;
        if late > self.interval_ns {
            self.stats.gaps += 1;
        }
        self.stats.missed += skipped;
        self.next_ns = grid + self.interval_ns * (skipped + 1);
        grid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_time_ticks_have_no_gaps() {
        let mut t = Ticker::new(1000, 10);
        for k in 0..5 {
            assert_eq!(t.due_ns(), 1000 + 10 * k);
            t.fire(1000 + 10 * k + 3);
        }
        assert_eq!(t.stats, TickStats { samples: 5, gaps: 0, missed: 0, max_late_ns: 3 });
    }

    #[test]
    fn a_late_tick_counts_a_gap_and_stays_on_the_grid() {
        let mut t = Ticker::new(0, 10);
        t.fire(0);
        // The tick due at 10 is served at 45: 35 late, grid points 20, 30, 40 skipped.
        t.fire(45);
        assert_eq!(t.due_ns(), 50);
        assert_eq!(t.stats.gaps, 1);
        assert_eq!(t.stats.missed, 3);
        assert_eq!(t.stats.max_late_ns, 35);
        // Exactly one interval late is lateness, not a gap.
        t.fire(60);
        assert_eq!(t.stats.gaps, 1);
        assert_eq!(t.due_ns(), 70);
    }

    #[test]
    fn tcp_info_fields_come_from_their_kernel_offsets() {
        let mut b = [0u8; 256];
        b[1] = 4; // TCP_CA_Loss
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[68..72].copy_from_slice(&20_000u32.to_ne_bytes());
        b[160..168].copy_from_slice(&12_500_000u64.to_ne_bytes());
        b[232..236].copy_from_slice(&65535u32.to_ne_bytes());
        let r = decode_tcp_info(5, 1, 2, &b, 256);
        assert_eq!((r.t_ns, r.flow, r.conn, r.ca_state, r.cwnd, r.srtt_us), (5, 1, 2, 4, 10, 20_000));
        assert_eq!(r.delivery_rate, 12_500_000);
        assert_eq!(r.rcv_wnd, 65535);
        // A kernel that filled only 232 bytes has no rcv_wnd: it reads as 0.
        assert_eq!(decode_tcp_info(5, 1, 2, &b, 232).rcv_wnd, 0);
    }

    #[test]
    fn retrans_out_and_the_send_buffer_come_from_their_slots() {
        let mut b = [0u8; 256];
        b[36..40].copy_from_slice(&7u32.to_ne_bytes());
        let r = decode_tcp_info(5, 1, 2, &b, 256);
        assert_eq!(r.retrans, 7);
        let mem = [1, 2, 3, 4_194_304, 5, 3_000_000, 7, 8, 9];
        let m = with_meminfo(r, &mem, 9);
        assert_eq!((m.sndbuf, m.wmem_queued, m.retrans), (4_194_304, 3_000_000, 7));
        // a kernel that filled only five slots has no wmem_queued: both stay unknown
        assert_eq!((with_meminfo(r, &mem, 5).sndbuf, with_meminfo(r, &mem, 5).wmem_queued), (0, 0));
    }

    #[test]
    fn offsets_agree_with_libc_struct_where_it_has_the_field() {
        // libc's tcp_info ends before the newest fields; check the ones it has.
        use std::mem::offset_of;
        assert_eq!(offset_of!(libc::tcp_info, tcpi_snd_cwnd), off::SND_CWND);
        assert_eq!(offset_of!(libc::tcp_info, tcpi_rtt), off::RTT);
        assert_eq!(offset_of!(libc::tcp_info, tcpi_total_retrans), off::TOTAL_RETRANS);
        assert_eq!(offset_of!(libc::tcp_info, tcpi_snd_mss), off::SND_MSS);
        assert_eq!(offset_of!(libc::tcp_info, tcpi_retrans), off::RETRANS);
        assert_eq!(libc::SK_MEMINFO_SNDBUF as usize, SK_MEMINFO_SNDBUF);
        assert_eq!(libc::SK_MEMINFO_WMEM_QUEUED as usize, SK_MEMINFO_WMEM_QUEUED);
    }
}
