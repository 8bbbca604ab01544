//! Merging identical outputs: the compressor, layer by layer, and the compressed network.

use std::time::{Duration, Instant};

use serde::Serialize;
use spdnn_formats::{Csr, SparseMatrix};

use crate::merge::{LayerResult, compress_layer, entry_hash};
use crate::{Classes, CompressError, Retirement};

/// What compression did to one layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LayerSummary {
    /// Input neurons of the original layer (`N_{l-1}`, its rows).
    pub rows: usize,
    /// Output neurons of the original layer (`N_l`, its columns).
    pub width: usize,
    /// Rows of the compressed layer (`N'_{l-1}`: the previous layer's classes).
    pub compressed_rows: usize,
    /// Classes of identical outputs, the compressed layer's columns (`N'_l`).
    pub classes: usize,
    /// Size of the largest class.
    pub largest_class: usize,
    /// Classes with at least two members.
    pub merged_classes: usize,
    /// Stored entries of the original layer.
    pub nnz: usize,
    /// Stored entries of the compressed layer.
    pub compressed_nnz: usize,
    /// Whether a signature collision sent the layer to the slower exact column comparison
    /// (the classes are exact either way).
    pub exact_fallback: bool,
}

/// What compression did to a whole network.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Width of the input rows (`N_0`, never compressed).
    pub input_width: usize,
    /// One entry per layer, in order.
    pub layers: Vec<LayerSummary>,
    /// Time spent compressing (the [`Compressor::push`] calls).
    pub compress_time: Duration,
}

impl Summary {
    /// Whether no layer has a class of two or more outputs: the compressed network is the
    /// original, entry for entry and bit for bit.
    pub fn is_identity(&self) -> bool {
        self.layers.iter().all(|l| l.merged_classes == 0)
    }
}

/// Compresses a network one layer at a time, so that a network too large to hold twice
/// can be streamed through it (push each layer, keep or write the compressed layer).
///
/// For layer `l` it
/// 1. merges the layer's input rows by the previous layer's classes (layer 1's rows, the
///    input's own neurons, are never merged): the merged row of class `C` carries in
///    column `j` the f32 sum of the weights `W[i, j]` of the members `i ∈ C` that store
///    an entry in column `j`, **added in ascending order of `i`, left to right, starting
///    from the first such weight** (a class of one copies its weight bit for bit, −0.0
///    included). A sum that is exactly 0 stays a stored entry (see the crate
///    documentation for why);
/// 2. finds the classes of identical columns of the merged layer: same stored rows and
///    bit-identical values (a signature proposes, an entry-by-entry check decides; on a
///    failed check, a comparison of whole columns);
/// 3. keeps one column per class, the class's smallest member: the compressed layer is
///    `N'_{l-1} × N'_l`, its column `c` being class `c`.
#[derive(Debug, Clone, Default)]
pub struct Compressor {
    input_width: Option<usize>,
    previous: Option<Classes>,
    layers: Vec<LayerSummary>,
    elapsed: Duration,
}

impl Compressor {
    /// A compressor that has seen no layer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compresses the next layer (`N_{l-1} × N_l`, row = input neuron) and returns it as
    /// `N'_{l-1} × N'_l`. Errors when its rows do not equal the previous layer's columns.
    pub fn push(&mut self, layer: &Csr) -> Result<Csr, CompressError> {
        let start = Instant::now();
        if let Some(previous) = &self.previous
            && previous.width() != layer.nrows()
        {
            return Err(CompressError::LayerShape {
                layer: self.layers.len() + 1,
                expected: previous.width(),
                found: layer.nrows(),
            });
        }
        let LayerResult {
            layer: compressed,
            classes,
            fell_back,
        } = compress_layer(layer, self.previous.as_ref(), entry_hash)?;
        let compressed_rows = compressed.nrows();
        self.input_width.get_or_insert(layer.nrows());
        self.layers.push(LayerSummary {
            rows: layer.nrows(),
            width: layer.ncols(),
            compressed_rows,
            classes: classes.len(),
            largest_class: classes.largest(),
            merged_classes: classes.merged(),
            nnz: layer.nnz(),
            compressed_nnz: compressed.nnz(),
            exact_fallback: fell_back,
        });
        self.previous = Some(classes);
        self.elapsed += start.elapsed();
        Ok(compressed)
    }

    /// The classes of the last layer pushed (`None` before the first).
    pub fn classes(&self) -> Option<&Classes> {
        self.previous.as_ref()
    }

    /// Number of layers pushed.
    pub fn layers(&self) -> usize {
        self.layers.len()
    }

    /// The summary of the layers pushed, and the last layer's classes (the map that
    /// expands final values). Errors when no layer was pushed.
    pub fn finish(self) -> Result<(Summary, Classes), CompressError> {
        let (Some(input_width), Some(last)) = (self.input_width, self.previous) else {
            return Err(CompressError::NoLayers);
        };
        Ok((
            Summary {
                input_width,
                layers: self.layers,
                compress_time: self.elapsed,
            },
            last,
        ))
    }
}

/// An equivalent network whose layers have one column per class of identical outputs and
/// one row per class of the previous layer (see [`Compressor`] and the crate documentation
/// for what "equivalent" means in floating point).
#[derive(Debug, Clone)]
pub struct Compressed {
    layers: Vec<Csr>,
    classes: Vec<Classes>,
    summary: Summary,
}

/// Compresses a whole network (`layers[l]` is `N_l × N_{l+1}`, row = input neuron).
///
/// Errors when there are no layers or the layers do not chain. A network without classes
/// of two or more outputs compresses to itself ([`Compressed::is_identity`]).
pub fn compress(layers: &[Csr]) -> Result<Compressed, CompressError> {
    let mut compressor = Compressor::new();
    let mut compressed = Vec::with_capacity(layers.len());
    let mut classes = Vec::with_capacity(layers.len());
    for layer in layers {
        compressed.push(compressor.push(layer)?);
        classes.push(compressor.classes().cloned().expect("a layer was pushed"));
    }
    let (summary, _) = compressor.finish()?;
    Ok(Compressed {
        layers: compressed,
        classes,
        summary,
    })
}

impl Compressed {
    /// The compressed layers (`N'_{l-1} × N'_l`; `N'_0 = N_0`).
    pub fn layers(&self) -> &[Csr] {
        &self.layers
    }

    /// The compressed layers, by value.
    pub fn into_layers(self) -> Vec<Csr> {
        self.layers
    }

    /// The classes of layer `layer`'s outputs (0-based), or `None` past the last layer.
    pub fn classes(&self, layer: usize) -> Option<&Classes> {
        self.classes.get(layer)
    }

    /// The classes of the last layer: the map from final neurons to compressed columns.
    pub fn final_classes(&self) -> &Classes {
        self.classes
            .last()
            .expect("a compressed network has layers")
    }

    /// What compression did, per layer, and how long it took.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Whether nothing was merged: the compressed layers equal the originals bit for bit.
    pub fn is_identity(&self) -> bool {
        self.summary.is_identity()
    }

    /// Expands final values of the compressed network (`rows × N'_L`, row-major) to the
    /// original width (`rows × N_L`). Errors on a wrong length.
    pub fn expand<T: Copy>(&self, values: &[T], rows: usize) -> Result<Vec<T>, CompressError> {
        self.final_classes().expand(values, rows)
    }

    /// The retirement analysis of the compressed layers (see [`Retirement::analyze`]).
    pub fn retirement(&self, bias: f32, upper_bound: f32) -> Result<Retirement, CompressError> {
        Retirement::analyze(&self.layers, bias, upper_bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, t).unwrap()
    }

    #[test]
    fn a_hand_network_merges_as_computed_by_hand() {
        // Layer 1 (2 × 4): outputs 0 and 2 identical, 1 and 3 identical.
        let w1 = csr(
            2,
            4,
            &[
                (0, 0, 1.0),
                (0, 2, 1.0),
                (1, 0, 2.0),
                (1, 2, 2.0),
                (1, 1, 0.5),
                (1, 3, 0.5),
            ],
        );
        // Layer 2 (4 × 3): rows 0 and 2 merge (class 0), rows 1 and 3 merge (class 1).
        // Column 1 gets 0.25 + 0.5 from class 0; column 2 gets 1.0 + (−1.0) = 0 (kept).
        let w2 = csr(
            4,
            3,
            &[
                (0, 0, 3.0),
                (0, 1, 0.25),
                (2, 1, 0.5),
                (1, 2, 1.0),
                (3, 2, -1.0),
                (3, 0, 4.0),
            ],
        );
        let c = compress(&[w1, w2]).unwrap();
        assert!(!c.is_identity());
        assert_eq!(c.layers()[0].nrows(), 2);
        assert_eq!(c.layers()[0].ncols(), 2);
        assert_eq!(
            c.layers()[0].triplets().collect::<Vec<_>>(),
            vec![(0, 0, 1.0), (1, 0, 2.0), (1, 1, 0.5)]
        );
        assert_eq!(
            c.layers()[1].triplets().collect::<Vec<_>>(),
            vec![(0, 0, 3.0), (0, 1, 0.75), (1, 0, 4.0), (1, 2, 0.0)]
        );
        assert_eq!(c.classes(0).unwrap().class_map(), &[0, 1, 0, 1]);
        assert!(c.final_classes().is_trivial());
        let s = c.summary();
        assert_eq!(s.input_width, 2);
        assert_eq!(s.layers[0].classes, 2);
        assert_eq!(s.layers[0].merged_classes, 2);
        assert_eq!(s.layers[1].compressed_rows, 2);
        assert_eq!(s.layers[1].compressed_nnz, 4);
        assert_eq!(s.layers[1].nnz, 6);
    }

    #[test]
    fn merged_columns_compare_after_merging() {
        // Layer 1: outputs 0 and 1 identical. Layer 2: column 0 takes input 0 with 2.0,
        // column 1 takes inputs 0 and 1 with 1.0 each: different columns, equal merged ones.
        let w1 = csr(1, 2, &[(0, 0, 1.0), (0, 1, 1.0)]);
        let w2 = csr(2, 2, &[(0, 0, 2.0), (0, 1, 1.0), (1, 1, 1.0)]);
        let c = compress(&[w1, w2]).unwrap();
        assert_eq!(c.summary().layers[1].classes, 1);
        assert_eq!(
            c.layers()[1].triplets().collect::<Vec<_>>(),
            vec![(0, 0, 2.0)]
        );
        assert_eq!(
            c.expand(&[5.0f32, 6.0], 2).unwrap(),
            vec![5.0, 5.0, 6.0, 6.0]
        );
    }

    #[test]
    fn no_classes_means_the_same_layers_bit_for_bit() {
        let w1 = csr(2, 2, &[(0, 0, -0.0), (1, 1, 1.0), (0, 1, 3.0)]);
        let w2 = csr(2, 3, &[(0, 0, 1.0), (1, 1, 1.0), (1, 2, 2.0)]);
        let c = compress(&[w1.clone(), w2.clone()]).unwrap();
        assert!(c.is_identity());
        assert_eq!(c.layers(), &[w1, w2]);
        assert_eq!(c.layers()[0].values()[0].to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn bad_networks_are_errors() {
        assert!(matches!(compress(&[]), Err(CompressError::NoLayers)));
        let w1 = csr(2, 3, &[]);
        let w2 = csr(2, 2, &[]);
        assert!(matches!(
            compress(&[w1, w2]),
            Err(CompressError::LayerShape {
                layer: 2,
                expected: 3,
                found: 2
            })
        ));
        assert!(matches!(
            Compressor::new().finish(),
            Err(CompressError::NoLayers)
        ));
    }

    #[test]
    fn degenerate_shapes_compress() {
        let c = compress(&[Csr::zeros(0, 3).unwrap()]).unwrap();
        assert_eq!(c.final_classes().len(), 1);
        assert_eq!((c.layers()[0].nrows(), c.layers()[0].ncols()), (0, 1));
        let c = compress(&[Csr::zeros(2, 0).unwrap(), Csr::zeros(0, 2).unwrap()]).unwrap();
        assert!(c.classes(0).unwrap().is_empty());
        assert_eq!((c.layers()[1].nrows(), c.layers()[1].ncols()), (0, 1));
        assert_eq!(c.expand(&[4.0f32], 1).unwrap(), vec![4.0, 4.0]);
    }

    #[test]
    fn empty_columns_form_one_class() {
        let w1 = csr(2, 4, &[(0, 1, 1.0)]);
        let c = compress(&[w1]).unwrap();
        assert_eq!(c.final_classes().class_map(), &[0, 1, 0, 0]);
        assert_eq!(c.layers()[0].ncols(), 2);
    }
}
