//! Strict-priority classes ("two queues"): each packet goes to the first class that
//! matches it: its address list contains the IPv4 source or destination, or its port
//! list contains the TCP/UDP source or destination port, and (if the class lists
//! protocols) the IP protocol is one of them; a class with only protocols matches on the
//! protocol alone, a class with no criteria matches nothing. Unmatched packets go to the
//! default class (the last one unless configured). Each class
//! is a drop-tail FIFO with its own buffer limit; dequeue always serves the
//! lowest-numbered non-empty class first (strict priority, as in the priority queueing of
//! RFC 2475's PHB model: higher classes can starve lower ones).

use super::droptail::DropTail;
use super::{Limit, QCtx, Qdisc};
use crate::packet::Packet;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ClassMatch {
    pub ips: Vec<u32>,
    pub ports: Vec<u16>,
    /// IP protocol numbers (1 ICMP, 6 TCP, 17 UDP); empty = any.
    pub protocols: Vec<u8>,
}

impl ClassMatch {
    fn matches(&self, p: &Packet) -> bool {
        let Some(i) = p.ip else { return false };
        if !self.protocols.is_empty() && !self.protocols.contains(&i.proto) {
            return false;
        }
        if self.ips.is_empty() && self.ports.is_empty() {
            return !self.protocols.is_empty();
        }
        self.ips.iter().any(|&a| a == i.src || a == i.dst)
            || (i.sport != 0 && self.ports.iter().any(|&x| x == i.sport || x == i.dport))
    }
}

pub struct Classes {
    classes: Vec<(ClassMatch, DropTail)>,
    default: usize,
}

impl Classes {
    /// `default`: class of unmatched packets (None = the last class).
    pub fn new(spec: Vec<(ClassMatch, Limit)>, default: Option<usize>) -> Classes {
        let n = spec.len();
        Classes {
            classes: spec
                .into_iter()
                .map(|(m, l)| (m, DropTail::new(l)))
                .collect(),
            default: default.unwrap_or(n - 1).min(n - 1),
        }
    }
    pub fn class_len(&self, i: usize) -> usize {
        self.classes[i].1.len_pkts()
    }
}

impl Qdisc for Classes {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        let i = self
            .classes
            .iter()
            .position(|(m, _)| m.matches(&pkt))
            .unwrap_or(self.default);
        self.classes[i].1.enqueue(pkt, cx);
    }
    fn dequeue(&mut self, cx: &mut QCtx) -> Option<Packet> {
        self.classes.iter_mut().find_map(|(_, q)| q.dequeue(cx))
    }
    fn len_pkts(&self) -> usize {
        self.classes.iter().map(|(_, q)| q.len_pkts()).sum()
    }
    fn len_bytes(&self) -> u64 {
        self.classes.iter().map(|(_, q)| q.len_bytes()).sum()
    }
}
