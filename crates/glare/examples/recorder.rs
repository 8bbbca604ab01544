//! GLARE's pieces (`spdnn-glare`) for a kernel of your own, on a network read from TSV files.
//!
//! The GLARE kernels themselves live beside each family's kernels (`spdnn-bf`, `spdnn-snig`,
//! `spdnn-xy`, `spdnn-snicit`: run their `tsv` examples, or give their options a
//! `Glare`). This crate holds what a new kernel needs around its own variant, and this
//! program uses it with only `spdnn-glare`, `spdnn-formats` (a dev-dependency) and
//! `spdnn-cuda` (its `standalone` module reads the TSV files):
//!
//! 1. **The access model.** A plain CPU loop runs the network over the input rows and takes,
//!    after every layer, `p` (the share of the values of live rows at the bound); the
//!    expected accesses of a BF-like row kernel, `E(m) = 2n/m + n(1 − p_I^m) + n(1 − p_O^m)`
//!    per block and layer (the paper's Table II, written with [`model::not_at_bound`]), are
//!    summed over the layers for every candidate unit length ([`model::row_unit_lengths`]),
//!    and the least is chosen, as `model::choose` does for a `GlareKernel`.
//! 2. **The recorder on the device.** The final activations are uploaded with every unit
//!    of `m` values at the bound replaced by stale zeros, as a kernel that skipped those
//!    writes leaves them, and their flags set in a [`Recorder`]; [`Recorder::fill_listed_rows`]
//!    writes the bound back into the flagged units of the listed rows, and the result must
//!    equal the CPU's activations bit for bit.
//!
//! ```text
//! spdnn generate --neurons 1024 --layers 120 --seed 0 --out nets/1024
//! spdnn images --neurons 1024 --rows 2000 --out nets/images-1024.tsv
//! cargo run --release -p spdnn-glare --example recorder -- nets/1024 120 nets/images-1024.tsv
//! ```
//!
//! Arguments: a folder of `n{N}-l{i}.tsv` files, the layers L, an images file, and
//! optionally the bias. Exit status: 0 when the filled activations equal the CPU's, 1 when
//! not, 2 on any error (no GPU, no NVRTC, a malformed file…).

use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::RowList;
use spdnn_cuda::standalone::{self, CHALLENGE_UPPER as UPPER, TsvProblem};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{Recorder, model};

fn main() -> ExitCode {
    standalone::exit_code(run())
}

fn run() -> Result<bool, String> {
    let TsvProblem {
        layers,
        input,
        bias,
    } = standalone::read_arguments()?;
    let n = layers[0].nrows();
    let rows = input.nrows();

    // 1. The statistics and the model.
    let (output, at_bound) = forward(&layers, &input, bias, UPPER);
    println!("share of live values at the bound after layer l (0: the input):");
    for (l, p) in at_bound.iter().enumerate() {
        if l < 3 || l % 10 == 0 || l + 1 == at_bound.len() {
            println!("  layer {l:>4}: {p:.4}");
        }
    }
    let candidates = model::row_unit_lengths(128, n);
    let expected: Vec<(usize, f64)> = candidates
        .iter()
        .map(|&m| {
            let total = at_bound
                .windows(2)
                .map(|p| {
                    let (nf, mf) = (n as f64, m as f64);
                    2.0 * nf / mf
                        + nf * model::not_at_bound(p[0], mf)
                        + nf * model::not_at_bound(p[1], mf)
                })
                .sum();
            (m, total)
        })
        .collect();
    let Some(&(m, _)) = expected.iter().rev().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Err(format!("no unit length for N = {n}"));
    };
    for (candidate, total) in &expected {
        let mark = if *candidate == m { "  <- chosen" } else { "" };
        println!("  m = {candidate:>6}: {total:>14.0} expected accesses per block{mark}");
    }

    // 2. The recorder: flags of the units all at the bound, stale values under them.
    let units = n.div_ceil(m);
    let mut flags = vec![0u8; rows * units];
    let mut stale = output.clone();
    for r in 0..rows {
        for u in 0..units {
            let span = r * n + u * m..r * n + ((u + 1) * m).min(n);
            if output[span.clone()].iter().all(|&v| v == UPPER) {
                flags[r * units + u] = 1;
                stale[span].fill(0.0);
            }
        }
    }
    let flagged = flags.iter().filter(|&&f| f == 1).count();
    let gpu = Gpu::new(0).map_err(|e| e.to_string())?;
    let cuda = |e: spdnn_cuda::CudaError| e.to_string();
    let mut recorder = Recorder::new(&gpu, rows * units, 0).map_err(cuda)?;
    recorder.clear(&gpu).map_err(cuda)?;
    gpu.upload_into(&flags, recorder.flags.current_mut())
        .map_err(cuda)?;
    let mut y = gpu.upload(&stale).map_err(cuda)?;
    let all_rows: Vec<u32> = (0..rows as u32).collect();
    let list = RowList {
        rows: gpu.upload(&all_rows).map_err(cuda)?,
        count: gpu.upload(&[rows as u32]).map_err(cuda)?,
    };
    let shift = m.trailing_zeros();
    recorder
        .fill_listed_rows(&gpu, &mut y, &list, rows, n, (shift, units), UPPER)
        .map_err(cuda)?;
    let filled = gpu.download(&*y).map_err(cuda)?;
    let same = filled
        .iter()
        .zip(&output)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    println!(
        "recorder: {flagged} of {} units of {m} values all at the bound; filled on {}: {}",
        rows * units,
        gpu.name(),
        if same {
            "the activations equal the CPU's"
        } else {
            "DIFFERENT activations"
        }
    );
    Ok(same)
}

/// The final activations (rows × N_L, row-major) by a plain CPU loop, and after every
/// layer (index 0: the input) the share of the values of live rows at the bound.
fn forward(layers: &[Csr], input: &Csr, bias: f32, upper: f32) -> (Vec<f32>, Vec<f64>) {
    let mut at_bound = vec![0.0f64; layers.len() + 1];
    let mut live = vec![0usize; layers.len() + 1];
    let mut output = Vec::new();
    for r in 0..input.nrows() {
        let mut y = vec![0f32; input.ncols()];
        let (cols, values) = input.row(r);
        for (&c, &v) in cols.iter().zip(values) {
            y[c as usize] = v;
        }
        let mut tally = |l: usize, y: &[f32]| {
            if y.iter().any(|&v| v != 0.0) {
                live[l] += y.len();
                at_bound[l] += y.iter().filter(|&&v| v == upper).count() as f64;
            }
        };
        tally(0, &y);
        for (l, w) in layers.iter().enumerate() {
            y = standalone::cpu_layer(&y, w, bias, upper);
            tally(l + 1, &y);
        }
        output.extend(y);
    }
    let shares = at_bound
        .iter()
        .zip(&live)
        .map(|(&hits, &values)| {
            if values > 0 {
                hits / values as f64
            } else {
                0.0
            }
        })
        .collect();
    (output, shares)
}
