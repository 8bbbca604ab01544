//! A CPU emulation of `kernels-cu/bf.cu` driven the way the crate drives the device
//! ([`BfBatch`](super::BfBatch) and the run): buffers of the widest rows (starting with
//! garbage and reused by a second batch), the list of non-empty rows, the GLARE recorders
//! of the widest row's units with each layer's own unit counts, the fill of recorded units
//! before the read-back, and the block body one listed row at a time. It checks on
//! rectangular chains (no GPU needed) the index arithmetic of the input and output widths
//! and of the units (a unit spanning slabs, a unit cut short by a narrower layer).

use proptest::prelude::*;
use spdnn_cuda::rows::{GpuInference, categories_from_flags};
use spdnn_cuda::slab_weights::{DEFAULT_SHARED_BYTES, SlabLayout, slab_width_for};
use spdnn_formats::{ColumnSlabs, Csr, SparseMatrix};
use spdnn_glare::{GlareKernel, model};
use spdnn_gputest::{Problem, Tolerance, compare};

use super::Bf;

/// The device state of one BF run.
struct Emulated {
    layout: SlabLayout,
    slabs: Vec<ColumnSlabs>,
    rows: usize,
    y: [Vec<f32>; 2],
    /// The current activations (index into `y`).
    current: usize,
    list: Vec<usize>,
    /// `log2` of the unit and the two recorders (current first), when with GLARE.
    glare: Option<(u32, [Vec<u8>; 2])>,
    bias: f32,
    upper: f32,
}

impl Emulated {
    fn new(problem: &Problem, slab_width: Option<usize>, segment: Option<usize>) -> Self {
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
        let rows = problem.input.nrows();
        let values = rows * widest;
        let glare = segment.map(|m| {
            let units = rows * widest.div_ceil(m);
            (m.trailing_zeros(), [vec![0xab; units], vec![0xcd; units]])
        });
        Self {
            slabs,
            rows,
            y: [vec![f32::NAN; values], vec![f32::NAN; values]],
            current: 0,
            list: Vec::new(),
            glare,
            bias: problem.bias,
            upper: problem.upper,
            layout,
        }
    }

    fn units(&self, width: usize) -> usize {
        self.glare
            .as_ref()
            .map_or(0, |(shift, _)| width.div_ceil(1 << shift))
    }

    /// `BfBatch::load` (and `Recorder::clear`).
    fn load(&mut self, input: &Csr) {
        let n = input.ncols();
        self.current = 0;
        self.y[0].fill(0.0);
        for (r, c, v) in input.triplets() {
            self.y[0][r as usize * n + c as usize] = v;
        }
        self.list = (0..input.nrows()).collect();
        if let Some((_, flags)) = self.glare.as_mut() {
            flags[0].fill(0);
            flags[1].fill(0);
        }
    }

    /// `bf_layer_body` for one listed row; returns whether it stays non-empty. (Loops over
    /// indices, as the kernel's threads do.)
    #[allow(clippy::needless_range_loop)]
    fn row(&mut self, layer: usize, row: usize) -> bool {
        let shape = self.layout.layer(layer).unwrap();
        let (n_in, n_out, w) = (shape.n_in, shape.n_out, self.layout.slab_width());
        let (in_units, out_units) = (self.units(n_in), self.units(n_out));
        let slabs = &self.slabs[layer];
        let (read, write) = (self.current, 1 - self.current);
        let y: Vec<f32> = self.y[read][row * n_in..(row + 1) * n_in].to_vec();
        let mut out = std::mem::take(&mut self.y[write]);
        let out_row = &mut out[row * n_out..(row + 1) * n_out];
        let (shift, unit_at_bound, mut out_flags) = match self.glare.as_mut() {
            Some((shift, flags)) => {
                assert!(in_units <= model::MAX_ROW_UNITS);
                let input = flags[0][row * in_units..(row + 1) * in_units].to_vec();
                (Some(*shift), input, Some(std::mem::take(&mut flags[1])))
            }
            None => (None, Vec::new(), None),
        };
        let mut acc = vec![0.0f32; shape.shared];
        let mut open_at_bound = true;
        let mut alive = false;
        for slab in 0..shape.slabs_out {
            let first_col = slab * w;
            let width = w.min(n_out - first_col);
            assert!(width <= shape.shared, "a slab wider than its shared memory");
            acc[..width].fill(0.0);
            let offsets = &slabs.offsets()[slab * (n_in + 1)..(slab + 1) * (n_in + 1)];
            for (j, &value) in y.iter().enumerate() {
                let yj = match shift {
                    Some(s) if unit_at_bound[j >> s] != 0 => self.upper,
                    _ => value,
                };
                assert!(!yj.is_nan(), "row {row} read a stale value at input {j}");
                if yj != 0.0 {
                    for k in offsets[j] as usize..offsets[j + 1] as usize {
                        acc[slabs.local_cols()[k] as usize] += yj * slabs.values()[k];
                    }
                }
            }
            let Some(shift) = shift else {
                for c in 0..width {
                    let v = (acc[c] + self.bias).clamp(0.0, self.upper);
                    out_row[first_col + c] = v;
                    alive |= v != 0.0;
                }
                continue;
            };
            let flags = out_flags.as_mut().unwrap();
            let flag_base = row * out_units;
            let unit_a = first_col >> shift;
            let unit_b = (first_col + width - 1) >> shift;
            let (mut a_off_bound, mut b_off_bound) = (false, false);
            for c in 0..width {
                let v = (acc[c] + self.bias).clamp(0.0, self.upper);
                acc[c] = v;
                alive |= v != 0.0;
                if v != self.upper {
                    if (first_col + c) >> shift == unit_a {
                        a_off_bound = true;
                    } else {
                        b_off_bound = true;
                    }
                }
            }
            let start_a = unit_a << shift;
            let a_starts_here = start_a == first_col;
            let a_at_bound = (a_starts_here || open_at_bound) && !a_off_bound;
            let b_at_bound = !b_off_bound;
            if !a_starts_here && open_at_bound && a_off_bound {
                out_row[start_a..first_col].fill(self.upper);
            }
            for c in 0..width {
                let in_a = (first_col + c) >> shift == unit_a;
                if !(if in_a { a_at_bound } else { b_at_bound }) {
                    out_row[first_col + c] = acc[c];
                }
            }
            let slab_end = first_col + width;
            let end_a = (start_a + (1 << shift)).min(n_out);
            if end_a <= slab_end {
                flags[flag_base + unit_a] = u8::from(a_at_bound);
                if unit_b != unit_a {
                    let end_b = ((unit_b + 1) << shift).min(n_out);
                    if end_b <= slab_end {
                        flags[flag_base + unit_b] = u8::from(b_at_bound);
                    } else {
                        open_at_bound = b_at_bound;
                    }
                }
            } else {
                open_at_bound = a_at_bound;
            }
        }
        self.y[write] = out;
        if let (Some((_, flags)), Some(out_flags)) = (self.glare.as_mut(), out_flags) {
            flags[1] = out_flags;
        }
        alive
    }

    /// Every layer: `bf_layer` on the listed rows, `bf_compact_rows`, the swaps.
    fn run(&mut self) {
        for layer in 0..self.layout.layers() {
            let listed = std::mem::take(&mut self.list);
            self.list = listed
                .into_iter()
                .filter(|&row| self.row(layer, row))
                .collect();
            self.current = 1 - self.current;
            if let Some((_, flags)) = self.glare.as_mut() {
                flags.swap(0, 1);
            }
        }
    }

    /// `spdnn_mark_rows`, `Recorder::fill_listed_rows` and `rows::final_output`.
    fn result(&mut self) -> GpuInference {
        let n = self.layout.output_width();
        let units = self.units(n);
        let y = &mut self.y[self.current];
        if let Some((shift, flags)) = &self.glare {
            for &row in &self.list {
                for c in 0..n {
                    if flags[0][row * units + (c >> shift)] != 0 {
                        y[row * n + c] = self.upper;
                    }
                }
            }
        }
        let mut row_flags = vec![0u8; self.rows];
        for &row in &self.list {
            row_flags[row] = 1;
        }
        let mut output = y[..self.rows * n].to_vec();
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

/// The segment lengths BF accepts for `problem` with `slab_width` (checked against the
/// widest width, as `prepare` checks them).
fn segments(problem: &Problem, slab_width: Option<usize>) -> Vec<usize> {
    let widths =
        spdnn_cuda::rows::check_widths(&problem.layers, problem.bias, problem.upper).unwrap();
    let widest = *widths.iter().max().unwrap();
    Bf::candidates(&model::Shape {
        neurons: widest,
        slab_width: slab_width.unwrap_or_else(|| slab_width_for(widest, DEFAULT_SHARED_BYTES)),
        first_layer: 0,
    })
}

/// Runs `problem` twice in the same buffers, first with its rows reversed (leaving stale
/// values and flags behind), then as it is; checks the second run.
fn check(
    problem: &Problem,
    slab_width: Option<usize>,
    segment: Option<usize>,
) -> Result<(), String> {
    let rows = problem.input.nrows();
    let mut emulated = Emulated::new(problem, slab_width, segment);
    let reversed: Vec<(u32, u32, f32)> = problem
        .input
        .triplets()
        .map(|(r, c, v)| (rows as u32 - 1 - r, c, v))
        .collect();
    emulated.load(&Csr::from_triplets(rows, problem.input.ncols(), &reversed).unwrap());
    emulated.run();
    emulated.load(&problem.input);
    emulated.run();
    compare(problem, &emulated.result(), Tolerance::Exact)
        .map_err(|e| format!("slabs of {slab_width:?}, segment {segment:?}: {e}"))
}

/// A chain of all-ones layers of `widths` with entries where `(r + 2c + l) % keep != 0`,
/// inputs 1 where `(r + c) % 3 == 0` (every fourth row empty), bound 1: most values reach
/// the bound, some rows die.
fn saturating_chain(widths: &[usize], rows: usize, keep: usize) -> Problem {
    let layers = widths
        .windows(2)
        .enumerate()
        .map(|(l, pair)| {
            let triplets: Vec<(u32, u32, f32)> = (0..pair[0])
                .flat_map(|i| (0..pair[1]).map(move |j| (i, j)))
                .filter(|&(i, j)| !(i + 2 * j + l).is_multiple_of(keep))
                .map(|(i, j)| (i as u32, j as u32, 1.0))
                .collect();
            Csr::from_triplets(pair[0], pair[1], &triplets).unwrap()
        })
        .collect();
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
fn saturating_rectangular_chains_match_the_reference() {
    // Narrowing, widening and back, partial last slabs and units, one-column layers.
    for widths in [
        vec![9, 5, 12, 3, 12, 12, 1],
        vec![16, 4, 4, 7, 2, 9],
        vec![5, 5, 5],
        vec![3, 17],
        vec![40, 6, 33, 33, 2, 40],
    ] {
        for keep in [3, 5, 7] {
            let problem = saturating_chain(&widths, 13, keep);
            for slab_width in [Some(1), Some(2), Some(3), Some(4), None] {
                let glare = segments(&problem, slab_width).into_iter().map(Some);
                for segment in std::iter::once(None).chain(glare) {
                    if let Err(e) = check(&problem, slab_width, segment) {
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
        pick in any::<prop::sample::Index>(),
        glare in any::<bool>(),
    ) {
        let candidates = segments(&problem, slab_width);
        let segment = (glare && !candidates.is_empty())
            .then(|| candidates[pick.index(candidates.len())]);
        prop_assert_eq!(check(&problem, slab_width, segment), Ok(()));
    }

    #[test]
    fn compressed_classed_chains_match_the_reference(
        problem in spdnn_gputest::classed_problem(40, 24),
        slab_width in prop_oneof![Just(None), (1usize..=9).prop_map(Some)],
        pick in any::<prop::sample::Index>(),
        glare in any::<bool>(),
    ) {
        let (compressed, _) = spdnn_gputest::compressed(&problem);
        let candidates = segments(&compressed, slab_width);
        let segment = (glare && !candidates.is_empty())
            .then(|| candidates[pick.index(candidates.len())]);
        prop_assert_eq!(check(&compressed, slab_width, segment), Ok(()));
    }
}
