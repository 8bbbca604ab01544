//! GLARE's pieces (`spdnn-glare`) for a kernel of your own, on a network read from TSV files.
//!
//! The GLARE kernels themselves live beside each family's kernels (`spdnn-bf`, `spdnn-snig`,
//! `spdnn-xy`, `spdnn-snicit`: run their `tsv` examples, or give their options a
//! `Glare`). This crate holds what a new kernel needs around its own variant, and this
//! program uses it with only `spdnn-glare`, `spdnn-formats` (a dev-dependency) and
//! `spdnn-cuda`:
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

use std::path::Path;
use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::RowList;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{Recorder, model};

/// The activation's upper bound in the challenge.
const UPPER: f32 = 32.0;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let (layers, input, bias) = read_arguments()?;
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
            let mut z = vec![0f32; w.ncols()];
            let mut touched = vec![false; w.ncols()];
            for (k, &yk) in y.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                let (cols, values) = w.row(k);
                for (&c, &v) in cols.iter().zip(values) {
                    z[c as usize] += yk * v;
                    touched[c as usize] = true;
                }
            }
            y = z
                .iter()
                .zip(&touched)
                .map(|(&z, &t)| if t { (z + bias).clamp(0.0, upper) } else { 0.0 })
                .collect();
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

/// How to call this program.
const USAGE: &str = "usage: FOLDER L IMAGES [BIAS]\n  FOLDER: n{N}-l{i}.tsv files (row<TAB>col<TAB>value, 1-based, row = input neuron)\n  L: layers to run\n  IMAGES: image<TAB>neuron<TAB>value lines, 1-based\n  BIAS: default the challenge's for N (-0.3, -0.35, -0.4, -0.45 for 1024 … 65536)";

/// The challenge's bias for its four sizes.
fn challenge_bias(n: usize) -> Option<f32> {
    match n {
        1024 => Some(-0.3),
        4096 => Some(-0.35),
        16384 => Some(-0.4),
        65536 => Some(-0.45),
        _ => None,
    }
}

/// The arguments: the layers, the input rows and the bias.
fn read_arguments() -> Result<(Vec<Csr>, Csr, f32), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [folder, layers, images, rest @ ..] = args.as_slice() else {
        return Err(USAGE.into());
    };
    let layers: usize = match layers.parse() {
        Ok(l) if l >= 1 => l,
        _ => return Err(format!("L must be a whole number ≥ 1, not {layers:?}")),
    };
    let network = read_network(Path::new(folder), layers)?;
    let n = network[0].nrows();
    let input = read_images(Path::new(images), n)?;
    let bias = match rest.first() {
        Some(text) => text
            .parse()
            .map_err(|_| format!("BIAS must be a number, not {text:?}"))?,
        None => challenge_bias(n).ok_or(format!("N = {n} is not a challenge size: give BIAS"))?,
    };
    Ok((network, input, bias))
}

/// `(row, col, value)` of a TSV file, 0-based; errors name the file and the line.
fn read_triplets(path: &Path) -> Result<Vec<(u32, u32, f32)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut triplets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "{}:{}: expected row<TAB>col<TAB>value, got {line:?}",
                path.display(),
                i + 1
            )
        };
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let [row, col, value] = fields[..] else {
            return Err(bad());
        };
        let (Ok(row), Ok(col), Ok(value)) =
            (row.parse::<u32>(), col.parse::<u32>(), value.parse::<f32>())
        else {
            return Err(bad());
        };
        if row == 0 || col == 0 {
            return Err(format!("{}:{}: indices are 1-based", path.display(), i + 1));
        }
        triplets.push((row - 1, col - 1, value));
    }
    Ok(triplets)
}

/// Layers `1..=layers` of `folder` (`n{N}-l{i}.tsv`, N taken from the first file's name).
fn read_network(folder: &Path, layers: usize) -> Result<Vec<Csr>, String> {
    let entries = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let n: usize = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find_map(|name| {
            name.strip_prefix('n')?
                .strip_suffix("-l1.tsv")?
                .parse()
                .ok()
        })
        .ok_or(format!("{}: no n{{N}}-l1.tsv file", folder.display()))?;
    (1..=layers)
        .map(|l| {
            let path = folder.join(format!("n{n}-l{l}.tsv"));
            Csr::from_triplets(n, n, &read_triplets(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The images file as rows × `n` (as many rows as the largest image number).
fn read_images(path: &Path, n: usize) -> Result<Csr, String> {
    let triplets = read_triplets(path)?;
    let rows = triplets.iter().map(|t| t.0 as usize + 1).max().unwrap_or(0);
    Csr::from_triplets(rows, n, &triplets).map_err(|e| format!("{}: {e}", path.display()))
}
