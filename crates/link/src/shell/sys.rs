//! Thin, checked wrappers around the Linux calls the shell uses: AF_PACKET sockets,
//! timerfd, signalfd, epoll, CLOCK_MONOTONIC. Each error says what was attempted.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

pub const ETH_P_ALL: u16 = 0x0003;
const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_USER: u32 = 1;

/// Size of `struct virtio_net_hdr` that precedes every frame with PACKET_VNET_HDR.
pub const VNET_HDR_LEN: usize = 10;

#[derive(Debug)]
pub struct SysError {
    pub attempt: String,
    pub object: String,
    pub cause: io::Error,
}

impl std::fmt::Display for SysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.attempt, self.object, self.cause)
    }
}

fn check(rc: libc::c_int, attempt: &str, object: &str) -> Result<libc::c_int, SysError> {
    if rc < 0 {
        Err(SysError {
            attempt: attempt.into(),
            object: object.into(),
            cause: io::Error::last_os_error(),
        })
    } else {
        Ok(rc)
    }
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (CLOCK_MONOTONIC now, CLOCK_REALTIME − CLOCK_MONOTONIC) in ns.
///
/// The REALTIME read is bracketed by two MONOTONIC reads and the pair with the tightest
/// bracket of a few tries is kept, so a preemption between the reads cannot skew the
/// offset (which maps kernel receive timestamps onto CLOCK_MONOTONIC).
pub fn mono_and_real_offset() -> (u64, u64) {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let mut best = (u64::MAX, 0u64, 0u64); // (bracket width, mono midpoint, real)
    for _ in 0..5 {
        let m1 = read(libc::CLOCK_MONOTONIC);
        let r = read(libc::CLOCK_REALTIME);
        let m2 = read(libc::CLOCK_MONOTONIC);
        let w = m2.saturating_sub(m1);
        if w < best.0 {
            best = (w, m1 + w / 2, r);
        }
        if w < 2_000 {
            break;
        }
    }
    (best.1, best.2.wrapping_sub(best.1))
}

/// The SO_TIMESTAMPNS receive time (CLOCK_REALTIME ns) carried by a received message.
pub fn rx_timestamp(h: &libc::msghdr) -> Option<u64> {
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

fn setopt<T>(
    fd: RawFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
    what: &str,
    ifname: &str,
) -> Result<(), SysError> {
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    check(rc, what, ifname).map(|_| ())
}

/// One AF_PACKET socket bound to one interface, used for both directions of I/O.
pub struct PacketSocket {
    pub fd: RawFd,
    pub ifname: String,
    pub ifindex: i32,
    pub mtu: usize,
}

impl PacketSocket {
    pub fn open(ifname: &str) -> Result<PacketSocket, SysError> {
        // Protocol 0 first: the socket receives nothing until it is bound to the interface.
        let s = PacketSocket::describe(ifname)?;
        let (fd, ifindex) = (s.fd, s.ifindex);
        let one: libc::c_int = 1;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_VNET_HDR,
            &one,
            "setsockopt PACKET_VNET_HDR",
            ifname,
        )?;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            &one,
            "setsockopt PACKET_IGNORE_OUTGOING",
            ifname,
        )?;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &one,
            "setsockopt PACKET_QDISC_BYPASS",
            ifname,
        )?;
        setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one,
            "setsockopt SO_TIMESTAMPNS",
            ifname,
        )?;
        let buf: libc::c_int = 64 << 20;
        if setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &buf,
            "setsockopt SO_RCVBUFFORCE",
            ifname,
        )
        .is_err()
        {
            setopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &buf,
                "setsockopt SO_RCVBUF",
                ifname,
            )?;
        }
        let sbuf: libc::c_int = 16 << 20;
        if setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            &sbuf,
            "setsockopt SO_SNDBUFFORCE",
            ifname,
        )
        .is_err()
        {
            setopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                &sbuf,
                "setsockopt SO_SNDBUF",
                ifname,
            )?;
        }
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        check(
            unsafe {
                libc::bind(
                    fd,
                    &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                )
            },
            "bind AF_PACKET socket",
            ifname,
        )?;
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex,
            mr_type: PACKET_MR_PROMISC,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        setopt(
            fd,
            SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mreq,
            "setsockopt PACKET_ADD_MEMBERSHIP promisc",
            ifname,
        )?;
        Ok(s)
    }

    /// A socket that only describes the interface (index, MTU): protocol 0 and unbound,
    /// so it receives nothing. Used when AF_XDP carries the frames.
    pub fn describe(ifname: &str) -> Result<PacketSocket, SysError> {
        let cname = CString::new(ifname).map_err(|_| SysError {
            attempt: "look up interface".into(),
            object: ifname.into(),
            cause: io::Error::from(io::ErrorKind::InvalidInput),
        })?;
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(SysError {
                attempt: "look up interface".into(),
                object: ifname.into(),
                cause: io::Error::last_os_error(),
            });
        }
        let fd = check(
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) },
            "open AF_PACKET socket",
            ifname,
        )?;
        let mut s = PacketSocket {
            fd,
            ifname: ifname.into(),
            ifindex,
            mtu: 1500,
        };
        s.mtu = s.query_mtu().unwrap_or(1500);
        Ok(s)
    }

    fn query_mtu(&self) -> Option<usize> {
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (i, b) in self.ifname.bytes().take(15).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        let rc = unsafe { libc::ioctl(self.fd, libc::SIOCGIFMTU, &mut ifr) };
        if rc == 0 {
            Some(unsafe { ifr.ifr_ifru.ifru_mtu } as usize)
        } else {
            None
        }
    }

    /// Packets dropped by the kernel for this socket since the last call
    /// (PACKET_STATISTICS, which resets the counters): (received, dropped).
    pub fn take_stats(&self) -> (u64, u64) {
        let mut st = [0u32; 2];
        let mut len = 8 as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                st.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            )
        };
        if rc < 0 {
            (0, 0)
        } else {
            (st[0] as u64, st[1] as u64)
        }
    }
}

/// A TPACKET_V2 receive ring (packet(7) "PACKET_RX_RING"): the kernel copies each frame
/// into a shared slot in the sender's context and flips the slot's status; the shell
/// reads slots without a system call per packet. V2 rather than V3 because V3 hands
/// blocks to user space only when they are full or a timer (≥ 1 ms) expires, which would
/// add milliseconds of delay at low packet rates.
pub struct RxRing {
    base: *mut u8,
    len: usize,
    frame_size: usize,
    block_size: usize,
    per_block: usize,
    frames: usize,
    idx: usize,
}

// SAFETY: the mapping is owned by one worker thread at a time.
unsafe impl Send for RxRing {}

/// One received frame in the ring: (vnet header + Ethernet frame, realtime stamp ns).
pub struct RingFrame<'a> {
    pub data: &'a [u8],
    /// Length of the frame on the wire (larger than `data` when truncated).
    pub wire_len: usize,
    pub truncated: bool,
    pub real_ns: u64,
}

impl RxRing {
    /// Set up a ring of `frames` slots of `frame_size` bytes on `sock` (before bind use
    /// is fine; the socket must have PACKET_VNET_HDR set already).
    pub fn new(sock: &PacketSocket, frame_size: usize, frames: usize) -> Result<RxRing, SysError> {
        let fd = sock.fd;
        let v: libc::c_int = TPACKET_V2;
        setopt(
            fd,
            SOL_PACKET,
            PACKET_VERSION,
            &v,
            "setsockopt PACKET_VERSION TPACKET_V2",
            &sock.ifname,
        )?;
        let block_size = (1usize << 22).max(frame_size);
        let per_block = block_size / frame_size;
        let blocks = frames.div_ceil(per_block);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        };
        setopt(
            fd,
            SOL_PACKET,
            PACKET_RX_RING,
            &req,
            "setsockopt PACKET_RX_RING",
            &sock.ifname,
        )?;
        let len = block_size * blocks;
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd,
                0,
            )
        };
        let base = if base == libc::MAP_FAILED {
            // MAP_LOCKED may be refused (RLIMIT_MEMLOCK): retry without it.
            let b = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if b == libc::MAP_FAILED {
                return Err(SysError {
                    attempt: "mmap rx ring".into(),
                    object: sock.ifname.clone(),
                    cause: io::Error::last_os_error(),
                });
            }
            b
        } else {
            base
        };
        Ok(RxRing {
            base: base as *mut u8,
            len,
            frame_size,
            block_size,
            per_block,
            frames: blocks * per_block,
            idx: 0,
        })
    }

    /// Offset of slot `i`: slots never straddle blocks, so a block may end in padding.
    fn offset(&self, i: usize) -> usize {
        (i / self.per_block) * self.block_size + (i % self.per_block) * self.frame_size
    }

    fn status(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned field of each frame slot.
        unsafe { &*(self.base.add(self.offset(i)) as *const std::sync::atomic::AtomicU32) }
    }

    /// The next filled slot, if any. Call `release` after copying it out.
    pub fn peek(&self) -> Option<RingFrame<'_>> {
        let st = self
            .status(self.idx)
            .load(std::sync::atomic::Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        let f = unsafe {
            std::slice::from_raw_parts(self.base.add(self.offset(self.idx)), self.frame_size)
        };
        let rd32 = |o: usize| u32::from_ne_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
        let len = rd32(4) as usize;
        let snap = rd32(8) as usize;
        let mac = u16::from_ne_bytes([f[12], f[13]]) as usize;
        let real_ns = rd32(16) as u64 * 1_000_000_000 + rd32(20) as u64;
        let start = mac.saturating_sub(VNET_HDR_LEN);
        let end = (mac + snap).min(self.frame_size);
        Some(RingFrame {
            data: &f[start..end],
            wire_len: len,
            truncated: snap < len || mac < VNET_HDR_LEN,
            real_ns,
        })
    }

    pub fn release(&mut self) {
        self.status(self.idx)
            .store(0, std::sync::atomic::Ordering::Release);
        self.idx = (self.idx + 1) % self.frames;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

pub struct TimerFd(pub RawFd);

impl TimerFd {
    pub fn new() -> Result<TimerFd, SysError> {
        let fd = check(
            unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            },
            "timerfd_create",
            "CLOCK_MONOTONIC",
        )?;
        Ok(TimerFd(fd))
    }
    /// Arm at absolute CLOCK_MONOTONIC time `t_ns`.
    pub fn arm_at(&self, t_ns: u64) {
        let t = t_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (t / 1_000_000_000) as i64,
                tv_nsec: (t % 1_000_000_000) as i64,
            },
        };
        unsafe {
            libc::timerfd_settime(self.0, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
    }
    pub fn clear(&self) {
        let mut b = [0u8; 8];
        unsafe { libc::read(self.0, b.as_mut_ptr() as *mut libc::c_void, 8) };
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        unsafe { libc::close(self.0) };
    }
}

/// SIGTERM/SIGINT delivered through a signalfd (the signals are blocked).
pub struct SignalFd(pub RawFd);

impl SignalFd {
    pub fn new() -> Result<SignalFd, SysError> {
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            check(
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()),
                "block signals",
                "SIGTERM/SIGINT",
            )?;
            let fd = check(
                libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC),
                "signalfd",
                "SIGTERM/SIGINT",
            )?;
            Ok(SignalFd(fd))
        }
    }
    /// True if a signal is pending (consumes it).
    pub fn pending(&self) -> bool {
        let mut b = [0u8; 128];
        unsafe { libc::read(self.0, b.as_mut_ptr() as *mut libc::c_void, 128) > 0 }
    }
}

/// True if a signal is pending on signalfd `fd` (consumes it).
pub fn signal_pending(fd: RawFd) -> bool {
    let mut b = [0u8; 128];
    unsafe { libc::read(fd, b.as_mut_ptr() as *mut libc::c_void, 128) > 0 }
}

/// Run the calling thread under SCHED_FIFO at `prio` (best effort: false if refused).
pub fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// Run the calling thread under the ordinary scheduler (SCHED_OTHER). It keeps the nice
/// value set earlier with `set_nice` (the kernel carries it across policy changes).
pub fn set_other() -> bool {
    let p = libc::sched_param { sched_priority: 0 };
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) == 0 }
}

/// Nice value of the calling thread (it matters only while it runs SCHED_OTHER).
pub fn set_nice(nice: i32) -> bool {
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) == 0 }
}

/// The kernel's budget for RT tasks: (sched_rt_runtime_us, sched_rt_period_us), None
/// when unlimited (runtime -1) or unreadable.
pub fn rt_budget_us() -> Option<(u64, u64)> {
    let rd = |f: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).ok()?.trim().parse().ok()
    };
    let (r, p) = (rd("sched_rt_runtime_us")?, rd("sched_rt_period_us")?);
    (r >= 0 && p > 0 && r < p).then_some((r as u64, p as u64))
}

/// Pin the calling thread to `cpu` (false if refused, e.g. the CPU is not in this
/// process's cpuset).
pub fn pin_to_cpu(cpu: usize) -> bool {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

impl Drop for SignalFd {
    fn drop(&mut self) {
        unsafe { libc::close(self.0) };
    }
}

pub struct Epoll(pub RawFd);

impl Epoll {
    pub fn new(fds: &[RawFd]) -> Result<Epoll, SysError> {
        let ep = check(
            unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) },
            "epoll_create1",
            "-",
        )?;
        for (i, &fd) in fds.iter().enumerate() {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: i as u64,
            };
            check(
                unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) },
                "epoll_ctl",
                "ADD",
            )?;
        }
        Ok(Epoll(ep))
    }
    /// Watch `fd` for readability or stop watching it (it stays registered).
    pub fn watch(&self, fd: RawFd, on: bool) {
        let mut ev = libc::epoll_event {
            events: if on { libc::EPOLLIN as u32 } else { 0 },
            u64: fd as u64,
        };
        unsafe { libc::epoll_ctl(self.0, libc::EPOLL_CTL_MOD, fd, &mut ev) };
    }

    /// Block until one of the descriptors is readable (or a signal interrupts).
    pub fn wait(&self) {
        let mut evs: [libc::epoll_event; 8] = unsafe { std::mem::zeroed() };
        unsafe { libc::epoll_wait(self.0, evs.as_mut_ptr(), 8, -1) };
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        unsafe { libc::close(self.0) };
    }
}

/// Sleep for `ns` (relative, CLOCK_MONOTONIC).
pub fn nap(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut()) };
}

/// Let hrtimers (timerfd) fire without the default 50 µs slack.
pub fn set_timer_slack_ns(ns: u64) {
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// (user s, system s, max RSS KiB) of this process.
pub fn rusage() -> (f64, f64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_maxrss as u64)
}
