//! Readers and writers of the challenge's official text formats.
//!
//! - Weights `n{N}-l{i}.tsv`: lines `row<TAB>col<TAB>value`, 1-based, row = input neuron,
//!   written sorted by column then row with values as C's `%e` (`6.250000e-02`).
//! - A network: a folder of such files (plain or `.tsv.gz`), the official
//!   `neuron{N}.tar.gz`, or a binary [`cache`](crate::cache) file.
//! - Images `sparse-images-{N}.tsv`: `image<TAB>neuron<TAB>value`, 1-based, or a
//!   MatrixMarket `.mtx` (row = image, column = feature).
//! - Truth `neuron{N}-l{L}-categories.tsv`: one 1-based row per line, ascending, or the
//!   MatrixMarket form (the rows of an `images × 1` pattern).
//!
//! Every reader accepts gzip-compressed files (detected by their magic bytes), and every
//! error names the file and, where there is one, the 1-based line.

mod images;
mod network;
mod parse;
mod write;

use std::io::Read;
use std::path::Path;

use spdnn_formats::{Csr, FormatError};

use crate::SdgcError;
use parse::{LineShape, parse_lines};

pub use images::{
    parse_categories, parse_images, read_categories, read_images, write_categories, write_images,
};
pub use network::{read_network, write_network_dir};

/// The official name of layer `layer` (1-based) of an `neurons`-neuron network:
/// `n{N}-l{i}.tsv`.
pub fn layer_file_name(neurons: usize, layer: usize) -> String {
    format!("n{neurons}-l{layer}.tsv")
}

const WEIGHT_SHAPE: LineShape = LineShape {
    ints: 2,
    value: true,
    names: ["row", "column", "value"],
};

/// Parses the text of one official weight file into an `neurons × neurons` matrix.
///
/// `path` is only used in error messages. Errors on a malformed line, an index of 0 or
/// above `neurons`, a NaN or infinite value, a duplicate entry (each naming the 1-based
/// line) and on a text without entries.
pub fn parse_layer(text: &[u8], neurons: usize, path: &Path) -> Result<Csr, SdgcError> {
    let limit = neuron_limit(neurons, path)?;
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(SdgcError::invalid(path, "empty file: no weights"));
    }
    let chunks = parse_lines(
        text,
        1,
        path,
        &WEIGHT_SHAPE,
        true,
        |bytes| Vec::with_capacity(bytes / 20 + 1),
        |acc: &mut Vec<(u32, u32, f32)>, _line, ([row, col], value)| {
            check_index("row", row, limit)?;
            check_index("column", col, limit)?;
            acc.push((row as u32 - 1, col as u32 - 1, value));
            Ok(())
        },
    )?;
    let triplets = concat(chunks);
    Csr::from_triplets(neurons, neurons, &triplets)
        .map_err(|e| matrix_error(e, text, path, &WEIGHT_SHAPE))
}

/// Reads one weight file (`.tsv` or gzip-compressed) as an `neurons × neurons` matrix.
pub fn read_layer(path: &Path, neurons: usize) -> Result<Csr, SdgcError> {
    let text = read_text(path)?;
    parse_layer(&text, neurons, path)
}

/// Writes `layer` in the official format (gzip-compressed when the name ends in `.gz`).
///
/// Values that C's `%e` (6 decimals) does not preserve exactly are written with 8
/// decimals, so every file reads back to the same matrix. A layer without entries gives
/// an empty file, which [`read_layer`] refuses.
pub fn write_layer(path: &Path, layer: &Csr) -> Result<(), SdgcError> {
    write::write_file(path, &write::layer_text(layer))
}

/// The largest 1-based neuron index allowed: `neurons`, checked against
/// [`MAX_NEURONS`](crate::limits::MAX_NEURONS).
fn neuron_limit(neurons: usize, path: &Path) -> Result<u64, SdgcError> {
    crate::limits::check_neurons(neurons).map_err(|e| SdgcError::invalid(path, e.to_string()))?;
    Ok(neurons as u64)
}

/// Checks a 1-based index against `1..=limit`.
#[inline(always)]
fn check_index(name: &str, index: u64, limit: u64) -> Result<(), String> {
    if index == 0 || index > limit {
        return Err(if index == 0 {
            format!("{name} index 0: indices are 1-based")
        } else {
            format!("{name} index {index} exceeds the size {limit}")
        });
    }
    Ok(())
}

/// Concatenates per-chunk vectors (without copying when there is one).
fn concat<T>(mut chunks: Vec<Vec<T>>) -> Vec<T> {
    if chunks.len() == 1 {
        return chunks.pop().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(chunks.iter().map(Vec::len).sum());
    for chunk in chunks {
        all.extend(chunk);
    }
    all
}

/// Turns a matrix error into one naming the line: a duplicate is looked up in the text.
fn matrix_error(error: FormatError, text: &[u8], path: &Path, shape: &LineShape) -> SdgcError {
    if let FormatError::DuplicateEntry { row, col } = error {
        let target = [u64::from(row) + 1, u64::from(col) + 1];
        let lines = parse_lines(
            text,
            1,
            path,
            shape,
            false,
            |_| Vec::new(),
            |acc: &mut Vec<u64>, line, (ints, _)| {
                if ints == target {
                    acc.push(line);
                }
                Ok(())
            },
        );
        if let Ok(lines) = lines
            && let [first, second, ..] = lines.concat()[..]
        {
            return SdgcError::Parse {
                path: path.to_path_buf(),
                line: second,
                message: format!(
                    "duplicate entry ({}, {}): already given on line {first}",
                    target[0], target[1]
                ),
            };
        }
    }
    SdgcError::Matrix {
        path: path.to_path_buf(),
        cause: error,
    }
}

/// The two bytes every gzip stream starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// `bytes` decompressed when they are gzip (detected by the magic), else as they are;
/// errors name `path`. What every reader does with a file's bytes before parsing them.
pub fn decompress<'a>(
    bytes: &'a [u8],
    path: &Path,
) -> Result<std::borrow::Cow<'a, [u8]>, SdgcError> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    gunzip_if_needed(bytes.to_vec(), path).map(std::borrow::Cow::Owned)
}

/// Reads a whole file, decompressing it when it is gzip.
pub(crate) fn read_text(path: &Path) -> Result<Vec<u8>, SdgcError> {
    let bytes = std::fs::read(path).map_err(|e| SdgcError::io(path, e))?;
    gunzip_if_needed(bytes, path)
}

/// Decompresses `bytes` when they start with the gzip magic; errors name `path`.
pub(crate) fn gunzip_if_needed(bytes: Vec<u8>, path: &Path) -> Result<Vec<u8>, SdgcError> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(bytes);
    }
    let mut text = Vec::with_capacity(bytes.len() * 4);
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_end(&mut text)
        .map_err(|e| {
            SdgcError::invalid(
                path,
                format!("cannot decompress (truncated or corrupt gzip?): {e}"),
            )
        })?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_formats::SparseMatrix;

    #[test]
    fn layer_names_follow_the_official_pattern() {
        assert_eq!(layer_file_name(1024, 1), "n1024-l1.tsv");
        assert_eq!(layer_file_name(65536, 1920), "n65536-l1920.tsv");
    }

    #[test]
    fn layers_parse_into_csr_with_zero_based_indices() {
        let m = parse_layer(b"1\t2\t0.5\n3\t1\t-1\n", 3, Path::new("x.tsv")).unwrap();
        assert_eq!(m.nnz(), 2);
        assert_eq!(m.row(0), (&[1u32][..], &[0.5f32][..]));
        assert_eq!(m.row(2), (&[0u32][..], &[-1.0f32][..]));
    }

    #[test]
    fn duplicates_name_both_lines() {
        let err = parse_layer(b"1\t2\t1\n2\t2\t1\n1\t2\t3\n", 3, Path::new("x.tsv")).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, SdgcError::Parse { line: 3, .. }), "{text}");
        assert!(text.contains("line 1"), "{text}");
    }

    #[test]
    fn written_layers_are_sorted_by_column_then_row() {
        let m = Csr::from_triplets(3, 3, &[(2, 0, 1.0), (0, 1, 0.0625), (0, 0, 2.0)]).unwrap();
        let text = write::layer_text(&m);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "1\t1\t2.000000e+00\n3\t1\t1.000000e+00\n1\t2\t6.250000e-02\n"
        );
    }
}
