//! CoDel — Controlled Delay (RFC 8289, K. Nichols, V. Jacobson, A. McGregor, J. Iyengar).
//!
//! The state machine is the pseudocode of RFC 8289 §5: a packet's sojourn time (dequeue
//! time − enqueue time) is compared with `target` (`dodequeue`). A sojourn below `target`,
//! or at most one MTU left queued behind the packet (`bytes() <= maxpacket`, counted after
//! the packet left), clears `first_above_time`; otherwise the first such dequeue sets it
//! to `now + interval`, and from then on a dequeue at or after it is "ok to drop".
//! The first ok-to-drop dequeue enters the dropping state: that packet is dropped and
//! the next drop is scheduled by the control law `drop_next = t + interval/√count`
//! (`control_law`; §3.3: the drop rate grows with the square root of the drops); each
//! later drop at `now ≥ drop_next` increments `count` and advances `drop_next` from its
//! previous value. A dequeue that is not ok to drop (or an empty
//! queue) leaves the dropping state. Re-entering resumes the previous episode's growth:
//! `count = count − lastcount` when that is more than 1 and the last `drop_next` is less
//! than 16·interval ago, else `count = 1` (`dequeue`). With ECN on, ECN-capable packets are
//! marked CE instead of dropped (RFC 3168 §5) and the marked packet is delivered.
//!
//! `CodelState` works on any `Fifo`, so FQ-CoDel (RFC 8290) runs it per flow queue, with
//! the backlog of the whole discipline as `bytes()` (see `CodelState::dequeue`).

use super::{signal, Fifo, Limit, QCtx, Qdisc};
use crate::packet::Packet;
use crate::stats::EV_DROP_QUEUE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    /// Largest packet: no drop while at most this many bytes are queued (RFC 8289 §5.4).
    pub mtu_bytes: u64,
    pub ecn: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            mtu_bytes: 1514,
            ecn: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct CodelState {
    first_above_time: Option<u64>,
    drop_next: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

fn control_law(t: u64, interval: u64, count: u32) -> u64 {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as u64
}

impl CodelState {
    /// RFC 8289 §5 `dodequeue`: pop the head and decide whether it may be dropped.
    /// `others`: bytes queued beside `q` on the same link (see `dequeue`).
    fn dodequeue(
        &mut self,
        q: &mut Fifo,
        p: &CodelParams,
        now: u64,
        others: u64,
    ) -> (Option<Packet>, bool) {
        let Some(pkt) = q.pop() else {
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(pkt.enq_ns);
        let mut ok_to_drop = false;
        if sojourn < p.target_ns || q.bytes() + others <= p.mtu_bytes {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + p.interval_ns),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(pkt), ok_to_drop)
    }

    /// RFC 8289 §5 `dequeue` from `q`. `others` is the number of bytes queued for the
    /// same link outside `q` (FQ-CoDel's other flow queues; 0 for plain CoDel): the
    /// backlog test keeps the *link* busy (§5: never let the queue shrink below what
    /// arrives in one MTU's transmission time), so it counts everything the link has
    /// queued, as Linux's fq_codel does, not one flow queue alone: otherwise many flows
    /// with one or two packets each would never be dropped whatever their sojourn.
    pub fn dequeue(
        &mut self,
        q: &mut Fifo,
        p: &CodelParams,
        cx: &mut QCtx,
        others: u64,
    ) -> Option<Packet> {
        let now = cx.now;
        let (mut pkt, mut ok) = self.dodequeue(q, p, now, others);
        if pkt.is_none() {
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                let cur = pkt.take().unwrap();
                if let Some(marked) = signal(cur, p.ecn, cx, q.len()) {
                    self.drop_next = control_law(self.drop_next, p.interval_ns, self.count);
                    return Some(marked);
                }
                let (np, nok) = self.dodequeue(q, p, now, others);
                pkt = np;
                ok = nok;
                if pkt.is_none() || !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, p.interval_ns, self.count);
                }
            }
        } else if ok {
            let cur = pkt.take().unwrap();
            let kept = signal(cur, p.ecn, cx, q.len());
            if kept.is_some() {
                pkt = kept;
            } else {
                pkt = self.dodequeue(q, p, now, others).0;
            }
            self.dropping = true;
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1 && now.saturating_sub(self.drop_next) < 16 * p.interval_ns {
                self.count = delta;
            }
            self.drop_next = control_law(now, p.interval_ns, self.count);
            self.lastcount = self.count;
        }
        pkt
    }
}

/// CoDel on a single FIFO with a hard buffer limit (tail drop when full).
pub struct Codel {
    p: CodelParams,
    limit: Limit,
    q: Fifo,
    st: CodelState,
}

impl Codel {
    pub fn new(p: CodelParams, limit: Limit) -> Codel {
        Codel {
            p,
            limit,
            q: Fifo::default(),
            st: CodelState::default(),
        }
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        if self.limit.fits(self.q.len(), self.q.bytes(), pkt.len()) {
            cx.sink
                .enqueued(cx.now, pkt.hash, pkt.len(), self.q.len() + 1);
            self.q.push(pkt);
        } else {
            cx.sink
                .dropped(cx.now, EV_DROP_QUEUE, pkt.hash, pkt.len(), self.q.len());
        }
    }
    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet> {
        self.st.dequeue(&mut self.q, &self.p, cx, 0)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
}
