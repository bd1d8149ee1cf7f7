//! Contract: which congestion controls the kernel has registered, as it lists them in
//! `AVAILABLE` (whitespace-separated names). A leaf: the loader asks it after attaching,
//! and the error it returns when a name is missing cites the same file.

use std::fs;

pub const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Whether `name` is in the kernel's list (false when the list cannot be read).
pub fn registered(name: &str) -> bool {
    fs::read_to_string(AVAILABLE)
        .map(|s| s.split_whitespace().any(|n| n == name))
        .unwrap_or(false)
}
