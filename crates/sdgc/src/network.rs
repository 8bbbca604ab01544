use spdnn_formats::{Csr, SparseMatrix};

use crate::SdgcError;

/// A sparse DNN: `layers[l]` is `N × N` (the challenge's networks, [`Network::new`]) or
/// `N_{l-1} × N_l` (a compressed or a general network, [`Network::chain`]); row = input
/// neuron, column = output neuron. A trained network also carries a bias per output neuron
/// of every layer ([`Network::with_biases`]); the challenge's networks carry none (their
/// one bias comes with the benchmark).
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    neurons: usize,
    layers: Vec<Csr>,
    biases: Option<Vec<Vec<f32>>>,
}

impl Network {
    /// Checks that every layer is `neurons × neurons` and that there is at least one layer.
    pub fn new(neurons: usize, layers: Vec<Csr>) -> Result<Self, SdgcError> {
        if neurons == 0 {
            return Err(SdgcError::Parameter(
                "a network needs at least one neuron".into(),
            ));
        }
        if layers.is_empty() {
            return Err(SdgcError::Parameter(
                "a network needs at least one layer".into(),
            ));
        }
        for (l, layer) in layers.iter().enumerate() {
            if layer.nrows() != neurons || layer.ncols() != neurons {
                return Err(SdgcError::Parameter(format!(
                    "layer {} is {}x{}, expected {neurons}x{neurons}",
                    l + 1,
                    layer.nrows(),
                    layer.ncols()
                )));
            }
        }
        Ok(Self {
            neurons,
            layers,
            biases: None,
        })
    }

    /// A network of layers of any widths that chain (`layers[l]` has as many rows as
    /// `layers[l-1]` has columns), with at least one layer and one input neuron.
    pub fn chain(layers: Vec<Csr>) -> Result<Self, SdgcError> {
        let Some(first) = layers.first() else {
            return Err(SdgcError::Parameter(
                "a network needs at least one layer".into(),
            ));
        };
        let neurons = first.nrows();
        if neurons == 0 {
            return Err(SdgcError::Parameter(
                "a network needs at least one neuron".into(),
            ));
        }
        for (l, pair) in layers.windows(2).enumerate() {
            if pair[1].nrows() != pair[0].ncols() {
                return Err(SdgcError::Parameter(format!(
                    "layer {} has {} rows, layer {} has {} columns",
                    l + 2,
                    pair[1].nrows(),
                    l + 1,
                    pair[0].ncols()
                )));
            }
        }
        Ok(Self {
            neurons,
            layers,
            biases: None,
        })
    }

    /// The network with a bias per output neuron of every layer: `biases[l]` has one finite
    /// value per column of `layers[l]`. Errors name the layer whose biases do not fit.
    pub fn with_biases(mut self, biases: Vec<Vec<f32>>) -> Result<Self, SdgcError> {
        if biases.len() != self.layers.len() {
            return Err(SdgcError::Parameter(format!(
                "{} bias vectors for {} layers",
                biases.len(),
                self.layers.len()
            )));
        }
        for (l, (b, w)) in biases.iter().zip(&self.layers).enumerate() {
            if b.len() != w.ncols() {
                return Err(SdgcError::Parameter(format!(
                    "layer {} has {} outputs but {} biases",
                    l + 1,
                    w.ncols(),
                    b.len()
                )));
            }
            if let Some(k) = b.iter().position(|v| !v.is_finite()) {
                return Err(SdgcError::Parameter(format!(
                    "the bias of neuron {} of layer {} is {}, not finite",
                    k + 1,
                    l + 1,
                    b[k]
                )));
            }
        }
        self.biases = Some(biases);
        Ok(self)
    }

    /// The bias of every output neuron of every layer (`None`: the benchmark's one bias).
    pub fn biases(&self) -> Option<&[Vec<f32>]> {
        self.biases.as_deref()
    }

    /// N, the number of neurons per layer (the input width of a [`Network::chain`]).
    pub fn neurons(&self) -> usize {
        self.neurons
    }

    /// Whether every layer is `N × N`.
    pub fn is_square(&self) -> bool {
        self.layers
            .iter()
            .all(|w| w.nrows() == self.neurons && w.ncols() == self.neurons)
    }

    /// The weight matrices, first layer first.
    pub fn layers(&self) -> &[Csr] {
        &self.layers
    }

    /// L, the number of layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// Total stored weights over all layers.
    pub fn nnz(&self) -> usize {
        self.layers.iter().map(SparseMatrix::nnz).sum()
    }

    /// The first `layers` layers (an official L = 120 benchmark is the first 120 of 1920).
    pub fn truncated(mut self, layers: usize) -> Result<Self, SdgcError> {
        if layers == 0 || layers > self.layers.len() {
            return Err(SdgcError::Parameter(format!(
                "cannot take {layers} layers of a {}-layer network",
                self.layers.len()
            )));
        }
        self.layers.truncate(layers);
        if let Some(biases) = self.biases.as_mut() {
            biases.truncate(layers);
        }
        Ok(self)
    }
}

/// Where an input came from; `Synthetic` must be shown wherever results are printed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputOrigin {
    /// The official `sparse-images-{N}.tsv` (or a cache of it).
    File { path: String },
    /// MNIST training images through the recovered official recipe.
    Mnist,
    /// Seeded random binary images of about 10% density (no MNIST at hand).
    Synthetic { seed: u64 },
}

impl InputOrigin {
    /// A short label for tables: `file`, `mnist` or `synthetic(seed)`.
    pub fn label(&self) -> String {
        match self {
            Self::File { .. } => "file".into(),
            Self::Mnist => "mnist".into(),
            Self::Synthetic { seed } => format!("synthetic(seed {seed})"),
        }
    }
}

/// The input feature vectors: `features` is `rows × N` (row = image), values usually 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The sparse rows.
    pub features: Csr,
    /// Where they came from.
    pub origin: InputOrigin,
}

impl Input {
    /// Number of rows (images).
    pub fn rows(&self) -> usize {
        self.features.nrows()
    }

    /// The first `rows` rows (or all, when there are fewer).
    pub fn head(&self, rows: usize) -> Input {
        if rows >= self.rows() {
            return self.clone();
        }
        let end = self.features.row_offsets()[rows] as usize;
        let features = Csr::from_parts(
            rows,
            self.features.ncols(),
            self.features.row_offsets()[..=rows].to_vec(),
            self.features.col_indices()[..end].to_vec(),
            self.features.values()[..end].to_vec(),
        )
        .expect("a prefix of valid rows is valid");
        Input {
            features,
            origin: self.origin.clone(),
        }
    }
}
