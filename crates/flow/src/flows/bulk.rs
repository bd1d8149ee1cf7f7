//! Contract: the client side of `bulk` and `parallel`. After the 16-byte hello it
//! sends payload from the static buffer as fast as the socket takes it: `limit` bytes
//! then FIN, or without a limit until the flow's stop time (then FIN). The receiving
//! side is `KindState::Sink`, which only counts. `parallel` differs only in how the engine
//! splits `bytes` over the connections (`stripe`).

use crate::conn::Conn;
use crate::wire::{Hello, HelloKind};

pub struct BulkSend {
    pub limit: Option<u64>,
}

pub fn on_connected(c: &mut Conn, b: &BulkSend) {
    let limit = b.limit;
    c.pre = Hello { flow: c.log.flow, conn: c.log.conn, kind: HelloKind::Bulk }.encode();
    match limit {
        Some(n) => {
            c.budget = n;
            c.finish_when_sent = true;
        }
        None => c.budget = u64::MAX,
    }
}

/// Bytes connection `i` of `n` carries when `total` is striped over them: equal
/// shares, the first `total % n` connections one byte more.
pub fn stripe(total: u64, n: u32, i: u32) -> u64 {
    let n = n as u64;
    total / n + if (i as u64) < total % n { 1 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::stripe;

    #[test]
    fn stripes_add_up_to_the_total() {
        for (total, n) in [(1_000_000u64, 4u32), (10, 3), (2, 5), (0, 2)] {
            let parts: Vec<u64> = (0..n).map(|i| stripe(total, n, i)).collect();
            assert_eq!(parts.iter().sum::<u64>(), total);
            assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
        }
    }
}
