//! Exact structural compression of sparse DNNs (the Sparse DNN Graph Challenge's
//! `Y_{l+1} = min(max(Y_l·W_l + b, 0), U)`, `W_l` sparse, row = input neuron), proved
//! from the data at preparation time.
//!
//! # Output classes and merged inputs ([`compress`], [`Compressor`])
//!
//! Two outputs of a layer whose columns store the same inputs with the same weights
//! carry the same value in every row. Per layer the compressor finds these *classes*
//! (a hash proposes, an entry-by-entry bitwise comparison decides), keeps one column per
//! class, and in the next layer merges the input rows of each class into one row whose
//! weights are the per-output sums of theirs. The columns compared are those of the
//! layer *after* its rows were merged, so classes are found even when the original
//! columns differ only in how they spread over the members of an input class (two
//! identical original columns always stay identical after merging). Layer 1's rows are
//! the input's own neurons and are never merged. The result is an equivalent network of
//! `N'_{l-1} × N'_l` layers (`N'_0 = N_0`) and the class map of the last layer, which
//! expands final values back ([`Compressed::expand`]). Categories need no expansion:
//! activations are `≥ 0`, so a row has a nonzero sum iff one of its classes is nonzero.
//!
//! **Sum order.** The merged weight of class `C` in column `j` is the f32 sum of the
//! weights `W[i, j]` of the members `i ∈ C` storing an entry in column `j`, added in
//! ascending `i`, left to right, starting from the first of them (a class of one copies
//! its weight bit for bit). So the compression is deterministic, and a network without
//! classes of two or more compresses to itself, bit for bit ([`Compressed::is_identity`]).
//!
//! **Sums that are exactly 0 stay stored entries.** Under the official rule the bias is
//! added where `Y·W` is *structurally* nonzero (a nonzero input meets a stored weight,
//! whatever the sum). Members of a class carry equal values, so the merged row is a
//! nonzero input iff its members are; keeping every merged entry makes the compressed
//! layer's structure exactly the union of its members' structures, and the structural
//! rule then gives the same result for any bias. (With `b < 0`, the challenge's domain,
//! dropping the zero would also be exact: a structural zero `Z = 0` and a missing entry
//! both end at `clip(0 + b) = clip(0) = 0`. Keeping it costs an entry and needs no such
//! argument.)
//!
//! **Per-neuron biases** ([`compress_with_biases`], trained networks with a bias per output
//! neuron of every layer): the bias is part of the class key. Two outputs are one class
//! only when their merged columns are identical and their biases are equal bit for bit
//! (−0.0 and 0.0 differ: conservative); the compressed network carries the bias of each
//! class ([`Compressed::biases`]). Members of a class have the same structure, values and
//! bias, so they compute the same value under the official rule for any bias, of either
//! sign; everything said here about one bias holds per class.
//!
//! **What holds in floating point.** In exact arithmetic the compressed network computes
//! the same values. In f32 the merged weights reorder additions: where the original adds
//! `v·w_1 + v·w_2 + …` the compressed network multiplies `v·(w_1 + w_2 + …)`. Hence:
//! - values are **bit-identical** whenever every product and partial sum of both
//!   computations is exactly representable (e.g. dyadic weights and inputs with few
//!   layers, as in the tests);
//! - otherwise, per layer both results lie within `γ_{n+1}·(Σ|y_i·w_ij| + |b|)` of the
//!   exact value (`n` stored entries in the column, `γ_k = k·2^-24/(1 − k·2^-24)`), and
//!   the clip is 1-Lipschitz, so a difference entering a layer grows at most by the
//!   column's `Σ|w_ij|` plus that layer's own rounding: values agree within a
//!   tolerance that grows with depth and with the weights' absolute column sums;
//! - categories can differ only for a row whose outcome hinges on a pre-activation within
//!   rounding error of 0 (every value 0 in one computation, a value within the
//!   tolerance above 0 in the other);
//! - on the challenge networks (weights 1/16, column sums 2, values saturating at 32) the
//!   official truth is reproduced exactly (tested on the real N = 1024 network).
//!
//! # Retired rows ([`Retirement`], [`prove_layer`])
//!
//! A layer *preserves* all-at-bound rows when an input row with every activation equal to
//! `U` gives an output row with every activation equal to `U`. Each column then computes
//! some f32 evaluation of `b + Σ_i U·w_i` and the clip gives exactly `U` iff that value is
//! `≥ U`. The GPU kernels sum in varying orders (atomics, warp reductions, fused
//! multiply-adds), so [`prove_layer`] bounds the computed value from below in *every*
//! order with the classical error bound of floating-point summation, evaluated rigorously
//! in f64, and requires every column to be structurally non-empty (an empty column gives
//! 0). Negative weights are allowed: the input is exactly all `U`, so no monotonicity is
//! used. With a bias per neuron ([`Retirement::analyze_per_neuron`]) each column is proved
//! with its own bias, so one column whose bias pulls it below the bound keeps its layer
//! from preserving. If layers `k..L` all preserve, a row all at the bound after `k` layers stays so
//! to the end in every method, bit for bit: it is finished, a category with all values
//! `U`. A row of zeros is finished too (not a category): no structural nonzero, no bias.
//! Retiring a row therefore never changes any result, not even in the last bit.
//!
//! # Shared compressions ([`compress_shared`])
//!
//! [`compress_shared`] gives the compression of a network computed once per process: the
//! network is recognised by a content [`fingerprint`] (128-bit XXH3 of every layer), the
//! last one is remembered, and callers asking at once wait for one computation. A
//! benchmark's oracle and every GPU's run of a method that compresses then share one.
//!
//! # Report ([`CompressReport`])
//!
//! Class counts and compressed widths per layer, the preserving layers and the suffix,
//! and the preparation times, serialisable for the engine's JSON.

mod classes;
mod compress;
mod error;
mod merge;
mod report;
mod retire;
mod shared;

pub use classes::Classes;
pub use compress::{Compressed, Compressor, LayerSummary, Summary, compress, compress_with_biases};
pub use error::CompressError;
pub use report::{CompressReport, LayerReport};
pub use retire::{
    F32_UNIT_ROUNDOFF, LayerProof, PRODUCT_RELATIVE_ERROR, Retirement, RowState, prove_layer,
    prove_layer_per_neuron,
};
pub use shared::{
    Fingerprint, SharedCompressions, compress_shared, compress_with_biases_shared, fingerprint,
    forget_shared,
};
