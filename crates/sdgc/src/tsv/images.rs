//! Images (input feature vectors) and truth categories, in TSV or MatrixMarket form.

use std::path::Path;

use spdnn_formats::{Csr, SparseMatrix};

use super::parse::{LineShape, parse_lines};
use super::{check_index, concat, matrix_error, neuron_limit, read_text, write};
use crate::SdgcError;
use crate::limits::{MAX_ROWS, over_limit};

const IMAGE_SHAPE: LineShape = LineShape {
    ints: 2,
    value: true,
    names: ["image", "neuron", "value"],
};
const MTX_PATTERN_SHAPE: LineShape = LineShape {
    ints: 2,
    value: false,
    names: ["row", "column", ""],
};
const MTX_VALUE_SHAPE: LineShape = LineShape {
    ints: 2,
    value: true,
    names: ["row", "column", "value"],
};
const CATEGORY_SHAPE: LineShape = LineShape {
    ints: 1,
    value: false,
    names: ["category", "", ""],
};

/// Reads images as a `rows × neurons` matrix (row = image).
///
/// `path` is the official `image<TAB>neuron<TAB>value` TSV (1-based; plain or gzip) or a
/// MatrixMarket coordinate file (`pattern`, `real` or `integer`, `general`; row = image,
/// column = feature). `rows = None` keeps every image: as many rows as the largest image
/// id (TSV) or the size line says (MatrixMarket), at most
/// [`MAX_ROWS`](crate::limits::MAX_ROWS); `Some(r)` keeps images `1..=r` and errors when
/// the file holds fewer than `r` images (a TSV holds as many as its largest image id: it
/// cannot express trailing empty images), so rows are never silently padded. Errors name
/// the line of a malformed entry, of an image wider than `neurons`, of a duplicate, of an
/// image id above the row limit, and an empty TSV.
pub fn read_images(path: &Path, neurons: usize, rows: Option<usize>) -> Result<Csr, SdgcError> {
    let text = read_text(path)?;
    parse_images(&text, path, neurons, rows)
}

/// [`read_images`] of a file's bytes (gzip is detected and decompressed); `path` names
/// the file in errors.
pub fn parse_images(
    bytes: &[u8],
    path: &Path,
    neurons: usize,
    rows: Option<usize>,
) -> Result<Csr, SdgcError> {
    let text = super::decompress(bytes, path)?;
    let text = &text[..];
    let neuron_limit = neuron_limit(neurons, path)?;
    if let Some(r) = rows {
        crate::limits::check_rows(r).map_err(|e| SdgcError::invalid(path, e.to_string()))?;
    }
    if text.starts_with(b"%%MatrixMarket") {
        return read_mtx_images(text, path, neurons, rows);
    }
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(SdgcError::invalid(path, "empty file: no images"));
    }
    let keep = rows.map_or(MAX_ROWS as u64, |r| r as u64);
    let chunks = parse_lines(
        text,
        1,
        path,
        &IMAGE_SHAPE,
        true,
        |bytes| (Vec::with_capacity(bytes / 12 + 1), 0u64),
        |acc: &mut (Vec<(u32, u32, f32)>, u64), _line, ([image, neuron], value)| {
            if image == 0 {
                return Err("image index 0: indices are 1-based".into());
            }
            if neuron == 0 || neuron > neuron_limit {
                return Err(wider_message(neuron, neuron_limit));
            }
            acc.1 = acc.1.max(image);
            if image > keep {
                if rows.is_none() {
                    return Err(format!(
                        "image {image}: {}",
                        over_limit("images", image, MAX_ROWS, "MAX_ROWS")
                    ));
                }
                return Ok(());
            }
            acc.0.push((image as u32 - 1, neuron as u32 - 1, value));
            Ok(())
        },
    )?;
    let last = chunks.iter().map(|c| c.1).max().unwrap_or(0);
    let triplets = concat(chunks.into_iter().map(|c| c.0).collect());
    let nrows = match rows {
        Some(r) if (r as u64) > last => {
            return Err(SdgcError::invalid(
                path,
                format!(
                    "{r} rows were asked for, but the file holds {last} images (its largest \
                     image id)"
                ),
            ));
        }
        Some(r) => r,
        None => last as usize,
    };
    Csr::from_triplets(nrows, neurons, &triplets)
        .map_err(|e| matrix_error(e, text, path, &IMAGE_SHAPE))
}

fn wider_message(neuron: u64, limit: u64) -> String {
    if neuron == 0 {
        "neuron index 0: indices are 1-based".into()
    } else {
        format!("neuron index {neuron} exceeds N = {limit}: the image is wider than the network")
    }
}

/// A MatrixMarket header: field kind, size line and the line the entries start on.
struct MtxHeader {
    pattern: bool,
    nrows: u64,
    ncols: u64,
    entries: u64,
    size_line: u64,
    body_start: usize,
    body_line: u64,
}

/// Parses the banner, comments and size line of a coordinate MatrixMarket file.
fn mtx_header(text: &[u8], path: &Path) -> Result<MtxHeader, SdgcError> {
    let parse_error = |line: u64, message: String| SdgcError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut pos = 0;
    let mut line = 0u64;
    let mut pattern = None;
    while pos < text.len() {
        line += 1;
        let end = memchr::memchr(b'\n', &text[pos..]).map_or(text.len(), |k| pos + k);
        let content = String::from_utf8_lossy(&text[pos..end]);
        let content = content.trim();
        pos = (end + 1).min(text.len());
        if line == 1 {
            let words: Vec<String> = content
                .split_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            pattern = match words[..] {
                ["%%matrixmarket", "matrix", "coordinate", field, "general"] => match field {
                    "pattern" => Some(true),
                    "real" | "integer" | "double" => Some(false),
                    _ => {
                        return Err(parse_error(
                            1,
                            format!("unsupported MatrixMarket field '{field}'"),
                        ));
                    }
                },
                _ => {
                    return Err(parse_error(
                        1,
                        "expected '%%MatrixMarket matrix coordinate pattern|real|integer general'"
                            .into(),
                    ));
                }
            };
            continue;
        }
        if content.is_empty() || content.starts_with('%') {
            continue;
        }
        let numbers: Vec<Option<u64>> =
            content.split_whitespace().map(|w| w.parse().ok()).collect();
        return match numbers[..] {
            [Some(nrows), Some(ncols), Some(entries)] => Ok(MtxHeader {
                pattern: pattern.unwrap_or(true),
                nrows,
                ncols,
                entries,
                size_line: line,
                body_start: pos,
                body_line: line + 1,
            }),
            _ => Err(parse_error(
                line,
                format!("expected the size line 'rows columns entries', found '{content}'"),
            )),
        };
    }
    Err(SdgcError::invalid(
        path,
        "MatrixMarket file without a size line",
    ))
}

fn read_mtx_images(
    text: &[u8],
    path: &Path,
    neurons: usize,
    rows: Option<usize>,
) -> Result<Csr, SdgcError> {
    let header = mtx_header(text, path)?;
    if header.ncols > neurons as u64 {
        return Err(SdgcError::Parse {
            path: path.to_path_buf(),
            line: header.size_line,
            message: format!(
                "the images have {} features, wider than the network's N = {neurons}",
                header.ncols
            ),
        });
    }
    let size_error = |message: String| SdgcError::Parse {
        path: path.to_path_buf(),
        line: header.size_line,
        message,
    };
    match rows {
        None if header.nrows > MAX_ROWS as u64 => {
            return Err(size_error(over_limit(
                "images",
                header.nrows,
                MAX_ROWS,
                "MAX_ROWS",
            )));
        }
        Some(r) if r as u64 > header.nrows => {
            return Err(size_error(format!(
                "{r} rows were asked for, but the size line announces {} images",
                header.nrows
            )));
        }
        _ => {}
    }
    let shape = if header.pattern {
        &MTX_PATTERN_SHAPE
    } else {
        &MTX_VALUE_SHAPE
    };
    let keep = rows.map_or(header.nrows, |r| r as u64);
    let (nrows, ncols) = (header.nrows, header.ncols);
    let chunks = parse_lines(
        &text[header.body_start..],
        header.body_line,
        path,
        shape,
        true,
        |bytes| (Vec::with_capacity(bytes / 8 + 1), 0u64),
        |acc: &mut (Vec<(u32, u32, f32)>, u64), _line, ([row, col], value)| {
            check_index("row", row, nrows)?;
            check_index("column", col, ncols)?;
            acc.1 += 1;
            if row <= keep {
                acc.0.push((row as u32 - 1, col as u32 - 1, value));
            }
            Ok(())
        },
    )?;
    let found: u64 = chunks.iter().map(|c| c.1).sum();
    if found != header.entries {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the size line (line {}) announces {} entries, found {found}",
                header.size_line, header.entries
            ),
        ));
    }
    let triplets = concat(chunks.into_iter().map(|c| c.0).collect());
    let result_rows = rows.unwrap_or(nrows as usize);
    Csr::from_triplets(result_rows, neurons, &triplets)
        .map_err(|e| mtx_matrix_error(e, text, &header, path))
}

/// Like [`matrix_error`], for the body of a MatrixMarket file (lines offset by the header).
fn mtx_matrix_error(
    error: spdnn_formats::FormatError,
    text: &[u8],
    header: &MtxHeader,
    path: &Path,
) -> SdgcError {
    let shape = if header.pattern {
        &MTX_PATTERN_SHAPE
    } else {
        &MTX_VALUE_SHAPE
    };
    match matrix_error(error, &text[header.body_start..], path, shape) {
        SdgcError::Parse {
            path,
            line,
            message,
        } => SdgcError::Parse {
            path,
            line: line + header.body_line - 1,
            message: message.replace("already given on line ", "already given on body line "),
        },
        other => other,
    }
}

/// Writes images in the official TSV form (`image<TAB>neuron<TAB>value`, 1-based, by image
/// then neuron; values in their shortest exact decimal, `1` for 1), gzip-compressed when
/// the name ends in `.gz`, or as a MatrixMarket coordinate file when it ends in `.mtx`
/// (`pattern` when every value is 1, `real` otherwise).
pub fn write_images(path: &Path, images: &Csr) -> Result<(), SdgcError> {
    let name = path.as_os_str().to_string_lossy();
    let mtx = name.ends_with(".mtx") || name.ends_with(".mtx.gz");
    let pattern = mtx && images.values().iter().all(|&v| v == 1.0);
    let mut out = Vec::with_capacity(images.nnz() * 14 + 128);
    if mtx {
        let field = if pattern { "pattern" } else { "real" };
        out.extend_from_slice(
            format!(
                "%%MatrixMarket matrix coordinate {field} general\n{} {} {}\n",
                images.nrows(),
                images.ncols(),
                images.nnz()
            )
            .as_bytes(),
        );
    }
    let separator = if mtx { b' ' } else { b'\t' };
    let mut values = write::ValueFormatter::shortest();
    for (row, col, value) in images.triplets() {
        write::push_index(&mut out, row);
        out.push(separator);
        write::push_index(&mut out, col);
        if !pattern {
            out.push(separator);
            values.push(&mut out, value);
        }
        out.push(b'\n');
    }
    write::write_file(path, &out)
}

/// Reads truth categories: 1-based row ids, one per line, strictly ascending (plain or
/// gzip), or the MatrixMarket form (the rows of an `images × 1` pattern, in any order).
///
/// Errors name the line of a malformed id, of a 0, of an id not greater than the one before
/// (TSV), or of a repeated id (MatrixMarket). An empty file means no categories.
pub fn read_categories(path: &Path) -> Result<Vec<u32>, SdgcError> {
    let text = read_text(path)?;
    parse_categories(&text, path)
}

/// [`read_categories`] of a file's bytes (gzip is detected and decompressed); `path`
/// names the file in errors.
pub fn parse_categories(bytes: &[u8], path: &Path) -> Result<Vec<u32>, SdgcError> {
    let text = super::decompress(bytes, path)?;
    let text = &text[..];
    if text.starts_with(b"%%MatrixMarket") {
        return read_mtx_categories(text, path);
    }
    let chunks = parse_lines(
        text,
        1,
        path,
        &CATEGORY_SHAPE,
        false,
        |bytes| Vec::with_capacity(bytes / 5 + 1),
        |acc: &mut Vec<u32>, _line, ([id, _], _)| {
            check_index("category", id, u64::from(u32::MAX))?;
            if let Some(&previous) = acc.last()
                && u64::from(previous) >= id
            {
                return Err(format!(
                    "category {id} is not greater than the previous {previous}: ids must be strictly ascending"
                ));
            }
            acc.push(id as u32);
            Ok(())
        },
    )?;
    Ok(concat(chunks))
}

fn read_mtx_categories(text: &[u8], path: &Path) -> Result<Vec<u32>, SdgcError> {
    let header = mtx_header(text, path)?;
    if header.ncols != 1 || header.nrows > u64::from(u32::MAX) {
        return Err(SdgcError::Parse {
            path: path.to_path_buf(),
            line: header.size_line,
            message: format!(
                "categories are an images × 1 matrix with at most 2^32-1 rows, found {} × {}",
                header.nrows, header.ncols
            ),
        });
    }
    let shape = if header.pattern {
        &MTX_PATTERN_SHAPE
    } else {
        &MTX_VALUE_SHAPE
    };
    let nrows = header.nrows;
    let first_line = header.body_line;
    let chunks = parse_lines(
        &text[header.body_start..],
        first_line,
        path,
        shape,
        false,
        |_| Vec::new(),
        |acc: &mut Vec<(u32, u64)>, line, ([row, col], _)| {
            check_index("row", row, nrows)?;
            check_index("column", col, 1)?;
            acc.push((row as u32, line + first_line - 1));
            Ok(())
        },
    )?;
    let mut ids = concat(chunks);
    if ids.len() as u64 != header.entries {
        return Err(SdgcError::invalid(
            path,
            format!(
                "the size line (line {}) announces {} entries, found {}",
                header.size_line,
                header.entries,
                ids.len()
            ),
        ));
    }
    ids.sort_unstable();
    if let Some(pair) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
        let (first, second) = (pair[0].1.min(pair[1].1), pair[0].1.max(pair[1].1));
        return Err(SdgcError::Parse {
            path: path.to_path_buf(),
            line: second,
            message: format!("category {} repeats line {first}", pair[0].0),
        });
    }
    Ok(ids.into_iter().map(|(id, _)| id).collect())
}

/// Writes categories one per line (the official truth format; gzip when the name ends in
/// `.gz`). Errors when they are not strictly ascending 1-based ids.
pub fn write_categories(path: &Path, categories: &[u32]) -> Result<(), SdgcError> {
    if let Some(k) = categories.iter().position(|&c| c == 0) {
        return Err(SdgcError::invalid(
            path,
            format!("category #{} is 0: ids are 1-based", k + 1),
        ));
    }
    if let Some(k) = categories.windows(2).position(|w| w[0] >= w[1]) {
        return Err(SdgcError::invalid(
            path,
            format!(
                "categories must be strictly ascending: {} is followed by {}",
                categories[k],
                categories[k + 1]
            ),
        ));
    }
    let mut out = Vec::with_capacity(categories.len() * 6);
    for &c in categories {
        write::push_index(&mut out, c - 1);
        out.push(b'\n');
    }
    write::write_file(path, &out)
}
