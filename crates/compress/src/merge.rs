//! One layer's compression: rows merged by the previous classes, columns proposed into
//! classes by a signature, the proposal verified entry by entry, the representatives kept.
//!
//! Everything runs row-major over the merged rows (no transposition, no per-column sort):
//! a column's signature is its entry count and a wrapping sum of one hash per
//! `(merged row, value bits)` entry, so identical columns always get equal signatures.
//! A class proposed by equal signatures is then checked exactly: for every entry
//! `(C, j, v)` the representative `r` of `j`'s class must store `(C, r, v)` bit for bit;
//! with equal entry counts that makes the columns identical. Should a proposal fail (a
//! hash collision), the classes are found again by comparing transposed columns.
//!
//! A layer with a bias per output (a trained network) adds the bias to the class key: two
//! outputs are one class only when their columns are identical *and* their biases are
//! equal bit for bit. The proposal keys on the exact bias bits (no hash), and the exact
//! fallback compares them too, so a class never holds two biases.

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};

use crate::classes::{Columns, group};
use crate::{Classes, CompressError};

/// The default entry hash: the splitmix64 finaliser of `row · 2^32 + bits`.
pub(crate) fn entry_hash(row: u32, bits: u32) -> u64 {
    let mut z = (u64::from(row) << 32 | u64::from(bits)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The layer with its rows merged, in the parts the rayon tasks built (rows
/// `k·per_part..` in part `k`); a row's columns are in no particular order.
struct Merged {
    width: usize,
    rows: usize,
    per_part: usize,
    parts: Vec<Part>,
}

impl Merged {
    fn row(&self, row: usize) -> (&[u32], &[f32]) {
        let part = &self.parts[row / self.per_part];
        let local = row % self.per_part;
        let range = part.offsets[local] as usize..part.offsets[local + 1] as usize;
        (&part.cols[range.clone()], &part.vals[range])
    }

    fn nnz(&self) -> usize {
        self.parts.iter().map(|p| p.cols.len()).sum()
    }
}

/// One rayon task's share of the merge: its rows (local offsets) and signature sums.
struct Part {
    offsets: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f32>,
    /// Per column: the wrapping sum of the entry hashes, and the entry count.
    signatures: Vec<(u64, u32)>,
}

/// The result of compressing one layer.
pub(crate) struct LayerResult {
    /// The compressed layer (`previous classes × classes`).
    pub layer: Csr,
    /// The classes of the layer's outputs.
    pub classes: Classes,
    /// The bias of each class (its members' common bias), when the layer has a bias per
    /// output.
    pub biases: Option<Vec<f32>>,
    /// Whether a proposal failed and the exact fallback decided.
    pub fell_back: bool,
}

/// Compresses `layer` given the classes of its input rows (`None`: layer 1, never merged)
/// and, when it has them, the biases of its outputs (`biases[j]` for output `j`, one per
/// column): outputs with different biases never share a class.
pub(crate) fn compress_layer(
    layer: &Csr,
    previous: Option<&Classes>,
    biases: Option<&[f32]>,
    hash: impl Fn(u32, u32) -> u64 + Sync,
) -> Result<LayerResult, CompressError> {
    debug_assert!(biases.is_none_or(|b| b.len() == layer.ncols()));
    let (merged, signatures) = merge(layer, previous, hash);
    let proposed = propose(&signatures, biases);
    let (classes, fell_back) = if verify(&merged, &proposed) {
        (proposed, false)
    } else {
        (exact_classes(&merged, &signatures, biases), true)
    };
    let layer = keep(&merged, &classes)?;
    let biases = biases.map(|b| {
        (0..classes.len())
            .map(|c| {
                let r = classes.representative(c).expect("a class has members");
                b[r as usize]
            })
            .collect()
    });
    Ok(LayerResult {
        layer,
        classes,
        biases,
        fell_back,
    })
}

/// Merges the rows of `layer` by `previous` (row `C` = the f32 sums of its members' rows,
/// members added in ascending order, the first taken as is) and sums the column
/// signatures.
fn merge(
    layer: &Csr,
    previous: Option<&Classes>,
    hash: impl Fn(u32, u32) -> u64 + Sync,
) -> (Merged, Vec<(u64, u32)>) {
    let width = layer.ncols();
    let rows = previous.map_or(layer.nrows(), Classes::len);
    let tasks = (2 * rayon::current_num_threads()).clamp(1, rows.max(1));
    let per_task = rows.div_ceil(tasks).max(1);
    let parts: Vec<Part> = (0..tasks)
        .into_par_iter()
        .map(|task| {
            let own = task * per_task..((task + 1) * per_task).min(rows);
            // At most the members' entries: reserve them (growing costs copies and faults).
            let bound: usize = match previous {
                None => own.clone().map(|r| layer.row(r).0.len()).sum(),
                Some(classes) => own
                    .clone()
                    .flat_map(|c| classes.members(c).unwrap_or(&[]))
                    .map(|&m| layer.row(m as usize).0.len())
                    .sum(),
            };
            let mut part = Part {
                offsets: Vec::with_capacity(own.len() + 1),
                cols: Vec::with_capacity(bound),
                vals: Vec::with_capacity(bound),
                signatures: vec![(0, 0); width],
            };
            // Dense accumulator of one merged row: `(stamp, sum)` per column, where the
            // sum is live when the stamp is the row's.
            let mut acc = vec![(u32::MAX, 0f32); width];
            part.offsets.push(0);
            for row in own {
                let start = part.cols.len();
                match previous {
                    None => {
                        let (cols, vals) = layer.row(row);
                        part.cols.extend_from_slice(cols);
                        part.vals.extend_from_slice(vals);
                    }
                    Some(classes) => {
                        let stamp = row as u32;
                        let members = classes.members(row).expect("a class per merged row");
                        for &member in members {
                            let (cols, vals) = layer.row(member as usize);
                            for (&j, &w) in cols.iter().zip(vals) {
                                let j = j as usize;
                                let slot = &mut acc[j];
                                if slot.0 == stamp {
                                    slot.1 += w;
                                } else {
                                    *slot = (stamp, w);
                                    part.cols.push(j as u32);
                                }
                            }
                        }
                        part.vals
                            .extend(part.cols[start..].iter().map(|&j| acc[j as usize].1));
                    }
                }
                for (&j, &v) in part.cols[start..].iter().zip(&part.vals[start..]) {
                    let j = j as usize;
                    let signature = &mut part.signatures[j];
                    signature.0 = signature.0.wrapping_add(hash(row as u32, v.to_bits()));
                    signature.1 += 1;
                }
                part.offsets.push(part.cols.len() as u32);
            }
            part
        })
        .collect();
    let mut signatures = vec![(0u64, 0u32); width];
    for part in &parts {
        for (total, add) in signatures.iter_mut().zip(&part.signatures) {
            total.0 = total.0.wrapping_add(add.0);
            total.1 += add.1;
        }
    }
    let merged = Merged {
        width,
        rows,
        per_part: per_task,
        parts,
    };
    (merged, signatures)
}

/// Proposes classes: columns with equal signatures (hash and entry count) and, with
/// per-output biases, bit-identical biases (an exact part of the key: the check that
/// follows compares entries only).
fn propose(signatures: &[(u64, u32)], biases: Option<&[f32]>) -> Classes {
    let key = |j: u32| {
        let bias = biases.map_or(0, |b| b[j as usize].to_bits());
        (signatures[j as usize], bias)
    };
    let mut order: Vec<u32> = (0..signatures.len() as u32).collect();
    order.par_sort_unstable_by_key(|&j| (key(j), j));
    let mut groups: Vec<Vec<u32>> = Vec::new();
    let mut previous = None;
    for &j in &order {
        let key = key(j);
        if previous == Some(key) {
            groups.last_mut().expect("a group is open").push(j);
        } else {
            groups.push(vec![j]);
            previous = Some(key);
        }
    }
    Classes::from_groups(signatures.len(), groups)
}

/// Whether every proposed class holds identical columns: each entry `(C, j, v)` is found
/// bit for bit at `(C, representative of j)` (equal entry counts were part of the key).
fn verify(merged: &Merged, classes: &Classes) -> bool {
    if classes.is_trivial() {
        return true;
    }
    let representative: Vec<u32> = classes
        .class_map()
        .iter()
        .map(|&c| {
            classes
                .representative(c as usize)
                .expect("a class has members")
        })
        .collect();
    let width = merged.width;
    // Per task: the value bits of the row's entries by column, and a stamp per column
    // saying which row set it.
    let scratch = || vec![(u32::MAX, 0u32); width];
    (0..merged.rows)
        .into_par_iter()
        .map_init(scratch, |seen, row| {
            let (cols, vals) = merged.row(row);
            let stamp = row as u32;
            for (&j, &v) in cols.iter().zip(vals) {
                seen[j as usize] = (stamp, v.to_bits());
            }
            cols.iter().zip(vals).all(|(&j, &v)| {
                let r = representative[j as usize] as usize;
                seen[r] == (stamp, v.to_bits())
            })
        })
        .all(|ok| ok)
}

/// The classes found by comparing whole columns (the merged layer transposed), and the
/// biases when the layer has a bias per output.
fn exact_classes(merged: &Merged, signatures: &[(u64, u32)], biases: Option<&[f32]>) -> Classes {
    let width = merged.width;
    let mut offsets = vec![0u32; width + 1];
    for part in &merged.parts {
        for &j in &part.cols {
            offsets[j as usize + 1] += 1;
        }
    }
    for j in 0..width {
        offsets[j + 1] += offsets[j];
    }
    let mut next = offsets.clone();
    let mut rows = vec![0u32; merged.nnz()];
    let mut vals = vec![0f32; merged.nnz()];
    for row in 0..merged.rows {
        let (cols, values) = merged.row(row);
        for (&j, &v) in cols.iter().zip(values) {
            let slot = next[j as usize] as usize;
            rows[slot] = row as u32;
            vals[slot] = v;
            next[j as usize] += 1;
        }
    }
    // Rows were visited in ascending order: each column lists its rows ascending.
    let columns = Columns {
        offsets: &offsets,
        rows: &rows,
        vals: &vals,
        biases,
    };
    // The bias only sharpens the proposal here; `group` compares it exactly.
    let hashes: Vec<u64> = signatures
        .iter()
        .enumerate()
        .map(|(j, &(h, _))| {
            biases.map_or(h, |b| {
                h.wrapping_add(entry_hash(u32::MAX, b[j].to_bits()).rotate_left(17))
            })
        })
        .collect();
    group(&columns, &hashes)
}

/// The compressed layer: each merged row restricted to the representatives' columns,
/// column `j` renamed to its class.
fn keep(merged: &Merged, classes: &Classes) -> Result<Csr, CompressError> {
    let class_of = classes.class_map();
    let is_representative: Vec<bool> = class_of
        .iter()
        .enumerate()
        .map(|(j, &c)| classes.representative(c as usize) == Some(j as u32))
        .collect();
    let kept: Vec<Vec<(u32, f32)>> = (0..merged.rows)
        .into_par_iter()
        .map(|row| {
            let (cols, vals) = merged.row(row);
            let mut entries: Vec<(u32, f32)> = cols
                .iter()
                .zip(vals)
                .filter(|&(&j, _)| is_representative[j as usize])
                .map(|(&j, &v)| (class_of[j as usize], v))
                .collect();
            entries.sort_unstable_by_key(|&(c, _)| c);
            entries
        })
        .collect();
    let nnz: usize = kept.iter().map(Vec::len).sum();
    let mut offsets = Vec::with_capacity(kept.len() + 1);
    let mut cols = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    offsets.push(0u32);
    for row in kept {
        for (c, v) in row {
            cols.push(c);
            vals.push(v);
        }
        offsets.push(cols.len() as u32);
    }
    Ok(Csr::from_parts(
        merged.rows,
        classes.len(),
        offsets,
        cols,
        vals,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colliding(_: u32, _: u32) -> u64 {
        7
    }

    fn csr(rows: usize, cols: usize, t: &[(u32, u32, f32)]) -> Csr {
        Csr::from_triplets(rows, cols, t).unwrap()
    }

    #[test]
    fn a_colliding_hash_falls_back_to_the_exact_classes() {
        // Columns 0 and 2 identical, 1 and 3 identical; all four have 2 entries, so a
        // constant hash proposes one class of four, which the check rejects.
        let w = csr(
            3,
            4,
            &[
                (0, 0, 1.0),
                (2, 0, 2.0),
                (0, 2, 1.0),
                (2, 2, 2.0),
                (1, 1, 1.0),
                (2, 1, 2.0),
                (1, 3, 1.0),
                (2, 3, 2.0),
            ],
        );
        let honest = compress_layer(&w, None, None, entry_hash).unwrap();
        assert!(!honest.fell_back);
        let collided = compress_layer(&w, None, None, colliding).unwrap();
        assert!(collided.fell_back);
        assert_eq!(collided.classes, honest.classes);
        assert_eq!(collided.layer, honest.layer);
        assert_eq!(honest.classes.class_map(), &[0, 1, 0, 1]);
    }

    #[test]
    fn a_colliding_hash_on_merged_rows_falls_back_too() {
        let previous = Classes::from_class_map(vec![0, 1, 0, 1]).unwrap();
        // Merged: row 0 = rows 0 + 2, row 1 = rows 1 + 3.
        let w = csr(
            4,
            3,
            &[
                (0, 0, 0.5),
                (2, 0, 0.25),
                (0, 1, 0.75),
                (1, 2, 0.75),
                (3, 1, 9.0),
            ],
        );
        let honest = compress_layer(&w, Some(&previous), None, entry_hash).unwrap();
        let collided = compress_layer(&w, Some(&previous), None, colliding).unwrap();
        assert_eq!(honest.classes.class_map(), &[0, 1, 2]);
        assert_eq!(collided.classes, honest.classes);
        assert_eq!(collided.layer, honest.layer);
        // Column 0 of the merged layer: 0.5 + 0.25 in row 0.
        assert_eq!(
            honest.layer.triplets().collect::<Vec<_>>(),
            vec![(0, 0, 0.75), (0, 1, 0.75), (1, 1, 9.0), (1, 2, 0.75)]
        );
        // Columns 0 and 1 hold 0.75 in different rows: only the collision proposes them.
        let w = csr(4, 2, &[(0, 0, 0.5), (2, 0, 0.25), (1, 1, 0.75)]);
        let c = compress_layer(&w, Some(&previous), None, colliding).unwrap();
        assert!(c.fell_back);
        assert!(c.classes.is_trivial());
    }

    #[test]
    fn identical_columns_with_different_biases_are_different_classes() {
        // Columns 0, 1 and 2 identical; column 3 differs. Biases: 0 and 2 equal, 1 not (by
        // one ulp), and −0.0 against +0.0 differ bit for bit (conservative).
        let w = csr(
            2,
            5,
            &[
                (0, 0, 1.0),
                (1, 0, 0.5),
                (0, 1, 1.0),
                (1, 1, 0.5),
                (0, 2, 1.0),
                (1, 2, 0.5),
                (0, 3, 2.0),
            ],
        );
        let below = f32::from_bits((-0.25f32).to_bits() + 1);
        let biases = [-0.25, below, -0.25, 0.0, -0.0];
        for hash in [entry_hash as fn(u32, u32) -> u64, colliding] {
            let r = compress_layer(&w, None, Some(&biases), hash).unwrap();
            assert_eq!(r.classes.class_map(), &[0, 1, 0, 2, 3]);
            let kept = r.biases.unwrap();
            assert_eq!(kept.len(), 4);
            assert_eq!(
                kept.iter().map(|b| b.to_bits()).collect::<Vec<_>>(),
                [-0.25f32, below, 0.0, -0.0].map(f32::to_bits)
            );
            assert_eq!(r.layer.ncols(), 4);
        }
        // Without biases, columns 0–2 are one class, and so are the empty column 4 alone.
        let r = compress_layer(&w, None, None, entry_hash).unwrap();
        assert_eq!(r.classes.class_map(), &[0, 0, 0, 1, 2]);
        assert!(r.biases.is_none());
        // Equal biases merge as without them.
        let r = compress_layer(&w, None, Some(&[-1.0; 5]), entry_hash).unwrap();
        assert_eq!(r.classes.class_map(), &[0, 0, 0, 1, 2]);
        assert_eq!(r.biases.unwrap(), vec![-1.0; 3]);
    }

    #[test]
    fn the_exact_fallback_compares_biases() {
        // A constant hash proposes columns 0–2 (two entries each, equal biases) as one
        // class, and column 3 (the same entries as 0, another bias) apart by its exact bias
        // key; the check fails (column 1 differs), and the exact comparison finds {0, 2},
        // {1} and, still apart, {3}.
        let w = csr(
            2,
            4,
            &[
                (0, 0, 1.0),
                (1, 0, 2.0),
                (0, 1, 3.0),
                (1, 1, 2.0),
                (0, 2, 1.0),
                (1, 2, 2.0),
                (0, 3, 1.0),
                (1, 3, 2.0),
            ],
        );
        let biases = [-0.5, -0.5, -0.5, -0.75];
        let honest = compress_layer(&w, None, Some(&biases), entry_hash).unwrap();
        let collided = compress_layer(&w, None, Some(&biases), colliding).unwrap();
        assert!(!honest.fell_back);
        assert!(collided.fell_back);
        for r in [&honest, &collided] {
            assert_eq!(r.classes.class_map(), &[0, 1, 0, 2]);
            assert_eq!(r.biases.as_deref(), Some(&[-0.5, -0.5, -0.75][..]));
        }
        assert_eq!(collided.layer, honest.layer);
    }

    #[test]
    fn long_rows_verify_too() {
        // One input row with 80 entries: columns k and k + 40 equal.
        let t: Vec<(u32, u32, f32)> = (0..80).map(|j| (0, j, (j % 40) as f32 + 1.0)).collect();
        let w = csr(1, 80, &t);
        let r = compress_layer(&w, None, None, entry_hash).unwrap();
        assert_eq!(r.classes.len(), 40);
        let r = compress_layer(&w, None, None, colliding).unwrap();
        assert!(r.fell_back);
        assert_eq!(r.classes.len(), 40);
    }
}
