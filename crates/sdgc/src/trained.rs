//! Trained networks: `.safetensors` files and bias files.
//!
//! # The `.safetensors` naming convention
//!
//! Every weight tensor is oriented as `torch.nn.Linear` stores it, `[out, in]` (row =
//! output neuron); on import it becomes the project's `in × out` CSR (row = input neuron).
//! Layers are numbered from 0, without gaps. Layer `i` is one of
//!
//! - **dense**: `layers.{i}.weight` `[out, in]`, with an optional `layers.{i}.mask` of the
//!   same shape: exactly the entries whose mask is nonzero are stored (a stored weight may
//!   be 0: it still makes its output structurally nonzero); without a mask every entry is
//!   stored (a dense layer);
//! - **CSR** (as `weight.to_sparse_csr()` gives it): `layers.{i}.crow_indices` `[out + 1]`,
//!   `layers.{i}.col_indices` `[nnz]` (input neurons, ascending within a row),
//!   `layers.{i}.values` `[nnz]` and `layers.{i}.shape` `[2]` = `[out, in]`;
//!
//! plus an optional `layers.{i}.bias` `[out]` (absent: 0) and an optional scalar (shape `[]`
//! or `[1]`) `upper_bound`. Values are `F32` or `F64` (finite, and within f32's range),
//! indices `I32`, `I64`, `U32` or `U64`, masks `BOOL`, `U8` or `F32`. Any other tensor name
//! is an error, so a misspelt name is never silently skipped.
//!
//! # Bias files
//!
//! Beside an official TSV network, `layer<TAB>neuron<TAB>bias` lines (1-based), one for
//! every output neuron of every layer ([`read_biases`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use spdnn_formats::{Csr, SparseMatrix};

use crate::limits::{MAX_LAYERS, MAX_NEURONS};
use crate::{Network, SdgcError};

/// A network read from a file, with the upper bound the file names (if any).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainedNetwork {
    /// The layers with their per-neuron biases.
    pub network: Network,
    /// The file's `upper_bound`, when it has one.
    pub upper_bound: Option<f32>,
}

/// Reads a `.safetensors` network (see the module docs for the names).
pub fn read_safetensors(path: &Path) -> Result<TrainedNetwork, SdgcError> {
    let bytes = std::fs::read(path).map_err(|e| SdgcError::io(path, e))?;
    parse_safetensors(&bytes, path)
}

/// The tensors of one layer, by the part of their name after `layers.{i}.`.
type LayerTensors<'a> = BTreeMap<&'a str, TensorView<'a>>;

/// Parses the bytes of a `.safetensors` network; `path` only names the file in errors.
pub fn parse_safetensors(bytes: &[u8], path: &Path) -> Result<TrainedNetwork, SdgcError> {
    let file = SafeTensors::deserialize(bytes)
        .map_err(|e| SdgcError::invalid(path, format!("not a valid safetensors file: {e}")))?;
    let mut layers: BTreeMap<usize, LayerTensors<'_>> = BTreeMap::new();
    let mut upper_bound = None;
    for (name, view) in file.iter() {
        if name == "upper_bound" {
            upper_bound = Some(scalar(path, name, &view)?);
            continue;
        }
        let (index, part) = layer_name(name).ok_or_else(|| {
            SdgcError::invalid(
                path,
                format!(
                    "unexpected tensor `{name}`: the names are layers.{{i}}.weight, .mask, .bias, \
                     .crow_indices, .col_indices, .values, .shape and upper_bound"
                ),
            )
        })?;
        if index >= MAX_LAYERS {
            return Err(SdgcError::invalid(
                path,
                format!("tensor `{name}`: layer {index} is beyond the limit of {MAX_LAYERS}"),
            ));
        }
        layers.entry(index).or_default().insert(part, view);
    }
    if layers.is_empty() {
        return Err(SdgcError::invalid(
            path,
            "the file holds no layers.{i}.* tensors",
        ));
    }
    let mut csrs = Vec::with_capacity(layers.len());
    let mut biases = Vec::with_capacity(layers.len());
    for (expected, (&index, tensors)) in layers.iter().enumerate() {
        if index != expected {
            return Err(SdgcError::invalid(
                path,
                format!("layer {expected} is missing (layers are numbered from 0 without gaps)"),
            ));
        }
        let layer = read_layer(path, index, tensors)?;
        let bias = match tensors.get("bias") {
            Some(view) => {
                let name = format!("layers.{index}.bias");
                check_shape(path, &name, view, &[layer.ncols()])?;
                floats(path, &name, view)?
            }
            None => vec![0.0; layer.ncols()],
        };
        csrs.push(layer);
        biases.push(bias);
    }
    let network = Network::chain(csrs)
        .and_then(|n| n.with_biases(biases))
        .map_err(|e| SdgcError::invalid(path, e.to_string()))?;
    if let Some(u) = upper_bound
        && !(u.is_finite() && u > 0.0)
    {
        return Err(SdgcError::invalid(
            path,
            format!("upper_bound is {u}; it must be positive and finite"),
        ));
    }
    Ok(TrainedNetwork {
        network,
        upper_bound,
    })
}

/// `layers.{i}.{part}` → `(i, part)`.
fn layer_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("layers.")?;
    let (index, part) = rest.split_once('.')?;
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) || index.len() > 9 {
        return None;
    }
    const PARTS: [&str; 7] = [
        "weight",
        "mask",
        "bias",
        "crow_indices",
        "col_indices",
        "values",
        "shape",
    ];
    if !PARTS.contains(&part) {
        return None;
    }
    Some((index.parse().ok()?, part))
}

/// One layer as the project's `in × out` CSR, from its dense or CSR tensors.
fn read_layer(path: &Path, index: usize, t: &LayerTensors<'_>) -> Result<Csr, SdgcError> {
    let name = |part: &str| format!("layers.{index}.{part}");
    let dense = t.contains_key("weight");
    let csr_parts = ["crow_indices", "col_indices", "values", "shape"];
    let has_csr = csr_parts.iter().any(|p| t.contains_key(p));
    if dense && has_csr {
        return Err(SdgcError::invalid(
            path,
            format!("layer {index} has both a dense weight and CSR tensors"),
        ));
    }
    if dense {
        let weight = &t["weight"];
        let [out, inputs] = *weight.shape() else {
            return Err(SdgcError::invalid(
                path,
                format!(
                    "{} has shape {:?}, expected [out, in]",
                    name("weight"),
                    weight.shape()
                ),
            ));
        };
        check_width(path, &name("weight"), out, inputs)?;
        let values = floats(path, &name("weight"), weight)?;
        let mask = match t.get("mask") {
            Some(view) => {
                check_shape(path, &name("mask"), view, &[out, inputs])?;
                Some(mask(path, &name("mask"), view)?)
            }
            None => None,
        };
        let kept = |e: usize| mask.as_ref().is_none_or(|m| m[e]);
        let nnz = (0..values.len()).filter(|&e| kept(e)).count();
        if u32::try_from(nnz).is_err() {
            return Err(SdgcError::invalid(
                path,
                format!("{} has more than 2^32 - 1 entries", name("weight")),
            ));
        }
        // Row j of the result (input j) gathers column j of `weight`, outputs ascending.
        let mut offsets = Vec::with_capacity(inputs + 1);
        let mut cols = Vec::with_capacity(nnz);
        let mut vals = Vec::with_capacity(nnz);
        offsets.push(0u32);
        for j in 0..inputs {
            for k in 0..out {
                let e = k * inputs + j;
                if kept(e) {
                    cols.push(k as u32);
                    vals.push(values[e]);
                }
            }
            offsets.push(cols.len() as u32);
        }
        return Csr::from_parts(inputs, out, offsets, cols, vals).map_err(|cause| {
            SdgcError::Matrix {
                path: path.to_path_buf(),
                cause,
            }
        });
    }
    if t.contains_key("mask") {
        return Err(SdgcError::invalid(
            path,
            format!("{} comes without {}", name("mask"), name("weight")),
        ));
    }
    for part in csr_parts {
        if !t.contains_key(part) {
            return Err(SdgcError::invalid(
                path,
                format!(
                    "layer {index} has neither {} nor {} (with .col_indices, .values, .shape)",
                    name("weight"),
                    name(part)
                ),
            ));
        }
    }
    let shape = integers(path, &name("shape"), &t["shape"])?;
    let [out, inputs] = shape[..] else {
        return Err(SdgcError::invalid(
            path,
            format!("{} must hold two numbers, [out, in]", name("shape")),
        ));
    };
    check_width(path, &name("shape"), out, inputs)?;
    let crow = integers(path, &name("crow_indices"), &t["crow_indices"])?;
    let columns = integers(path, &name("col_indices"), &t["col_indices"])?;
    let values = floats(path, &name("values"), &t["values"])?;
    check_shape(path, &name("crow_indices"), &t["crow_indices"], &[out + 1])?;
    let nnz = values.len();
    check_shape(path, &name("col_indices"), &t["col_indices"], &[nnz])?;
    if u32::try_from(nnz).is_err() {
        return Err(SdgcError::invalid(
            path,
            format!("{} has more than 2^32 - 1 entries", name("values")),
        ));
    }
    let to_u32 = |what: &str, v: Vec<usize>, limit: usize| -> Result<Vec<u32>, SdgcError> {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| {
                if x <= limit {
                    Ok(x as u32)
                } else {
                    Err(SdgcError::invalid(
                        path,
                        format!(
                            "{}[{i}] = {x} is out of range (at most {limit})",
                            name(what)
                        ),
                    ))
                }
            })
            .collect()
    };
    let crow = to_u32("crow_indices", crow, nnz)?;
    let columns = to_u32("col_indices", columns, inputs.saturating_sub(1))?;
    // `[out, in]` with rows = outputs, then transposed to rows = inputs.
    let by_output =
        Csr::from_parts(out, inputs, crow, columns, values).map_err(|cause| SdgcError::Matrix {
            path: path.to_path_buf(),
            cause,
        })?;
    Ok(by_output.transpose())
}

fn check_width(path: &Path, name: &str, out: usize, inputs: usize) -> Result<(), SdgcError> {
    if out == 0 || inputs == 0 || out > MAX_NEURONS || inputs > MAX_NEURONS {
        return Err(SdgcError::invalid(
            path,
            format!("{name}: [out, in] = [{out}, {inputs}]; each must be 1 to {MAX_NEURONS}"),
        ));
    }
    Ok(())
}

fn check_shape(
    path: &Path,
    name: &str,
    view: &TensorView<'_>,
    expected: &[usize],
) -> Result<(), SdgcError> {
    if view.shape() != expected {
        return Err(SdgcError::invalid(
            path,
            format!("{name} has shape {:?}, expected {expected:?}", view.shape()),
        ));
    }
    Ok(())
}

/// The values of a float tensor as f32 (finite, within f32's range).
fn floats(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<f32>, SdgcError> {
    let data = view.data();
    let values: Vec<f64> = match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
        other => {
            return Err(SdgcError::invalid(
                path,
                format!("{name} is {other:?}; values must be F32 or F64"),
            ));
        }
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let f = v as f32;
            if f.is_finite() {
                Ok(f)
            } else {
                Err(SdgcError::invalid(
                    path,
                    format!("{name}[{i}] = {v} is not a finite f32"),
                ))
            }
        })
        .collect()
}

/// The values of an integer tensor (non-negative).
fn integers(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<usize>, SdgcError> {
    let data = view.data();
    let values: Vec<i128> = match view.dtype() {
        Dtype::I32 => data
            .chunks_exact(4)
            .map(|c| i128::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        Dtype::U32 => data
            .chunks_exact(4)
            .map(|c| i128::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        Dtype::I64 => data
            .chunks_exact(8)
            .map(|c| i128::from(i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
            .collect(),
        Dtype::U64 => data
            .chunks_exact(8)
            .map(|c| i128::from(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
            .collect(),
        other => {
            return Err(SdgcError::invalid(
                path,
                format!("{name} is {other:?}; indices must be I32, I64, U32 or U64"),
            ));
        }
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            usize::try_from(v).map_err(|_| {
                SdgcError::invalid(path, format!("{name}[{i}] = {v} is not a valid index"))
            })
        })
        .collect()
}

/// A mask's entries as booleans (nonzero = kept).
fn mask(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<bool>, SdgcError> {
    match view.dtype() {
        Dtype::BOOL | Dtype::U8 => Ok(view.data().iter().map(|&b| b != 0).collect()),
        Dtype::F32 => Ok(floats(path, name, view)?
            .into_iter()
            .map(|v| v != 0.0)
            .collect()),
        other => Err(SdgcError::invalid(
            path,
            format!("{name} is {other:?}; masks must be BOOL, U8 or F32"),
        )),
    }
}

/// A one-value float tensor (shape `[]` or `[1]`).
fn scalar(path: &Path, name: &str, view: &TensorView<'_>) -> Result<f32, SdgcError> {
    if !(view.shape().is_empty() || view.shape() == [1]) {
        return Err(SdgcError::invalid(
            path,
            format!("{name} has shape {:?}, expected [] or [1]", view.shape()),
        ));
    }
    floats(path, name, view)?
        .first()
        .copied()
        .ok_or_else(|| SdgcError::invalid(path, format!("{name} holds no value")))
}

/// A tensor's bytes and description, owned, for the writer.
struct Owned {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl Owned {
    fn f32s(shape: Vec<usize>, values: impl IntoIterator<Item = f32>) -> Self {
        Self {
            dtype: Dtype::F32,
            shape,
            data: values.into_iter().flat_map(f32::to_le_bytes).collect(),
        }
    }

    fn i64s(values: impl IntoIterator<Item = i64>) -> Self {
        let data: Vec<u8> = values.into_iter().flat_map(i64::to_le_bytes).collect();
        Self {
            dtype: Dtype::I64,
            shape: vec![data.len() / 8],
            data,
        }
    }
}

/// The `.safetensors` bytes of `network` (with its biases, if any) and `upper_bound`: a
/// layer whose every entry is stored as a dense `weight`, any other in CSR form, so that
/// reading gives back the same network.
pub fn to_safetensors(network: &Network, upper_bound: Option<f32>) -> Result<Vec<u8>, SdgcError> {
    let mut tensors: HashMap<String, Owned> = HashMap::new();
    for (i, w) in network.layers().iter().enumerate() {
        let (inputs, out) = (w.nrows(), w.ncols());
        let by_output = w.transpose();
        if w.nnz() == inputs * out {
            tensors.insert(
                format!("layers.{i}.weight"),
                Owned::f32s(vec![out, inputs], by_output.values().iter().copied()),
            );
        } else {
            tensors.insert(
                format!("layers.{i}.crow_indices"),
                Owned::i64s(by_output.row_offsets().iter().map(|&v| i64::from(v))),
            );
            tensors.insert(
                format!("layers.{i}.col_indices"),
                Owned::i64s(by_output.col_indices().iter().map(|&v| i64::from(v))),
            );
            tensors.insert(
                format!("layers.{i}.values"),
                Owned::f32s(vec![w.nnz()], by_output.values().iter().copied()),
            );
            tensors.insert(
                format!("layers.{i}.shape"),
                Owned::i64s([out as i64, inputs as i64]),
            );
        }
        if let Some(biases) = network.biases() {
            tensors.insert(
                format!("layers.{i}.bias"),
                Owned::f32s(vec![out], biases[i].iter().copied()),
            );
        }
    }
    if let Some(u) = upper_bound {
        tensors.insert("upper_bound".into(), Owned::f32s(vec![], [u]));
    }
    let views = tensors
        .iter()
        .map(|(name, t)| {
            TensorView::new(t.dtype, t.shape.clone(), &t.data).map(|v| (name.clone(), v))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SdgcError::Parameter(format!("safetensors: {e}")))?;
    safetensors::serialize(views, None)
        .map_err(|e| SdgcError::Parameter(format!("safetensors: {e}")))
}

/// Writes `network` and `upper_bound` as a `.safetensors` file ([`to_safetensors`]).
pub fn write_safetensors(
    path: &Path,
    network: &Network,
    upper_bound: Option<f32>,
) -> Result<(), SdgcError> {
    let bytes = to_safetensors(network, upper_bound)?;
    std::fs::write(path, bytes).map_err(|e| SdgcError::io(path, e))
}

/// Reads a bias file for layers of output widths `widths` (see [`parse_biases`]).
pub fn read_biases(path: &Path, widths: &[usize]) -> Result<Vec<Vec<f32>>, SdgcError> {
    let bytes = std::fs::read(path).map_err(|e| SdgcError::io(path, e))?;
    parse_biases(&bytes, widths, path)
}

/// Parses `layer<TAB>neuron<TAB>bias` lines (1-based layer and output neuron, a finite
/// bias), exactly one for each of the `widths[l]` outputs of every layer `l`. Errors name
/// the file and line (a duplicate names its first line too), or the first missing neuron.
pub fn parse_biases(
    bytes: &[u8],
    widths: &[usize],
    path: &Path,
) -> Result<Vec<Vec<f32>>, SdgcError> {
    let mut biases: Vec<Vec<f32>> = widths.iter().map(|&w| vec![f32::NAN; w]).collect();
    let mut seen: Vec<Vec<u64>> = widths.iter().map(|&w| vec![0; w]).collect();
    let parse_error = |line: u64, message: String| SdgcError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = n as u64 + 1;
        let text = std::str::from_utf8(raw)
            .map_err(|_| parse_error(line, "not UTF-8 text".into()))?
            .trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split('\t').collect();
        let [layer, neuron, value] = fields[..] else {
            return Err(parse_error(
                line,
                format!(
                    "expected layer<TAB>neuron<TAB>bias, found {} fields",
                    fields.len()
                ),
            ));
        };
        let index = |what: &str, field: &str, count: usize| -> Result<usize, SdgcError> {
            match field.trim().parse::<usize>() {
                Ok(v) if v >= 1 && v <= count => Ok(v - 1),
                _ => Err(parse_error(
                    line,
                    format!("{what} `{field}` is not a number from 1 to {count}"),
                )),
            }
        };
        let l = index("layer", layer, widths.len())?;
        let k = index("neuron", neuron, widths[l])?;
        let v: f32 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite())
            .ok_or_else(|| parse_error(line, format!("bias `{value}` is not a finite number")))?;
        if seen[l][k] != 0 {
            return Err(parse_error(
                line,
                format!(
                    "layer {} neuron {} was given already on line {}",
                    l + 1,
                    k + 1,
                    seen[l][k]
                ),
            ));
        }
        seen[l][k] = line;
        biases[l][k] = v;
    }
    for (l, layer) in seen.iter().enumerate() {
        if let Some(k) = layer.iter().position(|&s| s == 0) {
            return Err(SdgcError::invalid(
                path,
                format!("layer {} neuron {} has no bias", l + 1, k + 1),
            ));
        }
    }
    Ok(biases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(rows: usize, cols: usize, triplets: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, triplets).unwrap()
    }

    fn net() -> Network {
        let dense: Vec<(u32, u32, f32)> = (0..3)
            .flat_map(|r| (0..2).map(move |c| (r, c, (r * 2 + c) as f32 - 2.5)))
            .collect();
        Network::chain(vec![
            layer(3, 2, &dense),
            layer(2, 4, &[(0, 1, 0.5), (1, 3, 0.0), (1, 0, -1.0)]),
        ])
        .unwrap()
        .with_biases(vec![vec![0.25, -0.5], vec![1.0, -2.0, 0.0, 3.5]])
        .unwrap()
    }

    #[test]
    fn a_network_round_trips_through_safetensors() {
        let network = net();
        let bytes = to_safetensors(&network, Some(1.0)).unwrap();
        let back = parse_safetensors(&bytes, Path::new("m.safetensors")).unwrap();
        assert_eq!(back.network, network);
        assert_eq!(back.upper_bound, Some(1.0));
        // Layer 0 is dense, layer 1 sparse with a stored zero.
        let file = SafeTensors::deserialize(&bytes).unwrap();
        let mut names = file.names();
        names.sort();
        assert!(names.contains(&"layers.0.weight"));
        assert!(names.contains(&"layers.1.crow_indices"));
    }

    fn file(tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>) -> Vec<u8> {
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .map(|(n, d, s, b)| (n.to_string(), TensorView::new(*d, s.clone(), b).unwrap()))
            .collect();
        safetensors::serialize(views, None).unwrap()
    }

    fn f32b(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_dense_weight_with_a_mask_keeps_the_masked_entries() {
        // weight [out = 2, in = 3]; mask drops (0, 1) and keeps a zero weight at (1, 2).
        let bytes = file(vec![
            (
                "layers.0.weight",
                Dtype::F32,
                vec![2, 3],
                f32b(&[1.0, 2.0, 3.0, 4.0, 5.0, 0.0]),
            ),
            (
                "layers.0.mask",
                Dtype::U8,
                vec![2, 3],
                vec![1, 0, 1, 1, 1, 1],
            ),
            ("layers.0.bias", Dtype::F32, vec![2], f32b(&[-0.5, 0.5])),
        ]);
        let t = parse_safetensors(&bytes, Path::new("x")).unwrap();
        let w = &t.network.layers()[0];
        assert_eq!((w.nrows(), w.ncols(), w.nnz()), (3, 2, 5));
        let entries: Vec<_> = w.triplets().collect();
        assert_eq!(
            entries,
            vec![
                (0, 0, 1.0),
                (0, 1, 4.0),
                (1, 1, 5.0),
                (2, 0, 3.0),
                (2, 1, 0.0)
            ]
        );
        assert_eq!(t.network.biases().unwrap()[0], vec![-0.5, 0.5]);
        assert_eq!(t.upper_bound, None);
    }

    fn err(tensors: Vec<(&str, Dtype, Vec<usize>, Vec<u8>)>) -> String {
        parse_safetensors(&file(tensors), Path::new("bad.safetensors"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let w = || ("layers.0.weight", Dtype::F32, vec![1, 1], f32b(&[1.0]));
        let cases = [
            (
                vec![
                    w(),
                    ("layer.1.weight", Dtype::F32, vec![1, 1], f32b(&[1.0])),
                ],
                "unexpected tensor `layer.1.weight`",
            ),
            (
                vec![
                    w(),
                    ("layers.2.weight", Dtype::F32, vec![1, 1], f32b(&[1.0])),
                ],
                "layer 1 is missing",
            ),
            (
                vec![("layers.0.weight", Dtype::F32, vec![1, 1], f32b(&[f32::NAN]))],
                "not a finite",
            ),
            (
                vec![("layers.0.weight", Dtype::I32, vec![1, 1], vec![0; 4])],
                "must be F32 or F64",
            ),
            (
                vec![
                    w(),
                    ("layers.0.bias", Dtype::F32, vec![2], f32b(&[1.0, 2.0])),
                ],
                "expected [1]",
            ),
            (
                vec![w(), ("upper_bound", Dtype::F32, vec![], f32b(&[-1.0]))],
                "positive",
            ),
            (
                vec![("layers.0.values", Dtype::F32, vec![1], f32b(&[1.0]))],
                "has neither",
            ),
            (
                vec![
                    w(),
                    ("layers.1.weight", Dtype::F32, vec![1, 2], f32b(&[1.0, 1.0])),
                ],
                "rows",
            ),
            (
                vec![w(), ("layers.0.shape", Dtype::I64, vec![2], vec![0; 16])],
                "both",
            ),
            (
                vec![("upper_bound", Dtype::F32, vec![], f32b(&[1.0]))],
                "no layers",
            ),
            (
                vec![
                    (
                        "layers.0.crow_indices",
                        Dtype::I64,
                        vec![2],
                        [0i64, 1].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                    (
                        "layers.0.col_indices",
                        Dtype::I64,
                        vec![1],
                        5i64.to_le_bytes().to_vec(),
                    ),
                    ("layers.0.values", Dtype::F32, vec![1], f32b(&[1.0])),
                    (
                        "layers.0.shape",
                        Dtype::I64,
                        vec![2],
                        [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                ],
                "out of range",
            ),
            (
                vec![
                    (
                        "layers.0.crow_indices",
                        Dtype::I64,
                        vec![2],
                        [0i64, -1].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                    ("layers.0.col_indices", Dtype::I64, vec![0], vec![]),
                    ("layers.0.values", Dtype::F32, vec![0], vec![]),
                    (
                        "layers.0.shape",
                        Dtype::I64,
                        vec![2],
                        [1i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                ],
                "not a valid index",
            ),
        ];
        for (tensors, expected) in cases {
            let message = err(tensors);
            assert!(
                message.contains(expected),
                "{message} (expected `{expected}`)"
            );
            assert!(message.contains("bad.safetensors"), "{message}");
        }
        let message = parse_safetensors(b"garbage", Path::new("g"))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("not a valid safetensors file"),
            "{message}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any damage to a valid file is an error or a valid network, never a panic.
        #[test]
        fn damaged_files_never_panic(
            cut in 0usize..64,
            flips in proptest::collection::vec((0usize..2000, proptest::prelude::any::<u8>()), 0..6),
        ) {
            let mut bytes = to_safetensors(&net(), Some(1.0)).unwrap();
            for (at, value) in flips {
                let len = bytes.len();
                bytes[at % len] = value;
            }
            bytes.truncate(bytes.len().saturating_sub(cut));
            let _ = parse_safetensors(&bytes, Path::new("fuzz"));
        }
    }

    #[test]
    fn bias_files_are_checked() {
        let widths = [2, 1];
        let good = b"1\t1\t-0.5\n1\t2\t0.25\r\n\n2\t1\t3\n";
        assert_eq!(
            parse_biases(good, &widths, Path::new("b.tsv")).unwrap(),
            vec![vec![-0.5, 0.25], vec![3.0]]
        );
        let cases: [(&[u8], &str); 6] = [
            (b"1\t1\t-0.5\n1\t2\t0.25\n", "layer 2 neuron 1 has no bias"),
            (
                b"1\t1\t-0.5\n1\t1\t1\n",
                "b.tsv:2: layer 1 neuron 1 was given already on line 1",
            ),
            (b"3\t1\t0\n", "b.tsv:1: layer `3`"),
            (b"1\t3\t0\n", "b.tsv:1: neuron `3`"),
            (b"1\t1\tnan\n", "not a finite number"),
            (b"1 1 0\n", "found 1 fields"),
        ];
        for (text, expected) in cases {
            let message = parse_biases(text, &widths, Path::new("b.tsv"))
                .unwrap_err()
                .to_string();
            assert!(
                message.contains(expected),
                "{message} (expected `{expected}`)"
            );
        }
    }
}
