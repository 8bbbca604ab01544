//! S&Z-2022 (`spdnn-sz`) on a network read from TSV files, plain and with T4's
//! tensor-core / CUDA-core split.
//!
//! Uses only `spdnn-sz`, `spdnn-formats` and `spdnn-cuda`: a user who lifts the
//! crate needs nothing more. The TSV reader and the CPU check are a few lines each, written
//! out here.
//!
//! ```text
//! spdnn generate --neurons 1024 --layers 120 --seed 0 --out nets/1024
//! spdnn images --neurons 1024 --rows 2000 --out nets/images-1024.tsv
//! cargo run --release -p spdnn-sz --example tsv -- nets/1024 120 nets/images-1024.tsv
//! ```
//!
//! Arguments: a folder of `n{N}-l{i}.tsv` files (`row<TAB>col<TAB>value`, 1-based, row =
//! input neuron), the layers L to run, an images file (`image<TAB>neuron<TAB>value`), and
//! optionally the bias (the challenge's for N by default). It prints the categories, the
//! time, and whether the categories equal those of a plain CPU loop. Exit
//! status: 0 when they do, 1 when not, 2 on any error (no GPU, no NVRTC, a malformed
//! file…).

use std::path::Path;
use std::process::ExitCode;

use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sz::SzOptions;

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
    let gpu = Gpu::new(0).map_err(|e| e.to_string())?;
    let spec = RunSpec {
        warmup: 1,
        repetitions: 5,
        ..RunSpec::default()
    };
    // The defaults (no cache directory: the reordering is redone each run), then the same
    // with T4's split at the ratio profiled on this GPU.
    let plain = SzOptions::default();
    let t4 = SzOptions {
        t4: true,
        ..SzOptions::default()
    };
    let mut all_same = true;
    for (name, options) in [("sz", &plain), ("sz+t4", &t4)] {
        let result = spdnn_sz::infer(&gpu, &layers, &input, bias, UPPER, options, &spec)
            .map_err(|e| e.to_string())?;
        all_same &= report(name, &layers, &input, bias, &result);
    }
    Ok(all_same)
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

/// The categories by a plain CPU loop: `y ← min(max(y·W + b, 0), U)` where `y·W` has a
/// term, then the 1-based rows with a nonzero value. (On the challenge's data every sum is
/// exact in `f32`, so any order of the terms gives the same rows.)
fn cpu_categories(layers: &[Csr], input: &Csr, bias: f32, upper: f32) -> Vec<u32> {
    let mut categories = Vec::new();
    for r in 0..input.nrows() {
        let mut y = vec![0f32; input.ncols()];
        let (cols, values) = input.row(r);
        for (&c, &v) in cols.iter().zip(values) {
            y[c as usize] = v;
        }
        for w in layers {
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
        }
        if y.iter().any(|&v| v != 0.0) {
            categories.push(r as u32 + 1);
        }
    }
    categories
}

/// The median of the timed runs, ms.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Prints the result and compares its categories with the CPU loop's.
fn report(name: &str, layers: &[Csr], input: &Csr, bias: f32, result: &GpuInference) -> bool {
    let n = layers[0].nrows();
    let ms = median(&result.infer_ms);
    let edges = input.nrows() as f64 * layers.iter().map(|w| w.nnz() as f64).sum::<f64>();
    println!(
        "{name} on {n}-{}, {} rows: {} categories, {ms:.3} ms (median of {} timed runs, {:.2} TeraEdges/s)",
        layers.len(),
        input.nrows(),
        result.categories.len(),
        result.infer_ms.len(),
        edges / (ms * 1e-3) / 1e12
    );
    for (stage, ms) in &result.stages {
        println!("  stage {stage}: {ms:.3} ms");
    }
    let expected = cpu_categories(layers, input, bias, UPPER);
    let same = expected == result.categories;
    println!(
        "plain CPU loop: {} categories, {}",
        expected.len(),
        if same {
            "the same rows"
        } else {
            "DIFFERENT rows"
        }
    );
    same
}
