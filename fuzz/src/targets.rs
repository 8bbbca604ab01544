//! The fuzz targets: each hands one input to a reader, which must return `Ok` or `Err`
//! (whose message is formatted), never panic, hang or allocate without bound.

use std::path::Path;

use spdnn_sdgc::{cache, tsv};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// One reader under test.
pub struct Target {
    /// The name given to `spdnn-fuzz run`, and the folder of its corpus.
    pub name: &'static str,
    /// What it reads.
    pub description: &'static str,
    /// Runs the reader on one input.
    pub run: fn(&[u8]),
    /// Tokens the mutator inserts (magic words, separators, keywords).
    pub dictionary: &'static [&'static [u8]],
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "weights",
        description: "a weights TSV (n{N}-l{i}.tsv, plain or gzip) as an N = 1024 layer",
        run: weights,
        dictionary: TEXT_TOKENS,
    },
    Target {
        name: "images_tsv",
        description: "an images TSV (sparse-images-{N}.tsv, plain or gzip), N = 1024",
        run: images_tsv,
        dictionary: TEXT_TOKENS,
    },
    Target {
        name: "images_mtx",
        description: "a MatrixMarket images file, N = 1024",
        run: images_mtx,
        dictionary: MTX_TOKENS,
    },
    Target {
        name: "truth",
        description: "a truth file (categories TSV or MatrixMarket, plain or gzip)",
        run: truth,
        dictionary: MTX_TOKENS,
    },
    Target {
        name: "network_cache",
        description: "the binary network and input cache (crates/sdgc/src/cache.rs), as given \
                      and with its checksums recomputed",
        run: network_cache,
        dictionary: CACHE_TOKENS,
    },
    Target {
        name: "xy_cache",
        description: "the XY network cache (crates/xy/src/cache.rs), as given and with its \
                      checksums recomputed",
        run: xy_cache,
        dictionary: CACHE_TOKENS,
    },
    Target {
        name: "safetensors",
        description: "a .safetensors network (crates/sdgc/src/trained.rs), as given and with \
                      its header length recomputed",
        run: safetensors,
        dictionary: SAFETENSORS_TOKENS,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

const TEXT_TOKENS: &[&[u8]] = &[
    b"\t",
    b"\n",
    b"\r\n",
    b" ",
    b"6.250000e-02",
    b"-0.3",
    b"1e39",
    b"nan",
    b"inf",
    b"-inf",
    b"0",
    b"1024",
    b"1025",
    b"4294967295",
    b"4294967296",
    b"16777217",
    b"1000000000000",
    b"\x1f\x8b",
    b"%%MatrixMarket matrix coordinate pattern general\n",
];

const MTX_TOKENS: &[&[u8]] = &[
    b"%%MatrixMarket matrix coordinate pattern general\n",
    b"%%MatrixMarket matrix coordinate real general\n",
    b"%%MatrixMarket matrix coordinate integer general\n",
    b"%%MatrixMarket matrix array real general\n",
    b"% comment\n",
    b"\n",
    b" ",
    b"\t",
    b"0",
    b"1",
    b"1024",
    b"1025",
    b"4294967296",
    b"16777217",
    b"1000000000000",
    b"nan",
];

const CACHE_TOKENS: &[&[u8]] = &[
    b"SPDNNBIN",
    b"SPDNNXY1",
    b"\x01\x00\x00\x00",
    b"\x02\x00\x00\x00",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff",
    b"\x00\x00\x01\x00",
    b"\x20\x00\x00\x00\x00\x00\x00\x00",
    b"\x00\x00\x80\x3d",
];

const SAFETENSORS_TOKENS: &[&[u8]] = &[
    b"{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}",
    b"\"__metadata__\":{\"k\":\"v\"},",
    b"\"dtype\"",
    b"\"shape\"",
    b"\"data_offsets\"",
    b"\"F32\"",
    b"\"F64\"",
    b"\"F16\"",
    b"\"I32\"",
    b"\"I64\"",
    b"\"U32\"",
    b"\"U64\"",
    b"\"U8\"",
    b"\"BOOL\"",
    b"layers.0.",
    b"layers.1.",
    b"layers.65536.",
    b"weight",
    b"mask",
    b"bias",
    b"crow_indices",
    b"col_indices",
    b"values",
    b"shape",
    b"upper_bound",
    b"[]",
    b"[1]",
    b"[0]",
    b",",
    b":",
    b"}}",
    b"16777216",
    b"16777217",
    b"4294967296",
    b"18446744073709551615",
    b"\x00\x00\x80\x7f",
    b"\x00\x00\xc0\x7f",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
];

/// N of the text targets: the official N of the seed files.
const NEURONS: usize = 1024;

fn weights(data: &[u8]) {
    let path = Path::new("fuzz-weights.tsv");
    if let Ok(text) = tsv::decompress(data, path) {
        consume(tsv::parse_layer(&text, NEURONS, path));
    }
}

/// `--rows` for an images input: none for two inputs in three, else a few (derived from
/// the input, so that a run is reproducible).
fn rows_for(data: &[u8]) -> Option<usize> {
    data.len().is_multiple_of(3).then(|| 1 + data.len() % 64)
}

fn images_tsv(data: &[u8]) {
    let path = Path::new("fuzz-images.tsv");
    consume(tsv::parse_images(data, path, NEURONS, rows_for(data)));
}

/// The MatrixMarket banner, put in front of an input without one so that the mutator
/// stays in the MatrixMarket reader.
const MTX_BANNER: &[u8] = b"%%MatrixMarket matrix coordinate pattern general\n";

fn images_mtx(data: &[u8]) {
    let path = Path::new("fuzz-images.mtx");
    if data.starts_with(b"%") {
        consume(tsv::parse_images(data, path, NEURONS, rows_for(data)));
    } else {
        let mut text = MTX_BANNER.to_vec();
        text.extend_from_slice(data);
        consume(tsv::parse_images(&text, path, NEURONS, rows_for(data)));
    }
}

fn truth(data: &[u8]) {
    consume(tsv::parse_categories(data, Path::new("fuzz-truth.tsv")));
}

fn network_cache(data: &[u8]) {
    let path = Path::new("fuzz-network.bin");
    consume(cache::parse_network(data, path, None));
    consume(cache::parse_input(data, path));
    let fixed = fix_sdgc_checksums(data);
    consume(cache::parse_network(&fixed, path, None));
    consume(cache::parse_network(&fixed, path, Some(1)));
    consume(cache::parse_input(&fixed, path));
}

fn xy_cache(data: &[u8]) {
    consume(spdnn_xy::XyNetwork::read_from_bytes(data));
    let fixed = fix_xy_checksums(data);
    consume(spdnn_xy::XyNetwork::read_from_bytes(&fixed));
}

fn safetensors(data: &[u8]) {
    let path = Path::new("fuzz-network.safetensors");
    consume(spdnn_sdgc::trained::parse_safetensors(data, path));
    let fixed = fix_safetensors_header_len(data);
    if fixed != data {
        consume(spdnn_sdgc::trained::parse_safetensors(&fixed, path));
    }
}

/// Formats an error (its message must be buildable too) and drops the result.
fn consume<T, E: std::fmt::Display>(result: Result<T, E>) {
    if let Err(e) = result {
        std::hint::black_box(e.to_string());
    }
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// `a + b·c` in `usize`, `None` on overflow.
fn span(a: u64, b: u64, c: u64) -> Option<usize> {
    usize::try_from(b.checked_mul(c)?.checked_add(a)?).ok()
}

/// A copy of an spdnn cache file (`SPDNNBIN`) with the header checksum and the checksum of
/// every record that fits recomputed, so that mutations reach the checks behind them. The
/// layout is the one documented in `crates/sdgc/src/cache.rs`.
pub fn fix_sdgc_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let Some(header_len) = u32_at(&out, 16) else {
        return out;
    };
    let header_end = 20 + header_len as usize;
    if header_end + 8 > out.len() {
        return out;
    }
    let sum = xxh3_64(&out[8..header_end]);
    out[header_end..header_end + 8].copy_from_slice(&sum.to_le_bytes());
    let kind = u32_at(&out, 12).unwrap_or(0);
    let (Some(first), Some(second)) = (u64_at(&out, 20), u64_at(&out, 28)) else {
        return out;
    };
    // network: N, L (N × N layers); input: rows, columns (one record).
    let (rows, records) = if kind == 1 {
        (first, second)
    } else {
        (first, 1)
    };
    let mut at = header_end + 8;
    for index in 0..records {
        let (Some(nnz), Some(&encoding)) = (u64_at(&out, at), out.get(at + 8)) else {
            break;
        };
        let col_bytes = if encoding & 1 != 0 { 2 } else { 4 };
        let value_count = if encoding & 2 != 0 { 1 } else { nnz };
        let size = rows
            .checked_add(1)
            .and_then(|offsets| span(9, offsets, 4))
            .and_then(|s| span(s as u64, nnz, col_bytes))
            .and_then(|s| span(s as u64, value_count, 4));
        let Some(end) = size.and_then(|s| at.checked_add(s)) else {
            break;
        };
        if end + 8 > out.len() {
            break;
        }
        let sum = xxh3_with_seed(&out[at..end], index);
        out[end..end + 8].copy_from_slice(&sum.to_le_bytes());
        at = end + 8;
    }
    out
}

/// A copy of a serialized XY network (`SPDNNXY1`) with the header checksum and the checksum
/// of every record that fits recomputed (layout in `crates/xy/src/cache.rs`).
pub fn fix_xy_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() < 36 {
        return out;
    }
    let sum = xxh3_64(&out[8..28]);
    out[28..36].copy_from_slice(&sum.to_le_bytes());
    let layers = u64_at(&out, 20).unwrap_or(0);
    let mut at = 36usize;
    for index in 0..layers {
        let counts: Option<Vec<u64>> = (0..4)
            .map(|k| u32_at(&out, at + 4 * k).map(u64::from))
            .collect();
        let Some(counts) = counts else { break };
        let (group, blocks, inputs) = (counts[0], counts[1], counts[2]);
        let words = (|| {
            let values = inputs.checked_mul(group)?;
            let outputs = blocks.checked_mul(group)?;
            4u64.checked_add(blocks)?
                .checked_add(1)?
                .checked_add(inputs)?
                .checked_add(values)?
                .checked_add(outputs)
        })();
        let Some(end) = words.and_then(|w| span(at as u64, w, 4)) else {
            break;
        };
        if end + 8 > out.len() {
            break;
        }
        let sum = xxh3_with_seed(&out[at..end], index);
        out[end..end + 8].copy_from_slice(&sum.to_le_bytes());
        at = end + 8;
    }
    out
}

/// A copy of a `.safetensors` file whose header length (the first 8 bytes, little-endian)
/// is set to end the header at its first `}}` (and the blanks after it): every header the
/// project's writer makes ends so, and a mutation that grows or shrinks the JSON header
/// then still reaches the tensor checks behind the length check.
pub fn fix_safetensors_header_len(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let Some(header) = out.get(8..) else {
        return out;
    };
    let Some(close) = header.windows(2).position(|w| w == b"}}") else {
        return out;
    };
    let mut end = close + 2;
    while header.get(end) == Some(&b' ') {
        end += 1;
    }
    out[..8].copy_from_slice(&(end as u64).to_le_bytes());
    out
}

fn xxh3_with_seed(bytes: &[u8], seed: u64) -> u64 {
    let mut hasher = Xxh3::with_seed(seed);
    hasher.update(bytes);
    hasher.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixers_restore_what_a_flip_breaks() {
        let network = spdnn_sdgc::generator::network(32, 2, 1).unwrap();
        let dir = std::env::temp_dir().join(format!("spdnn-fuzz-fix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n.bin");
        cache::write_network(&path, &network).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            fix_sdgc_checksums(&bytes),
            bytes,
            "a valid file is left as it is"
        );
        // A flipped value byte of layer 2 fails its checksum; fixed, it reads (to another
        // network).
        let mut flipped = bytes.clone();
        let at = bytes.len() - 12;
        flipped[at] ^= 0x01;
        assert!(cache::parse_network(&flipped, &path, None).is_err());
        let read = cache::parse_network(&fix_sdgc_checksums(&flipped), &path, None).unwrap();
        assert_ne!(read, network);

        let xy = spdnn_xy::XyNetwork::prepare(network.layers()).unwrap();
        let mut bytes = Vec::new();
        xy.write_to(&mut bytes).unwrap();
        assert_eq!(fix_xy_checksums(&bytes), bytes);
        let mut flipped = bytes.clone();
        flipped[12] ^= 0x01; // N in the header: 33 instead of 32
        let error = spdnn_xy::XyNetwork::read_from(&mut &flipped[..]).unwrap_err();
        assert!(error.to_string().contains("checksum"), "{error}");
        // Fixed, it is a network with one unused input.
        let read = spdnn_xy::XyNetwork::read_from(&mut &fix_xy_checksums(&flipped)[..]).unwrap();
        assert_eq!(read.widths()[0], 33);
    }

    #[test]
    fn the_header_length_fixer_follows_the_json() {
        let network = spdnn_sdgc::generator::network(32, 2, 1).unwrap();
        let bytes = spdnn_sdgc::trained::to_safetensors(&network, Some(32.0)).unwrap();
        let path = Path::new("n.safetensors");
        assert_eq!(
            fix_safetensors_header_len(&bytes),
            bytes,
            "a valid file is kept"
        );
        // One more blank inside the header: the length is off by one until fixed.
        let mut grown = bytes.clone();
        grown.insert(9, b' ');
        assert!(spdnn_sdgc::trained::parse_safetensors(&grown, path).is_err());
        let read =
            spdnn_sdgc::trained::parse_safetensors(&fix_safetensors_header_len(&grown), path)
                .unwrap();
        assert!(read.network.layers() == network.layers());
        assert_eq!(fix_safetensors_header_len(b"short"), b"short");
    }
}
