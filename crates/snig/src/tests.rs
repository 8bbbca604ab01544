//! A CPU emulation of `kernels-cu/snig.cu` driven the way [`SnigRun`](super::SnigRun)
//! drives the device: the same buffers (sized for the widest rows and the most sections,
//! starting with garbage, and reused by a second batch), the same per-layer launch
//! arguments ([`LayerLaunch`]) and the same block bodies, one (row, section) at a time.
//! It checks on rectangular chains (no GPU needed) that the flags stay exact when the
//! widths change and that stale values under zero flags are never read.

use proptest::prelude::*;
use spdnn_cuda::rows::{GpuInference, categories_from_flags};
use spdnn_cuda::slab_weights::{DEFAULT_SHARED_BYTES, SlabLayout, slab_width_for};
use spdnn_formats::{ColumnSlabs, Csr, SparseMatrix};
use spdnn_gputest::{Problem, Tolerance, compare};

use super::LayerLaunch;

const ZERO: u8 = 0;
const NONZERO: u8 = 1;
const AT_BOUND: u8 = 2;

/// The device state of one SNIG run: activations A and B, their section flags.
struct Emulated {
    layout: SlabLayout,
    slabs: Vec<ColumnSlabs>,
    rows: usize,
    y: [Vec<f32>; 2],
    flags: [Vec<u8>; 2],
    glare: bool,
    bias: f32,
    upper: f32,
}

impl Emulated {
    /// Buffers as `prepare` sizes them, full of garbage (a stale NaN is read only by a bug).
    fn new(problem: &Problem, slab_width: Option<usize>, glare: bool, rows: usize) -> Self {
        let widths = spdnn_cuda::rows::check_widths(&problem.layers, problem.bias, problem.upper)
            .expect("valid chain");
        let widest = *widths.iter().max().unwrap();
        let width = slab_width.unwrap_or_else(|| slab_width_for(widest, DEFAULT_SHARED_BYTES));
        let layout = SlabLayout::new(widths, width).unwrap();
        let slabs = problem
            .layers
            .iter()
            .map(|w| ColumnSlabs::from_csr(w, width).unwrap())
            .collect();
        let values = rows * layout.max_width();
        let flags = rows * layout.max_slabs();
        Self {
            slabs,
            rows,
            y: [vec![f32::NAN; values], vec![f32::NAN; values]],
            flags: [vec![0xab; flags], vec![NONZERO; flags]],
            glare,
            bias: problem.bias,
            upper: problem.upper,
            layout,
        }
    }

    /// `SnigRun::load`: A cleared and holding the input, its section flags, B's flags cleared.
    fn load(&mut self, input: &Csr) {
        let n = self.layout.input_width();
        self.y[0].fill(0.0);
        for (r, c, v) in input.triplets() {
            self.y[0][r as usize * n + c as usize] = v;
        }
        self.flags[1].fill(0);
        let (w, sections) = (self.layout.slab_width(), self.layout.slabs_of(n));
        for row in 0..self.rows {
            for s in 0..sections {
                let end = (s * w + w).min(n);
                let any = (s * w..end).any(|c| self.y[0][row * n + c] != 0.0);
                self.flags[0][row * sections + s] = u8::from(any);
            }
        }
    }

    /// `snig_layer_body` for block (row, section).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        launch: &LayerLaunch,
        slabs: &ColumnSlabs,
        (y_in, y_out): (&[f32], &mut [f32]),
        (in_flags, out_flags): (&[u8], &mut [u8]),
        row: usize,
        section: usize,
    ) {
        let w = self.layout.slab_width();
        let (n_in, n_out) = (launch.n_in as usize, launch.n_out as usize);
        let (in_sections, out_sections) =
            (launch.in_sections as usize, launch.out_sections as usize);
        let row_flags = &in_flags[row * in_sections..(row + 1) * in_sections];
        let any_input = row_flags.iter().any(|&f| f != ZERO);
        let first_col = section * w;
        let width = w.min(n_out - first_col);
        assert!(
            width <= launch.shared,
            "a section wider than its shared memory"
        );
        let flag_out = row * out_sections + section;
        let out = row * n_out + first_col;
        if !any_input {
            if out_flags[flag_out] != ZERO {
                y_out[out..out + width].fill(0.0);
                out_flags[flag_out] = ZERO;
            }
            return;
        }
        let mut acc = vec![0.0f32; launch.shared];
        let offsets = &slabs.offsets()[section * (n_in + 1)..(section + 1) * (n_in + 1)];
        for (s, &state) in row_flags.iter().enumerate() {
            if state == ZERO {
                continue;
            }
            for j in s * w..(s * w + w).min(n_in) {
                let yj = if self.glare && state == AT_BOUND {
                    self.upper
                } else {
                    y_in[row * n_in + j]
                };
                assert!(!yj.is_nan(), "row {row} read a stale value at input {j}");
                if yj != 0.0 {
                    for k in offsets[j] as usize..offsets[j + 1] as usize {
                        acc[slabs.local_cols()[k] as usize] += yj * slabs.values()[k];
                    }
                }
            }
        }
        let values: Vec<f32> = acc[..width]
            .iter()
            .map(|&a| (a + self.bias).clamp(0.0, self.upper))
            .collect();
        let nonzero = values.iter().any(|&v| v != 0.0);
        let off_bound = values.iter().any(|&v| v != self.upper);
        if !self.glare || off_bound {
            y_out[out..out + width].copy_from_slice(&values);
        }
        out_flags[flag_out] = if self.glare && !off_bound {
            AT_BOUND
        } else {
            u8::from(nonzero)
        };
    }

    /// `Chain::enqueue`: layer l reads A (even l) or B, grid (rows, its output sections).
    fn run(&mut self) {
        for layer in 0..self.layout.layers() {
            let launch = LayerLaunch::new(&self.layout, layer).unwrap();
            let (read, write) = if layer.is_multiple_of(2) {
                (0, 1)
            } else {
                (1, 0)
            };
            let mut y_out = std::mem::take(&mut self.y[write]);
            let mut f_out = std::mem::take(&mut self.flags[write]);
            for row in 0..self.rows {
                for section in 0..launch.out_sections as usize {
                    self.block(
                        &launch,
                        &self.slabs[layer],
                        (&self.y[read], &mut y_out),
                        (&self.flags[read], &mut f_out),
                        row,
                        section,
                    );
                }
            }
            self.y[write] = y_out;
            self.flags[write] = f_out;
        }
    }

    /// `snig_row_categories`, `snig_glare_fill` and `rows::final_output` on the last
    /// layer's buffer: the categories and the values of the loaded rows.
    fn result(&mut self, loaded: usize) -> GpuInference {
        let last = if self.layout.layers().is_multiple_of(2) {
            0
        } else {
            1
        };
        let n = self.layout.output_width();
        let sections = self.layout.slabs_of(n);
        let w = self.layout.slab_width();
        let mut row_flags = Vec::with_capacity(loaded);
        for row in 0..loaded {
            let flags = &self.flags[last][row * sections..(row + 1) * sections];
            row_flags.push(u8::from(flags.iter().any(|&f| f != ZERO)));
            for (s, &f) in flags.iter().enumerate() {
                if self.glare && f == AT_BOUND {
                    let start = row * n + s * w;
                    let end = row * n + (s * w + w).min(n);
                    self.y[last][start..end].fill(self.upper);
                }
            }
        }
        let mut output = self.y[last][..loaded * n].to_vec();
        for (row, &flag) in row_flags.iter().enumerate() {
            if flag == 0 {
                output[row * n..(row + 1) * n].fill(0.0);
            }
        }
        GpuInference {
            categories: categories_from_flags(&row_flags),
            output: Some(output),
            ..GpuInference::default()
        }
    }
}

/// Runs `problem` through the emulation twice in the same buffers: first with its rows
/// reversed (leaving stale values behind), then as it is; checks the second run.
fn check(problem: &Problem, slab_width: Option<usize>, glare: bool) -> Result<(), String> {
    let rows = problem.input.nrows();
    let mut emulated = Emulated::new(problem, slab_width, glare, rows);
    let reversed: Vec<(u32, u32, f32)> = problem
        .input
        .triplets()
        .map(|(r, c, v)| (rows as u32 - 1 - r, c, v))
        .collect();
    let first = Csr::from_triplets(rows, problem.input.ncols(), &reversed).unwrap();
    emulated.load(&first);
    emulated.run();
    emulated.load(&problem.input);
    emulated.run();
    let result = emulated.result(rows);
    compare(problem, &result, Tolerance::Exact)
        .map_err(|e| format!("sections of {slab_width:?}, glare {glare}: {e}"))
}

/// A chain of all-ones layers of `widths` with entries where `(r + 2c) % keep != 0`, every
/// input 1, bound 1: most values reach the bound, some rows die.
fn saturating_chain(widths: &[usize], rows: usize, keep: usize) -> Problem {
    let dense = |r: usize, c: usize, skip: usize| {
        let triplets: Vec<(u32, u32, f32)> = (0..r)
            .flat_map(|i| (0..c).map(move |j| (i, j)))
            .filter(|&(i, j)| !(i + 2 * j + skip).is_multiple_of(keep))
            .map(|(i, j)| (i as u32, j as u32, 1.0))
            .collect();
        Csr::from_triplets(r, c, &triplets).unwrap()
    };
    let layers = widths
        .windows(2)
        .enumerate()
        .map(|(l, pair)| dense(pair[0], pair[1], l))
        .collect();
    // Row r has inputs at the columns c with (r + c) % 3 == 0; every fourth row is empty.
    let input: Vec<(u32, u32, f32)> = (0..rows)
        .filter(|r| r % 4 != 3)
        .flat_map(|r| (0..widths[0]).map(move |c| (r, c)))
        .filter(|(r, c)| (r + c) % 3 == 0)
        .map(|(r, c)| (r as u32, c as u32, 1.0))
        .collect();
    Problem {
        layers,
        input: Csr::from_triplets(rows, widths[0], &input).unwrap(),
        bias: -0.25,
        upper: 1.0,
    }
}

#[test]
fn launches_follow_each_layers_widths() {
    let layout = SlabLayout::new(vec![7, 3, 10, 10, 1], 4).unwrap();
    let launch = LayerLaunch::new(&layout, 1).unwrap();
    assert_eq!(
        (
            launch.n_in,
            launch.n_out,
            launch.in_sections,
            launch.out_sections,
            launch.shared
        ),
        (3, 10, 1, 3, 4)
    );
    assert!(LayerLaunch::new(&layout, 4).is_err());
    // Square: every layer's launch is the same, as before rectangular chains.
    let square = SlabLayout::new(vec![80; 5], 32).unwrap();
    let first = LayerLaunch::new(&square, 0).unwrap();
    for layer in 1..4 {
        assert_eq!(LayerLaunch::new(&square, layer).unwrap(), first);
    }
    assert_eq!((first.n_in, first.in_sections, first.shared), (80, 3, 32));
}

#[test]
fn saturating_rectangular_chains_match_the_reference() {
    // Widths that narrow, widen and come back, with partial last sections.
    for widths in [
        vec![9, 5, 12, 3, 12, 12, 1],
        vec![16, 4, 4, 7, 2, 9],
        vec![5, 5, 5],
        vec![3, 17],
    ] {
        for keep in [3, 5, 7] {
            let problem = saturating_chain(&widths, 13, keep);
            for slab_width in [Some(1), Some(2), Some(4), None] {
                for glare in [false, true] {
                    if let Err(e) = check(&problem, slab_width, glare) {
                        panic!("widths {widths:?}, keep {keep}: {e}");
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rectangular_random_chains_match_the_reference(
        problem in spdnn_gputest::rectangular_problem(40, 24),
        slab_width in prop_oneof![Just(None), (1usize..=9).prop_map(Some)],
        glare in any::<bool>(),
    ) {
        prop_assert_eq!(check(&problem, slab_width, glare), Ok(()));
    }

    #[test]
    fn compressed_classed_chains_match_the_reference(
        problem in spdnn_gputest::classed_problem(40, 24),
        slab_width in prop_oneof![Just(None), (1usize..=9).prop_map(Some)],
        glare in any::<bool>(),
    ) {
        let (compressed, _) = spdnn_gputest::compressed(&problem);
        prop_assert_eq!(check(&compressed, slab_width, glare), Ok(()));
    }
}
