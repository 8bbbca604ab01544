//! The layers as the fused kernel reads them.
//!
//! **Layer 1** reads the sparse input rows: each input nonzero `(k, x)` adds `x·W[k, c]` to
//! the tile's accumulator of output `c` (shared-memory atomics), so layer 1 is kept
//! row-major ([`FirstLayer`]: CSR over the input neurons, each entry an `(output, weight)`
//! pair read as one 8-byte load).
//!
//! **Layers 2…L** are *pulled*: lane `c mod 32` of a warp computes output `c` for up to
//! [`ROWS_PER_ITEM`] rows of the tile, reading the rows' activations from the tile (shared
//! memory, broadcast or scattered) and the weights from global memory, where they stay in
//! L2 across the blocks. Each layer is stored in whichever of two formats costs less per
//! row ([`choose_format`]):
//!
//! - [`Format::Dense`]: `⌈in/4⌉·4` rows (the sums take four inputs a step) × `⌈out/32⌉·32`
//!   columns (a warp's 32 lanes), padding zero, in quads of inputs ([`dense_index`]): the
//!   four weights `W[k .. k + 4][c]` of a step lie side by side, so lane `c` of a warp reads
//!   them in one 16-byte load and the warp's step reads 512 contiguous bytes.
//! - [`Format::Ell`]: columns in groups of 32, each group sliced ELL: slot `s` of the
//!   group holds one stored entry of each of its 32 columns as an `(input, weight)` pair,
//!   `slots` = the group's longest column, shorter columns padded with weight 0. Slot `s`
//!   of a warp is one 256-byte read: coalesced. Which entry of a column goes to which slot
//!   is chosen so that the 32 lanes of a slot read different shared-memory banks (input
//!   mod 32) where they can ([`slot_order`]), and the previous layer's outputs are
//!   permuted within their groups so that each group's entries spread evenly over the
//!   banks ([`bank_positions`], [`Layout::positions`]): random inputs (fan-in 32 of 4096)
//!   put about 3.4 addresses on a slot's busiest bank (each a shared-memory wavefront) in
//!   input order, 1.36 in the slots' order, 1.02 with the outputs permuted ([`crate::banks`]).
//!   Padding reads an address the slot reads anyway (a broadcast).
//! - [`Format::EllScaled16`] / [`Format::EllScaled32`]: the same slots, for a layer whose
//!   stored weights are all small positive multiples `m·b` of one value `b` (one value:
//!   `m = 1`), proved bit for bit from the data ([`scaled_form`]): `b` is kept once (the
//!   layer's first 8-byte unit, with the index bits) and each entry packs its input index
//!   (the low `index_bits` bits) and `m` (the bits above) into 2 bytes when both fit, else 4.
//!   Padding has `m = 0`: `0·b = +0.0`, the pair form's padding weight. The kernel
//!   computes the weight as `float(m)·b` (one rounded multiply, exact for the values
//!   accepted), so every entry decodes to the very `(input, weight)` pair of
//!   [`Format::Ell`] ([`Layout::ell_entry`]) and the sums are bit for bit those of the
//!   pairs, at a quarter (or half) of the bytes. The compressed challenge networks need
//!   the multiples: compression merges input classes of 1 to 5 members outside the first
//!   cycle, so a layer holds `1/16`, `2/16`, … (docs/blockdepend.md).
//!
//! Every layer's outputs are written for all `⌈out/32⌉·32` columns (the padding computes
//! `clip(0 + b) = 0`, as `b ≤ 0`), so the next layer's float4 reads past `in` see zeros.
//!
//! **Biases.** A chain with one bias passes it to the kernel as a scalar. A chain with a
//! bias per output neuron (trained networks) stores layer `l`'s biases at
//! `l·`[`Layout::bias_stride`] in [`Layout::biases`], one float per output column up to
//! the widest padded layer (the padding's bias is 0, so it still computes
//! `clip(0 + 0) = 0`): the kernel finds them from the layer index and the column alone,
//! which keeps its registers as they were.
//!
//! The summation order is fixed per output: Dense adds `y_k·W[k][c]` for `k` ascending
//! (padding included), Ell in slot order (padding included), each with one fused
//! multiply-add from `0`, then the bias; the CPU emulation ([`crate::emulate`]) repeats it
//! bit for bit. Layer 1's atomics add in any order (exact for dyadic data; within
//! rounding otherwise, as every method's scatter).

use std::borrow::Cow;

use rayon::prelude::*;
use serde::Serialize;
use spdnn_formats::{Csr, SparseMatrix};

use crate::Chain;
use crate::banks::{bank_excess, lane_positions, slot_cost, slot_order};

/// Lanes of a warp: outputs per work item.
pub const WARP: usize = 32;
/// Inputs read per step of a dense layer (one float4 of a row of the tile).
pub const VECTOR: usize = 4;
/// Rows of the tile per work item: accumulators per thread (`BD_ROWS` in the kernel).
pub const ROWS_PER_ITEM: usize = 8;
/// Words per layer descriptor (`BD_DESC_WORDS`): format, in, out, dense stride, offset
/// (low, high), ELL group table, and a last word: layer 1's base value, a later layer's
/// circulant table ([`Layout::descriptors`]).
pub const DESC_WORDS: usize = 8;
/// Most slots a circulant layer may have (`BD_CIRCULANT_SLOTS`): the kernel compiles its
/// circulant items for each count up to this ([`Circulant`]).
pub const CIRCULANT_MAX_SLOTS: usize = 4;
/// The bit of a set of formats ([`Layout::formats`], the kernel's `BD_FORMATS`) that says a
/// module runs circulant items (`BD_CIRCULANT_CODE`): past every [`Format::code`].
pub const CIRCULANT_CODE: u32 = 5;
/// Outputs a lane of a circulant item computes (`BD_CIRCULANT_OUTPUTS`): one 16-byte load
/// a slot and row ([`Circulant`]).
pub const CIRCULANT_OUTPUTS: usize = 4;
/// Multiples of the base value a scaled ELL layer may hold, at most (`m ≤` this).
pub const MAX_MULTIPLE: u32 = (1 << 16) - 1;
/// Shared-memory banks of 4-byte words: input `k` of every tile row lies in bank
/// `k mod BANKS` (rows start at multiples of 32 floats).
pub const BANKS: usize = 32;
/// Floats of a 32-byte sector of global memory (what a gathered float costs there).
pub const SECTOR_FLOATS: usize = 8;
/// A dense layer costs at most this many times the slots of its ELL form: a dense step
/// of a lane is one coalesced load, a quarter of a float4 broadcast per row and one
/// fused multiply-add per row, an ELL step one 8-byte load, one scattered shared load
/// (bank conflicts) and one fused multiply-add per row; see docs/blockdepend.md.
pub const DENSE_FACTOR: usize = 3;

/// `n` rounded up to a multiple of `m` (`m > 0`).
pub fn round_up(n: usize, m: usize) -> usize {
    n.div_ceil(m) * m
}

/// How a layer's weights are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Layer 1: CSR over the input neurons, scattered from the sparse input rows.
    Input,
    /// Row-major dense, padded.
    Dense,
    /// Groups of 32 columns, each sliced ELL of `(input, weight)` pairs.
    Ell,
    /// [`Format::Ell`]'s slots for a layer of multiples of one value: 16-bit entries
    /// (input index, multiple).
    EllScaled16,
    /// [`Format::Ell`]'s slots for a layer of multiples of one value: 32-bit entries.
    EllScaled32,
}

impl Format {
    /// The kernel's code for the format (`BD_FORMAT_*`).
    pub const fn code(self) -> u32 {
        match self {
            Format::Input => 0,
            Format::Dense => 1,
            Format::Ell => 2,
            Format::EllScaled16 => 3,
            Format::EllScaled32 => 4,
        }
    }

    /// Its bit in a set of formats (the kernel's `BD_FORMATS`): `1 << code`.
    pub const fn bit(self) -> u32 {
        1 << self.code()
    }

    /// Whether the layer is sliced ELL of scaled entries (an index and a multiple of the
    /// layer's base value).
    pub fn is_scaled(self) -> bool {
        matches!(self, Format::EllScaled16 | Format::EllScaled32)
    }

    /// Whether the layer is sliced ELL (pairs or indices).
    pub fn is_ell(self) -> bool {
        matches!(
            self,
            Format::Ell | Format::EllScaled16 | Format::EllScaled32
        )
    }

    /// Bytes of one stored ELL entry (0 for the other formats).
    pub fn entry_bytes(self) -> usize {
        match self {
            Format::Ell => 8,
            Format::EllScaled32 => 4,
            Format::EllScaled16 => 2,
            Format::Input | Format::Dense => 0,
        }
    }
}

/// Which formats the layers may take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatChoice {
    /// The cheaper per layer ([`choose_format`]).
    #[default]
    Auto,
    /// Every layer after the first dense.
    Dense,
    /// Every layer after the first sliced ELL (scaled where the layer's values allow).
    Ell,
    /// Every layer after the first sliced ELL of `(input, weight)` pairs, scalable layers
    /// included, and layer 1 as pairs too (the layout before scaled entries, for
    /// comparisons). Every other choice scales layer 1 where it can ([`FirstScaled`]).
    EllPairs,
}

/// Where one layer lives in the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LayerLayout {
    /// Its format.
    pub format: Format,
    /// Input width (rows of the layer).
    pub in_width: usize,
    /// Output width (columns).
    pub out_width: usize,
    /// Dense: floats per row (`⌈out/32⌉·32`); layer 1: the entries per input neuron as the
    /// kernel reads them ([`FirstLayer::per_neuron`]; 0: CSR); otherwise 0.
    pub dense_stride: usize,
    /// Dense: first float in [`Layout::dense`]; ELL: first 8-byte unit in [`Layout::ell`];
    /// Input: 0 (the layer is [`Layout::first`]).
    pub offset: usize,
    /// Ell: index of the layer's first group start in [`Layout::group_starts`].
    pub group_table: usize,
    /// Ell: weight slots per lane summed over the groups (entries = 32·slots).
    pub slots: usize,
    /// Stored entries of the layer (the network's, not the padded ones).
    pub nnz: usize,
    /// Ell: shared-memory wavefronts one row costs per pass over the layer (per slot of
    /// each group, the most distinct addresses its lanes read in one bank); else 0.
    pub wavefronts: usize,
    /// Ell: 32-byte sectors one row's gathers touch per pass over the layer when the row
    /// lies in global memory (per slot of each group, the distinct sectors its lanes
    /// read); else 0.
    pub sectors: usize,
    /// Bytes the kernel reads for one pass over the layer (its per-neuron biases
    /// included).
    pub bytes: usize,
    /// [`Format::EllScaled16`] and [`Format::EllScaled32`], and layer 1 when scaled
    /// ([`FirstScaled`]): the bits of the base value `b` (every weight is `m·b`); otherwise
    /// 0.
    pub base_bits: u32,
    /// Scaled ELL: bits of an entry holding its input index (the multiple above them);
    /// layer 1 when scaled: bits holding its output; otherwise 0.
    pub index_bits: u32,
    /// An ELL layer proved circulant ([`Circulant`]): the first 8-byte unit of its table in
    /// [`Layout::ell`], after every layer's entries; otherwise 0.
    pub circulant: usize,
}

impl LayerLayout {
    /// Column groups of 32 outputs.
    pub fn groups(&self) -> usize {
        self.out_width.div_ceil(WARP)
    }

    /// Fused multiply-adds one row costs in this layer as stored (padding included).
    pub fn macs_per_row(&self) -> usize {
        match self.format {
            Format::Input => 0,
            Format::Dense => round_up(self.in_width, VECTOR) * self.dense_stride,
            Format::Ell | Format::EllScaled16 | Format::EllScaled32 => WARP * self.slots,
        }
    }

    /// Bytes the layer's weights would take as [`Format::Ell`] pairs (8 a slot entry, the
    /// group starts and the biases as stored): what a scaled layer saves. Other formats:
    /// [`LayerLayout::bytes`].
    pub fn pair_bytes(&self) -> usize {
        let own = self.bytes - self.circulant_bytes();
        if self.format.is_scaled() {
            own + (8 - self.format.entry_bytes()) * WARP * self.slots - 8
        } else {
            own
        }
    }

    /// Bytes of its circulant table ([`Circulant::units`]; 0 without): counted in
    /// [`LayerLayout::bytes`].
    pub fn circulant_bytes(&self) -> usize {
        if self.circulant == 0 {
            0
        } else {
            8 * (1 + self.slots / self.groups())
        }
    }
}

/// Most entries per input neuron for which layer 1 may be stored ELL.
pub const FIRST_ELL_MAX: usize = 16;

/// Layer 1 as the kernel reads it: CSR over the input neurons, or ELL (a fixed number of
/// entries per input neuron, one load fewer per input nonzero) when the longest row is at
/// most [`FIRST_ELL_MAX`] and padding at most doubles the entries.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstLayer {
    /// Outputs.
    pub width: usize,
    /// CSR: `entries[offsets[k] .. offsets[k + 1]]` belong to input neuron `k`.
    pub offsets: Vec<u32>,
    /// Entries per input neuron of the ELL form (`entries[k·w .. k·w + w]`, padded with
    /// `(0, +0.0)`, which the kernel skips); 0: CSR.
    pub ell_width: usize,
    /// `(output, weight bits)` pairs.
    pub entries: Vec<[u32; 2]>,
    /// The scaled form the kernel reads instead of the pairs, when there is one
    /// ([`FirstScaled::of`]).
    pub scaled: Option<FirstScaled>,
    /// The first 8-byte unit in [`Layout::ell`] of the fold's table when layer 1 is folded
    /// ([`FirstScaled::fold`]: `[slots, width]`, then `[e_s, m_s]` a slot); 0: not.
    pub fold_table: usize,
}

/// Layer 1's ELL form as whole multiples of one base value, for a layer of at most
/// [`FIRST_SCALED_MAX`] entries per input neuron: `per_neuron` (2 or 4) 32-bit entries per
/// input neuron, the output in the low `index_bits` bits and the multiple `m` above
/// (padding `m = 0`), every weight `float(m)·b` bit for bit. The kernel reads a neuron's
/// entries in one load and, on binary inputs, sums the multiples with integer atomics and
/// multiplies once by `b`. That is the float sum in any order, bit for bit, because every
/// column's multiples add up to at most `2^24 / q` (`b = q·2^e`, `q` odd): every partial
/// sum of any order, and the product, is then exact in float.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstScaled {
    /// Entries per input neuron as stored: 2 or 4.
    pub per_neuron: usize,
    /// Bits of an entry holding its output (at least 1).
    pub index_bits: u32,
    /// The base value's bits.
    pub base_bits: u32,
    /// The entries, two to an 8-byte unit (`per_neuron / 2` units per input neuron).
    pub units: Vec<[u32; 2]>,
    /// Layer 1 as a fold into `width` bins and a circulant of them, when its rows repeat
    /// with that period: `[e_s, m_s]` a slot, output `c` summing `m_s · bins[(c + e_s) mod
    /// width]` (`FirstScaled::of` proves it); `None` otherwise.
    pub fold: Option<Vec<[u32; 2]>>,
}

/// Most entries per input neuron for which layer 1 may be scaled ([`FirstScaled`]).
pub const FIRST_SCALED_MAX: usize = 4;

/// Integers below this are exact in `f32` (`2^24`).
const F32_EXACT_INTEGERS: u64 = 1 << 24;

impl FirstScaled {
    /// The scaled form of layer 1's ELL `entries` (`ell_width` per input neuron, padding
    /// `(0, +0.0)`) and stored `values`, or `None` (the kernel reads the pairs) when the
    /// width is 0 (CSR) or above [`FIRST_SCALED_MAX`], the values have no common base
    /// (the rule of [`scaled_form`]), an entry does not fit 32 bits, or a column's multiples add up past
    /// what float sums exactly.
    pub fn of(
        entries: &[[u32; 2]],
        ell_width: usize,
        values: &[f32],
        width: usize,
    ) -> Option<Self> {
        if ell_width == 0 || ell_width > FIRST_SCALED_MAX {
            return None;
        }
        let common = CommonBase::of(values)?;
        let base = common.base;
        let index_bits = bits(width.saturating_sub(1) as u32).max(1);
        if index_bits + bits(common.largest()) > 32 {
            return None;
        }
        // Every column's multiples summed: what a binary row with every input set adds.
        let mut column_sums = vec![0u64; width];
        for &[c, w] in entries {
            column_sums[c as usize] += u64::from(common.multiple(w)?);
        }
        let base_bits = base.to_bits();
        let significand = if base_bits & 0x7f80_0000 == 0 {
            base_bits & 0x007f_ffff
        } else {
            (base_bits & 0x007f_ffff) | 0x0080_0000
        };
        let odd = u64::from(significand >> significand.trailing_zeros());
        let most = column_sums.iter().copied().max().unwrap_or(0);
        if most.checked_mul(odd)? > F32_EXACT_INTEGERS || !(most as f32 * base).is_finite() {
            return None;
        }
        let per_neuron = if ell_width <= 2 { 2 } else { 4 };
        let neurons = entries.len() / ell_width;
        let mut packed = vec![0u32; neurons * per_neuron];
        for (k, row) in entries.chunks_exact(ell_width).enumerate() {
            for (i, &[c, w]) in row.iter().enumerate() {
                let m = common.multiple(w)?;
                packed[k * per_neuron + i] = if m == 0 { 0 } else { c | m << index_bits };
            }
        }
        Some(Self {
            per_neuron,
            index_bits,
            base_bits,
            units: packed.chunks_exact(2).map(|e| [e[0], e[1]]).collect(),
            fold: Self::fold_of(entries, ell_width, &common, width),
        })
    }

    /// Layer 1 as a fold and a circulant, when its rows repeat with the period of its
    /// `width` outputs: input `k` feeds outputs `(k + d) mod width` with multiple `m` for the
    /// same `(d, m)` list at every `k`, `width` a power of two. Then a binary row's output `c`
    /// is `Σ_s m_s · bins[(c + e_s) mod width]`, `e_s = -d_s mod width`, where `bins[j]`
    /// counts the row's nonzeros at inputs `k ≡ j`: one add a nonzero into its bin, where the
    /// entries take one load and one add an entry (the official 1024's layer 1: `k` feeds `k`
    /// and `k - 1` mod 64). The same integer sum in another order, so the same float bit for
    /// bit ([`FirstScaled`]'s proof holds for it). Returns `[e_s, m_s]` a slot, or `None`.
    fn fold_of(
        entries: &[[u32; 2]],
        ell_width: usize,
        common: &CommonBase,
        width: usize,
    ) -> Option<Vec<[u32; 2]>> {
        if !width.is_power_of_two() || width > u32::MAX as usize || ell_width == 0 {
            return None;
        }
        let w = width as u64;
        // Input k's real entries as sorted (offset, multiple) pairs, offset = c - k mod width.
        let slots_of = |k: usize, row: &[[u32; 2]]| -> Option<Vec<[u32; 2]>> {
            let mut slots = Vec::with_capacity(row.len());
            for &[c, v] in row {
                let m = common.multiple(v)?;
                if m != 0 {
                    let d = (u64::from(c) + w - (k as u64 % w)) % w;
                    slots.push([d as u32, m]);
                }
            }
            slots.sort_unstable();
            Some(slots)
        };
        let mut rows = entries.chunks_exact(ell_width).enumerate();
        let (_, first) = rows.next()?;
        let slots = slots_of(0, first)?;
        if slots.is_empty() {
            return None;
        }
        for (k, row) in rows {
            if slots_of(k, row)? != slots {
                return None;
            }
        }
        Some(
            slots
                .iter()
                .map(|&[d, m]| [((w - u64::from(d)) % w) as u32, m])
                .collect(),
        )
    }

    /// The entries of input neuron `k` as `(output, weight)`, padding skipped: the pairs
    /// they stand for.
    pub fn row(&self, k: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        let half = self.per_neuron / 2;
        let base = f32::from_bits(self.base_bits);
        let mask = (1u32 << self.index_bits).wrapping_sub(1);
        self.units[k * half..(k + 1) * half]
            .iter()
            .flatten()
            .filter(move |&&e| e >> self.index_bits != 0)
            .map(move |&e| (e & mask, scaled_weight(e >> self.index_bits, base)))
    }
}

impl FirstLayer {
    /// Layer 1 (`N × N_1`) in the cheaper of the two forms, scaled when `scale` and it can
    /// be ([`FirstScaled::of`]).
    pub fn new(layer: &Csr, scale: bool) -> Self {
        let longest = layer.max_row_len();
        let rows = layer.nrows();
        let ell = longest <= FIRST_ELL_MAX
            && rows.saturating_mul(longest) <= 2 * layer.nnz() + rows
            && rows.saturating_mul(longest) <= u32::MAX as usize;
        let entries = if ell {
            let mut entries = vec![[0u32, 0.0f32.to_bits()]; rows * longest];
            for k in 0..rows {
                let (cols, vals) = layer.row(k);
                for (i, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                    entries[k * longest + i] = [c, v.to_bits()];
                }
            }
            entries
        } else {
            layer.triplets().map(|(_, c, v)| [c, v.to_bits()]).collect()
        };
        let ell_width = if ell { longest } else { 0 };
        let scaled = scale
            .then(|| FirstScaled::of(&entries, ell_width, layer.values(), layer.ncols()))
            .flatten();
        Self {
            width: layer.ncols(),
            offsets: layer.row_offsets().to_vec(),
            ell_width,
            entries,
            scaled,
            fold_table: 0,
        }
    }

    /// The 8-byte units the kernel reads: the scaled entries, or the pairs.
    pub fn device_units(&self) -> &[[u32; 2]] {
        self.scaled.as_ref().map_or(&self.entries, |s| &s.units)
    }

    /// Entries per input neuron as the kernel reads them (0: CSR).
    pub fn per_neuron(&self) -> usize {
        self.scaled
            .as_ref()
            .map_or(self.ell_width, |s| s.per_neuron)
    }

    /// The entries of input neuron `k` as the kernel visits them (padding skipped).
    pub fn row(&self, k: usize) -> impl Iterator<Item = (u32, f32)> + '_ {
        let range = if self.ell_width > 0 {
            k * self.ell_width..(k + 1) * self.ell_width
        } else {
            self.offsets[k] as usize..self.offsets[k + 1] as usize
        };
        let ell = self.ell_width > 0;
        self.entries[range]
            .iter()
            .filter(move |[_, w]| !(ell && *w == 0))
            .map(|&[c, w]| (c, f32::from_bits(w)))
    }
}

/// Every layer of a chain, as the kernel reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Width of the input rows.
    pub input_width: usize,
    /// Layer 1.
    pub first: FirstLayer,
    /// One per layer, in order (`layers[0]` is layer 1, [`Format::Input`]).
    pub layers: Vec<LayerLayout>,
    /// The dense layers' floats.
    pub dense: Vec<f32>,
    /// The ELL layers' entries in 8-byte units: one `(input, weight bits)` pair a unit
    /// ([`Format::Ell`]), or scaled entries packed little-endian, four 16-bit or two
    /// 32-bit a unit (a slot's 32 entries fill 8 or 16 units, so layers start aligned).
    /// [`Layout::ell_entry`] decodes any of them.
    pub ell: Vec<[u32; 2]>,
    /// Per ELL layer, `groups + 1` slot starts (cumulative within the layer).
    pub group_starts: Vec<u32>,
    /// With per-neuron biases: layer `l`'s output `c` at `l·bias_stride + c`, padding 0;
    /// empty with one bias for all.
    pub biases: Vec<f32>,
    /// Floats per layer in [`Layout::biases`]: the widest layer's outputs rounded up to 32;
    /// 0 with one bias for all (the kernel then adds its scalar bias).
    pub bias_stride: usize,
    /// Per layer, where its outputs lie in the next layer's tile rows (`None`: output `c`
    /// at `c`): permuted within their groups of 32 to balance the next layer's banks
    /// ([`bank_positions`]); the layers above are stored so permuted (`W'[p(k)][q(c)] =
    /// W[k][c]`), the last layer never is.
    pub positions: Vec<Option<Vec<u32>>>,
}

/// A consumer layer's bank excess ([`bank_excess`]) from which its inputs are reordered:
/// below it, the gathers' busiest banks hold at most 5 % more distinct addresses than slots.
pub const REORDER_FROM: f64 = 0.05;

/// Per layer, the tile positions of its outputs (`None`: as given): for each layer but the
/// last whose next layer is stored as sliced ELL (under `choice`) with a bank excess of at
/// least [`REORDER_FROM`], the positions [`lane_positions`] gives, where they lower it. The
/// last layer's outputs keep their order (the results). Layers in parallel: each boundary
/// is independent, as a permutation within a group leaves the group's own work alone.
pub fn bank_positions(layers: &[Csr], choice: FormatChoice) -> Vec<Option<Vec<u32>>> {
    let mut positions: Vec<Option<Vec<u32>>> = layers[1..]
        .par_iter()
        .map(|consumer| {
            let columns = consumer.transpose();
            let ell = match choice {
                FormatChoice::Dense => false,
                FormatChoice::Ell | FormatChoice::EllPairs => true,
                FormatChoice::Auto => {
                    choose_format(consumer.nrows(), consumer.ncols(), ell_slots(&columns))
                        != Format::Dense
                }
            };
            if !ell {
                return None;
            }
            let before = bank_excess(&columns, |k| k);
            if before < REORDER_FROM {
                return None;
            }
            let position = lane_positions(&columns, consumer.nrows());
            (bank_excess(&columns, |k| position[k as usize]) < before).then_some(position)
        })
        .collect();
    positions.push(None);
    positions
}

/// `layers` permuted by `positions` ([`Layout::positions`]): layer `l`'s inputs by layer
/// `l - 1`'s positions, its outputs by its own; in parallel over the layers.
fn stored<'a>(
    layers: &'a [Csr],
    positions: &[Option<Vec<u32>>],
) -> Result<Vec<Cow<'a, Csr>>, String> {
    layers
        .par_iter()
        .enumerate()
        .map(|(l, w)| {
            let inputs = l.checked_sub(1).and_then(|p| positions[p].as_deref());
            permute(w, inputs, positions[l].as_deref())
        })
        .collect()
}

/// `layer` with its rows (inputs) moved to `inputs[k]` and its columns (outputs) to
/// `outputs[c]`; borrowed when neither moves.
fn permute<'a>(
    layer: &'a Csr,
    inputs: Option<&[u32]>,
    outputs: Option<&[u32]>,
) -> Result<Cow<'a, Csr>, String> {
    if inputs.is_none() && outputs.is_none() {
        return Ok(Cow::Borrowed(layer));
    }
    let triplets: Vec<(u32, u32, f32)> = layer
        .triplets()
        .map(|(k, c, v)| {
            (
                inputs.map_or(k, |p| p[k as usize]),
                outputs.map_or(c, |p| p[c as usize]),
                v,
            )
        })
        .collect();
    Csr::from_triplets(layer.nrows(), layer.ncols(), &triplets)
        .map(Cow::Owned)
        .map_err(|e| format!("reordering a layer for its banks: {e}"))
}

/// The sliced-ELL slots per lane of `layer` (`in × out`): per group of 32 columns, its
/// longest column.
pub fn ell_slots(columns: &Csr) -> usize {
    // `columns` is the transpose: one row per output.
    (0..columns.nrows())
        .step_by(WARP)
        .map(|start| {
            (start..(start + WARP).min(columns.nrows()))
                .map(|c| columns.row(c).0.len())
                .max()
                .unwrap_or(0)
        })
        .sum()
}

/// The cheaper format for a layer of `in × out` whose sliced-ELL form has `slots` slots
/// per lane: dense when its padded size is at most [`DENSE_FACTOR`] times the ELL
/// entries.
pub fn choose_format(in_width: usize, out_width: usize, slots: usize) -> Format {
    let dense = round_up(in_width, VECTOR).saturating_mul(round_up(out_width, WARP));
    if dense <= DENSE_FACTOR.saturating_mul(WARP * slots) {
        Format::Dense
    } else {
        Format::Ell
    }
}

/// One built layer before it is placed into the shared arrays.
enum Built {
    Dense(Vec<f32>),
    Ell {
        starts: Vec<u32>,
        entries: Vec<[u32; 2]>,
        circulant: Option<Circulant>,
    },
}

fn build_dense(layer: &Csr) -> Vec<f32> {
    let stride = round_up(layer.ncols(), WARP);
    let mut dense = vec![0.0f32; round_up(layer.nrows(), VECTOR) * stride];
    for (k, c, v) in layer.triplets() {
        dense[dense_index(k as usize, c as usize, stride)] = v;
    }
    dense
}

/// Where a dense layer of `stride` columns stores `W[k][c]`: in quads of inputs, the
/// four weights of column `c` for inputs `4q .. 4q + 4` side by side at `4q · stride + 4c`
/// (the kernels read a column's four weights of a step in one 16-byte load).
pub fn dense_index(k: usize, c: usize, stride: usize) -> usize {
    (k / VECTOR) * VECTOR * stride + c * VECTOR + k % VECTOR
}

/// A layer's sliced-ELL form from its columns: the group starts, the entries in
/// [`slot_order`] (padding reads an address its slot reads anyway, weight 0), and the
/// wavefronts and sectors one row costs.
fn build_ell(columns: &Csr) -> (Vec<u32>, Vec<[u32; 2]>, usize, usize) {
    let outputs = columns.nrows();
    let groups = outputs.div_ceil(WARP);
    let mut starts = Vec::with_capacity(groups + 1);
    starts.push(0u32);
    let mut entries = Vec::new();
    let (mut wavefronts, mut sectors) = (0, 0);
    let mut slot_inputs = Vec::with_capacity(WARP);
    let offsets = circulant_offsets(columns);
    for g in 0..groups {
        let cols = g * WARP..((g + 1) * WARP).min(outputs);
        let inputs: Vec<&[u32]> = cols.clone().map(|c| columns.row(c).0).collect();
        let slots = inputs.iter().map(|i| i.len()).max().unwrap_or(0);
        let base = entries.len();
        entries.resize(base + slots * WARP, [0u32, 0.0f32.to_bits()]);
        // A circulant layer's slot s reads input (c + d_s) mod in in every column c: the
        // lanes' consecutive inputs (a wavefront a slot, the least, where the inputs are a
        // multiple of 32 wide: no two lanes' inputs share a bank across the wrap), and the
        // same order in every group, which the circulant items need ([`Circulant`]).
        let order = match &offsets {
            Some(offsets) => circulant_order(columns, cols.clone(), offsets),
            None => slot_order(&inputs, slots),
        };
        for (s, row) in order.into_iter().enumerate() {
            let at = base + s * WARP;
            for (lane, &position) in row.iter().enumerate() {
                if let Some(p) = position {
                    let (inputs, values) = columns.row(g * WARP + lane);
                    entries[at + lane] = [inputs[p], values[p].to_bits()];
                }
            }
            // Padding reads the slot's first real address: a broadcast, no extra wavefront.
            let pad = row
                .iter()
                .zip(&entries[at..at + WARP])
                .find_map(|(p, e)| p.map(|_| e[0]))
                .unwrap_or(0);
            for lane in 0..WARP {
                if row.get(lane).copied().flatten().is_none() {
                    entries[at + lane] = [pad, 0.0f32.to_bits()];
                }
            }
            slot_inputs.clear();
            slot_inputs.extend(entries[at..at + WARP].iter().map(|e| e[0]));
            let (w, sec) = slot_cost(&slot_inputs);
            wavefronts += w;
            sectors += sec;
        }
        let last = *starts.last().expect("starts has its first entry");
        starts.push(last + slots as u32);
    }
    (starts, entries, wavefronts, sectors)
}

/// A circulant ELL layer: output `c` sums, slot by slot, `w_s · x[(c + d_s) mod in]`, with
/// the same offset `d_s` and weight `w_s` at slot `s` of every column (the generated challenge
/// networks' compressed layers 2–8 at N = 4096 are `x[c] + x[c + 2^(l-1)]`). The kernel's
/// circulant items give a lane [`CIRCULANT_OUTPUTS`] consecutive outputs of a row: a slot's
/// inputs are as many consecutive floats, one 16-byte load (two 8-byte ones where `d_s` is
/// 2 mod 4) where the ELL items gather them one at a time; the same fused multiply-adds in
/// the same slot order, so bit for bit the ELL items' outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circulant {
    /// Whether every offset is a multiple of 4 (one 16-byte load a slot and row).
    pub aligned: bool,
    /// Per slot, `[d_s, w_s bits]`.
    pub slots: Vec<[u32; 2]>,
}

impl Circulant {
    /// The table the kernel reads: `[slots, aligned]`, then `[d_s, w_s bits]` a slot.
    pub fn units(&self) -> Vec<[u32; 2]> {
        std::iter::once([self.slots.len() as u32, u32::from(self.aligned)])
            .chain(self.slots.iter().copied())
            .collect()
    }

    /// The circulant form of a sliced-ELL layer of `in_width × out_width` stored as
    /// [`build_ell`]'s `entries` (`(input, weight bits)`, slot by slot, 32 a slot) and group
    /// `starts`, proved entry by entry, padding included; `None` unless every group has the
    /// same 1 ..= [`CIRCULANT_MAX_SLOTS`] slots, the outputs fill whole groups of 32, the
    /// inputs come in fours and every offset is even (so a lane's four inputs of a slot are
    /// one or two aligned runs of consecutive floats, never across the wrap), and there are
    /// no more outputs than inputs (so `c + d_s < 2·in`: the kernel wraps with one
    /// subtraction).
    pub fn of(
        entries: &[[u32; 2]],
        starts: &[u32],
        in_width: usize,
        out_width: usize,
    ) -> Option<Self> {
        if out_width == 0
            || out_width > in_width
            || !out_width.is_multiple_of(WARP)
            || !in_width.is_multiple_of(CIRCULANT_OUTPUTS)
            || in_width > u32::MAX as usize
            || starts.len() != out_width / WARP + 1
        {
            return None;
        }
        let slots = *starts.get(1)? as usize;
        if !(1..=CIRCULANT_MAX_SLOTS).contains(&slots)
            || entries.len() != WARP * *starts.last()? as usize
        {
            return None;
        }
        let table: Vec<[u32; 2]> = (0..slots).map(|s| entries[s * WARP]).collect();
        if table.iter().any(|&[d, _]| d % 2 != 0) {
            return None;
        }
        let width = in_width as u64;
        for (g, bounds) in starts.windows(2).enumerate() {
            if (bounds[1] - bounds[0]) as usize != slots {
                return None;
            }
            for (s, &[d, w]) in table.iter().enumerate() {
                let at = (bounds[0] as usize + s) * WARP;
                for (lane, &[k, v]) in entries[at..at + WARP].iter().enumerate() {
                    let c = (g * WARP + lane) as u64;
                    if u64::from(k) != (c + u64::from(d)) % width || v != w {
                        return None;
                    }
                }
            }
        }
        Some(Self {
            aligned: table.iter().all(|&[d, _]| d % 4 == 0),
            slots: table,
        })
    }
}

/// The offsets `d` of a layer (`columns`: one row per output) whose every column `c` holds
/// inputs `(c + d) mod in` for the same 1 ..= [`CIRCULANT_MAX_SLOTS`] offsets, in increasing
/// order; `None` otherwise.
fn circulant_offsets(columns: &Csr) -> Option<Vec<u32>> {
    let width = columns.ncols() as u64;
    if width == 0 || columns.nrows() == 0 {
        return None;
    }
    let offsets_of = |c: usize| -> Vec<u32> {
        let mut d: Vec<u32> = columns
            .row(c)
            .0
            .iter()
            .map(|&k| ((u64::from(k) + width - c as u64 % width) % width) as u32)
            .collect();
        d.sort_unstable();
        d
    };
    let offsets = offsets_of(0);
    if !(1..=CIRCULANT_MAX_SLOTS).contains(&offsets.len()) {
        return None;
    }
    (1..columns.nrows())
        .all(|c| offsets_of(c) == offsets)
        .then_some(offsets)
}

/// [`slot_order`]'s form for a circulant group (outputs `cols`): slot `s` of each lane
/// reads the entry of input `(c + offsets[s]) mod in`.
fn circulant_order(
    columns: &Csr,
    cols: std::ops::Range<usize>,
    offsets: &[u32],
) -> Vec<Vec<Option<usize>>> {
    let width = columns.ncols() as u64;
    offsets
        .iter()
        .map(|&d| {
            cols.clone()
                .map(|c| {
                    let k = ((c as u64 + u64::from(d)) % width) as u32;
                    columns.row(c).0.binary_search(&k).ok()
                })
                .collect()
        })
        .collect()
}

/// A sliced-ELL layer in scaled form ([`scaled_form`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaled {
    /// [`Format::EllScaled16`] or [`Format::EllScaled32`].
    pub format: Format,
    /// The layer's 8-byte units ([`Layout::ell`]): `[base bits, index bits]`, then the
    /// entries packed.
    pub units: Vec<[u32; 2]>,
    /// The base value's bits.
    pub base_bits: u32,
    /// Bits of an entry holding its input index.
    pub index_bits: u32,
}

/// Bits needed to write `n` (0 for 0).
fn bits(n: u32) -> u32 {
    u32::BITS - n.leading_zeros()
}

/// The weight a scaled entry of multiple `m` stands for: `float(m)·base`, one multiply
/// rounded to nearest, as the kernel computes it.
pub fn scaled_weight(m: u32, base: f32) -> f32 {
    m as f32 * base
}

/// The scaled form of a sliced-ELL layer whose stored weights `values` (the layer's own
/// entries, any order) are all positive, finite and each, bit for bit, `float(m)·b` for a
/// whole `m` in `1..=`[`MAX_MULTIPLE`] and one base `b`: the smallest value divided by 1,
/// 2, 3, …, 16, the first that serves them all (one value: `b` is the value, `m = 1`).
/// Each entry packs its input index (the low `index_bits` bits, as many as the largest
/// index of `pairs` needs, padding's included) and its `m` above; padding gets `m = 0`,
/// whose `0·b = +0.0` is the pair form's padding weight. 16-bit entries when index and
/// `m` fit 16 bits together, else 32.
///
/// `None`, and the layer keeps its pairs, when a value is zero, negative or not finite (so
/// `0·b` could not be `+0.0`), no base serves them all, they do not fit 32 bits, the layer
/// stores nothing, or a pair weighs neither a stored value nor `+0.0`. `pairs` is
/// [`build_ell`]'s form, so every entry decodes to its pair bit for bit
/// ([`Layout::ell_entry`]).
pub fn scaled_form(values: &[f32], pairs: &[[u32; 2]]) -> Option<Scaled> {
    if !pairs.len().is_multiple_of(4) {
        return None;
    }
    let common = CommonBase::of(values)?;
    let base = common.base;
    let index_bits = bits(pairs.iter().map(|p| p[0]).max().unwrap_or(0));
    let width = index_bits + bits(common.largest());
    let narrow = width <= 16;
    if width > 32 {
        return None;
    }
    let mut entries = Vec::with_capacity(pairs.len());
    for &[k, w] in pairs {
        let m = common.multiple(w)?;
        entries.push(k | m.checked_shl(index_bits).unwrap_or(0));
    }
    let mut units = Vec::with_capacity(1 + entries.len() / if narrow { 4 } else { 2 });
    units.push([base.to_bits(), index_bits]);
    if narrow {
        units.extend(
            entries
                .chunks_exact(4)
                .map(|e| [e[0] | e[1] << 16, e[2] | e[3] << 16]),
        );
    } else {
        units.extend(entries.chunks_exact(2).map(|e| [e[0], e[1]]));
    }
    Some(Scaled {
        format: if narrow {
            Format::EllScaled16
        } else {
            Format::EllScaled32
        },
        units,
        base_bits: base.to_bits(),
        index_bits,
    })
}

/// The base `b` of a layer's values ([`scaled_form`]'s rule: all positive and finite, each
/// `float(m)·b` bit for bit for a whole `m` in `1..=`[`MAX_MULTIPLE`], `b` the smallest
/// value divided by the first of 1, 2, …, 16 that serves them all), and each value's `m`.
struct CommonBase {
    base: f32,
    /// The distinct values' bits, in increasing order.
    distinct: Vec<u32>,
    /// Their multiples of `base`.
    multiples: Vec<u32>,
}

impl CommonBase {
    /// `None` when there is no base or `values` is empty.
    fn of(values: &[f32]) -> Option<Self> {
        let mut distinct: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        // Positive finite floats order as their bits.
        let smallest = f32::from_bits(*distinct.first()?);
        if !distinct
            .iter()
            .all(|&b| f32::from_bits(b).is_finite() && f32::from_bits(b) > 0.0)
        {
            return None;
        }
        let multiples_of = |base: f32| -> Option<Vec<u32>> {
            distinct
                .iter()
                .map(|&v| {
                    let m = (f32::from_bits(v) / base).round();
                    (m >= 1.0
                        && m <= MAX_MULTIPLE as f32
                        && scaled_weight(m as u32, base).to_bits() == v)
                        .then_some(m as u32)
                })
                .collect()
        };
        let (base, multiples) = (1..=16u32)
            .map(|d| smallest / d as f32)
            .filter(|b| *b > 0.0)
            .find_map(|b| multiples_of(b).map(|m| (b, m)))?;
        Some(Self {
            base,
            distinct,
            multiples,
        })
    }

    /// The multiple a weight's bits stand for: 0 for `+0.0` (padding), `None` for a value
    /// the layer does not hold.
    fn multiple(&self, weight_bits: u32) -> Option<u32> {
        match weight_bits {
            0 => Some(0),
            w => self
                .distinct
                .binary_search(&w)
                .ok()
                .map(|i| self.multiples[i]),
        }
    }

    /// The largest multiple.
    fn largest(&self) -> u32 {
        self.multiples.iter().copied().max().unwrap_or(0)
    }
}

/// Appends a table (`units`) to `ell` and returns its first unit, or `None` where it cannot
/// be placed: at unit 0, which the descriptors read as no table, or past the units 32 bits
/// index.
fn append_table(
    ell: &mut Vec<[u32; 2]>,
    units: impl IntoIterator<Item = [u32; 2]>,
) -> Option<usize> {
    let at = ell.len();
    (at != 0 && at <= u32::MAX as usize).then(|| {
        ell.extend(units);
        at
    })
}

impl Layout {
    /// Lays out `chain`'s layers, each in the format `choice` allows
    /// ([`choose_format`] under [`FormatChoice::Auto`]), in parallel over the layers.
    /// Errors when a layer is too large to index (offsets past `u32` per layer).
    pub fn build(chain: &Chain, choice: FormatChoice) -> Result<Self, String> {
        let positions = bank_positions(chain.layers(), choice);
        let layers = stored(chain.layers(), &positions)?;
        let first_layer = &layers[0];
        if first_layer.nnz() > u32::MAX as usize {
            return Err("layer 1 has more entries than 32-bit offsets index".into());
        }
        let first = FirstLayer::new(first_layer, choice != FormatChoice::EllPairs);
        let built: Vec<(LayerLayout, Built)> = layers[1..]
            .par_iter()
            .map(|w| -> Result<(LayerLayout, Built), String> {
                let w: &Csr = w;
                let columns = w.transpose();
                let slots = ell_slots(&columns);
                let format = match choice {
                    FormatChoice::Auto => choose_format(w.nrows(), w.ncols(), slots),
                    FormatChoice::Dense => Format::Dense,
                    FormatChoice::Ell | FormatChoice::EllPairs => Format::Ell,
                };
                if slots > u32::MAX as usize {
                    return Err(format!(
                        "a layer of {} × {} has too many entries to index",
                        w.nrows(),
                        w.ncols()
                    ));
                }
                let mut layout = LayerLayout {
                    format,
                    in_width: w.nrows(),
                    out_width: w.ncols(),
                    dense_stride: 0,
                    offset: 0,
                    group_table: 0,
                    slots,
                    nnz: w.nnz(),
                    bytes: 0,
                    wavefronts: 0,
                    sectors: 0,
                    base_bits: 0,
                    index_bits: 0,
                    circulant: 0,
                };
                let built = match format {
                    Format::Dense => {
                        layout.dense_stride = round_up(w.ncols(), WARP);
                        let dense_len = round_up(w.nrows(), VECTOR)
                            .checked_mul(layout.dense_stride)
                            .filter(|&len| len.checked_mul(4).is_some())
                            .ok_or_else(|| {
                                format!(
                                    "a dense layer of {} × {} is too large",
                                    w.nrows(),
                                    w.ncols()
                                )
                            })?;
                        layout.bytes = 4 * dense_len;
                        Built::Dense(build_dense(w))
                    }
                    _ => {
                        let (starts, mut entries, wavefronts, sectors) = build_ell(&columns);
                        let circulant = (choice != FormatChoice::EllPairs)
                            .then(|| Circulant::of(&entries, &starts, w.nrows(), w.ncols()))
                            .flatten();
                        if choice != FormatChoice::EllPairs
                            && let Some(scaled) = scaled_form(columns.values(), &entries)
                        {
                            layout.format = scaled.format;
                            layout.base_bits = scaled.base_bits;
                            layout.index_bits = scaled.index_bits;
                            entries = scaled.units;
                        }
                        layout.bytes = 8 * entries.len() + 4 * starts.len();
                        layout.wavefronts = wavefronts;
                        layout.sectors = sectors;
                        Built::Ell {
                            starts,
                            entries,
                            circulant,
                        }
                    }
                };
                Ok((layout, built))
            })
            .collect::<Result<_, _>>()?;

        let mut out = Layout {
            input_width: chain.input_width(),
            layers: Vec::with_capacity(layers.len()),
            first,
            dense: Vec::new(),
            ell: Vec::new(),
            group_starts: Vec::new(),
            biases: Vec::new(),
            bias_stride: 0,
            positions: Vec::new(),
        };
        let first_bytes = 4 * out.first.offsets.len() + 8 * out.first.device_units().len();
        out.layers.push(LayerLayout {
            format: Format::Input,
            in_width: first_layer.nrows(),
            out_width: first_layer.ncols(),
            dense_stride: out.first.per_neuron(),
            offset: 0,
            group_table: 0,
            slots: 0,
            nnz: first_layer.nnz(),
            bytes: first_bytes,
            wavefronts: 0,
            sectors: 0,
            base_bits: out.first.scaled.as_ref().map_or(0, |f| f.base_bits),
            index_bits: out.first.scaled.as_ref().map_or(0, |f| f.index_bits),
            circulant: 0,
        });
        let mut tables = Vec::new();
        for (mut layout, built) in built {
            match built {
                Built::Dense(values) => {
                    layout.offset = out.dense.len();
                    out.dense.extend_from_slice(&values);
                }
                Built::Ell {
                    starts,
                    entries,
                    circulant,
                } => {
                    layout.offset = out.ell.len();
                    layout.group_table = out.group_starts.len();
                    out.ell.extend_from_slice(&entries);
                    out.group_starts.extend_from_slice(&starts);
                    if let Some(c) = circulant {
                        tables.push((out.layers.len(), c));
                    }
                }
            }
            out.layers.push(layout);
        }
        // After every layer's entries, which keep their alignment.
        if let Some(fold) = out.first.scaled.as_ref().and_then(|s| s.fold.as_ref()) {
            let head = [fold.len() as u32, out.first.width as u32];
            let units = std::iter::once(head).chain(fold.iter().copied());
            if let Some(at) = append_table(&mut out.ell, units) {
                out.first.fold_table = at;
                out.layers[0].bytes += 8 * (fold.len() + 1);
            }
        }
        for (l, table) in tables {
            if let Some(at) = append_table(&mut out.ell, table.units()) {
                let layer = &mut out.layers[l];
                layer.circulant = at;
                layer.bytes += layer.circulant_bytes();
            }
        }
        if out.group_starts.len() > u32::MAX as usize {
            return Err("the ELL group tables are too long to index with 32 bits".into());
        }
        if let Some(biases) = chain.biases() {
            let stride = out
                .layers
                .iter()
                .map(|l| round_up(l.out_width, WARP))
                .max()
                .unwrap_or(WARP);
            if stride > u32::MAX as usize {
                return Err("a layer is too wide to index its biases with 32 bits".into());
            }
            out.bias_stride = stride;
            out.biases = vec![0.0; stride * out.layers.len()];
            for (l, (layout, b)) in out.layers.iter_mut().zip(biases).enumerate() {
                layout.bytes += 4 * round_up(layout.out_width, WARP);
                let row = &mut out.biases[l * stride..l * stride + b.len()];
                match &positions[l] {
                    None => row.copy_from_slice(b),
                    Some(position) => {
                        for (&p, &v) in position.iter().zip(b) {
                            row[p as usize] = v;
                        }
                    }
                }
            }
        }
        out.positions = positions;
        Ok(out)
    }

    /// Layers whose outputs are permuted ([`Layout::positions`]).
    pub fn reordered(&self) -> usize {
        self.positions.iter().filter(|p| p.is_some()).count()
    }

    /// The layers as this layout stores them: `layers` (the chain's) permuted by
    /// [`Layout::positions`].
    pub fn stored_layers<'a>(&self, layers: &'a [Csr]) -> Result<Vec<Cow<'a, Csr>>, String> {
        stored(layers, &self.positions)
    }

    /// The layer descriptors the kernel reads, [`DESC_WORDS`] words per layer.
    pub fn descriptors(&self) -> Vec<u32> {
        self.layers
            .iter()
            .flat_map(|l| {
                let offset = l.offset as u64;
                // Layer 1: its fold's table (0: none) in the offset's place, its scaled
                // entries' index bits (0: pairs) and base value; a circulant layer: its
                // table (0: none).
                let (offset, table, last) = match l.format {
                    Format::Input => (self.first.fold_table as u64, l.index_bits, l.base_bits),
                    _ => (offset, l.group_table as u32, l.circulant as u32),
                };
                [
                    l.format.code(),
                    l.in_width as u32,
                    l.out_width as u32,
                    l.dense_stride as u32,
                    offset as u32,
                    (offset >> 32) as u32,
                    table,
                    last,
                ]
            })
            .collect()
    }

    /// Bytes of every layer together (what stays resident on the device).
    pub fn weight_bytes(&self) -> usize {
        self.layers.iter().map(|l| l.bytes).sum()
    }

    /// Number of layers of each format (input, dense, ELL of either kind).
    pub fn format_counts(&self) -> (usize, usize, usize) {
        let count = |f: &dyn Fn(Format) -> bool| self.layers.iter().filter(|l| f(l.format)).count();
        (
            count(&|f| f == Format::Input),
            count(&|f| f == Format::Dense),
            count(&Format::is_ell),
        )
    }

    /// The layers proved circulant ([`Circulant`]: a table in [`Layout::ell`]), counted from 1.
    pub fn circulant_layers(&self) -> Vec<usize> {
        (1..=self.layers.len())
            .filter(|&l| self.layers[l - 1].circulant != 0)
            .collect()
    }

    /// The formats of the layers after the first, as a set of [`Format::bit`]s, and the
    /// bit of [`CIRCULANT_CODE`] when a layer is circulant: what a module running this
    /// layout must be compiled for ([`crate::for_formats`]).
    pub fn formats(&self) -> u32 {
        self.layers.iter().skip(1).fold(0, |set, layer| {
            set | layer.format.bit() | (u32::from(layer.circulant != 0) << CIRCULANT_CODE)
        })
    }

    /// Number of ELL layers stored scaled (multiples of one value).
    pub fn scaled_count(&self) -> usize {
        self.layers.iter().filter(|l| l.format.is_scaled()).count()
    }

    /// The dense weights of layer `l` (a dense layer), in quads of inputs ([`dense_index`]).
    pub fn dense_of(&self, l: usize) -> &[f32] {
        let layer = &self.layers[l];
        let len = round_up(layer.in_width, VECTOR) * layer.dense_stride;
        &self.dense[layer.offset..layer.offset + len]
    }

    /// The biases of layer `l`'s `⌈out/32⌉·32` padded outputs (padding 0), or `None` when
    /// one bias serves every neuron.
    pub fn biases_of(&self, l: usize) -> Option<&[f32]> {
        if self.bias_stride == 0 {
            return None;
        }
        let start = l * self.bias_stride;
        Some(&self.biases[start..start + round_up(self.layers[l].out_width, WARP)])
    }

    /// The group starts of ELL layer `l` (`groups + 1`).
    pub fn starts_of(&self, l: usize) -> &[u32] {
        let layer = &self.layers[l];
        &self.group_starts[layer.group_table..layer.group_table + layer.groups() + 1]
    }

    /// The 8-byte units of ELL layer `l` as stored: its pairs, or (scaled) the unit
    /// `[base bits, index bits]` and the packed entries.
    pub fn ell_of(&self, l: usize) -> &[[u32; 2]] {
        let layer = &self.layers[l];
        let units = Self::scale_units(layer) + WARP * layer.slots * layer.format.entry_bytes() / 8;
        &self.ell[layer.offset..layer.offset + units]
    }

    /// Units before a layer's entries: the scaled layers' `[base bits, index bits]`.
    fn scale_units(layer: &LayerLayout) -> usize {
        usize::from(layer.format.is_scaled())
    }

    /// Entry `i` (slot `i / 32`, lane `i % 32`, counted from the layer's first group) of
    /// ELL layer `l` as the `(input, weight bits)` pair the kernel computes with: a stored
    /// pair as it is; a scaled entry as its low `index_bits` bits and
    /// [`scaled_weight`]`(m, base)` of the multiple `m` above them (padding: `m = 0`,
    /// `+0.0`). `None` when `l` is not ELL or `i` is past its entries.
    pub fn ell_entry(&self, l: usize, i: usize) -> Option<[u32; 2]> {
        let layer = self.layers.get(l)?;
        if i >= WARP * layer.slots {
            return None;
        }
        let units = &self.ell_of(l)[Self::scale_units(layer)..];
        let raw = match layer.format {
            Format::Ell => return Some(units[i]),
            Format::EllScaled32 => units[i / 2][i % 2],
            Format::EllScaled16 => (units[i / 4][i % 4 / 2] >> (16 * (i % 2))) & 0xFFFF,
            Format::Input | Format::Dense => return None,
        };
        let index = raw & ((1u32 << layer.index_bits) - 1);
        let m = raw >> layer.index_bits;
        let weight = scaled_weight(m, f32::from_bits(layer.base_bits));
        Some([index, weight.to_bits()])
    }

    /// Every entry of ELL layer `l` decoded ([`Layout::ell_entry`]): `32 · slots` pairs,
    /// borrowed when the layer stores pairs.
    pub fn ell_entries_of(&self, l: usize) -> std::borrow::Cow<'_, [[u32; 2]]> {
        let layer = &self.layers[l];
        match layer.format {
            Format::Ell => std::borrow::Cow::Borrowed(self.ell_of(l)),
            _ => (0..WARP * layer.slots)
                .filter_map(|i| self.ell_entry(l, i))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, t).unwrap()
    }

    fn chain_of(layers: Vec<Csr>) -> Chain<'static> {
        Chain::from_parts(layers, None).unwrap()
    }

    #[test]
    fn a_layer_1_whose_rows_repeat_is_folded() {
        // Input k feeds outputs k and k - 1 mod 16 (the official 1024's form at 64), 1/16
        // and 2/16: output c = 1 · bins[c] + 2 · bins[c + 1].
        let periodic = |width: usize, inputs: usize, shift: u32| {
            let t: Vec<(u32, u32, f32)> = (0..inputs as u32)
                .flat_map(|k| {
                    let w = width as u32;
                    [
                        (k, k % w, 0.0625),
                        (k, (k + w - 1) % w, if k == shift { 0.0625 } else { 0.125 }),
                    ]
                })
                .collect();
            FirstLayer::new(&csr(inputs, width, &t), true)
        };
        let first = periodic(16, 40, u32::MAX);
        let scaled = first.scaled.as_ref().unwrap();
        assert_eq!(scaled.fold.as_deref(), Some(&[[0, 1], [1, 2]][..]));
        // What the fold computes is what the entries add, for every input alone.
        let fold = scaled.fold.as_ref().unwrap();
        for k in 0..40usize {
            let mut bins = [0u32; 16];
            bins[k % 16] += 1;
            for c in 0..16usize {
                let folded: u32 = fold
                    .iter()
                    .map(|&[e, m]| m * bins[(c + e as usize) % 16])
                    .sum();
                let entries: f32 = first
                    .row(k)
                    .filter(|&(o, _)| o as usize == c)
                    .map(|(_, w)| w)
                    .sum();
                assert_eq!(folded as f32 * 0.0625, entries, "input {k}, output {c}");
            }
        }
        // One input's weight differs: its row does not repeat.
        assert_eq!(periodic(16, 40, 7).scaled.unwrap().fold, None);
        // Not a power of two wide.
        assert_eq!(periodic(12, 40, u32::MAX).scaled.unwrap().fold, None);
        // The table lies in ell after every layer's entries; layer 1's descriptor points at it.
        let t: Vec<(u32, u32, f32)> = (0..40u32).map(|k| (k, k % 16, 0.0625)).collect();
        let chain = chain_of(vec![
            csr(40, 16, &t),
            csr(16, 8, &[(0, 0, 1.0), (3, 7, 0.5)]),
        ]);
        let layout = Layout::build(&chain, FormatChoice::Ell).unwrap();
        let at = layout.first.fold_table;
        assert!(at > 0);
        assert_eq!(&layout.ell[at..], &[[1, 16], [0, 1]]);
        assert_eq!(layout.descriptors()[4], at as u32);
        let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
        assert_eq!((pairs.first.fold_table, pairs.descriptors()[4]), (0, 0));
    }

    #[test]
    fn formats_follow_the_cost() {
        // 64 × 64 with 31 entries in the longest column of each group: dense 4096 ≤ 3·1984.
        assert_eq!(choose_format(64, 64, 62), Format::Dense);
        // The butterfly layers: 2 entries a column.
        assert_eq!(choose_format(64, 64, 4), Format::Ell);
        // 4096 wide with 31 a column: ELL.
        assert_eq!(choose_format(4096, 4096, 31 * 128), Format::Ell);
        assert_eq!(choose_format(1, 1, 0), Format::Ell);
        assert_eq!(choose_format(1, 1, 1), Format::Ell);
        assert_eq!(choose_format(4, 32, 2), Format::Dense);
        assert_eq!(round_up(0, 4), 0);
        assert_eq!(round_up(33, 32), 64);
    }

    #[test]
    fn a_small_chain_is_laid_out_as_computed_by_hand() {
        // Layer 1: 3 × 2. Layer 2: 2 × 33 (two groups, the second with one column).
        let w1 = csr(3, 2, &[(0, 1, 0.5), (2, 0, 2.0), (2, 1, -1.0)]);
        let w2 = csr(
            2,
            33,
            &[(0, 0, 1.0), (1, 0, 3.0), (1, 5, 4.0), (0, 32, -2.0)],
        );
        let chain = chain_of(vec![w1, w2]);
        let ell = Layout::build(&chain, FormatChoice::Ell).unwrap();
        assert_eq!(ell.first.width, 2);
        assert_eq!(ell.first.offsets, vec![0, 1, 1, 3]);
        // Longest row 2, 3 rows: 6 slots ≤ 2·3 + 3, so ELL.
        assert_eq!(ell.first.ell_width, 2);
        assert_eq!(ell.layers[0].dense_stride, 2);
        let zero = 0.0f32.to_bits();
        assert_eq!(
            ell.first.entries,
            vec![
                [1, 0.5f32.to_bits()],
                [0, zero],
                [0, zero],
                [0, zero],
                [0, 2.0f32.to_bits()],
                [1, (-1.0f32).to_bits()]
            ]
        );
        assert_eq!(ell.first.row(1).count(), 0);
        assert_eq!(
            ell.first.row(2).collect::<Vec<_>>(),
            vec![(0, 2.0), (1, -1.0)]
        );
        let l = ell.layers[1];
        assert_eq!(
            (l.format, l.in_width, l.out_width, l.slots),
            (Format::Ell, 2, 33, 3)
        );
        assert_eq!(ell.starts_of(1), &[0, 2, 3]);
        let e = ell.ell_of(1);
        assert_eq!(e.len(), 96);
        // Group 0, slot 0: columns 0 and 5 both read input 1, one address (a broadcast),
        // so they read it together; slot 1: column 0's input 0. Padding reads the slot's
        // first address.
        assert_eq!(e[0], [1, 3.0f32.to_bits()]);
        assert_eq!(e[5], [1, 4.0f32.to_bits()]);
        assert_eq!(e[32], [0, 1.0f32.to_bits()]);
        assert_eq!(e[1], [1, 0.0f32.to_bits()]);
        assert_eq!(e[37], [0, 0.0f32.to_bits()]);
        assert_eq!(e[64], [0, (-2.0f32).to_bits()]);
        assert_eq!(e[65], [0, 0.0f32.to_bits()]);
        assert_eq!((l.wavefronts, l.sectors), (3, 3));
        assert_eq!(ell.format_counts(), (1, 0, 1));
        // The set a module is compiled for: the layers after the first.
        assert_eq!(ell.formats(), Format::Ell.bit());

        let dense = Layout::build(&chain, FormatChoice::Dense).unwrap();
        assert_eq!(dense.formats(), Format::Dense.bit());
        let l = dense.layers[1];
        assert_eq!((l.format, l.dense_stride), (Format::Dense, 64));
        let d = dense.dense_of(1);
        assert_eq!(d.len(), 4 * 64);
        let at = |k, c| d[dense_index(k, c, 64)];
        assert_eq!(
            (at(0, 0), at(1, 0), at(1, 5), at(0, 32)),
            (1.0, 3.0, 4.0, -2.0)
        );
        assert_eq!((d[0], d[1], d[4 * 5 + 1], d[4 * 32]), (1.0, 3.0, 4.0, -2.0));
        assert_eq!(d.iter().filter(|v| **v != 0.0).count(), 4);
        let desc = dense.descriptors();
        assert_eq!(desc.len(), 2 * DESC_WORDS);
        assert_eq!(&desc[8..16], &[1, 2, 33, 64, 0, 0, 0, 0]);
        assert!(dense.biases.is_empty() && dense.biases_of(1).is_none());
        assert_eq!(dense.bias_stride, 0);

        // With a bias per output: one float per padded output column, padding 0.
        let b1 = vec![-0.5, 0.0];
        let b2: Vec<f32> = (0..33).map(|k| -(k as f32) / 8.0).collect();
        let biased = chain
            .clone()
            .with_biases(vec![b1.clone(), b2.clone()])
            .unwrap();
        let layout = Layout::build(&biased, FormatChoice::Dense).unwrap();
        // Layer l at l · 64 (the widest padded layer), padding +0.
        assert_eq!(layout.bias_stride, 64);
        assert_eq!(layout.biases.len(), 2 * 64);
        assert_eq!(&layout.biases[..2], &b1[..]);
        assert!(layout.biases[2..64].iter().all(|&b| b.to_bits() == 0));
        assert_eq!(&layout.biases[64..97], &b2[..]);
        assert!(layout.biases[97..].iter().all(|&b| b.to_bits() == 0));
        assert_eq!(layout.biases_of(0).unwrap(), &layout.biases[..32]);
        assert_eq!(layout.biases_of(1).unwrap(), &layout.biases[64..128]);
        assert_eq!(layout.descriptors(), dense.descriptors());
        assert_eq!(layout.layers[0].bytes, dense.layers[0].bytes + 4 * 32);
        assert_eq!(layout.layers[1].bytes, dense.layers[1].bytes + 4 * 64);
    }

    #[test]
    fn one_value_layers_store_the_value_once_and_indices() {
        // The hand chain's layer 2 with every weight 0.5: 2 × 33, groups of 2 and 1 slots.
        let w1 = csr(3, 2, &[(0, 1, 0.5), (2, 0, 2.0), (2, 1, -1.0)]);
        let w2 = csr(
            2,
            33,
            &[(0, 0, 0.5), (1, 0, 0.5), (1, 5, 0.5), (0, 32, 0.5)],
        );
        let chain = chain_of(vec![w1, w2]);
        let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
        let one = Layout::build(&chain, FormatChoice::Ell).unwrap();
        let (p, l) = (pairs.layers[1], one.layers[1]);
        assert_eq!((p.format, p.base_bits, p.index_bits), (Format::Ell, 0, 0));
        // Base 0.5 (m = 1 everywhere), inputs 0 and 1: one index bit.
        let half = 0.5f32.to_bits();
        assert_eq!(
            (l.format, l.base_bits, l.index_bits, l.slots),
            (Format::EllScaled16, half, 1, 3)
        );
        assert_eq!((one.scaled_count(), pairs.scaled_count()), (1, 0));
        assert_eq!(one.format_counts(), (1, 0, 1));
        assert_eq!(
            (one.formats(), pairs.formats()),
            (Format::EllScaled16.bit(), Format::Ell.bit())
        );
        // The base unit and 96 entries of 2 bytes (24 units) against 96 pairs, plus 3 group
        // starts each.
        assert_eq!((one.ell.len(), pairs.ell.len()), (25, 96));
        assert_eq!(
            (l.bytes, p.bytes, l.pair_bytes()),
            (8 * 25 + 12, 8 * 96 + 12, p.bytes)
        );
        assert_eq!(one.weight_bytes(), pairs.weight_bytes() - 6 * 96 + 8);
        // Entry = input | m << 1. Slot 0 of group 0: lanes 0 and 5 read input 1 (3), the
        // other lanes pad (m = 0) at the slot's first address, input 1 (1). Slot 1: lane 0
        // reads input 0 (2), the others pad there (0). Group 1: lane 0 reads input 0 (2),
        // the others pad there (0).
        let e = one.ell_of(1);
        assert_eq!(e.len(), 25);
        assert_eq!(e[0], [half, 1]);
        assert_eq!(e[1], [0x0001_0003, 0x0001_0001]);
        assert_eq!(e[2], [0x0003_0001, 0x0001_0001]);
        assert_eq!(e[1 + 8], [2, 0]);
        assert_eq!(e[1 + 16], [2, 0]);
        // Decoded, every entry is the pair form's: the value where stored, +0.0 padding.
        assert_eq!(&one.ell_entries_of(1)[..], pairs.ell_of(1));
        assert_eq!(one.ell_entry(1, 5), Some([1, half]));
        assert_eq!(one.ell_entry(1, 37), Some([0, 0]));
        assert_eq!(one.ell_entry(1, 96), None);
        assert_eq!(one.ell_entry(0, 0), None);
        // The descriptors differ only in the format.
        let (d1, d0) = (one.descriptors(), pairs.descriptors());
        assert_eq!(&d1[8..16], &[3, 2, 33, 0, 0, 0, 0, 0]);
        assert_eq!((d0[8], &d0[9..]), (2, &d1[9..]));
        // Layer 1 is left as it was.
        assert_eq!(one.first, pairs.first);
        assert_eq!(one.layers[0], pairs.layers[0]);
    }

    #[test]
    fn multiples_of_one_value_are_scaled_and_others_keep_their_pairs() {
        let layer = |values: &[f32]| {
            let t: Vec<(u32, u32, f32)> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as u32, (2 * i % 3) as u32, v))
                .collect();
            let chain = chain_of(vec![
                csr(1, values.len(), &[(0, 0, 1.0)]),
                csr(values.len(), 3, &t),
            ]);
            let scaled = Layout::build(&chain, FormatChoice::Ell).unwrap();
            let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
            // Scaled or not, the kernel multiplies with the pairs' weights.
            assert_eq!(&scaled.ell_entries_of(1)[..], pairs.ell_of(1), "{values:?}");
            assert_eq!(pairs.layers[1].format, Format::Ell);
            scaled.layers[1]
        };
        // 1/16, 2/16 and 3/16 (the compressed challenge layers): base 1/16, m = 1, 2, 3.
        let l = layer(&[0.0625, 0.125, 0.1875, 0.0625]);
        assert_eq!(
            (l.format, l.base_bits, l.index_bits),
            (Format::EllScaled16, 0.0625f32.to_bits(), 2)
        );
        // 0.75 and 1.25: the base 0.25 is the smallest value over 3.
        let l = layer(&[0.75, 1.25]);
        assert_eq!(
            (l.format, l.base_bits),
            (Format::EllScaled16, 0.25f32.to_bits())
        );
        // One positive value of any size: m = 1.
        for v in [f32::MIN_POSITIVE, 3.0, f32::MAX] {
            let l = layer(&[v, v]);
            assert_eq!((l.format, l.base_bits), (Format::EllScaled16, v.to_bits()));
        }
        // Values differing in the last bit, both signs, +0.0 and −0.0, one negative or zero
        // value, multiples beyond 16 of the smallest over 16: pairs.
        let next = f32::from_bits(0.5f32.to_bits() + 1);
        for values in [
            vec![0.5, next],
            vec![0.5, -0.5],
            vec![0.0, -0.0],
            vec![-3.0, -3.0],
            vec![0.0, 0.0],
            vec![-0.0],
            vec![1.0, 1.0 + 2.0f32.powi(-20)],
        ] {
            let l = layer(&values);
            assert_eq!(l.format, Format::Ell, "{values:?}");
        }
        // A layer storing nothing keeps the (empty) pair form.
        let chain = chain_of(vec![csr(1, 2, &[(0, 0, 1.0)]), csr(2, 3, &[])]);
        let layout = Layout::build(&chain, FormatChoice::Ell).unwrap();
        assert_eq!(
            (layout.layers[1].format, layout.layers[1].slots),
            (Format::Ell, 0)
        );
    }

    #[test]
    fn sixteen_bit_entries_only_when_index_and_multiple_fit() {
        let pairs = |k: u32, weights: &[f32]| -> Vec<[u32; 2]> {
            let mut p = vec![[0, 0]; WARP];
            for (i, w) in weights.iter().enumerate() {
                p[i] = [k, w.to_bits()];
            }
            p
        };
        let v = 0.25f32;
        // 15 index bits and m = 1: 16 bits. Padding (m = 0) is the bare index.
        let s = scaled_form(&[v], &pairs(32767, &[v])).unwrap();
        assert_eq!(
            (s.format, s.index_bits, s.units.len()),
            (Format::EllScaled16, 15, 9)
        );
        assert_eq!(s.units[0], [v.to_bits(), 15]);
        assert_eq!(s.units[1], [0x8000 | 32767, 0]);
        // 16 index bits and m = 1: 32-bit entries.
        let s = scaled_form(&[v], &pairs(32768, &[v])).unwrap();
        assert_eq!(
            (s.format, s.index_bits, s.units.len()),
            (Format::EllScaled32, 16, 17)
        );
        assert_eq!(s.units[1], [32768 | 1 << 16, 0]);
        // m up to 3 (two bits): 14 index bits fit 16, 15 do not.
        let three = [v, 3.0 * v];
        let s = scaled_form(&three, &pairs(16383, &three)).unwrap();
        assert_eq!((s.format, s.index_bits), (Format::EllScaled16, 14));
        assert_eq!(s.units[1], [16383 | 1 << 14 | (16383 | 3 << 14) << 16, 0]);
        let s = scaled_form(&three, &pairs(16384, &three)).unwrap();
        assert_eq!(s.format, Format::EllScaled32);
        // Past 32 bits, or a pair weighing neither a stored value nor +0.0: pairs stay.
        assert_eq!(scaled_form(&[v], &pairs(u32::MAX, &[v])), None);
        assert_eq!(scaled_form(&[v], &pairs(3, &[0.5])), None);
        assert_eq!(scaled_form(&[], &pairs(3, &[])), None);
        // A layer wider than 2^15 inputs: 32-bit entries, decoded to its pairs.
        let n = 40_000u32;
        let mut t: Vec<(u32, u32, f32)> = (0..n).map(|i| (i, (i * 7) % 64, 1.5)).collect();
        t.sort_by_key(|&(i, j, _)| (i, j));
        let chain = chain_of(vec![
            csr(1, n as usize, &[(0, 0, 1.0)]),
            csr(n as usize, 64, &t),
        ]);
        let layout = Layout::build(&chain, FormatChoice::Ell).unwrap();
        let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
        let l = layout.layers[1];
        assert_eq!((l.format, l.index_bits), (Format::EllScaled32, 16));
        assert_eq!(l.bytes, 8 + 4 * WARP * l.slots + 4 * 3);
        assert_eq!(&layout.ell_entries_of(1)[..], pairs.ell_of(1));
    }

    #[test]
    fn compressed_challenge_layers_are_scaled() {
        // The generated networks' weights are all 1/16. Compression merges input classes:
        // in the first cycle all of 16 members (one value, 1.0), later of 1 to 5 (1/16 to
        // 5/16 in one layer). Proved from the data, every ELL layer is scaled.
        for (n, l) in [(1024, 24), (4096, 13)] {
            let net = spdnn_sdgc::generator::network(n, l, 3).unwrap();
            let chain = Chain::build(net.layers(), -0.3f32, 32.0, true, true).unwrap();
            let layout = Layout::build(&chain, FormatChoice::Auto).unwrap();
            let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
            let (_, dense, ell) = layout.format_counts();
            assert!(ell > 0, "{n}-{l}");
            assert_eq!(layout.scaled_count(), ell, "{n}-{l}: {dense} dense");
            let mut several = false;
            for (i, layer) in layout.layers.iter().enumerate().skip(1) {
                if layer.format.is_ell() {
                    assert_eq!(layer.format, Format::EllScaled16);
                    assert_eq!(
                        layer.bytes,
                        8 + 2 * WARP * layer.slots
                            + 4 * (layer.groups() + 1)
                            + layer.circulant_bytes()
                    );
                    assert_eq!(layer.pair_bytes(), pairs.layers[i].bytes);
                    assert_eq!(&layout.ell_entries_of(i)[..], pairs.ell_of(i));
                    let values = chain.layers()[i].values();
                    several |= values.iter().any(|v| *v != values[0]);
                }
            }
            assert_eq!(several, n == 4096, "{n}-{l}");
        }
    }

    #[test]
    fn layer_one_is_scaled_when_float_sums_it_exactly() {
        // The compressed challenge networks: every layer-1 weight a multiple of 1/16, two
        // entries a neuron, read as one 8-byte unit.
        for n in [1024, 4096] {
            let net = spdnn_sdgc::generator::network(n, 4, 3).unwrap();
            let chain = Chain::build(net.layers(), -0.3f32, 32.0, true, true).unwrap();
            let layout = Layout::build(&chain, FormatChoice::Auto).unwrap();
            let first = &layout.first;
            let scaled = first.scaled.as_ref().expect("challenge layer 1 is scaled");
            assert_eq!((first.ell_width, scaled.per_neuron), (2, 2), "{n}");
            assert_eq!(f32::from_bits(scaled.base_bits), 0.0625, "{n}");
            assert_eq!(first.device_units().len(), first.entries.len() / 2);
            let l1 = layout.layers[0];
            assert_eq!((l1.dense_stride, l1.index_bits), (2, scaled.index_bits));
            let desc = layout.descriptors();
            assert_eq!(
                (desc[3], desc[6], desc[7]),
                (2, scaled.index_bits, scaled.base_bits)
            );
            for k in 0..first.offsets.len() - 1 {
                assert!(scaled.row(k).eq(first.row(k)), "{n}: neuron {k}");
            }
            // `ell-pairs` keeps the pairs, for layer 1 too.
            let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
            assert!(pairs.first.scaled.is_none());
            assert_eq!(pairs.descriptors()[6..8], [0, 0]);
        }
        // Three entries a neuron: four stored, the fourth padding (m = 0).
        let entries = [
            [0, 1.5f32.to_bits()],
            [1, 3.0f32.to_bits()],
            [2, 0.0f32.to_bits()],
        ];
        let s = FirstScaled::of(&entries, 3, &[1.5, 3.0], 3).unwrap();
        assert_eq!((s.per_neuron, s.index_bits, s.units.len()), (4, 2, 2));
        assert_eq!(f32::from_bits(s.base_bits), 1.5);
        assert_eq!(s.units, vec![[1 << 2, 1 | 2 << 2], [0, 0]]);
        assert_eq!(s.row(0).collect::<Vec<_>>(), vec![(0, 1.5), (1, 3.0)]);
        // Column sums of multiples bounded by 2^24 / q, b = q·2^e with q odd: 1.5 = 3·2^-1.
        let column = |neurons: usize| -> Vec<[u32; 2]> {
            (0..neurons).map(|_| [0, 1.5f32.to_bits()]).collect()
        };
        let most = (1usize << 24) / 3;
        assert!(FirstScaled::of(&column(most), 1, &[1.5], 1).is_some());
        assert!(FirstScaled::of(&column(most + 1), 1, &[1.5], 1).is_none());
        // Values of no common base, negative values, or too many entries a neuron: pairs.
        assert!(FirstScaled::of(&[[0, 1.0f32.to_bits()]], 1, &[1.0, 0.1], 1).is_none());
        assert!(FirstScaled::of(&[[0, (-1.0f32).to_bits()]], 1, &[-1.0], 1).is_none());
        let five = [[0, 1.0f32.to_bits()]; 5];
        assert!(FirstScaled::of(&five, 5, &[1.0], 1).is_none());
        assert!(FirstScaled::of(&five, 0, &[1.0], 1).is_none());
    }

    proptest! {
        /// The padding term: from a sum started at +0.0, fused multiply-adds never leave −0.0
        /// (an exact zero sum rounds to +0.0), so adding `x·(+0.0)` for a finite `x`
        /// changes no bit; skipping it would give the same sums. The kernel adds it, as the
        /// pair form does, so the two agree even where `x` is not finite.
        #[test]
        fn padding_terms_change_no_bit(terms in proptest::collection::vec((-8i32..=8, -8i32..=8), 0..12), x in any::<f32>()) {
            let mut acc = 0.0f32;
            for (a, b) in terms {
                acc = (a as f32 / 4.0).mul_add(b as f32 / 8.0, acc);
                prop_assert!(acc.to_bits() != (-0.0f32).to_bits());
            }
            if x.is_finite() {
                prop_assert_eq!(x.mul_add(0.0, acc).to_bits(), acc.to_bits());
            }
        }
    }

    fn arbitrary_chain() -> impl Strategy<Value = Vec<Csr>> {
        (1usize..70, 1usize..5).prop_flat_map(|(n0, depth)| {
            proptest::collection::vec(1usize..70, depth).prop_flat_map(move |widths| {
                let mut dims = vec![n0];
                dims.extend(widths);
                let layers: Vec<_> = dims
                    .windows(2)
                    .map(|d| {
                        let (r, c) = (d[0], d[1]);
                        proptest::collection::vec(
                            (0..r as u32, 0..c as u32, -4i32..=4),
                            0..(r * c).min(300),
                        )
                        .prop_map(move |t| {
                            let mut t: Vec<(u32, u32, f32)> = t
                                .into_iter()
                                .map(|(i, j, v)| (i, j, v as f32 / 2.0))
                                .collect();
                            t.sort_by_key(|&(i, j, _)| (i, j));
                            t.dedup_by_key(|&mut (i, j, _)| (i, j));
                            Csr::from_triplets(r, c, &t).unwrap()
                        })
                    })
                    .collect();
                layers
            })
        })
    }

    proptest! {
        /// Every stored entry is found where the kernel looks, in both formats, and
        /// nothing else is nonzero.
        #[test]
        fn layouts_hold_exactly_the_layers(layers in arbitrary_chain()) {
            let chain = chain_of(layers.clone());
            let pairs = Layout::build(&chain, FormatChoice::EllPairs).unwrap();
            for choice in [FormatChoice::Auto, FormatChoice::Dense, FormatChoice::Ell, FormatChoice::EllPairs] {
                let layout = Layout::build(&chain, choice).unwrap();
                prop_assert_eq!(layout.layers.len(), layers.len());
                prop_assert_eq!(layout.descriptors().len(), DESC_WORDS * layers.len());
                // Reordered outputs stay in their groups of 32; the last layer's never move.
                prop_assert!(layout.positions.last().unwrap().is_none());
                for position in layout.positions.iter().flatten() {
                    let mut sorted = position.clone();
                    sorted.sort_unstable();
                    prop_assert_eq!(sorted, (0..position.len() as u32).collect::<Vec<_>>());
                    prop_assert!(position.iter().enumerate().all(|(c, &p)| p as usize / WARP == c / WARP));
                }
                let stored = layout.stored_layers(&layers).unwrap();
                for (l, w) in stored.iter().enumerate().skip(1) {
                    let w: &Csr = w;
                    let same_order = layout.positions[l - 1] == pairs.positions[l - 1]
                        && layout.positions[l] == pairs.positions[l];
                    let ll = layout.layers[l];
                    let mut seen = vec![0f32; w.nrows() * w.ncols()];
                    match ll.format {
                        Format::Dense => {
                            let d = layout.dense_of(l);
                            prop_assert_eq!(d.len(), round_up(w.nrows(), 4) * round_up(w.ncols(), 32));
                            for k in 0..round_up(w.nrows(), 4) {
                                for c in 0..ll.dense_stride {
                                    let v = d[dense_index(k, c, ll.dense_stride)];
                                    if k < w.nrows() && c < w.ncols() {
                                        seen[k * w.ncols() + c] = v;
                                    } else {
                                        prop_assert_eq!(v, 0.0);
                                    }
                                }
                            }
                        }
                        Format::Ell | Format::EllScaled16 | Format::EllScaled32 => {
                            let starts = layout.starts_of(l);
                            let e = layout.ell_entries_of(l);
                            let columns = w.transpose();
                            // Scaled exactly where scaled_form accepts the layer (always
                            // for one positive value); every entry decodes to the pair
                            // form's entry.
                            let positive_one_value = w.nnz() > 0
                                && w.values()[0] > 0.0
                                && w.values().iter().all(|v| v.to_bits() == w.values()[0].to_bits());
                            let scalable = scaled_form(columns.values(), pairs.ell_of(l)).is_some();
                            prop_assert!(scalable || !positive_one_value);
                            prop_assert_eq!(ll.format != Format::Ell, scalable && choice != FormatChoice::EllPairs);
                            if same_order {
                                prop_assert_eq!(&e[..], pairs.ell_of(l));
                            }
                            let header = if ll.format == Format::Ell { 0 } else { 8 };
                            prop_assert_eq!(ll.bytes, header + ll.format.entry_bytes() * WARP * ll.slots + 4 * starts.len());
                            prop_assert_eq!(ll.pair_bytes(), pairs.layers[l].bytes);
                            prop_assert_eq!(starts.len(), ll.groups() + 1);
                            let mut wavefronts = 0;
                            for g in 0..ll.groups() {
                                let slots = (starts[g + 1] - starts[g]) as usize;
                                for lane in 0..WARP {
                                    let c = g * WARP + lane;
                                    let (inputs, values) = if c < w.ncols() {
                                        columns.row(c)
                                    } else {
                                        (&[][..], &[][..])
                                    };
                                    prop_assert!(inputs.len() <= slots);
                                    // The lane's slots hold its column's entries, each once,
                                    // in some order; the rest weigh +0 and read an input
                                    // the layer has.
                                    let mut got: Vec<[u32; 2]> = (0..slots)
                                        .map(|s| e[(starts[g] as usize + s) * WARP + lane])
                                        .collect();
                                    for (&k, &v) in inputs.iter().zip(values) {
                                        let at = got.iter().position(|&x| x == [k, v.to_bits()]);
                                        prop_assert!(at.is_some(), "column {} lacks input {}", c, k);
                                        got.swap_remove(at.unwrap_or(0));
                                        seen[k as usize * w.ncols() + c] = v;
                                    }
                                    for [k, v] in got {
                                        prop_assert_eq!(v, 0.0f32.to_bits());
                                        prop_assert!((k as usize) < w.nrows().max(1));
                                    }
                                }
                                for s in 0..slots {
                                    let at = (starts[g] as usize + s) * WARP;
                                    let read: Vec<u32> = e[at..at + WARP].iter().map(|x| x[0]).collect();
                                    wavefronts += slot_cost(&read).0;
                                }
                            }
                            prop_assert_eq!(wavefronts, ll.wavefronts);
                        }
                        Format::Input => prop_assert!(false, "layer {} laid out as input", l),
                    }
                    let mut expected = vec![0f32; w.nrows() * w.ncols()];
                    for (k, c, v) in w.triplets() {
                        expected[k as usize * w.ncols() + c as usize] = v;
                    }
                    prop_assert_eq!(seen, expected);
                }
                let w1: &Csr = &stored[0];
                let rebuilt: Vec<(u32, u32, f32)> = (0..w1.nrows())
                    .flat_map(|k| layout.first.row(k).map(move |(c, v)| (k as u32, c, v)))
                    .collect();
                // ELL skips stored +0.0 weights (they add nothing); CSR keeps them.
                let expected: Vec<(u32, u32, f32)> = w1
                    .triplets()
                    .filter(|&(_, _, v)| layout.first.ell_width == 0 || v.to_bits() != 0)
                    .collect();
                prop_assert_eq!(&rebuilt, &expected);
                prop_assert_eq!(layout.layers[0].dense_stride, layout.first.per_neuron());
                // The scaled form, when there is one, stands for the same pairs.
                if let Some(scaled) = &layout.first.scaled {
                    let from_scaled: Vec<(u32, u32, f32)> = (0..w1.nrows())
                        .flat_map(|k| scaled.row(k).map(move |(c, v)| (k as u32, c, v)))
                        .collect();
                    prop_assert_eq!(from_scaled, rebuilt);
                    prop_assert_eq!(layout.layers[0].index_bits, scaled.index_bits);
                }
            }
        }
    }
}
