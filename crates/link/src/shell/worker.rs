//! Contract: one forwarding thread's data path. Each worker receives on the ports of
//! its directions (AF_PACKET `recvmmsg`, a TPACKET ring, or AF_XDP), stamps each frame's
//! arrival (kernel timestamp mapped onto CLOCK_MONOTONIC, clamped so arrivals never go
//! back and never lie in the future), hands it to its own `Link` core, and sends what the
//! core releases out of the opposite port, counting how late each frame left. Buffers
//! are pooled: no allocation per packet in the steady state.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::accounting::ShellStats;
use super::af_packet::{PacketSocket, VNET_HDR_LEN};
use super::xsk::XskPort;
use crate::link::{Link, Released};
use crate::packet::Packet;
use crate::stats::EventRecord;
use ccarena_sys::clock::{nap, now_ns};
use ccarena_sys::mmsg::{RecvBatch, SendBatch};
use ccarena_sys::packet_ring::RxRing;

const BATCH: usize = 64;
const POOL_MAX: usize = 8192;
/// Pause before re-sending when the receiving backlog is full (ns), and the longest
/// total wait for one batch before its packet is dropped and counted in tx_errors.
const TX_WAIT_NAP_NS: u64 = 20_000;
const TX_WAIT_MAX_NS: u64 = 5_000_000;

/// Receive-side batch: buffers stay allocated across calls; consumed ones are replaced.
pub(super) struct RxBatch {
    pub(super) mm: RecvBatch,
    /// Last arrival time handed to the core (arrivals are kept nondecreasing).
    pub(super) last_ns: u64,
}

/// One forwarding thread: receives on the ports of its directions, runs its own core
/// (directions are independent, so each thread owns a `Link` and uses only its
/// directions of it), sends out of the opposite ports.
pub struct Worker {
    pub(super) socks: Arc<[PacketSocket; 2]>,
    pub(super) dirs: Vec<usize>,
    pub(super) link: Link,
    pub(super) slot: usize,
    pub(super) pool: Vec<Vec<u8>>,
    pub(super) rx: [RxBatch; 2],
    pub(super) tx_batch: SendBatch,
    pub(super) out: Vec<Released>,
    pub(super) by_dir: [Vec<Released>; 2],
    pub(super) spin_ns: u64,
    /// See Config::rt_busy_ns / rt_nap_ns (the default nap is ~5 % of the CPU, the
    /// share the kernel reserves for ordinary tasks: sched_rt_runtime_us 950000 of 1e6).
    pub(super) rt_busy_ns: u64,
    pub(super) rt_nap_ns: u64,
    /// Config::rt_yield == Fair (cleared if the kernel refuses the switch)
    pub(super) rt_fair: bool,
    /// Length of a fair phase: rt_nap_ns, or more where the kernel's RT budget needs it.
    pub(super) fair_ns: u64,
    pub(super) rt_prio: i32,
    pub(super) late_tol: u64,
    pub(super) stats_w: Arc<Mutex<BufWriter<File>>>,
    pub(super) events_w: Option<Arc<Mutex<BufWriter<File>>>>,
    pub(super) enc: Vec<u8>,
    pub(super) evbuf: Vec<EventRecord>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) use_rx_ts: bool,
    pub(super) rt: bool,
    /// CPU the thread is pinned to (None: not pinned, or pinning was refused).
    pub(super) cpu: Option<usize>,
    pub(super) rx_poll_ns: u64,
    pub(super) rings: [Option<RxRing>; 2],
    /// AF_XDP ports (io "xdp"): both, in the one worker, or neither.
    pub(super) xsk: [Option<XskPort>; 2],
    pub st: ShellStats,
}

pub(super) fn rx_batch() -> RxBatch {
    RxBatch { mm: RecvBatch::new(BATCH), last_ns: 0 }
}

impl Worker {
    /// A buffer with room for `slot` bytes (pooled when one is free).
    pub(super) fn new_buf(&mut self) -> Vec<u8> {
        self.pool.pop().unwrap_or_else(|| Vec::with_capacity(self.slot))
    }

    pub(super) fn recycle(&mut self, b: Vec<u8>) {
        if self.pool.len() < POOL_MAX && b.capacity() >= self.slot {
            self.pool.push(b);
        }
    }

    /// Take up to one batch from the rx ring of port `s` and hand it to the core.
    pub(super) fn rx_ring(&mut self, s: usize, now: u64, offset: u64) -> usize {
        let mut n = 0;
        while n < BATCH {
            let mut b = None;
            let mut t = 0;
            {
                let Some(f) = self.rings[s].as_ref().unwrap().peek(VNET_HDR_LEN) else {
                    break;
                };
                if f.truncated || f.data.len() < VNET_HDR_LEN + 14 {
                    if self.st.rx_truncated == 0 {
                        eprintln!(
                            "ccarena-link: receive: {}: frame of {} bytes does not fit the MTU-sized slot; dropped (GRO/LRO on?)",
                            self.socks[s].ifname, f.wire_len
                        );
                    }
                    self.st.rx_truncated += 1;
                } else {
                    // Clamp to a clock read now, not to the loop's `now`: a frame that
                    // landed after the loop read its clock would otherwise get an earlier
                    // arrival time than its real one, and leave early.
                    let now = now.max(now_ns());
                    t = if self.use_rx_ts {
                        f.real_ns.wrapping_sub(offset).min(now)
                    } else {
                        now
                    };
                    let mut buf = self.pool.pop().unwrap_or_else(|| vec![0u8; self.slot]);
                    buf.clear();
                    buf.extend_from_slice(f.data);
                    b = Some(buf);
                }
            }
            self.rings[s].as_mut().unwrap().release();
            n += 1;
            if let Some(buf) = b {
                let t = t.max(self.rx[s].last_ns);
                self.rx[s].last_ns = t;
                self.st.rx_packets += 1;
                self.link.enqueue(t, s, Packet::new(buf, VNET_HDR_LEN));
            }
        }
        n
    }

    /// Receive up to one batch from socket `s` and hand it to the core. Returns the count.
    /// `now` is CLOCK_MONOTONIC at the start of this loop, `offset` is REALTIME − MONOTONIC.
    pub(super) fn rx(&mut self, s: usize, now: u64, offset: u64) -> usize {
        if self.xsk[s].is_some() {
            return self.rx_xsk(s, now);
        }
        if self.rings[s].is_some() {
            return self.rx_ring(s, now, offset);
        }
        for i in 0..BATCH {
            if self.rx[s].mm.buf_mut(i).capacity() < self.slot {
                let b = self.new_buf();
                *self.rx[s].mm.buf_mut(i) = b;
            }
        }
        let n = match self.rx[s].mm.recv(self.socks[s].fd.as_fd(), self.slot, libc::MSG_DONTWAIT) {
            Ok(n) if n > 0 => n,
            _ => return 0,
        };
        // Every frame of this batch arrived before recvmmsg returned: clamp to a clock
        // read after it (the loop's `now` may predate arrivals and make them leave early).
        let now = now.max(now_ns());
        // Kernel receive timestamps are CLOCK_REALTIME: map them onto CLOCK_MONOTONIC
        // with the offset (refreshed every 10 ms).
        // W2E (0) arrives on the west socket (0); E2W (1) on the east socket (1).
        let dir = s;
        for i in 0..n {
            let rb = &mut self.rx[s];
            if rb.mm.truncated(i) || rb.mm.datagram(i).len() < VNET_HDR_LEN + 14 {
                self.st.rx_truncated += 1;
                continue;
            }
            let t = match rb.mm.timestamp_ns(i) {
                Some(real) if self.use_rx_ts => real.wrapping_sub(offset).min(now).max(rb.last_ns),
                _ => now.max(rb.last_ns),
            };
            rb.last_ns = t;
            let b = rb.mm.take(i);
            self.st.rx_packets += 1;
            self.link.enqueue(t, dir, Packet::new(b, VNET_HDR_LEN));
        }
        n
    }

    /// Take up to one batch from the AF_XDP port `s` and hand it to the core.
    pub(super) fn rx_xsk(&mut self, s: usize, now: u64) -> usize {
        let mut x = self.xsk[s].take().unwrap();
        let use_ts = self.use_rx_ts;
        // Every frame on the ring arrived before the clock read at the first frame, which
        // comes after recv has read the ring's producer (see rx_ring): a stamp is clamped
        // to it, never to an earlier clock.
        let mut now_read: Option<u64> = None;
        let slot = self.slot;
        let (link, pool, st, rb) = (&mut self.link, &mut self.pool, &mut self.st, &mut self.rx[s]);
        let n = x.recv(BATCH, |frame, stamp| {
            if frame.len() < 14 {
                st.rx_truncated += 1;
                return;
            }
            let now = *now_read.get_or_insert_with(|| now.max(now_ns()));
            // stamps are CLOCK_MONOTONIC (bpf_ktime_get_ns), the core's clock
            let t = if use_ts && stamp != 0 { stamp.min(now) } else { now };
            let t = t.max(rb.last_ns);
            rb.last_ns = t;
            let mut buf = pool.pop().unwrap_or_else(|| Vec::with_capacity(slot));
            buf.clear();
            buf.extend_from_slice(frame);
            st.rx_packets += 1;
            link.enqueue(t, s, Packet::new(buf, 0));
        });
        self.xsk[s] = Some(x);
        n
    }

    /// Send the released packets of direction `dir` out of the opposite port.
    pub(super) fn tx(&mut self, dir: usize) {
        let mut pkts = std::mem::take(&mut self.by_dir[dir]);
        if pkts.is_empty() {
            self.by_dir[dir] = pkts;
            return;
        }
        if self.xsk[1 - dir].is_some() {
            let mut x = self.xsk[1 - dir].take().unwrap();
            // a corrupted frame goes without the checksum request: its receiver verifies it
            let frames: Vec<(&[u8], u64, bool)> =
                pkts.iter().map(|r| (r.pkt.frame(), r.due_ns, !r.pkt.corrupted)).collect();
            let (st, tol) = (&mut self.st, self.late_tol);
            x.send(&frames, TX_WAIT_NAP_NS, TX_WAIT_MAX_NS, |due, t| {
                st.count_release(due, t, tol);
                st.forwarded += 1;
            });
            drop(frames);
            self.xsk[1 - dir] = Some(x);
            for r in pkts.drain(..) {
                self.recycle(r.pkt.buf);
            }
            self.by_dir[dir] = pkts;
            return;
        }
        for r in pkts.iter_mut() {
            if r.pkt.corrupted && r.pkt.head >= VNET_HDR_LEN {
                // no checksum offload (flags, gso_type = 0): the kernel sends the frame as
                // it is and its receiver verifies the checksum the core completed
                r.pkt.buf[0] = 0;
                r.pkt.buf[1] = 0;
            }
        }
        let fd = self.socks[1 - dir].fd.as_fd();
        let mut t = now_ns();
        let mut off = 0;
        let mut waited = 0;
        while off < pkts.len() {
            let k = (pkts.len() - off).min(1024);
            let frames = pkts[off..off + k].iter().map(|r| r.pkt.buf.as_slice());
            let r = self.tx_batch.send(fd, frames, 0);
            if let Err(e) = &r {
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The receiving side's backlog is full (with RPS the peer's packets
                    // queue for another CPU, netdev_max_backlog deep): wait for it to
                    // drain rather than drop — a late packet is counted as late, a
                    // dropped one would look like congestion loss.
                    Some(libc::ENOBUFS) if waited < TX_WAIT_MAX_NS => {
                        nap(TX_WAIT_NAP_NS);
                        waited += TX_WAIT_NAP_NS;
                        self.st.tx_waits += 1;
                        t = now_ns();
                        continue;
                    }
                    _ => {}
                }
                self.st.tx_errors += 1;
                off += 1;
            } else if let Ok(r) = r {
                for p in &pkts[off..off + r] {
                    self.st.count_release(p.due_ns, t, self.late_tol);
                }
                self.st.forwarded += r as u64;
                off += r;
            }
        }
        for r in pkts.drain(..) {
            self.recycle(r.pkt.buf);
        }
        self.by_dir[dir] = pkts;
    }

    pub(super) fn flush_records(&mut self) {
        self.enc.clear();
        let dirs = self.dirs.clone();
        for r in self.link.drain_stats() {
            if dirs.contains(&(r.dir as usize)) {
                r.encode(&mut self.enc);
            }
        }
        if !self.enc.is_empty() {
            let _ = self.stats_w.lock().unwrap().write_all(&self.enc);
        }
        if let Some(w) = self.events_w.as_ref() {
            self.link.drain_events(&mut self.evbuf);
            self.enc.clear();
            for e in self.evbuf.drain(..) {
                e.encode(&mut self.enc);
            }
            if !self.enc.is_empty() {
                let _ = w.lock().unwrap().write_all(&self.enc);
            }
        }
    }
}
