//! MNIST-derived and synthetic inputs.

use std::f64::consts::PI;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::InputOrigin;
use spdnn_sdgc::images::{self, MnistImages, fourier_interpolate, from_mnist, synthetic};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};

fn workspace_root() -> PathBuf {
    workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"))
}

/// The MNIST training set from `data/mnist`, or `None` (with a note) when it is absent outside CI.
fn mnist_or_skip() -> Option<MnistImages> {
    let data = workspace_root().join("data");
    match images::load_mnist_train(&data) {
        Ok(m) => Some(m),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: MNIST is required: {e}"
            );
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// MATLAB's `interpft` by a direct O(m·n) sum, as an independent oracle.
fn naive_interpft(x: &[f64], n: usize) -> Vec<f64> {
    let m = x.len();
    // Real DFT coefficients A[f] = Σ x[t]·e^{−2πi f t / m}.
    let coeff = |f: usize| -> (f64, f64) {
        x.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, &v)| {
            let angle = -2.0 * PI * (f * t) as f64 / m as f64;
            (re + v * angle.cos(), im + v * angle.sin())
        })
    };
    // Frequencies −m/2..=m/2, the Nyquist term (even m) halved on both sides.
    (0..n)
        .map(|s| {
            let mut sum = 0.0;
            let top = m / 2;
            for f in -(top as i64)..=(top as i64) {
                let (re, im) = coeff(f.rem_euclid(m as i64) as usize);
                let weight = if m.is_multiple_of(2) && f.unsigned_abs() as usize == top {
                    0.5
                } else {
                    1.0
                };
                let angle = 2.0 * PI * f as f64 * s as f64 / n as f64;
                sum += weight * (re * angle.cos() - im * angle.sin());
            }
            sum / m as f64
        })
        .collect()
}

/// The recipe, done the slow and obvious way on a small image set.
fn naive_recipe(mnist: &MnistImages, side: usize) -> Csr {
    let (count, h, w) = (mnist.count, mnist.height, mnist.width);
    let pixel = |k: usize, r: usize, c: usize| f64::from(mnist.pixels[(k * h + r) * w + c]);
    let mut z = vec![0.0; count * side * w]; // z[(k·side + i)·w + c]
    for k in 0..count {
        for c in 0..w {
            let column: Vec<f64> = (0..h).map(|r| pixel(k, r, c)).collect();
            for (i, v) in naive_interpft(&column, side).into_iter().enumerate() {
                z[(k * side + i) * w + c] = v;
            }
        }
    }
    let mut y = vec![0.0; count * side * side]; // y[(k·side + i)·side + j]
    for i in 0..side {
        let strip: Vec<f64> = (0..count * w)
            .map(|s| z[((s / w) * side + i) * w + s % w])
            .collect();
        for (s, v) in naive_interpft(&strip, count * side).into_iter().enumerate() {
            y[((s / side) * side + i) * side + s % side] = v;
        }
    }
    let max = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut triplets = Vec::new();
    for k in 0..count {
        for i in 0..side {
            for j in 0..side {
                if y[(k * side + i) * side + j] > 0.5 * max {
                    triplets.push((k as u32, (j * side + i) as u32, 1.0f32));
                }
            }
        }
    }
    Csr::from_triplets(count, side * side, &triplets).unwrap()
}

#[test]
fn interpolating_a_low_frequency_signal_reproduces_it_on_the_finer_grid() {
    let signal = |t: f64| 2.0 + (2.0 * PI * 3.0 * t).sin() + 0.5 * (2.0 * PI * 5.0 * t + 0.3).cos();
    for (m, n) in [(28usize, 64usize), (28, 256), (27, 50), (12, 12)] {
        let samples: Vec<f64> = (0..m).map(|t| signal(t as f64 / m as f64)).collect();
        let fine = fourier_interpolate(&samples, n).unwrap();
        assert_eq!(fine.len(), n);
        for (s, &v) in fine.iter().enumerate() {
            let exact = signal(s as f64 / n as f64);
            assert!(
                (v - exact).abs() < 1e-12,
                "{m}→{n}, point {s}: {v} vs {exact}"
            );
        }
    }
}

#[test]
fn interpolation_matches_the_direct_sum_including_the_nyquist_term() {
    let x: Vec<f64> = (0..10).map(|t| ((t * 37 + 11) % 17) as f64 - 8.0).collect();
    for (input, n) in [(&x[..], 24usize), (&x[..9], 31)] {
        let fast = fourier_interpolate(input, n).unwrap();
        let slow = naive_interpft(input, n);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
    }
}

#[test]
fn the_recipe_equals_a_direct_implementation_on_small_images() {
    // 5 images of 6×4 grey levels into 8×8 outputs (N = 64), and 3 images into 10×10.
    for (count, h, w, neurons, salt) in [(5usize, 6usize, 4usize, 64usize, 1u32), (3, 6, 6, 100, 7)]
    {
        let pixels: Vec<u8> = (0..count * h * w)
            .map(|p| {
                let v = (p as u32).wrapping_mul(2_654_435_761).wrapping_add(salt) >> 24;
                if v < 120 { 0 } else { v as u8 }
            })
            .collect();
        let mnist = MnistImages {
            count,
            height: h,
            width: w,
            pixels,
        };
        let calls = AtomicUsize::new(0);
        let side = neurons.isqrt();
        let input = from_mnist(&mnist, neurons, &|done, total| {
            assert_eq!(total, side);
            assert!(done >= 1 && done <= total);
            calls.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), side);
        assert_eq!(input.origin, InputOrigin::Mnist);
        assert!(input.features.nnz() > 0);
        assert_eq!(
            input.features,
            naive_recipe(&mnist, side),
            "{count} images of {h}×{w} → N = {neurons}"
        );
    }
}

#[test]
fn bad_sizes_are_rejected() {
    let mnist = MnistImages {
        count: 2,
        height: 28,
        width: 28,
        pixels: vec![7; 2 * 28 * 28],
    };
    for bad in [0, 1000, 900 + 1, 27 * 27, 26 * 26, 31 * 31] {
        let err = from_mnist(&mnist, bad, &|_, _| {}).unwrap_err().to_string();
        assert!(err.contains(&bad.to_string()), "{err}");
    }
    let short = MnistImages {
        count: 2,
        height: 28,
        width: 28,
        pixels: vec![7; 100],
    };
    assert!(from_mnist(&short, 1024, &|_, _| {}).is_err());
    let empty = MnistImages {
        count: 0,
        height: 28,
        width: 28,
        pixels: Vec::new(),
    };
    assert!(from_mnist(&empty, 1024, &|_, _| {}).is_err());
    assert!(synthetic(0, 1024, 0).is_err());
    assert!(synthetic(10, 0, 0).is_err());
}

#[test]
fn synthetic_inputs_are_seeded_binary_and_about_ten_percent_dense() {
    let a = synthetic(300, 1024, 5).unwrap();
    assert_eq!(a.origin, InputOrigin::Synthetic { seed: 5 });
    assert_eq!((a.features.nrows(), a.features.ncols()), (300, 1024));
    assert!(a.features.values().iter().all(|&v| v == 1.0));
    let density = a.features.nnz() as f64 / (300.0 * 1024.0);
    assert!((0.095..0.105).contains(&density), "density {density}");
    assert_eq!(a, synthetic(300, 1024, 5).unwrap());
    assert_ne!(a.features, synthetic(300, 1024, 6).unwrap().features);
    // Rows do not depend on how many rows are asked for.
    assert_eq!(
        synthetic(100, 1024, 5).unwrap().features,
        a.head(100).features
    );
}

#[test]
fn mnist_n1024_matches_the_official_images() {
    let Some(mnist) = mnist_or_skip() else { return };
    let input = from_mnist(&mnist, 1024, &|_, _| {}).unwrap();
    assert_eq!(
        (input.features.nrows(), input.features.ncols()),
        (60000, 1024)
    );
    assert_eq!(
        input.features.nnz(),
        6_373_995,
        "the recipe's total for N = 1024"
    );

    let root = workspace_root();
    let Some(subset) = find_official(&root, "sparse-images-1024_subset.mtx") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: sparse-images-1024_subset.mtx is missing"
        );
        eprintln!("skipped the pixel comparison: sparse-images-1024_subset.mtx not found");
        return;
    };
    let official = spdnn_sdgc::tsv::read_images(&subset, 1024, None).unwrap();
    assert_eq!(official.nrows(), 1200);
    let ours = input.head(1200).features;
    let mut differing = 0;
    for row in 0..1200 {
        let (a, _) = ours.row(row);
        let (b, _) = official.row(row);
        let (mut x, mut y) = (0, 0);
        while x < a.len() || y < b.len() {
            match (a.get(x), b.get(y)) {
                (Some(p), Some(q)) if p == q => (x, y) = (x + 1, y + 1),
                (Some(p), Some(q)) if p < q => (x, differing) = (x + 1, differing + 1),
                (Some(_), None) => (x, differing) = (x + 1, differing + 1),
                _ => (y, differing) = (y + 1, differing + 1),
            }
        }
    }
    eprintln!(
        "{differing} of {} pixels differ from the official first 1200 images",
        1200 * 1024
    );
    assert!(
        differing <= 20,
        "{differing} pixels differ from the official images"
    );
}

#[test]
fn loading_mnist_checks_the_file() {
    let Some(mnist) = mnist_or_skip() else { return };
    assert_eq!((mnist.count, mnist.height, mnist.width), (60000, 28, 28));
    assert_eq!(mnist.pixels.len(), 60000 * 784);
    // A corrupted copy is refused with the checksum named.
    let dir = tempfile::tempdir().unwrap();
    let copy_dir = images::mnist_dir(dir.path());
    std::fs::create_dir_all(&copy_dir).unwrap();
    let mut bytes = std::fs::read(
        images::mnist_dir(&workspace_root().join("data")).join(images::MNIST_TRAIN_IMAGES),
    )
    .unwrap();
    bytes[1000] ^= 1;
    std::fs::write(copy_dir.join(images::MNIST_TRAIN_IMAGES), bytes).unwrap();
    let err = images::load_mnist_train(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("SHA-256"), "{err}");
}
