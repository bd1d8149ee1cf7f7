//! A packet as the link core sees it: an Ethernet frame in a byte buffer plus metadata.
//!
//! Contract: the frame is `buf[head..]` (the shell may keep a header of its own in
//! `buf[..head]`, e.g. a virtio-net header, and the core never touches it). IPv4 fields
//! are parsed once when the packet is made. The core modifies a frame in two ways only:
//! setting ECN CE in an IPv4 header (RFC 3168 §5), recomputing the header checksum
//! (RFC 791 §3.1, one's-complement sum per RFC 1071), and corrupting it (netem's
//! `corrupt`): the TCP/UDP checksum is first completed in software (RFC 793 §3.1, RFC 768:
//! a frame may arrive with only the pseudo-header sum when its sender left the checksum to
//! offload), then one bit is flipped, and `corrupted` tells the shell to send the frame
//! without asking the kernel for checksum offload, so that the receiver verifies the
//! checksum and drops the frame.

pub const ETH_HLEN: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: u16 = 0x8100;

/// Parsed IPv4 summary (ports are 0 for non-TCP/UDP and non-first fragments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Info {
    /// Offset of the IPv4 header inside the frame.
    pub l3: u16,
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

#[derive(Debug)]
pub struct Packet {
    pub buf: Vec<u8>,
    pub head: usize,
    /// Time the packet reached the link (ns), set by `Link::enqueue`.
    pub arrival_ns: u64,
    /// Time it entered the queue (for sojourn times).
    pub enq_ns: u64,
    /// Flow hash over (src, dst, proto, sport, dport), or the ethertype for non-IPv4.
    pub hash: u32,
    /// Extra one-way delay from per-host rules.
    pub extra_delay_ns: u64,
    pub ip: Option<Ipv4Info>,
    /// A copy of it leaves with it (netem's `duplicate`, decided on arrival).
    pub duplicate: bool,
    /// A bit was flipped after its checksums were completed: send it without checksum
    /// offload (the shell's duty), so the receiver's check drops it.
    pub corrupted: bool,
}

impl Packet {
    /// Wrap a received frame (`buf[head..]`).
    pub fn new(buf: Vec<u8>, head: usize) -> Packet {
        let ip = parse_ipv4(&buf[head.min(buf.len())..]);
        let hash = match ip {
            Some(i) => flow_hash(i.src, i.dst, i.proto, i.sport, i.dport),
            None => {
                let f = &buf[head.min(buf.len())..];
                let et = if f.len() >= 14 {
                    u16::from_be_bytes([f[12], f[13]])
                } else {
                    0
                };
                flow_hash(0, 0, 0, et, 0)
            }
        };
        Packet {
            buf,
            head,
            arrival_ns: 0,
            enq_ns: 0,
            hash,
            extra_delay_ns: 0,
            ip,
            duplicate: false,
            corrupted: false,
        }
    }

    /// A copy: the same bytes (the shell's header included) and metadata, not itself
    /// marked for duplication.
    pub fn copy(&self) -> Packet {
        Packet {
            buf: self.buf.clone(),
            head: self.head,
            arrival_ns: self.arrival_ns,
            enq_ns: self.enq_ns,
            hash: self.hash,
            extra_delay_ns: self.extra_delay_ns,
            ip: self.ip,
            duplicate: false,
            corrupted: self.corrupted,
        }
    }

    /// Flip bit `bit` (0 = the most significant bit of the first byte; taken modulo the
    /// frame's bits) after completing the TCP/UDP checksum, and mark the packet corrupted.
    pub fn corrupt(&mut self, bit: usize) {
        if self.is_empty() {
            return;
        }
        self.complete_l4_checksum();
        let bit = bit % (self.len() * 8);
        self.buf[self.head + bit / 8] ^= 0x80 >> (bit % 8);
        self.corrupted = true;
    }

    /// Write the full TCP or UDP checksum of an unfragmented IPv4 packet (pseudo-header,
    /// RFC 793 §3.1 / RFC 768); a UDP checksum of 0 ("none") is left alone. Other frames
    /// are unchanged.
    pub fn complete_l4_checksum(&mut self) {
        let Some(i) = self.ip else { return };
        let l3 = self.head + i.l3 as usize;
        let b = &self.buf;
        let ihl = ((b[l3] & 0x0f) as usize) * 4;
        let total = u16::from_be_bytes([b[l3 + 2], b[l3 + 3]]) as usize;
        let frag = u16::from_be_bytes([b[l3 + 6], b[l3 + 7]]) & 0x3fff; // MF + offset
        let field = match i.proto {
            6 => 16,
            17 => 6,
            _ => return,
        };
        if frag != 0 || total < ihl + field + 2 || l3 + total > b.len() {
            return;
        }
        let (l4, len) = (l3 + ihl, total - ihl);
        if i.proto == 17 && b[l4 + 6] == 0 && b[l4 + 7] == 0 {
            return;
        }
        self.buf[l4 + field] = 0;
        self.buf[l4 + field + 1] = 0;
        let b = &self.buf;
        let mut pseudo = [0u8; 12];
        pseudo[..8].copy_from_slice(&b[l3 + 12..l3 + 20]);
        pseudo[9] = i.proto;
        pseudo[10..].copy_from_slice(&(len as u16).to_be_bytes());
        let sum = ones_sum(&b[l4..l4 + len], ones_sum(&pseudo, 0));
        let mut c = !fold(sum);
        if i.proto == 17 && c == 0 {
            c = 0xffff; // RFC 768: a computed zero is sent as all ones
        }
        self.buf[l4 + field..l4 + field + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// Make a packet from a bare frame (tests, simulators).
    pub fn from_frame(frame: &[u8]) -> Packet {
        Packet::new(frame.to_vec(), 0)
    }

    pub fn frame(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// Length of the Ethernet frame in bytes (header included, no FCS): what rates count.
    pub fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length above the Ethernet header (what a mahimahi trace opportunity counts).
    pub fn l3_len(&self) -> usize {
        self.len().saturating_sub(ETH_HLEN)
    }

    /// ECN field of an IPv4 packet (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub fn ecn(&self) -> Option<u8> {
        let i = self.ip?;
        Some(self.frame()[i.l3 as usize + 1] & 0x3)
    }

    /// Set CE if the packet is ECN-capable (RFC 3168 §5); returns false (and changes
    /// nothing) for Not-ECT and non-IPv4 packets, which the caller must drop instead.
    pub fn mark_ce(&mut self) -> bool {
        let Some(i) = self.ip else { return false };
        let l3 = self.head + i.l3 as usize;
        let tos = self.buf[l3 + 1];
        match tos & 0x3 {
            0 => false,
            3 => true,
            _ => {
                self.buf[l3 + 1] = tos | 0x3;
                let ihl = ((self.buf[l3] & 0x0f) as usize) * 4;
                self.buf[l3 + 10] = 0;
                self.buf[l3 + 11] = 0;
                let c = ipv4_checksum(&self.buf[l3..l3 + ihl]);
                self.buf[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
                true
            }
        }
    }
}

/// RFC 1071 Internet checksum of `data` (even length expected for IP headers).
pub fn ipv4_checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// One's-complement sum of `data` as 16-bit big-endian words (an odd last byte padded
/// with zero), added to `sum` (RFC 1071); not yet folded.
pub fn ones_sum(data: &[u8], mut sum: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [b] = chunks.remainder() {
        sum += (*b as u64) << 8;
    }
    sum
}

/// Fold a one's-complement sum to 16 bits.
pub fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn parse_ipv4(f: &[u8]) -> Option<Ipv4Info> {
    if f.len() < ETH_HLEN + 20 {
        return None;
    }
    let mut off = 12;
    let mut et = u16::from_be_bytes([f[off], f[off + 1]]);
    if et == ETHERTYPE_VLAN {
        off += 4;
        if f.len() < off + 2 + 20 {
            return None;
        }
        et = u16::from_be_bytes([f[off], f[off + 1]]);
    }
    if et != ETHERTYPE_IPV4 {
        return None;
    }
    let l3 = off + 2;
    let vihl = f[l3];
    if vihl >> 4 != 4 {
        return None;
    }
    let ihl = ((vihl & 0x0f) as usize) * 4;
    if ihl < 20 || f.len() < l3 + ihl {
        return None;
    }
    let src = u32::from_be_bytes([f[l3 + 12], f[l3 + 13], f[l3 + 14], f[l3 + 15]]);
    let dst = u32::from_be_bytes([f[l3 + 16], f[l3 + 17], f[l3 + 18], f[l3 + 19]]);
    let proto = f[l3 + 9];
    let frag_off = u16::from_be_bytes([f[l3 + 6], f[l3 + 7]]) & 0x1fff;
    let l4 = l3 + ihl;
    let (sport, dport) = if (proto == 6 || proto == 17) && frag_off == 0 && f.len() >= l4 + 4 {
        (
            u16::from_be_bytes([f[l4], f[l4 + 1]]),
            u16::from_be_bytes([f[l4 + 2], f[l4 + 3]]),
        )
    } else {
        (0, 0)
    };
    Some(Ipv4Info {
        l3: l3 as u16,
        src,
        dst,
        proto,
        sport,
        dport,
    })
}

/// 32-bit flow hash (splitmix64 finaliser over the packed 5-tuple).
pub fn flow_hash(src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> u32 {
    let mut s = ((src as u64) << 32 | dst as u64)
        ^ ((proto as u64) << 32 | (sport as u64) << 16 | dport as u64).rotate_left(17);
    (crate::rng::splitmix64(&mut s) >> 32) as u32
}

/// Build an Ethernet/IPv4/UDP-or-TCP frame of `frame_len` bytes (tests and simulators).
pub fn build_ipv4_frame(
    frame_len: usize,
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    sport: u16,
    dport: u16,
    ecn: u8,
) -> Vec<u8> {
    let frame_len = frame_len.max(ETH_HLEN + 20 + 8);
    let mut f = vec![0u8; frame_len];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let l3 = ETH_HLEN;
    f[l3] = 0x45;
    f[l3 + 1] = ecn & 3;
    f[l3 + 2..l3 + 4].copy_from_slice(&((frame_len - ETH_HLEN) as u16).to_be_bytes());
    f[l3 + 8] = 64;
    f[l3 + 9] = proto;
    f[l3 + 12..l3 + 16].copy_from_slice(&src);
    f[l3 + 16..l3 + 20].copy_from_slice(&dst);
    let c = ipv4_checksum(&f[l3..l3 + 20]);
    f[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    f[l3 + 20..l3 + 22].copy_from_slice(&sport.to_be_bytes());
    f[l3 + 22..l3 + 24].copy_from_slice(&dport.to_be_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ipv4_five_tuple() {
        let f = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 6, 4000, 5001, 0);
        let p = Packet::from_frame(&f);
        let i = p.ip.unwrap();
        assert_eq!(i.src, 0x0a010102);
        assert_eq!(i.dst, 0x0a020102);
        assert_eq!((i.proto, i.sport, i.dport), (6, 4000, 5001));
        assert_eq!(p.len(), 100);
    }

    #[test]
    fn ce_mark_sets_bits_and_keeps_checksum_valid() {
        let f = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 6, 1, 2, 2);
        let mut p = Packet::from_frame(&f);
        assert!(p.mark_ce());
        assert_eq!(p.ecn(), Some(3));
        assert_eq!(
            ipv4_checksum(&p.frame()[14..34]),
            0,
            "header checksum verifies"
        );
    }

    #[test]
    fn not_ect_is_not_marked() {
        let f = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 6, 1, 2, 0);
        let mut p = Packet::from_frame(&f);
        assert!(!p.mark_ce());
        assert_eq!(p.frame(), &f[..]);
        let arp = {
            let mut a = vec![0u8; 60];
            a[12] = 0x08;
            a[13] = 0x06;
            a
        };
        let mut q = Packet::from_frame(&arp);
        assert!(q.ip.is_none());
        assert!(!q.mark_ce());
    }

    /// The receiver's check of a TCP/UDP checksum over IPv4: the one's-complement sum of
    /// pseudo-header and segment (checksum included) folds to all ones.
    fn l4_checksum_ok(f: &[u8]) -> bool {
        let l3 = ETH_HLEN;
        let total = u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]) as usize;
        let mut pseudo = [0u8; 12];
        pseudo[..8].copy_from_slice(&f[l3 + 12..l3 + 20]);
        pseudo[9] = f[l3 + 9];
        pseudo[10..].copy_from_slice(&((total - 20) as u16).to_be_bytes());
        fold(ones_sum(&f[l3 + 20..l3 + total], ones_sum(&pseudo, 0))) == 0xffff
    }

    fn bits_differing(a: &[u8], b: &[u8]) -> u32 {
        a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
    }

    #[test]
    fn a_partial_checksum_is_completed_before_the_bit_flip() {
        for (proto, field) in [(6u8, 16usize), (17, 6)] {
            let mut f = build_ipv4_frame(301, [10, 1, 1, 2], [10, 2, 1, 2], proto, 40000, 5001, 0);
            for (i, b) in f[ETH_HLEN + 40..].iter_mut().enumerate() {
                *b = (i * 7 + 3) as u8; // a payload
            }
            // what a sender leaving the checksum to offload puts there: not the checksum
            f[ETH_HLEN + 20 + field] = 0x12;
            f[ETH_HLEN + 20 + field + 1] = 0x34;
            assert!(!l4_checksum_ok(&f));
            let mut p = Packet::from_frame(&f);
            p.complete_l4_checksum();
            assert!(l4_checksum_ok(p.frame()), "proto {proto}: completed checksum verifies");
            let done = p.frame().to_vec();
            assert!(!p.corrupted);
            // flip a payload bit: exactly one bit differs and the receiver's check fails
            p.corrupt(8 * (ETH_HLEN + 100) + 3);
            assert!(p.corrupted);
            assert_eq!(bits_differing(&done, p.frame()), 1);
            assert!(!l4_checksum_ok(p.frame()), "proto {proto}: corrupted frame verifies");
        }
    }

    #[test]
    fn every_bit_position_is_reachable_and_the_ip_header_check_catches_its_own() {
        let f = build_ipv4_frame(64, [10, 1, 1, 2], [10, 2, 1, 2], 1, 0, 0, 0);
        for bit in 0..f.len() * 8 {
            let mut p = Packet::from_frame(&f);
            p.corrupt(bit + f.len() * 8); // taken modulo the frame's bits
            assert_eq!(bits_differing(&f, p.frame()), 1, "bit {bit}");
            assert_eq!((p.frame()[bit / 8] ^ f[bit / 8]) as usize, 0x80 >> (bit % 8));
            if (8 * ETH_HLEN..8 * (ETH_HLEN + 20)).contains(&bit) {
                assert_ne!(ipv4_checksum(&p.frame()[ETH_HLEN..ETH_HLEN + 20]), 0, "bit {bit}");
            }
        }
    }

    #[test]
    fn udp_without_a_checksum_and_fragments_are_left_alone() {
        let f = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 17, 1, 2, 0);
        let mut p = Packet::from_frame(&f);
        p.complete_l4_checksum();
        assert_eq!(p.frame(), &f[..], "UDP checksum 0 means none (RFC 768)");
        let mut g = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 6, 1, 2, 0);
        g[ETH_HLEN + 6] = 0x20; // more fragments
        let mut p = Packet::from_frame(&g);
        p.complete_l4_checksum();
        assert_eq!(p.frame(), &g[..], "a fragment's checksum covers the whole datagram");
    }

    #[test]
    fn a_copy_is_the_same_frame_and_not_itself_duplicated() {
        let mut p = Packet::new(vec![9u8; 120], 10);
        p.duplicate = true;
        p.extra_delay_ns = 5;
        let c = p.copy();
        assert_eq!((c.buf.clone(), c.head, c.extra_delay_ns, c.duplicate), (p.buf.clone(), 10, 5, false));
    }
}
