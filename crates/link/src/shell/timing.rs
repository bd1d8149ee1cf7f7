//! Contract: the forwarding threads' loop and how it spends time. It sleeps in
//! `epoll_wait` on the ports, a timerfd armed `spin` before the core's next deadline, and
//! the signalfd; within `spin` of a deadline it busy-polls the ports instead (docs/link.md
//! has the measurements behind this). A SCHED_FIFO worker that has not blocked for
//! `rt_busy_ns` spends a phase as an ordinary task (or naps) so the kernel's RT
//! throttling never stops it for the rest of a second.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;

use super::error::ShellError;
use super::worker::Worker;
use ccarena_sys::clock::{mono_and_real_offset, nap, now_ns};
use ccarena_sys::epoll::{Epoll, EV_IN};
use ccarena_sys::sched;
use ccarena_sys::signal;
use ccarena_sys::timer::TimerFd;

/// Longest sleep of an idle worker (ns): bounds how stale the statistics files get.
const IDLE_WAKE_NS: u64 = 100_000_000;
/// Smallest busy-poll window before a deadline (ns).
const MIN_SPIN_NS: u64 = 5_000;

impl Worker {
    /// Forward until a signal arrives on `sigfd` (or another worker saw one).
    ///
    /// Timing: sleep in epoll with a timerfd armed `spin` before the next deadline, then
    /// busy-poll the ports until the deadline. `spin` adapts to the measured timer
    /// wake-up lateness like a TCP retransmission timer adapts to RTT (RFC 6298 §2:
    /// smoothed mean + 4 × mean deviation), clamped to [`MIN_SPIN_NS`, `spin_ns`].
    pub fn run(&mut self, sigfd: BorrowedFd<'_>) -> Result<(), ShellError> {
        let timer = TimerFd::new().map_err(|e| ShellError::new("timerfd_create", "CLOCK_MONOTONIC", e))?;
        // Lazy receive (rx_poll_ns > 0): arrivals carry kernel timestamps, so they need
        // not wake the thread; it reads the rings at least every rx_poll_ns (less than
        // the smallest one-way delay) and at every deadline. Otherwise every arrival
        // wakes it through epoll.
        // While nothing is queued or in flight the sockets are watched even in lazy mode,
        // so an idle link sleeps until traffic comes instead of polling every rx_poll_ns.
        let lazy = self.rx_poll_ns > 0;
        // Duplicates of the ports' fds (the same sockets) for epoll: the loop lends the
        // ports themselves to `rx` and `tx`.
        let sock_fds: Vec<OwnedFd> = self
            .dirs
            .iter()
            .map(|&d| match &self.xsk[d] {
                Some(x) => x.as_fd().try_clone_to_owned(),
                None => self.socks[d].fd.try_clone(),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| ShellError::new("dup", "port socket", e))?;
        let mut watching = true;
        let mut fds: Vec<BorrowedFd<'_>> = sock_fds.iter().map(|f| f.as_fd()).collect();
        fds.push(timer.as_fd());
        fds.push(sigfd);
        let mut ep = Epoll::new(fds.len()).map_err(|e| ShellError::new("epoll_create1", "-", e))?;
        for (i, &fd) in fds.iter().enumerate() {
            ep.add(fd, EV_IN, i as u64).map_err(|e| ShellError::new("epoll_ctl", "ADD", e))?;
        }
        let mut ready = Vec::with_capacity(fds.len());
        let mut next_sig_check = 0u64;
        let dirs = self.dirs.clone();
        let (mut wake_mean, mut wake_dev) = (self.spin_ns as f64 / 2.0, self.spin_ns as f64 / 8.0);
        let mut spin = self.spin_ns;
        let (mut now, mut offset) = mono_and_real_offset();
        let mut next_offset = now + 10_000_000;
        let mut last_block = now;
        let mut fair_until: Option<u64> = None;
        loop {
            self.st.loops += 1;
            let mut got = 0;
            now = now_ns();
            for &d in &dirs {
                got += self.rx(d, now, offset);
            }
            now = now_ns();
            self.link.poll(now, &mut self.out);
            if !self.out.is_empty() {
                for r in self.out.drain(..) {
                    self.by_dir[r.dir].push(r);
                }
                for &d in &dirs {
                    self.tx(d);
                }
            }
            if now >= next_sig_check {
                self.flush_records();
                if signal::pending_on(sigfd) {
                    self.stop.store(true, Ordering::SeqCst);
                }
                if self.stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                next_sig_check = now + 5_000_000;
            }
            if now >= next_offset {
                (now, offset) = mono_and_real_offset();
                next_offset = now + 10_000_000;
            }
            if fair_until.is_some_and(|t| now >= t) {
                // FIFO again; restored (or lost) here, so `realtime` says how it ended
                self.rt = sched::set_fifo(self.rt_prio);
                fair_until = None;
                last_block = now;
            }
            if self.rt
                && fair_until.is_none()
                && self.rt_nap_ns > 0
                && now.saturating_sub(last_block) > self.rt_busy_ns
            {
                // The kernel stops RT tasks past their budget (950 ms of each second)
                // for the rest of the second: a 50 ms stall of the link. Stay under it,
                // preferably as an ordinary task (Config::rt_yield "fair"): that time is
                // not RT time, and the thread forwards on, losing the CPU only to a task
                // that waits (for that task's time slice). Or sleep, which gives every
                // other task on this CPU the gap (and delays what is due meanwhile).
                if self.rt_fair && sched::set_other() {
                    fair_until = Some(now + self.fair_ns);
                    self.st.fair_phases += 1;
                } else {
                    if self.rt_fair {
                        self.rt = sched::set_fifo(self.rt_prio);
                    }
                    self.rt_fair = false;
                    nap(self.rt_nap_ns);
                    self.st.naps += 1;
                    last_block = now_ns();
                }
            }
            if got > 0 {
                continue;
            }
            now = now_ns();
            let dl = self.link.next_deadline();
            if dl.is_some_and(|d| d <= now + spin) {
                self.st.spins += 1;
                continue; // busy-poll the last stretch before a deadline
            }
            // Statistics intervals are closed with their own timestamps whenever the
            // core is polled, so an idle link need not wake for them: it wakes for
            // traffic, signals, deadlines, and every IDLE_WAKE_NS to flush the files.
            let mut wake = now + IDLE_WAKE_NS;
            if let Some(d) = dl {
                wake = wake.min(d - spin);
            }
            let want_watch = !lazy || dl.is_none();
            if want_watch != watching {
                // the sockets stay registered; only what they are watched for changes
                for (i, fd) in sock_fds.iter().enumerate() {
                    let _ = ep.modify(fd.as_fd(), if want_watch { EV_IN } else { 0 }, i as u64);
                }
                watching = want_watch;
            }
            if !watching {
                wake = wake.min(now + self.rx_poll_ns);
            }
            if fair_until.take().is_some() {
                // blocking gives the CPU away anyway; wake up as a FIFO task
                self.rt = sched::set_fifo(self.rt_prio);
            }
            timer.arm_at(wake).map_err(|e| ShellError::new("timerfd_settime", "CLOCK_MONOTONIC", e))?;
            self.st.sleeps += 1;
            // woken by a port, the timer or a signal: which one does not matter here
            let _ = ep.wait(-1, &mut ready);
            timer.drain();
            let now = now_ns();
            last_block = now;
            if now >= wake {
                let sample = (now - wake) as f64;
                wake_dev += ((sample - wake_mean).abs() - wake_dev) / 4.0;
                wake_mean += (sample - wake_mean) / 8.0;
                self.st.wake_late.add(now - wake);
                spin = ((wake_mean + 4.0 * wake_dev) as u64)
                    .clamp(MIN_SPIN_NS.min(self.spin_ns), self.spin_ns);
            }
        }
    }
}

/// Length of an ordinary-task phase after `busy_ns` as a FIFO task. Each phase and each
/// busy stretch ends at the first loop pass past its time, so the FIFO share must stay
/// below the kernel's RT budget (runtime/period, 950/1000 by default) with room: the
/// phase is at least 1.5 x busy x (period - runtime) / runtime (79 us for the defaults),
/// and never shorter than `nap_ns`.
pub fn fair_phase_ns(busy_ns: u64, nap_ns: u64, budget_us: Option<(u64, u64)>) -> u64 {
    match budget_us {
        Some((runtime, period)) if runtime > 0 => {
            let need = busy_ns as u128 * 3 * (period - runtime) as u128 / (2 * runtime as u128);
            nap_ns.max(need as u64)
        }
        _ => nap_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::fair_phase_ns;

    #[test]
    fn fair_phases_keep_the_fifo_share_under_the_kernels_rt_budget() {
        // 950/1000 ms: 1 ms busy needs > 52.6 us outside RT; 1.5 x that, rounded down
        assert_eq!(fair_phase_ns(1_000_000, 50_000, Some((950_000, 1_000_000))), 78_947);
        let f = fair_phase_ns(1_000_000, 50_000, Some((950_000, 1_000_000)));
        assert!(1_000_000.0 / (1_000_000.0 + f as f64) < 0.95 - 0.01);
        // a longer nap asked for is kept; no budget (unlimited or unreadable): the nap
        assert_eq!(fair_phase_ns(1_000_000, 200_000, Some((950_000, 1_000_000))), 200_000);
        assert_eq!(fair_phase_ns(1_000_000, 50_000, None), 50_000);
        // a tighter budget asks for more
        assert_eq!(fair_phase_ns(1_000_000, 50_000, Some((800_000, 1_000_000))), 375_000);
    }
}

