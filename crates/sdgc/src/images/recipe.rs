//! The recovered official recipe that turns MNIST images into the challenge's inputs
//! (`../shared/research/sdgc-images-recipe.md`; with the real N = 1024 network it gives
//! exactly the official 1024-120 truth).
//!
//! For an output side `n = √N`:
//!
//! 1. each column of each image is Fourier-interpolated from its height to `n` values
//!    (giving `Z[k][i][c]`);
//! 2. for each output row `i`, the strip `s[width·k + c] = Z[k][i][c]` of *all* images side by
//!    side (periodic, so image 0's left neighbour is the last image) is interpolated to
//!    `count · n` values, `Y[k][i][j] = out[n·k + j]`;
//! 3. a pixel is set iff `Y > max/2`, the maximum taken over all `k, i, j` in f64;
//! 4. image `k` becomes row `k` with features `j·n + i` (column-major), value 1.
//!
//! # How it is computed
//!
//! Step 1 is linear, so it is applied as an `n × height` matrix whose columns are the
//! interpolations of the unit vectors. Output rows are handled two at a time: rows `i` and
//! `i + 1` go into the real and imaginary parts of one complex strip, since the interpolation
//! maps real sequences to real sequences. Pairs run in parallel (rayon), at most as many at
//! once as fit in [`working_memory_budget`] (one pair needs about `48 · count · n` bytes:
//! 0.7 GiB for n = 256): [`WORKING_MEMORY_BUDGET`], or a quarter of the memory the system
//! says is available when that is more.
//!
//! The global maximum is known only at the end, so each row keeps its *candidates*: the
//! pixels above half of a lower bound of the global maximum (the larger of the row's own
//! maximum and the largest maximum seen so far; the central pair runs first so that the
//! bound is high from the start). Every set pixel is a candidate, and candidates are few
//! more than the set pixels (12 bytes each). Then the exact global threshold filters them.
//! The result does not depend on thread timing.
//!
//! Measured (H200 host, release): N = 65536 takes 63 s with a peak of 6.3 GB on 2 threads,
//! 20 s and 12 GB on 16; N = 1024 takes 0.7 s on 16 threads. The nonzero counts equal the
//! recipe's for all four official sizes (6,373,995 / 25,017,160 / 98,865,594 / 392,212,149).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::{MnistImages, binary_csr};
use crate::{Input, InputOrigin, SdgcError};

/// The least memory the concurrently running output-row pairs may take together (8 GiB); at
/// least one pair always runs.
pub const WORKING_MEMORY_BUDGET: usize = 8 << 30;

/// The memory the concurrently running output-row pairs may take together: a quarter of what
/// `/proc/meminfo` calls available, at least [`WORKING_MEMORY_BUDGET`] (its value where the
/// file cannot be read). With 8 GiB ten pairs of 60000 images at N = 65536 run at once, so a
/// 64-core machine made the 65536-wide MNIST input in 29.5 s with most cores idle
/// (2026-11-26, four-H200 machine, 512 GiB).
pub fn working_memory_budget() -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text));
    available.map_or(WORKING_MEMORY_BUDGET, |bytes| {
        (bytes / 4).max(WORKING_MEMORY_BUDGET)
    })
}

/// The `MemAvailable` line of `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let value: usize = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// Fourier interpolation from one length to a longer one, MATLAB's `interpft`.
struct Interpolator {
    from: usize,
    to: usize,
    forward: Arc<dyn Fft<f64>>,
    inverse: Arc<dyn Fft<f64>>,
}

impl Interpolator {
    /// Plans the transforms; needs `1 ≤ from ≤ to`.
    fn new(planner: &mut FftPlanner<f64>, from: usize, to: usize) -> Self {
        debug_assert!(from >= 1 && to >= from);
        Self {
            from,
            to,
            forward: planner.plan_fft_forward(from),
            inverse: planner.plan_fft_inverse(to),
        }
    }

    /// Scratch length [`Self::run`] needs.
    fn scratch_len(&self) -> usize {
        self.forward
            .get_inplace_scratch_len()
            .max(self.inverse.get_inplace_scratch_len())
    }

    /// Interpolates `input` (length `from`, overwritten by its spectrum) into `output`
    /// (length `to`).
    ///
    /// With `A = FFT(input)` and `m = from`: `B[0..h) = A[0..h)` and the upper
    /// `m − h` coefficients go to the top of `B`, where `h = m/2` for even `m` (the Nyquist
    /// coefficient `A[m/2]` is split in halves between `B[m/2]` and `B[to − m/2]`) and
    /// `h = (m + 1)/2` for odd `m`; the result is `IFFT(B) · to/m` (unnormalised inverse, so
    /// the factor applied is `1/m`).
    fn run(
        &self,
        input: &mut [Complex<f64>],
        output: &mut [Complex<f64>],
        scratch: &mut Vec<Complex<f64>>,
    ) {
        let (m, n) = (self.from, self.to);
        scratch.resize(self.scratch_len(), Complex::default());
        self.forward.process_with_scratch(input, scratch);
        let scale = 1.0 / m as f64;
        output.fill(Complex::default());
        // Coefficients 0..low go to the bottom of B, high_start..m to its top; for even m the
        // Nyquist coefficient m/2 is split below.
        let (low, high_start) = if m.is_multiple_of(2) {
            (m / 2, m / 2 + 1)
        } else {
            (m.div_ceil(2), m.div_ceil(2))
        };
        for (b, a) in output[..low].iter_mut().zip(&input[..low]) {
            *b = a * scale;
        }
        let high = m - high_start;
        for (b, a) in output[n - high..].iter_mut().zip(&input[high_start..]) {
            *b = a * scale;
        }
        if m.is_multiple_of(2) {
            let half = input[m / 2] * (0.5 * scale);
            output[m / 2] += half;
            output[n - m / 2] += half;
        }
        self.inverse.process_with_scratch(output, scratch);
    }
}

/// Fourier interpolation of the periodic sequence `samples` to `len` points (MATLAB's
/// `interpft`): the trigonometric polynomial through the samples, evaluated on the finer grid.
///
/// Errors when `samples` is empty or `len` is shorter than it.
pub fn fourier_interpolate(samples: &[f64], len: usize) -> Result<Vec<f64>, SdgcError> {
    if samples.is_empty() || len < samples.len() {
        return Err(SdgcError::Parameter(format!(
            "Fourier interpolation needs 1 ≤ input length ≤ output length, got {} → {len}",
            samples.len()
        )));
    }
    let interpolator = Interpolator::new(&mut FftPlanner::new(), samples.len(), len);
    let mut input: Vec<Complex<f64>> = samples.iter().map(|&x| Complex::new(x, 0.0)).collect();
    let mut output = vec![Complex::default(); len];
    interpolator.run(&mut input, &mut output, &mut Vec::new());
    Ok(output.into_iter().map(|z| z.re).collect())
}

/// The pixels of one output row above the cut it was filtered with.
struct RowCandidates {
    /// `n·k + j` of each candidate (image `k`, output column `j`).
    positions: Vec<u32>,
    /// Their interpolated values.
    values: Vec<f64>,
    /// The row's maximum over all images.
    max: f64,
}

/// Turns grey-level images into the challenge's binary inputs with `neurons` features by
/// the recovered official recipe (see the module documentation); row `k` is image `k`.
///
/// `neurons` must be a perfect square with an even side `n` at least as large as the images'
/// height and width (1024, 4096, 16384, 65536 for MNIST). `progress(done, total)` is called
/// once per finished output row (`total = n`), from worker threads.
pub fn from_mnist(
    mnist: &MnistImages,
    neurons: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Input, SdgcError> {
    let MnistImages {
        count,
        height,
        width,
        ref pixels,
    } = *mnist;
    if count == 0 || height == 0 || width == 0 {
        return Err(SdgcError::Parameter(format!(
            "no images to convert ({count} images of {height}×{width})"
        )));
    }
    if count.checked_mul(height).and_then(|v| v.checked_mul(width)) != Some(pixels.len()) {
        return Err(SdgcError::Parameter(format!(
            "{count} images of {height}×{width} need {} pixels, found {}",
            count.saturating_mul(height).saturating_mul(width),
            pixels.len()
        )));
    }
    let side = neurons.isqrt();
    if side * side != neurons || !side.is_multiple_of(2) || side < height || side < width {
        return Err(SdgcError::Parameter(format!(
            "MNIST-derived inputs need N = n² with an even side n ≥ {} (e.g. 1024, 4096, 16384, 65536), got N = {neurons}",
            height.max(width)
        )));
    }
    let out_len = count
        .checked_mul(side)
        .filter(|&v| u32::try_from(v).is_ok() && u32::try_from(neurons).is_ok());
    let Some(out_len) = out_len else {
        return Err(SdgcError::Parameter(format!(
            "{count} images of {neurons} features are too many to index with 32 bits"
        )));
    };

    let mut planner = FftPlanner::new();
    let strip = Interpolator::new(&mut planner, count * width, out_len);
    let column_weights = column_interpolation_matrix(&mut planner, height, side);

    // Pairs of output rows, the central pair first, then outwards.
    let mut pairs: Vec<usize> = (0..side / 2).collect();
    pairs.sort_by_key(|&q| (2 * q + 1).abs_diff(side));
    let max_parallel = (working_memory_budget() / (48 * out_len + 16 * count * width).max(1))
        .clamp(1, rayon::current_num_threads().max(1));

    let bound = AtomicU64::new(0f64.to_bits());
    let done = AtomicUsize::new(0);
    let process = |q: usize| -> (usize, [RowCandidates; 2]) {
        let rows = process_pair(mnist, 2 * q, &column_weights, &strip, &bound);
        for _ in 0..2 {
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, side);
        }
        (q, rows)
    };
    let mut per_row: Vec<Option<RowCandidates>> = (0..side).map(|_| None).collect();
    let mut store = |(q, [first, second]): (usize, [RowCandidates; 2])| {
        per_row[2 * q] = Some(first);
        per_row[2 * q + 1] = Some(second);
    };
    store(process(pairs[0]));
    for chunk in pairs[1..].chunks(max_parallel) {
        let results: Vec<_> = chunk.par_iter().map(|&q| process(q)).collect();
        results.into_iter().for_each(&mut store);
    }
    let per_row: Vec<RowCandidates> = per_row
        .into_iter()
        .map(|r| r.expect("every row was processed"))
        .collect();

    let global_max = per_row
        .iter()
        .map(|r| r.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let threshold = 0.5 * global_max;
    let mut features: Vec<Vec<u32>> = vec![Vec::new(); count];
    for (i, row) in per_row.into_iter().enumerate() {
        for (&position, &value) in row.positions.iter().zip(&row.values) {
            if value > threshold {
                let (k, j) = (position as usize / side, position as usize % side);
                features[k].push((j * side + i) as u32);
            }
        }
    }
    features.par_iter_mut().for_each(|f| f.sort_unstable());
    let features = binary_csr(neurons, features)?;
    Ok(Input {
        features,
        origin: InputOrigin::Mnist,
    })
}

/// `M[i·height + r]`: output row `i` of the interpolation of the unit vector `e_r`, so that the
/// interpolation of a column `x` is `Σ_r M[i·height + r]·x[r]`.
fn column_interpolation_matrix(
    planner: &mut FftPlanner<f64>,
    height: usize,
    side: usize,
) -> Vec<f64> {
    let interpolator = Interpolator::new(planner, height, side);
    let mut matrix = vec![0.0; side * height];
    let mut scratch = Vec::new();
    let mut output = vec![Complex::default(); side];
    for r in 0..height {
        let mut unit = vec![Complex::default(); height];
        unit[r] = Complex::new(1.0, 0.0);
        interpolator.run(&mut unit, &mut output, &mut scratch);
        for (i, z) in output.iter().enumerate() {
            matrix[i * height + r] = z.re;
        }
    }
    matrix
}

/// Computes output rows `first` and `first + 1` and keeps their candidates.
fn process_pair(
    mnist: &MnistImages,
    first: usize,
    column_weights: &[f64],
    strip: &Interpolator,
    bound: &AtomicU64,
) -> [RowCandidates; 2] {
    let (height, width) = (mnist.height, mnist.width);
    let weights_a = &column_weights[first * height..(first + 1) * height];
    let weights_b = &column_weights[(first + 1) * height..(first + 2) * height];
    let mut input = vec![Complex::default(); strip.from];
    for (image, values) in mnist
        .pixels
        .chunks_exact(height * width)
        .zip(input.chunks_exact_mut(width))
    {
        for (r, line) in image.chunks_exact(width).enumerate() {
            let (wa, wb) = (weights_a[r], weights_b[r]);
            for (value, &pixel) in values.iter_mut().zip(line) {
                let x = f64::from(pixel);
                value.re += wa * x;
                value.im += wb * x;
            }
        }
    }
    let mut output = vec![Complex::default(); strip.to];
    strip.run(&mut input, &mut output, &mut Vec::new());
    drop(input);
    let max_a = output
        .iter()
        .map(|z| z.re)
        .fold(f64::NEG_INFINITY, f64::max);
    let max_b = output
        .iter()
        .map(|z| z.im)
        .fold(f64::NEG_INFINITY, f64::max);
    let seen = raise_bound(bound, max_a.max(max_b));
    let keep = |value_of: fn(&Complex<f64>) -> f64, max: f64| {
        let cut = 0.5 * seen.max(max);
        let mut positions = Vec::new();
        let mut values = Vec::new();
        for (position, z) in output.iter().enumerate() {
            let value = value_of(z);
            if value > cut {
                positions.push(position as u32);
                values.push(value);
            }
        }
        RowCandidates {
            positions,
            values,
            max,
        }
    };
    [keep(|z| z.re, max_a), keep(|z| z.im, max_b)]
}

/// Raises the shared lower bound of the global maximum to at least `value` (when positive)
/// and returns the bound now in force.
fn raise_bound(bound: &AtomicU64, value: f64) -> f64 {
    // Bit patterns of non-negative finite f64 order like the numbers themselves.
    let bits = if value.is_finite() && value > 0.0 {
        value.to_bits()
    } else {
        0
    };
    let previous = bound.fetch_max(bits, Ordering::Relaxed);
    f64::from_bits(previous.max(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_working_budget_is_a_quarter_of_the_available_memory_at_least_eight_gib() {
        let meminfo = "MemTotal:       527958716 kB\nMemFree:        500000000 kB\n\
                       MemAvailable:   515000000 kB\nBuffers:          123 kB\n";
        assert_eq!(mem_available(meminfo), Some(515_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
        assert_eq!(mem_available("MemAvailable: 7 MB\n"), None);
        assert!(working_memory_budget() >= WORKING_MEMORY_BUDGET);
    }

    #[test]
    fn interpolation_keeps_the_samples() {
        let samples = [3.0, -1.0, 4.0, 1.0, -5.0, 9.0];
        let out = fourier_interpolate(&samples, 18).unwrap();
        for (k, &s) in samples.iter().enumerate() {
            assert!((out[3 * k] - s).abs() < 1e-12, "{k}: {} vs {s}", out[3 * k]);
        }
        let odd = [2.0, 7.0, 1.0, 8.0, 2.0];
        let out = fourier_interpolate(&odd, 15).unwrap();
        for (k, &s) in odd.iter().enumerate() {
            assert!((out[3 * k] - s).abs() < 1e-12);
        }
        assert_eq!(fourier_interpolate(&odd, 5).unwrap().len(), 5);
        assert!(fourier_interpolate(&odd, 4).is_err());
        assert!(fourier_interpolate(&[], 4).is_err());
    }

    #[test]
    fn the_bound_only_rises() {
        let bound = AtomicU64::new(0);
        assert_eq!(raise_bound(&bound, 3.5), 3.5);
        assert_eq!(raise_bound(&bound, 2.0), 3.5);
        assert_eq!(raise_bound(&bound, -1.0), 3.5);
        assert_eq!(raise_bound(&bound, 10.25), 10.25);
    }
}
