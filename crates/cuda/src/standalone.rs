//! What a program that lifts one kernel crate needs around it, written once for the
//! crates' `tsv` examples: the challenge's TSV files read into CSR matrices, a plain CPU
//! loop to check the categories against, and a printed report. Only `spdnn-formats` and
//! the standard library: deliberately simple, not the project's readers (`spdnn-sdgc`).

use std::path::Path;
use std::process::ExitCode;

use spdnn_formats::{Csr, SparseMatrix};

use crate::rows::GpuInference;

/// The activation's upper bound in the challenge.
pub const CHALLENGE_UPPER: f32 = 32.0;

/// A network and its input rows read from TSV files, and the bias.
pub struct TsvProblem {
    /// `N_{l-1} × N_l` layers.
    pub layers: Vec<Csr>,
    /// Rows × `N_0`.
    pub input: Csr,
    /// The bias of every neuron.
    pub bias: f32,
}

/// The exit status of an example: 0 when its check held, 1 when not, 2 on an error
/// (printed).
pub fn exit_code(outcome: Result<bool, String>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

/// The whole of a crate's `tsv` example around its own call: reads the arguments
/// ([`read_arguments`]), runs `infer` on them, prints the result under `name` and compares
/// its categories with the CPU loop's ([`report`]); the exit status is [`exit_code`]'s.
/// `infer` is the method's part: open the GPU, choose the options and the runs, call the
/// crate.
pub fn run_example(
    name: &str,
    infer: impl FnOnce(&TsvProblem) -> Result<GpuInference, Box<dyn std::error::Error>>,
) -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    exit_code(read_arguments().and_then(|problem| {
        let result = infer(&problem).map_err(|e| e.to_string())?;
        Ok(report(
            name,
            &problem.layers,
            &problem.input,
            problem.bias,
            &result,
        ))
    }))
}

/// One layer by a plain CPU loop: `min(max(y·W + b, 0), U)` where `y·W` has a term, 0
/// elsewhere (the challenge's rule).
pub fn cpu_layer(y: &[f32], w: &Csr, bias: f32, upper: f32) -> Vec<f32> {
    let mut z = vec![0f32; w.ncols()];
    let mut touched = vec![false; w.ncols()];
    for (k, &yk) in y.iter().enumerate().filter(|(_, v)| **v != 0.0) {
        let (cols, values) = w.row(k);
        for (&c, &v) in cols.iter().zip(values) {
            z[c as usize] += yk * v;
            touched[c as usize] = true;
        }
    }
    z.iter()
        .zip(&touched)
        .map(|(&z, &t)| if t { (z + bias).clamp(0.0, upper) } else { 0.0 })
        .collect()
}

/// How to call this program.
const USAGE: &str = "usage: FOLDER L IMAGES [BIAS]\n  FOLDER: n{N}-l{i}.tsv files (row<TAB>col<TAB>value, 1-based, row = input neuron)\n  L: layers to run\n  IMAGES: image<TAB>neuron<TAB>value lines, 1-based\n  BIAS: default the challenge's for N (-0.3, -0.35, -0.4, -0.45 for 1024 … 65536)";

/// The challenge's bias for its four sizes.
pub fn challenge_bias(n: usize) -> Option<f32> {
    match n {
        1024 => Some(-0.3),
        4096 => Some(-0.35),
        16384 => Some(-0.4),
        65536 => Some(-0.45),
        _ => None,
    }
}

/// The arguments: the layers, the input rows and the bias.
pub fn read_arguments() -> Result<TsvProblem, String> {
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
    Ok(TsvProblem {
        layers: network,
        input,
        bias,
    })
}

/// `(row, col, value)` of a TSV file, 0-based; errors name the file and the line.
pub fn read_triplets(path: &Path) -> Result<Vec<(u32, u32, f32)>, String> {
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
pub fn read_network(folder: &Path, layers: usize) -> Result<Vec<Csr>, String> {
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
pub fn read_images(path: &Path, n: usize) -> Result<Csr, String> {
    let triplets = read_triplets(path)?;
    let rows = triplets.iter().map(|t| t.0 as usize + 1).max().unwrap_or(0);
    Csr::from_triplets(rows, n, &triplets).map_err(|e| format!("{}: {e}", path.display()))
}

/// The categories by a plain CPU loop: `y ← min(max(y·W + b, 0), U)` where `y·W` has a
/// term, then the 1-based rows with a nonzero value. (On the challenge's data every sum is
/// exact in `f32`, so any order of the terms gives the same rows.)
pub fn cpu_categories(layers: &[Csr], input: &Csr, bias: f32, upper: f32) -> Vec<u32> {
    let mut categories = Vec::new();
    for r in 0..input.nrows() {
        let mut y = vec![0f32; input.ncols()];
        let (cols, values) = input.row(r);
        for (&c, &v) in cols.iter().zip(values) {
            y[c as usize] = v;
        }
        for w in layers {
            y = cpu_layer(&y, w, bias, upper);
        }
        if y.iter().any(|&v| v != 0.0) {
            categories.push(r as u32 + 1);
        }
    }
    categories
}

/// The median of the timed runs, ms.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Prints the result and compares its categories with the CPU loop's.
pub fn report(name: &str, layers: &[Csr], input: &Csr, bias: f32, result: &GpuInference) -> bool {
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
    let expected = cpu_categories(layers, input, bias, CHALLENGE_UPPER);
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
