//! Shared by the CPU emulation tests and the GPU tests: problems with a bias per output
//! neuron that exercise compression (planted classes split by their biases) and retirement
//! (saturating chains with per-column biases).

#![allow(dead_code)]

use proptest::prelude::*;
use spdnn_blockdepend::emulate::EmulatedRun;
use spdnn_blockdepend::{
    BlockDependOptions, FormatChoice, ItemChoice, KernelFormats, Limits, PlacementChoice,
    SpreadChoice,
};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::Problem;
use spdnn_gputest::biased::BiasedProblem;

/// splitmix64: the per-neuron biases below, from a seed (no `rand` in this crate).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small generator (splitmix64 steps) for the planted problems below.
pub struct Draw(pub u64);

impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, eighths: u64) -> bool {
        self.below(8) < eighths
    }
}

/// Exact problems with planted classes of identical columns in every layer (1–4 layers,
/// widths 1–70, dyadic weights of both signs, mostly positive), and dyadic biases ≤ 0 per
/// planted class, except that a neuron gets a bias of its own with probability
/// `split / 8`: compression must merge the classes and split them exactly where biases
/// differ.
pub fn planted_biased(seed: u64, split: u64) -> BiasedProblem {
    let mut d = Draw(seed);
    let depth = 1 + d.below(4) as usize;
    let widths: Vec<usize> = (0..=depth).map(|_| 1 + d.below(70) as usize).collect();
    let bias = |d: &mut Draw| -(d.below(5) as f32) / 16.0;
    let mut layers = Vec::new();
    let mut biases = Vec::new();
    for l in 0..depth {
        let (rows, cols) = (widths[l], widths[l + 1]);
        let classes = 1 + d.below(cols.div_ceil(4) as u64) as usize;
        let density = 1 + d.below(5);
        let mut columns: Vec<Vec<(u32, f32)>> = vec![Vec::new(); classes];
        for column in &mut columns {
            for r in 0..rows as u32 {
                if d.chance(density) {
                    let k = 1 + d.below(8) as i32;
                    let w = if d.chance(2) { -k } else { k };
                    column.push((r, w as f32 / 8.0));
                }
            }
        }
        let class_bias: Vec<f32> = (0..classes).map(|_| bias(&mut d)).collect();
        let mut triplets = Vec::new();
        let mut layer_biases = Vec::with_capacity(cols);
        for j in 0..cols {
            let c = d.below(classes as u64) as usize;
            triplets.extend(columns[c].iter().map(|&(r, w)| (r, j as u32, w)));
            layer_biases.push(if d.chance(split) {
                bias(&mut d)
            } else {
                class_bias[c]
            });
        }
        triplets.sort_by_key(|&(r, j, _)| (r, j));
        layers.push(Csr::from_triplets(rows, cols, &triplets).unwrap());
        biases.push(layer_biases);
    }
    let rows = 1 + d.below(100) as usize;
    let mut input = Vec::new();
    for r in 0..rows as u32 {
        for c in 0..widths[0] as u32 {
            if d.chance(4) {
                input.push((r, c, (1 + d.below(8)) as f32 / 2.0));
            }
        }
    }
    BiasedProblem {
        layers,
        input: Csr::from_triplets(rows, widths[0], &input).unwrap(),
        biases,
        upper: if d.chance(4) { 4.0 } else { 32.0 },
    }
}

pub fn planted() -> impl Strategy<Value = BiasedProblem> {
    (any::<u64>(), prop_oneof![Just(0u64), Just(1), Just(4)])
        .prop_map(|(seed, split)| planted_biased(seed, split))
}

pub fn biased(p: Problem, biases: Vec<Vec<f32>>) -> BiasedProblem {
    BiasedProblem {
        layers: p.layers,
        input: p.input,
        biases,
        upper: p.upper,
    }
}

/// Saturating problems (rows reach the bound) with dyadic per-column biases ≤ 0; now and
/// then one column sinks far below (its layer can then not be proved to preserve).
pub fn saturating_biased() -> impl Strategy<Value = BiasedProblem> {
    (
        spdnn_gputest::saturating_problem(1, 60, 8, 100),
        any::<u64>(),
    )
        .prop_map(|(p, seed)| {
            let biases = p
                .layers
                .iter()
                .enumerate()
                .map(|(l, w)| {
                    (0..w.ncols())
                        .map(|j| {
                            let h = mix(seed ^ (l as u64) << 32 ^ j as u64);
                            match h % 16 {
                                0 => -64.0,
                                1..=3 => 0.0,
                                k => -((k % 5) as f32) / 8.0,
                            }
                        })
                        .collect()
                })
                .collect();
            biased(p, biases)
        })
}

/// The emulated run against the reference's result on the same problem: categories equal;
/// values bit for bit (`relative` `None`) or within `relative·max(|v|, 1)`; layer 1
/// computing every one of `input_rows` rows.
pub fn compare_emulated(
    result: &EmulatedRun<'_>,
    expected: &spdnn_reference::Inference<f32>,
    upper: f32,
    input_rows: usize,
    relative: Option<f32>,
) -> Result<(), String> {
    if result.categories() != expected.categories {
        return Err(format!(
            "categories differ: {:?} against {:?}",
            result.categories(),
            expected.categories
        ));
    }
    let values = result.values(upper)?;
    let want = expected
        .output
        .as_ref()
        .expect("the reference keeps its output");
    if values.len() != want.len() {
        return Err(format!("{} values, expected {}", values.len(), want.len()));
    }
    let n = want.ncols();
    for (i, (&got, &want)) in values.iter().zip(want.iter()).enumerate() {
        let ok = match relative {
            None => got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0),
            Some(rel) => (got - want).abs() <= rel * want.abs().max(1.0),
        };
        if !ok {
            return Err(format!(
                "row {} column {}: {got}, expected {want}",
                i / n,
                i % n
            ));
        }
    }
    if result.emulation.computed[0] != input_rows {
        return Err("layer 1 must compute every row".into());
    }
    Ok(())
}

/// An H200-like block: 227 KiB of shared memory with the opt-in.
pub const BIG: Limits = Limits::hopper(1168);

/// A block with room for 3 rows of 32 floats (two buffers): small tiles.
pub const SMALL: Limits = Limits {
    shared_per_block: 1168 + 2 * 4 * 32 * 3,
    shared_per_sm: 228 * 1024,
    reserved_per_block: 0,
    static_shared: 1168,
    narrow_blocks: spdnn_blockdepend::plan::TARGET_BLOCKS_PER_SM,
    bulk_copies: true,
};

/// A block with no room for a row: every launch in global memory.
pub const NONE: Limits = Limits {
    shared_per_block: 1168 + 100,
    shared_per_sm: 228 * 1024,
    reserved_per_block: 0,
    static_shared: 1168,
    narrow_blocks: spdnn_blockdepend::plan::TARGET_BLOCKS_PER_SM,
    bulk_copies: true,
};

/// What a run of the emulation varies: the options, the device's limits, its blocks.
#[derive(Debug, Clone)]
pub struct Knobs {
    pub options: BlockDependOptions,
    pub limits: Limits,
    pub blocks: usize,
}

/// Random options and device shapes for a chain of `layers` layers.
pub fn knobs(layers: usize) -> impl Strategy<Value = Knobs> {
    let cuts =
        proptest::collection::vec(proptest::bool::ANY, layers.saturating_sub(1)).prop_map(|keep| {
            keep.iter()
                .enumerate()
                .filter(|(_, k)| **k)
                .map(|(i, _)| i + 1)
                .collect::<Vec<usize>>()
        });
    (
        proptest::bool::ANY,
        proptest::bool::ANY,
        prop_oneof![
            Just(FormatChoice::Auto),
            Just(FormatChoice::Dense),
            Just(FormatChoice::Ell),
            Just(FormatChoice::EllPairs)
        ],
        prop_oneof![
            3 => Just(PlacementChoice::Auto),
            1 => Just(PlacementChoice::Global)
        ],
        prop_oneof![Just(None), (1usize..=9).prop_map(Some)],
        prop_oneof![Just(None), cuts.prop_map(Some)],
        prop_oneof![Just(BIG), Just(SMALL), Just(NONE)],
        1usize..=6,
    )
        .prop_map(
            |(compress, retire, format, placement, tile_rows, cuts, limits, blocks)| Knobs {
                options: BlockDependOptions {
                    compress,
                    retire,
                    tile_rows,
                    cuts,
                    placement,
                    format,
                    // The emulation has no items: exact and predicated items compute the
                    // same sums in the same order (the GPU tests compare them).
                    items: ItemChoice::Auto,
                    // Nor a spread: a spread launch computes each row's outputs with the
                    // same items in the same order as a tile does.
                    spread: SpreadChoice::Auto,
                    // The emulation sizes no grid (`blocks` is its own).
                    grid_blocks: None,
                    // Nor compiles a kernel.
                    kernel_formats: KernelFormats::Auto,
                    // Nor enqueues one.
                    graph: true,
                    // Nor loads a batch (a bitmap's bins are the columns' counts: the GPU
                    // tests compare the two).
                    input_bitmap: true,
                },
                limits,
                blocks,
            },
        )
}

/// The defaults on an H200-like device with 4 blocks.
pub fn default_knobs() -> Knobs {
    Knobs {
        options: BlockDependOptions::default(),
        limits: BIG,
        blocks: 4,
    }
}

/// Each problem of `problem` with random [`Knobs`] for its `layers(p)` layers.
pub fn with_knobs_of<P: Clone + std::fmt::Debug + 'static>(
    problem: impl Strategy<Value = P>,
    layers: fn(&P) -> usize,
) -> impl Strategy<Value = (P, Knobs)> {
    problem.prop_flat_map(move |p| {
        let count = layers(&p);
        (Just(p), knobs(count))
    })
}

/// Three square layers of 33000 neurons whose weights are multiples of 0.5 (up to 1, 3 and
/// 1 times), over five sparse rows: an index takes 16 bits, so the second layer's scaled
/// entries take 32; two buffers of a row do not fit a block, one does.
pub fn wide_scaled_problem() -> Problem {
    let n = 33_000u32;
    let layer = |shift: u32, most: u32| wide_scaled_layer(n, shift, most);
    Problem {
        layers: vec![layer(1, 1), layer(5, 3), layer(11, 1)],
        input: Csr::from_triplets(
            5,
            n as usize,
            &[
                (0, 3, 1.0),
                (0, 32_999, 1.0),
                (1, 17, 0.5),
                (3, 0, 2.0),
                (3, 20_000, 1.0),
                (4, 9, 1.0),
            ],
        )
        .unwrap(),
        bias: -0.25,
        upper: 32.0,
    }
}

/// A square layer of `n` inputs whose input `i` feeds outputs `(i + shift) mod n` (weight
/// `0.5·(1 + i mod most)`) and `(7i + 1) mod n` (weight 0.5): every weight a multiple of 0.5
/// up to `most`, two entries a column at most.
fn wide_scaled_layer(n: u32, shift: u32, most: u32) -> Csr {
    let mut t: Vec<(u32, u32, f32)> = (0..n)
        .flat_map(|i| {
            [
                (i, (i + shift) % n, 0.5 * (1 + i % most) as f32),
                (i, (i * 7 + 1) % n, 0.5),
            ]
        })
        .collect();
    t.sort_by_key(|&(i, j, _)| (i, j));
    t.dedup_by_key(|&mut (i, j, _)| (i, j));
    Csr::from_triplets(n as usize, n as usize, &t).unwrap()
}

/// A layer of `inputs × outputs` whose output `c` reads input `(c + d) mod inputs` with
/// weight `w`, for each `(d, w)` of `slots`: circulant (`layout::Circulant`) where its shape
/// and offsets allow.
pub fn circulant_layer(inputs: usize, outputs: usize, slots: &[(u32, f32)]) -> Csr {
    let t: Vec<(u32, u32, f32)> = (0..outputs as u32)
        .flat_map(|c| {
            slots
                .iter()
                .map(move |&(d, w)| ((c + d) % inputs as u32, c, w))
        })
        .collect();
    Csr::from_triplets(inputs, outputs, &t).unwrap()
}

/// A network whose layer 1 folds (`layout::FirstScaled::fold`): input `k` of `inputs` feeds
/// outputs `k` and `k + 1` mod `width` with weight 1/16 (its rows repeat with the period of
/// its `width` outputs), then `layers - 1` random `width × width` layers of fan-in 8; over
/// `rows` synthetic binary rows. With `inputs` not a multiple of 32 a row's last bitmap word is
/// part full; past 1024 inputs the lanes count a row's bins in several rounds of 32 words.
pub fn folding_problem(
    inputs: usize,
    width: usize,
    layers: usize,
    rows: usize,
    seed: u64,
) -> Problem {
    let first: Vec<(u32, u32, f32)> = (0..inputs)
        .flat_map(|k| [k, k + 1].map(|c| (k as u32, (c % width) as u32, 0.0625)))
        .collect();
    let mut chain = vec![Csr::from_triplets(inputs, width, &first).expect("layer 1")];
    if layers > 1 {
        let rest = spdnn_sdgc::generator::random_network(width, layers - 1, 8, seed)
            .expect("random layers");
        chain.extend(rest.layers().iter().cloned());
    }
    Problem {
        layers: chain,
        input: spdnn_sdgc::images::synthetic(rows, inputs, seed)
            .expect("synthetic input")
            .features,
        bias: -0.3,
        upper: 32.0,
    }
}
