//! Strict-priority classes ("two queues"): each packet goes to the first class whose
//! address list contains its IPv4 source or destination, or whose port list contains its
//! TCP/UDP source or destination port; unmatched packets go to the last class. Each class
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
}

impl ClassMatch {
    fn matches(&self, p: &Packet) -> bool {
        let Some(i) = p.ip else { return false };
        self.ips.iter().any(|&a| a == i.src || a == i.dst)
            || (i.sport != 0 && self.ports.iter().any(|&x| x == i.sport || x == i.dport))
    }
}

pub struct Classes {
    classes: Vec<(ClassMatch, DropTail)>,
}

impl Classes {
    pub fn new(spec: Vec<(ClassMatch, Limit)>) -> Classes {
        Classes {
            classes: spec
                .into_iter()
                .map(|(m, l)| (m, DropTail::new(l)))
                .collect(),
        }
    }
    pub fn class_len(&self, i: usize) -> usize {
        self.classes[i].1.len_pkts()
    }
}

impl Qdisc for Classes {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QCtx) {
        let n = self.classes.len();
        let i = self
            .classes
            .iter()
            .position(|(m, _)| m.matches(&pkt))
            .unwrap_or(n - 1);
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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn priority_class_is_served_first_and_limits_are_per_class() {
        let mut h = Harness::new(1);
        let hi = ClassMatch {
            ips: vec![],
            ports: vec![7],
        };
        let mut q = Classes::new(vec![
            (hi, Limit::packets(5)),
            (ClassMatch::default(), Limit::packets(3)),
        ]);
        for i in 0..10 {
            h.enq(&mut q, i, pkt(1000, 1, 0)); // sport 1: default class
            h.enq(&mut q, i, pkt(500, 7, 0)); // sport 7: priority class
        }
        assert_eq!(q.class_len(0), 5);
        assert_eq!(q.class_len(1), 3);
        let order: Vec<usize> = std::iter::from_fn(|| h.deq(&mut q, 100))
            .map(|p| p.len())
            .collect();
        assert_eq!(order, vec![500, 500, 500, 500, 500, 1000, 1000, 1000]);
    }
}
