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
///
/// A layer with a bias per output ([`Compressor::push_with_biases`], trained networks) adds
/// the bias to the class key: two outputs are one class only when their merged columns are
/// identical and their biases are equal bit for bit; the compressed layer carries one bias
/// per class (its members' common bias). Members of a class then compute the same value
/// under any bias, of either sign, so the compression stays exact.
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
        self.push_layer(layer, None)
            .map(|(compressed, _)| compressed)
    }

    /// [`Compressor::push`] for a layer with a bias per output (`biases[j]` of output `j`,
    /// `N_l` finite values): outputs with different biases are never merged. Returns the
    /// compressed layer and the bias of each of its columns. Errors like
    /// [`Compressor::push`], and when the biases are not `N_l` finite values.
    pub fn push_with_biases(
        &mut self,
        layer: &Csr,
        biases: &[f32],
    ) -> Result<(Csr, Vec<f32>), CompressError> {
        check_layer_biases(
            &format!("layer {}", self.layers.len() + 1),
            layer.ncols(),
            biases,
        )?;
        let (compressed, kept) = self.push_layer(layer, Some(biases))?;
        Ok((compressed, kept.expect("biases in, biases out")))
    }

    fn push_layer(
        &mut self,
        layer: &Csr,
        biases: Option<&[f32]>,
    ) -> Result<(Csr, Option<Vec<f32>>), CompressError> {
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
            biases: kept,
            fell_back,
        } = compress_layer(layer, self.previous.as_ref(), biases, entry_hash)?;
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
        Ok((compressed, kept))
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
    pub(crate) layers: Vec<Csr>,
    pub(crate) classes: Vec<Classes>,
    pub(crate) biases: Option<Vec<Vec<f32>>>,
    pub(crate) summary: Summary,
}

/// Compresses a whole network (`layers[l]` is `N_l × N_{l+1}`, row = input neuron).
///
/// Errors when there are no layers or the layers do not chain. A network without classes
/// of two or more outputs compresses to itself ([`Compressed::is_identity`]).
pub fn compress(layers: &[Csr]) -> Result<Compressed, CompressError> {
    compress_network(layers, None)
}

/// Compresses a network with a bias per output neuron of every layer (`biases[l][j]`, one
/// finite value per column of `layers[l]`; trained networks): outputs are merged only where
/// their biases are equal too, and the result carries a bias per compressed output
/// ([`Compressed::biases`]). Errors like [`compress`], and when the biases do not fit the
/// layers.
pub fn compress_with_biases(
    layers: &[Csr],
    biases: &[Vec<f32>],
) -> Result<Compressed, CompressError> {
    check_biases(layers, biases)?;
    compress_network(layers, Some(biases))
}

pub(crate) fn compress_network(
    layers: &[Csr],
    biases: Option<&[Vec<f32>]>,
) -> Result<Compressed, CompressError> {
    let mut compressor = Compressor::new();
    let mut compressed = Vec::with_capacity(layers.len());
    let mut classes = Vec::with_capacity(layers.len());
    let mut kept_biases = biases.map(|_| Vec::with_capacity(layers.len()));
    for (l, layer) in layers.iter().enumerate() {
        let (small, kept) = compressor.push_layer(layer, biases.map(|b| b[l].as_slice()))?;
        compressed.push(small);
        if let (Some(all), Some(kept)) = (kept_biases.as_mut(), kept) {
            all.push(kept);
        }
        classes.push(compressor.classes().cloned().expect("a layer was pushed"));
    }
    let (summary, _) = compressor.finish()?;
    Ok(Compressed {
        layers: compressed,
        classes,
        biases: kept_biases,
        summary,
    })
}

/// Checks per-neuron biases against their layers: one vector per layer, one finite value
/// per output.
pub(crate) fn check_biases(layers: &[Csr], biases: &[Vec<f32>]) -> Result<(), CompressError> {
    if biases.len() != layers.len() {
        return Err(CompressError::Biases(format!(
            "{} bias vectors for {} layers",
            biases.len(),
            layers.len()
        )));
    }
    for (l, (layer, b)) in layers.iter().zip(biases).enumerate() {
        check_layer_biases(&format!("layer {}", l + 1), layer.ncols(), b)?;
    }
    Ok(())
}

/// Checks the biases of one layer (`layer` names it): `width` finite values.
pub(crate) fn check_layer_biases(
    layer: &str,
    width: usize,
    biases: &[f32],
) -> Result<(), CompressError> {
    if biases.len() != width {
        return Err(CompressError::Biases(format!(
            "{layer} has {width} outputs but {} biases",
            biases.len()
        )));
    }
    if let Some(k) = biases.iter().position(|b| !b.is_finite()) {
        return Err(CompressError::Biases(format!(
            "the bias of neuron {} of {layer} is {}, not finite",
            k + 1,
            biases[k]
        )));
    }
    Ok(())
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

    /// The bias of every compressed output (`biases()[l][c]`, one per column of
    /// `layers()[l]`) when the network was compressed with per-neuron biases
    /// ([`compress_with_biases`]); `None` otherwise.
    pub fn biases(&self) -> Option<&[Vec<f32>]> {
        self.biases.as_deref()
    }

    /// The compressed layers and their per-neuron biases (`None` without), by value.
    pub fn into_parts(self) -> (Vec<Csr>, Option<Vec<Vec<f32>>>) {
        (self.layers, self.biases)
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

    /// The retirement analysis of the compressed layers with one bias for every neuron
    /// (see [`Retirement::analyze`]). Errors when the network was compressed with
    /// per-neuron biases (use [`Compressed::retirement_per_neuron`]).
    pub fn retirement(&self, bias: f32, upper_bound: f32) -> Result<Retirement, CompressError> {
        if self.biases.is_some() {
            return Err(CompressError::Biases(
                "the network has a bias per neuron: prove its retirement with those biases \
                 (retirement_per_neuron), not with one"
                    .into(),
            ));
        }
        Retirement::analyze(&self.layers, bias, upper_bound)
    }

    /// The retirement analysis of the compressed layers with their per-neuron biases (see
    /// [`Retirement::analyze_per_neuron`]). Errors when the network was compressed without
    /// them (use [`Compressed::retirement`]).
    pub fn retirement_per_neuron(&self, upper_bound: f32) -> Result<Retirement, CompressError> {
        let biases = self.biases.as_deref().ok_or_else(|| {
            CompressError::Biases(
                "the network was compressed with one bias for every neuron: prove its \
                 retirement with that bias (retirement)"
                    .into(),
            )
        })?;
        Retirement::analyze_per_neuron(&self.layers, biases, upper_bound)
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
    fn per_neuron_biases_join_the_class_key() {
        // Layer 1 (2 × 4): outputs 0, 1, 2 identical columns, 3 another. Biases: 0 and 2
        // equal, 1 not: classes {0, 2}, {1}, {3}.
        let w1 = csr(
            2,
            4,
            &[
                (0, 0, 1.0),
                (0, 1, 1.0),
                (0, 2, 1.0),
                (1, 0, 0.5),
                (1, 1, 0.5),
                (1, 2, 0.5),
                (1, 3, 2.0),
            ],
        );
        // Layer 2 (4 × 2): rows 0 and 2 merge; column 1 gets 0.25 + 0.5 there.
        let w2 = csr(
            4,
            2,
            &[
                (0, 0, 1.0),
                (0, 1, 0.25),
                (2, 1, 0.5),
                (1, 0, 3.0),
                (3, 1, 1.0),
            ],
        );
        let biases = vec![vec![-0.5, -0.75, -0.5, 0.0], vec![-1.0, -0.25]];
        let layers = [w1.clone(), w2.clone()];
        let c = compress_with_biases(&layers, &biases).unwrap();
        assert!(!c.is_identity());
        assert_eq!(c.classes(0).unwrap().class_map(), &[0, 1, 0, 2]);
        assert_eq!(
            c.biases().unwrap(),
            &[vec![-0.5, -0.75, 0.0], vec![-1.0, -0.25]]
        );
        assert_eq!(
            c.layers()[1].triplets().collect::<Vec<_>>(),
            vec![(0, 0, 1.0), (0, 1, 0.75), (1, 0, 3.0), (2, 1, 1.0)]
        );
        // Without biases (or with equal ones) outputs 0–2 are one class.
        let plain = compress(&layers).unwrap();
        assert_eq!(plain.classes(0).unwrap().class_map(), &[0, 0, 0, 1]);
        assert!(plain.biases().is_none());
        let equal = compress_with_biases(&layers, &[vec![-0.5; 4], vec![-1.0; 2]]).unwrap();
        assert_eq!(equal.layers(), plain.layers());
        assert_eq!(equal.biases().unwrap(), &[vec![-0.5; 2], vec![-1.0; 2]]);
        // The retirement takes the kind of bias the network was compressed with.
        assert!(matches!(
            c.retirement(-0.5, 1.0),
            Err(CompressError::Biases(_))
        ));
        assert!(matches!(
            plain.retirement_per_neuron(1.0),
            Err(CompressError::Biases(_))
        ));
        let r = c.retirement_per_neuron(1.0).unwrap();
        assert_eq!(r.layers().len(), 2);
        assert_eq!(r.bias(), None);
        // By value: the layers and the biases.
        let (small, kept) = c.into_parts();
        assert_eq!(small.len(), 2);
        assert_eq!(kept.unwrap()[0], vec![-0.5, -0.75, 0.0]);
        // Streamed through the compressor: the same.
        let mut compressor = Compressor::new();
        let (l1, b1) = compressor.push_with_biases(&w1, &biases[0]).unwrap();
        let (l2, b2) = compressor.push_with_biases(&w2, &biases[1]).unwrap();
        assert_eq!((l1.ncols(), b1), (3, vec![-0.5, -0.75, 0.0]));
        assert_eq!((l2.nrows(), b2), (3, vec![-1.0, -0.25]));
    }

    #[test]
    fn bad_per_neuron_biases_are_errors() {
        let w = csr(2, 2, &[(0, 0, 1.0)]);
        let layers = [w.clone(), w.clone()];
        let message = |r: Result<Compressed, CompressError>| match r {
            Err(CompressError::Biases(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = message(compress_with_biases(&layers, &[vec![0.0; 2]]));
        assert!(m.contains("1 bias vectors for 2 layers"), "{m}");
        let m = message(compress_with_biases(&layers, &[vec![0.0; 2], vec![0.0]]));
        assert!(m.contains("layer 2 has 2 outputs but 1 biases"), "{m}");
        let m = message(compress_with_biases(
            &layers,
            &[vec![f32::INFINITY, 0.0], vec![0.0; 2]],
        ));
        assert!(m.contains("neuron 1 of layer 1"), "{m}");
        let mut compressor = Compressor::new();
        assert!(compressor.push_with_biases(&w, &[0.0; 3]).is_err());
        assert_eq!(compressor.layers(), 0);
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
