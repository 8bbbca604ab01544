//! Runs the kernels' emulation (`spdnn_sz::emulate`, the tensor-core path) on the real
//! 1024-120 benchmark: the official network over the 60000 MNIST-recipe images (or the
//! 1-based rows given as arguments), and prints the rows whose category differs from the
//! official truth. Rows that die are dropped after each layer (a zero row stays zero: the
//! bias is negative), as the device's compaction does; that changes no value.
//!
//! `cargo run --release -p spdnn-sz --example official_rows [ROW...]`; with
//! `SZ_SPLIT=GROUP,TC` (e.g. `4,3`) the tiles are shared as in T4 mode ([`Split`]).

use std::time::Instant;

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{images, tsv};
use spdnn_sz::emulate::{self, Split};
use spdnn_sz::format::{self, LayoutError, SzLayer};
use spdnn_sz::reorder::reorder_network;

type Error = Box<dyn std::error::Error>;

/// The 1-based ids of `input`'s rows (ids) that are nonzero after every layer.
fn survivors(layers: &[SzLayer], input: &Csr, ids: &[u32], first: i32, split: Split) -> Vec<u32> {
    let (bias, upper) = (-0.3f32, 32.0f32);
    let later = emulate::activation_exponent(upper).unwrap_or(0);
    let mut rows = input.nrows();
    let mut ld = rows.div_ceil(16) * 16;
    let mut ids = ids.to_vec();
    let mut y = vec![0f32; input.ncols() * ld];
    for (r, c, v) in input.triplets() {
        y[c as usize * ld + r as usize] = v;
    }
    for (l, w) in layers.iter().enumerate() {
        let s = if l == 0 { first } else { later };
        let out = emulate::layer(w, &y, rows, ld, s, split, bias, upper);
        let keep: Vec<usize> = (0..rows)
            .filter(|&r| (0..w.outputs).any(|p| out[p * ld + r] != 0.0))
            .collect();
        let new_ld = keep.len().div_ceil(16) * 16;
        let mut next = vec![0f32; w.outputs * new_ld];
        for p in 0..w.outputs {
            for (to, &r) in keep.iter().enumerate() {
                next[p * new_ld + to] = out[p * ld + r];
            }
        }
        ids = keep.iter().map(|&r| ids[r]).collect();
        (y, rows, ld) = (next, keep.len(), new_ld);
        if rows == 0 {
            break;
        }
    }
    ids
}

/// The 1-based rows `ids` of `input`, in that order.
fn rows_of(input: &Csr, ids: &[u32]) -> Csr {
    let mut t = Vec::new();
    for (k, &r) in ids.iter().enumerate() {
        let (cols, vals) = input.row(r as usize - 1);
        t.extend(cols.iter().zip(vals).map(|(&c, &v)| (k as u32, c, v)));
    }
    Csr::from_triplets(ids.len(), input.ncols(), &t).expect("rows of a valid matrix")
}

fn main() -> Result<(), Error> {
    let wanted: Vec<u32> = std::env::args()
        .skip(1)
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let find = |name: &str| find_official(&root, name).ok_or(format!("{name} not found"));
    let network = tsv::read_network(&find("neuron1024.tar.gz")?, Some(1024), 120, &mut |_| {})?;
    let truth = tsv::read_categories(&find("neuron1024-l120-categories.tsv")?)?;
    let mnist = images::load_mnist_train(&root.join("data"))?;
    let input = images::from_mnist(&mnist, 1024, &|_, _| {})?.features;
    let reorderings = reorder_network(network.layers(), 0.25);
    let mut layers = Vec::new();
    format::build_layers::<LayoutError>(
        network.layers(),
        &reorderings,
        |_| true,
        8,
        |_, l| {
            layers.push(l);
            Ok(())
        },
    )?;
    let input_max = input.values().iter().fold(0f32, |m, v| m.max(v.abs()));
    let first = emulate::activation_exponent(input_max)?;
    let ids: Vec<u32> = if wanted.is_empty() {
        (1..=input.nrows() as u32).collect()
    } else {
        wanted
    };
    let split = match std::env::var("SZ_SPLIT") {
        Ok(v) => {
            let (g, t) = v.split_once(',').ok_or("SZ_SPLIT=GROUP,TC")?;
            Split {
                group: g.parse()?,
                tc_tiles: t.parse()?,
            }
        }
        Err(_) => Split::TENSOR,
    };
    let start = Instant::now();
    let slices: Vec<&[u32]> = ids.chunks(512).collect();
    let mut found: Vec<u32> = slices
        .par_iter()
        .flat_map(|slice| {
            let sub = rows_of(&input, slice);
            let alive = survivors(&layers, &sub, slice, first, split);
            eprintln!(
                "rows {}..={}: {} alive ({:.0?})",
                slice[0],
                slice[slice.len() - 1],
                alive.len(),
                start.elapsed()
            );
            alive
        })
        .collect();
    found.sort_unstable();
    let truth: Vec<u32> = truth.into_iter().filter(|r| ids.contains(r)).collect();
    let extra: Vec<u32> = found
        .iter()
        .copied()
        .filter(|r| truth.binary_search(r).is_err())
        .collect();
    let missing: Vec<u32> = truth
        .iter()
        .copied()
        .filter(|r| found.binary_search(r).is_err())
        .collect();
    println!(
        "{} rows: {} categories (truth {}), extra {extra:?}, missing {missing:?}",
        ids.len(),
        found.len(),
        truth.len()
    );
    Ok(())
}
