//! Text output: C-style `%e` values, decimal integers, and files that are gzip-compressed
//! when their name ends in `.gz`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use spdnn_formats::{Csr, SparseMatrix};

use crate::SdgcError;

/// Appends `value` + 1 in decimal (indices are written 1-based).
#[inline]
pub(crate) fn push_index(out: &mut Vec<u8>, value: u32) {
    let mut value = u64::from(value) + 1;
    let mut digits = [0u8; 20];
    let mut k = digits.len();
    loop {
        k -= 1;
        digits[k] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[k..]);
}

/// Formats `value` as C's `printf("%.{precision}e")` does (`6.250000e-02`): mantissa with
/// `precision` decimals, exponent with a sign and at least two digits.
pub(crate) fn c_exp(value: f32, precision: usize) -> String {
    let rust = format!("{:.*e}", precision, f64::from(value));
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let mut out = String::with_capacity(mantissa.len() + 5);
    out.push_str(mantissa);
    let _ = write!(
        out,
        "e{}{:02}",
        if exponent < 0 { '-' } else { '+' },
        exponent.unsigned_abs()
    );
    out
}

/// The text of a weight: C's `%e` (6 decimals, the official files' format) when that reads
/// back as the same `f32`, otherwise `%.8e`, which always does.
pub(crate) fn weight_text(value: f32) -> String {
    let short = c_exp(value, 6);
    if short.parse::<f32>().map(f32::to_bits) == Ok(value.to_bits()) {
        short
    } else {
        c_exp(value, 8)
    }
}

/// Formats values, reusing the text of the previous value when it repeats (the official
/// networks hold a single value).
pub(crate) struct ValueFormatter {
    format: fn(f32) -> String,
    last: Option<(u32, String)>,
}

impl ValueFormatter {
    /// Weights: see [`weight_text`].
    pub(crate) fn weights() -> Self {
        Self {
            format: weight_text,
            last: None,
        }
    }

    /// Image values: the shortest decimal that reads back as the same `f32` (`1` for 1).
    pub(crate) fn shortest() -> Self {
        Self {
            format: |v| format!("{v}"),
            last: None,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, out: &mut Vec<u8>, value: f32) {
        let bits = value.to_bits();
        match &self.last {
            Some((last, text)) if *last == bits => out.extend_from_slice(text.as_bytes()),
            _ => {
                let text = (self.format)(value);
                out.extend_from_slice(text.as_bytes());
                self.last = Some((bits, text));
            }
        }
    }
}

/// The official weight text of `layer`: `row<TAB>col<TAB>value` lines, 1-based, sorted by
/// column then row.
pub(crate) fn layer_text(layer: &Csr) -> Vec<u8> {
    let by_column = layer.transpose();
    let mut out = Vec::with_capacity(layer.nnz() * 22);
    let mut values = ValueFormatter::weights();
    for col in 0..by_column.nrows() {
        let (rows, vals) = by_column.row(col);
        for (&row, &value) in rows.iter().zip(vals) {
            push_index(&mut out, row);
            out.push(b'\t');
            push_index(&mut out, col as u32);
            out.push(b'\t');
            values.push(&mut out, value);
            out.push(b'\n');
        }
    }
    out
}

/// Writes `bytes` to `path`, gzip-compressed when the name ends in `.gz`.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SdgcError> {
    let io = |e| SdgcError::io(path, e);
    let file = File::create(path).map_err(io)?;
    if path.as_os_str().to_string_lossy().ends_with(".gz") {
        let mut encoder =
            flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
        encoder.write_all(bytes).map_err(io)?;
        encoder.finish().map_err(io)?.flush().map_err(io)
    } else {
        let mut writer = BufWriter::new(file);
        writer.write_all(bytes).map_err(io)?;
        writer.flush().map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_exp_matches_printf() {
        assert_eq!(c_exp(0.0625, 6), "6.250000e-02");
        assert_eq!(c_exp(1.0, 6), "1.000000e+00");
        assert_eq!(c_exp(-123456.0, 6), "-1.234560e+05");
        assert_eq!(c_exp(0.0, 6), "0.000000e+00");
        assert_eq!(c_exp(-0.0, 6), "-0.000000e+00");
        assert_eq!(c_exp(1e-30, 6), "1.000000e-30");
        assert_eq!(c_exp(3.0e38, 6), "3.000000e+38");
        assert_eq!(c_exp(1.0e-40, 6), "9.999946e-41");
        // Exact ties round half to even, as glibc does.
        assert_eq!(c_exp(12345675.0, 6), "1.234568e+07");
        assert_eq!(c_exp(12345665.0, 6), "1.234566e+07");
    }

    #[test]
    fn weight_text_round_trips_every_value() {
        let mut state = 12345u64;
        for _ in 0..20000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let value = f32::from_bits((state >> 32) as u32);
            if !value.is_finite() {
                continue;
            }
            let text = weight_text(value);
            assert_eq!(
                text.parse::<f32>().unwrap().to_bits(),
                value.to_bits(),
                "{text}"
            );
        }
        assert_eq!(weight_text(0.0625), "6.250000e-02");
        assert_eq!(weight_text(0.1), "1.000000e-01");
        assert_eq!(weight_text(std::f32::consts::PI), "3.14159274e+00");
    }

    #[test]
    fn indices_are_written_one_based() {
        let mut out = Vec::new();
        for v in [0, 9, 99, u32::MAX] {
            push_index(&mut out, v);
            out.push(b' ');
        }
        assert_eq!(out, b"1 10 100 4294967296 ");
    }
}
