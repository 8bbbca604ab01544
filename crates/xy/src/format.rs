//! The XY layer format: output neurons grouped by the input set they share.
//!
//! In the challenge networks (RadiX-Net), the outputs `{c : c mod N/16 = g}` of a layer
//! all read the same 32 inputs (their columns of W have the same row pattern). XY-2021
//! stores each group of 16 such outputs as one *block*: the shared input indices once,
//! then a 32 × 16 tile of values, so one thread per sample can load each input once and
//! update 16 accumulators in registers.
//!
//! Nothing here assumes that structure. [`XyNetwork::prepare`] finds, per layer, the
//! outputs whose input lists are identical. When every such group has a multiple of
//! [`GROUP`] members, the layer is *grouped*: blocks of `GROUP` outputs. Otherwise it
//! is *general*: one block per output (`group == 1`) with its own input list, which the
//! same kernels run (they are instantiated for both block widths).
//!
//! Outputs are reordered so that the members of a block sit together: position
//! `p = block·group + o` of a layer's output holds original neuron `outputs[p]`. The next
//! layer's input indices are positions in this order, so activations never need to be
//! permuted between layers; only the final output is mapped back.

/// Outputs per block in a grouped layer.
pub const GROUP: usize = 16;

/// One layer in the XY format.
#[derive(Debug, Clone, PartialEq)]
pub struct XyLayer {
    /// Outputs per block: [`GROUP`] (grouped layer) or 1 (general layer).
    pub group: u32,
    /// `blocks + 1` offsets into `inputs`: block `b` reads
    /// `inputs[block_offsets[b]..block_offsets[b + 1]]`.
    pub block_offsets: Vec<u32>,
    /// Input positions (positions in the previous layer's output order; original input
    /// columns for the first layer), ascending within each block.
    pub inputs: Vec<u32>,
    /// `values[(block_offsets[b] + r) * group + o]` is the weight from input
    /// `inputs[block_offsets[b] + r]` to output `o` of block `b` (read from the data).
    pub values: Vec<f32>,
    /// `outputs[p]`: the original output neuron at position `p` (a permutation of 0..N).
    pub outputs: Vec<u32>,
    /// The largest number of maximal runs of consecutive positions in one block's input
    /// list (2 in the challenge's first-cycle "stride" layers, where a block reads two
    /// windows of 16 neighbouring positions).
    pub max_input_runs: u32,
}

impl XyLayer {
    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.block_offsets.len() - 1
    }

    /// The largest input list of one block.
    pub fn max_block_inputs(&self) -> usize {
        self.block_offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Whether this layer has blocks of [`GROUP`] outputs.
    pub fn is_grouped(&self) -> bool {
        self.group as usize == GROUP
    }
}

/// A whole network in the XY format.
#[derive(Debug, Clone, PartialEq)]
pub struct XyNetwork {
    /// N.
    pub neurons: usize,
    /// One entry per layer.
    pub layers: Vec<XyLayer>,
}
