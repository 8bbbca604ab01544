//! The fused kernel's algorithm on the CPU, step for step: the segments, the device-side
//! tile size, tiles taken in queue order, the tile's live list and its compaction, the
//! retirement decisions, the carried rows between launches, and the same arithmetic (one
//! fused multiply-add per weight slot, padding included, in the layout's order, scaled
//! entries decoded as the kernel decodes them; layer 1 in input order). Tile buffers start poisoned: reading an activation the kernel would not
//! have written is an error, so the padding logic is tested too.
//!
//! Used by the tests (against the CPU reference, on random and compressed networks) and
//! by the floors example (rows computed per layer).

use std::sync::OnceLock;

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};

use crate::layout::{Format, Layout, VECTOR, WARP, dense_index, round_up};
use crate::plan::{Segment, TILES_SCATTER_BATCH, device_tile};
use crate::{STATE_BOUND, STATE_LIVE, STATE_ZERO};

/// What the emulated run leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Emulation {
    /// Per input row: [`STATE_ZERO`], [`STATE_LIVE`] (its final values are in
    /// [`Emulation::output`]) or [`STATE_BOUND`] (finished all at the bound).
    pub states: Vec<u8>,
    /// Final values of the live rows (`rows × output width`, row-major); zero elsewhere.
    pub output: Vec<f32>,
    /// Per layer: the rows it computed.
    pub computed: Vec<usize>,
    /// Per segment: the rows it started with (the input rows, then the carried ones).
    pub carried: Vec<usize>,
}

impl Emulation {
    /// Whether each row is a category.
    pub fn flags(&self) -> Vec<u8> {
        self.states
            .iter()
            .map(|&s| u8::from(s != STATE_ZERO))
            .collect()
    }

    /// The final values (`rows × output width`): live rows as computed, finished rows at
    /// the bound, zero rows zero: what [`crate::final_values`] builds from the device's
    /// buffers.
    pub fn values(&self, upper: f32) -> Vec<f32> {
        crate::final_values(&self.states, &self.output, upper)
    }
}

/// One row of a tile: activations and where they come from.
struct Tile {
    stride: usize,
    cur: Vec<f32>,
    next: Vec<f32>,
    ids: Vec<u32>,
    live: Vec<usize>,
}

/// What one tile contributes.
#[derive(Default)]
struct TileResult {
    finished: Vec<(u32, u8)>,
    carried: Vec<(u32, Vec<f32>)>,
    outputs: Vec<(u32, Vec<f32>)>,
    computed: Vec<(usize, usize)>,
}

/// Where a segment's rows come from.
enum Source<'a> {
    Input(&'a Csr),
    Carried {
        ids: &'a [u32],
        values: &'a [f32],
        stride: usize,
    },
}

/// The parameters every tile shares.
struct Ctx<'a> {
    layout: &'a Layout,
    bias: f32,
    upper: f32,
    suffix_start: Option<usize>,
    /// Per layer, its scaled ELL entries decoded to pairs, once, when a tile first needs
    /// them (pair layers are read as they are).
    decoded: Vec<OnceLock<Vec<[u32; 2]>>>,
}

fn activate(v: f32, bias: f32, upper: f32) -> f32 {
    (v + bias).max(0.0).min(upper)
}

impl Ctx<'_> {
    /// Layer 1 over the input rows `base .. base + n`: zero, scatter, activate, walking the
    /// tile's nonzeros as the kernel does: in chunks of a quarter of the staging buffer (the
    /// second tile buffer, `tile · stride` words, double-buffered; columns and values) or a
    /// half (binary inputs: columns only), less 4 words and rounded down to a multiple of 4
    /// (the kernel's room to align its 16-byte copies), each of `threads` threads taking every
    /// `threads`-th staged nonzero,
    /// [`TILES_SCATTER_BATCH`] at a time, and finding its row by walking the tile's row starts
    /// forward from where it stopped (its row persists across chunks). The kernel's threads
    /// interleave in any order; here thread by thread. Where layer 1 is scaled the kernel
    /// sums binary rows' whole multiples as integers: the same sums, which
    /// [`crate::layout::FirstScaled`] proved exact in float in any order.
    fn first_layer(&self, tile: &mut Tile, segment: &Segment, input: &Csr, base: usize, n: usize) {
        let first = &self.layout.first;
        let width = round_up(first.width, WARP);
        let stride = tile.stride;
        for r in 0..n {
            tile.cur[r * stride..r * stride + width].fill(0.0);
            tile.ids.push((base + r) as u32);
        }
        let offsets = input.row_offsets();
        let origin = offsets[base] as usize;
        let starts: Vec<usize> = (0..=n)
            .map(|i| offsets[base + i] as usize - origin)
            .collect();
        let total = starts[n];
        let binary = input.values().iter().all(|&v| v == 1.0);
        let stage_words = segment.tile * stride;
        let half = if binary {
            stage_words / 2
        } else {
            stage_words / 4
        };
        let chunk = (half - 4) & !3;
        let threads = segment.threads;
        let mut rows = vec![0usize; threads];
        let (cols, vals) = (input.col_indices(), input.values());
        let mut c0 = 0;
        while c0 < total {
            let m = chunk.min(total - c0);
            for (t, row) in rows.iter_mut().enumerate() {
                let mut j0 = t;
                while j0 < m {
                    for u in 0..TILES_SCATTER_BATCH {
                        let j = j0 + u * threads;
                        if j >= m {
                            continue;
                        }
                        while starts[*row + 1] <= c0 + j {
                            *row += 1;
                        }
                        let k = cols[origin + c0 + j] as usize;
                        let x = if binary { 1.0 } else { vals[origin + c0 + j] };
                        let acc = &mut tile.cur[*row * stride..*row * stride + width];
                        for (c, w) in first.row(k) {
                            acc[c as usize] += x * w;
                        }
                    }
                    j0 += TILES_SCATTER_BATCH * threads;
                }
            }
            c0 += chunk;
        }
        let biases = self.layout.biases_of(0);
        for r in 0..n {
            for (c, v) in tile.cur[r * stride..r * stride + width]
                .iter_mut()
                .enumerate()
            {
                *v = activate(*v, biases.map_or(self.bias, |b| b[c]), self.upper);
            }
        }
    }

    /// Layer `l` (after the first) over the live rows: `next[slot] = clip(W·cur[slot] + b)`
    /// on every padded output, `b` the scalar bias or the output's own (padding: 0).
    fn layer(&self, tile: &mut Tile, l: usize) -> Result<(), String> {
        let layer = self.layout.layers[l];
        let outputs = round_up(layer.out_width, WARP);
        let biases = self.layout.biases_of(l);
        let bias_of = |c: usize| biases.map_or(self.bias, |b| b[c]);
        let stride = tile.stride;
        for &slot in &tile.live {
            let y = &tile.cur[slot * stride..(slot + 1) * stride];
            let out = &mut tile.next[slot * stride..slot * stride + outputs];
            match layer.format {
                Format::Dense => {
                    let w = self.layout.dense_of(l);
                    let inputs = round_up(layer.in_width, VECTOR);
                    if let Some(k) = y[..inputs].iter().position(|v| v.is_nan()) {
                        return Err(format!("layer {} reads unwritten input {k}", l + 1));
                    }
                    for (c, o) in out.iter_mut().enumerate() {
                        let mut acc = 0.0f32;
                        for k in 0..inputs {
                            acc = y[k].mul_add(w[dense_index(k, c, layer.dense_stride)], acc);
                        }
                        *o = activate(acc, bias_of(c), self.upper);
                    }
                }
                Format::Ell | Format::EllScaled16 | Format::EllScaled32 => {
                    let starts = self.layout.starts_of(l);
                    // Scaled entries decode to the pairs the kernel multiplies with.
                    let entries: &[[u32; 2]] = if layer.format == Format::Ell {
                        self.layout.ell_of(l)
                    } else {
                        self.decoded[l].get_or_init(|| self.layout.ell_entries_of(l).into_owned())
                    };
                    for (c, o) in out.iter_mut().enumerate() {
                        let (g, lane) = (c / WARP, c % WARP);
                        let mut acc = 0.0f32;
                        for s in starts[g]..starts[g + 1] {
                            let [k, w] = entries[s as usize * WARP + lane];
                            let v = y[k as usize];
                            if v.is_nan() {
                                return Err(format!("layer {} reads unwritten input {k}", l + 1));
                            }
                            acc = v.mul_add(f32::from_bits(w), acc);
                        }
                        *o = activate(acc, bias_of(c), self.upper);
                    }
                }
                Format::Input => return Err(format!("layer {} is laid out as layer 1", l + 1)),
            }
        }
        std::mem::swap(&mut tile.cur, &mut tile.next);
        Ok(())
    }

    /// After `done` layers: rows all zero finish (not categories), rows all at the bound
    /// finish when `done` reaches the suffix (categories); the others stay, in order.
    fn retire(&self, tile: &mut Tile, done: usize, finished: &mut Vec<(u32, u8)>) {
        let width = self.layout.layers[done - 1].out_width;
        let stride = tile.stride;
        let retire_bound = self.suffix_start.is_some_and(|s| done >= s);
        let mut kept = Vec::with_capacity(tile.live.len());
        for &slot in &tile.live {
            let row = &tile.cur[slot * stride..slot * stride + width];
            let nonzero = row.iter().any(|&v| v != 0.0);
            let at_bound = row.iter().all(|&v| v == self.upper);
            if nonzero && !(at_bound && retire_bound) {
                kept.push(slot);
            } else {
                let state = if nonzero { STATE_BOUND } else { STATE_ZERO };
                finished.push((tile.ids[slot], state));
            }
        }
        tile.live = kept;
    }

    /// One tile of `n` rows from position `base` of the segment's rows.
    fn tile(
        &self,
        segment: &Segment,
        source: &Source<'_>,
        base: usize,
        n: usize,
    ) -> Result<TileResult, String> {
        let stride = segment.stride;
        let mut tile = Tile {
            stride,
            cur: vec![f32::NAN; n * stride],
            next: vec![f32::NAN; n * stride],
            ids: Vec::with_capacity(n),
            live: (0..n).collect(),
        };
        let mut result = TileResult::default();
        let mut done = segment.first;
        match source {
            Source::Input(input) => {
                self.first_layer(&mut tile, segment, input, base, n);
                result.computed.push((0, n));
                done = 1;
                if !segment.check_deferred(self.layout, done) {
                    self.retire(&mut tile, done, &mut result.finished);
                }
            }
            Source::Carried {
                ids,
                values,
                stride: carried,
            } => {
                for r in 0..n {
                    let from = &values[(base + r) * carried..(base + r + 1) * carried];
                    tile.cur[r * stride..r * stride + carried].copy_from_slice(from);
                    tile.ids.push(ids[base + r]);
                }
            }
        }
        for l in done.max(1)..segment.end {
            if tile.live.is_empty() {
                break;
            }
            result.computed.push((l, tile.live.len()));
            self.layer(&mut tile, l)?;
            if !segment.check_deferred(self.layout, l + 1) {
                self.retire(&mut tile, l + 1, &mut result.finished);
            }
        }
        let last = self.layout.layers[segment.end - 1].out_width;
        for &slot in &tile.live {
            let id = tile.ids[slot];
            if segment.carry_out == 0 {
                let row = tile.cur[slot * stride..slot * stride + last].to_vec();
                result.outputs.push((id, row));
            } else {
                let row = tile.cur[slot * stride..slot * stride + segment.carry_out].to_vec();
                result.carried.push((id, row));
            }
        }
        Ok(result)
    }
}

/// Runs the fused kernel's algorithm over `input` (rows × the layout's input width) through
/// `segments`, segment `s` launched on `blocks[s]` blocks (which sets its tile size as on
/// the device), with rows all at `upper` finished after `suffix_start` layers. The bias is
/// `bias` for every neuron, or each output's own where the layout has per-neuron biases
/// ([`Layout::biases_of`]; `bias` is then unused), read as the kernel reads them.
pub fn emulate(
    layout: &Layout,
    segments: &[Segment],
    blocks: &[usize],
    input: &Csr,
    bias: f32,
    upper: f32,
    suffix_start: Option<usize>,
) -> Result<Emulation, String> {
    if input.ncols() != layout.input_width {
        return Err(format!(
            "the input has {} features, the network {}",
            input.ncols(),
            layout.input_width
        ));
    }
    if segments.len() != blocks.len() || segments.is_empty() {
        return Err("one block count per segment".into());
    }
    let rows = input.nrows();
    let width = layout.layers[layout.layers.len() - 1].out_width;
    let ctx = Ctx {
        layout,
        bias,
        upper,
        suffix_start,
        decoded: (0..layout.layers.len()).map(|_| OnceLock::new()).collect(),
    };
    let mut emulation = Emulation {
        states: vec![u8::MAX; rows],
        output: vec![0.0; rows * width],
        computed: vec![0; layout.layers.len()],
        carried: Vec::with_capacity(segments.len()),
    };
    let mut carried_ids: Vec<u32> = Vec::new();
    let mut carried_values: Vec<f32> = Vec::new();
    for (segment, &grid) in segments.iter().zip(blocks) {
        let count = if segment.first == 0 {
            rows
        } else {
            carried_ids.len()
        };
        emulation.carried.push(count);
        let tile = device_tile(count, grid, segment.tile);
        let source = if segment.first == 0 {
            Source::Input(input)
        } else {
            Source::Carried {
                ids: &carried_ids,
                values: &carried_values,
                stride: segment.carry_in,
            }
        };
        let results: Vec<TileResult> = (0..count)
            .step_by(tile)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|base| ctx.tile(segment, &source, base, tile.min(count - base)))
            .collect::<Result<_, _>>()?;
        let mut next_ids = Vec::new();
        let mut next_values = Vec::new();
        for result in results {
            for (id, state) in result.finished {
                emulation.states[id as usize] = state;
            }
            for (l, n) in result.computed {
                emulation.computed[l] += n;
            }
            for (id, row) in result.outputs {
                emulation.states[id as usize] = STATE_LIVE;
                emulation.output[id as usize * width..(id as usize + 1) * width]
                    .copy_from_slice(&row);
            }
            for (id, row) in result.carried {
                next_ids.push(id);
                next_values.extend_from_slice(&row);
            }
        }
        carried_ids = next_ids;
        carried_values = next_values;
    }
    if let Some(row) = emulation.states.iter().position(|&s| s == u8::MAX) {
        return Err(format!("row {row} never finished"));
    }
    Ok(emulation)
}

/// A whole run emulated: the chain prepared as [`crate::BlockDepend`] prepares it, laid
/// out, planned for `limits`, and emulated with `blocks` blocks per launch.
#[derive(Debug, Clone)]
pub struct EmulatedRun<'a> {
    /// The prepared chain (compression, retirement).
    pub chain: crate::Chain<'a>,
    /// Its layout.
    pub layout: Layout,
    /// Its launches.
    pub segments: Vec<Segment>,
    /// What the emulated kernel left behind.
    pub emulation: Emulation,
}

impl EmulatedRun<'_> {
    /// The 1-based categories.
    pub fn categories(&self) -> Vec<u32> {
        self.emulation
            .states
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != STATE_ZERO)
            .map(|(r, _)| r as u32 + 1)
            .collect()
    }

    /// The final values in the original neuron order (`rows × N_L`).
    pub fn values(&self, upper: f32) -> Result<Vec<f32>, String> {
        let rows = self.emulation.states.len();
        self.chain.expand(self.emulation.values(upper), rows)
    }
}

/// Emulates BlockDepend with `options` on `input` through `layers` (`N_{l-1} × N_l`), as a
/// device with `limits` would run it on `blocks` blocks per launch. `bias` is one bias for
/// every neuron (an `f32`) or a bias per output neuron of every layer
/// ([`crate::Bias::PerNeuron`], each ≤ 0). Errors like the method's preparation (bad
/// options, shapes, biases) or when the emulated kernel misbehaves.
pub fn run<'a>(
    layers: &'a [Csr],
    input: &Csr,
    bias: impl Into<crate::Bias<'a>>,
    upper: f32,
    options: &crate::BlockDependOptions,
    limits: &crate::Limits,
    blocks: usize,
) -> Result<EmulatedRun<'a>, String> {
    use spdnn_cuda::method::MethodOptions;
    options.validate()?;
    let bias = bias.into();
    let chain = crate::Chain::build(layers, bias, upper, options.compress, options.retire)?;
    // With per-neuron biases the layout carries them; the scalar is unused.
    let scalar = match bias {
        crate::Bias::One(b) => b,
        crate::Bias::PerNeuron(_) => -1.0,
    };
    let layout = Layout::build(&chain, options.format)?;
    let mut segments = crate::plan::launches(
        &layout,
        limits,
        options.cuts.as_deref(),
        options.placement,
        options.tile_rows,
    )?;
    // The items decide where a tile checks its rows (Segment::check_deferred), as on the device.
    crate::plan::choose_items(&mut segments, options.items);
    let grids = vec![blocks.max(1); segments.len()];
    let emulation = emulate(
        &layout,
        &segments,
        &grids,
        input,
        scalar,
        upper,
        chain.suffix_start(),
    )?;
    Ok(EmulatedRun {
        chain,
        layout,
        segments,
        emulation,
    })
}
