//! The largest sizes the readers and generators accept, checked before anything of that
//! size is allocated: a file or a flag naming an absurd size is an error naming the limit,
//! not an attempt to allocate it.
//!
//! Each limit is far above the challenge's largest case (N = 65536, L = 1920, 60000 rows)
//! and far below what would exhaust a machine's memory on bookkeeping alone (a matrix of
//! `MAX_ROWS` empty rows still costs 64 MiB of row offsets).

use crate::SdgcError;

/// The most neurons (N, a layer's width): 2^24, 256 times the largest official N.
pub const MAX_NEURONS: usize = 1 << 24;

/// The most layers of a network: 2^16, 34 times the largest official L.
pub const MAX_LAYERS: usize = 1 << 16;

/// The most rows (images) of an input: 2^24, 279 times the official 60000.
pub const MAX_ROWS: usize = 1 << 24;

/// Checks `1 ≤ neurons ≤ MAX_NEURONS`.
pub fn check_neurons(neurons: usize) -> Result<(), SdgcError> {
    check("neurons (N)", neurons, MAX_NEURONS, "MAX_NEURONS")
}

/// Checks `1 ≤ layers ≤ MAX_LAYERS`.
pub fn check_layers(layers: usize) -> Result<(), SdgcError> {
    check("layers (L)", layers, MAX_LAYERS, "MAX_LAYERS")
}

/// Checks `1 ≤ rows ≤ MAX_ROWS`.
pub fn check_rows(rows: usize) -> Result<(), SdgcError> {
    check("rows", rows, MAX_ROWS, "MAX_ROWS")
}

/// The message for a size above its limit.
pub(crate) fn over_limit(what: &str, size: u64, limit: usize, name: &str) -> String {
    format!("{size} {what} exceed the limit of {limit} (spdnn_sdgc::limits::{name})")
}

fn check(what: &str, size: usize, limit: usize, name: &str) -> Result<(), SdgcError> {
    if size == 0 {
        return Err(SdgcError::Parameter(format!(
            "0 {what}: at least 1 is needed"
        )));
    }
    if size > limit {
        return Err(SdgcError::Parameter(over_limit(
            what,
            size as u64,
            limit,
            name,
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_inclusive_and_named() {
        assert!(check_neurons(MAX_NEURONS).is_ok());
        assert!(check_layers(1).is_ok());
        let error = check_rows(MAX_ROWS + 1).unwrap_err().to_string();
        assert!(
            error.contains("16777216") && error.contains("MAX_ROWS"),
            "{error}"
        );
        let error = check_layers(1_000_000_000_000).unwrap_err().to_string();
        assert!(
            error.contains("65536") && error.contains("MAX_LAYERS"),
            "{error}"
        );
        assert!(check_neurons(0).is_err());
    }
}
