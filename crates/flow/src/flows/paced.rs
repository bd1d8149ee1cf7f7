//! Contract: the client side of `paced` (application-limited traffic). After the hello
//! (kind 1) the application "writes" `write_bytes` at the connect time and then after
//! each gap drawn from `rng::GapSource`. Write times follow their own schedule
//! (previous write time + gap), never drift with loop latency; when the socket is full
//! the unwritten bytes wait in `budget` (a backlog, as an application's buffer would).
//! Stops after `bytes` (if given) or at the flow's stop time.

use super::Ctx;
use crate::conn::Conn;
use crate::rng::GapSource;
use crate::timers::Timer;
use crate::wire::{Hello, HelloKind};

pub struct Paced {
    pub gaps: GapSource,
    pub write_bytes: u64,
    /// Bytes the application may still write (None = unlimited).
    pub left: Option<u64>,
    pub next_ns: u64,
    pub stopped: bool,
}

fn write_one(c: &mut Conn, p: &mut Paced, ctx: &mut Ctx) {
    if p.stopped {
        return;
    }
    let n = match p.left {
        Some(l) => l.min(p.write_bytes),
        None => p.write_bytes,
    };
    if let Some(l) = &mut p.left {
        *l -= n;
    }
    let done = p.left == Some(0);
    if done {
        p.stopped = true;
    }
    p.next_ns += p.gaps.next_gap_ns();
    let next = p.next_ns;
    c.add_budget(n);
    if done {
        c.finish_when_sent = true;
    } else {
        ctx.timers.at(next, Timer::Conn(ctx.slot, c.uid));
    }
}

pub fn on_connected(c: &mut Conn, p: &mut Paced, ctx: &mut Ctx) {
    c.pre = Hello { flow: c.log.flow, conn: c.log.conn, kind: HelloKind::Paced }.encode();
    p.next_ns = ctx.now;
    write_one(c, p, ctx);
}

pub fn on_timer(c: &mut Conn, p: &mut Paced, ctx: &mut Ctx) {
    write_one(c, p, ctx);
}
