//! Contract: validation of single JSON numbers and strings of the link's config, each
//! returning the value in the core's units or a `ConfigError` naming the key. JSON
//! numbers arrive as f64 (integers or floats are both accepted) and are rounded.

use std::net::Ipv4Addr;

use super::ConfigError;

pub(super) fn nonneg_int(key: &str, v: f64) -> Result<u64, ConfigError> {
    if !v.is_finite() || v < 0.0 {
        return Err(ConfigError::new(
            key,
            format!("must be a non-negative number, got {v}"),
        ));
    }
    Ok(v.round() as u64)
}

/// An optional integer key: validated by `validate` when present, else `default`.
pub(super) fn opt_int(
    key: &str,
    v: Option<f64>,
    validate: fn(&str, f64) -> Result<u64, ConfigError>,
    default: u64,
) -> Result<u64, ConfigError> {
    Ok(v.map(|v| validate(key, v)).transpose()?.unwrap_or(default))
}

pub(super) fn positive_int(key: &str, v: f64) -> Result<u64, ConfigError> {
    let x = nonneg_int(key, v)?;
    if x == 0 {
        return Err(ConfigError::new(key, format!("must be positive, got {v}")));
    }
    Ok(x)
}

pub(super) fn prob(key: &str, v: f64) -> Result<f64, ConfigError> {
    if !(0.0..=1.0).contains(&v) {
        return Err(ConfigError::new(
            key,
            format!("must be a probability in [0, 1], got {v}"),
        ));
    }
    Ok(v)
}

pub(super) fn ipv4(key: &str, s: &str) -> Result<u32, ConfigError> {
    s.parse::<Ipv4Addr>()
        .map(u32::from)
        .map_err(|_| ConfigError::new(key, format!("not an IPv4 address: {s:?}")))
}

pub(super) fn rate(key: &str, v: f64) -> Result<u64, ConfigError> {
    if !v.is_finite() || v < 1.0 {
        return Err(ConfigError::new(
            key,
            format!("rate must be at least 1 bit/s (null = unlimited), got {v}"),
        ));
    }
    Ok(v.round() as u64)
}

/// A rate schedule's step: a rate, or 0 for an outage (nothing is sent until the next step).
pub(super) fn schedule_rate(key: &str, v: f64) -> Result<u64, ConfigError> {
    if v == 0.0 {
        return Ok(0);
    }
    rate(key, v).map_err(|_| {
        ConfigError::new(
            key,
            format!("rate must be 0 (an outage) or at least 1 bit/s (null = unlimited), got {v}"),
        )
    })
}
