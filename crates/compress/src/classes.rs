//! Classes of identical output columns, and how they are found.

use rayon::prelude::*;
use serde::Serialize;

use crate::CompressError;

/// A partition of a layer's output neurons into classes of identical columns.
///
/// Classes are numbered by their smallest member, ascending: class 0 holds neuron 0, and
/// a class's id is below every class whose smallest member is larger. Members of a class
/// are listed in ascending order; the first one is the class's *representative*. With
/// every class of size 1 the numbering is the identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classes {
    class_of: Vec<u32>,
    offsets: Vec<u32>,
    members: Vec<u32>,
}

impl Classes {
    /// Every neuron of `width` in a class of its own (how layer 1's inputs are treated).
    ///
    /// `width` must fit `u32` (every `Csr` dimension does).
    pub fn identity(width: usize) -> Self {
        let ids: Vec<u32> = (0..width as u32).collect();
        Self {
            class_of: ids.clone(),
            offsets: (0..=width as u32).collect(),
            members: ids,
        }
    }

    /// Builds the partition from a class id per neuron (`class_of[neuron]`).
    ///
    /// The ids must be numbered as this type numbers them: class `c`'s smallest member
    /// comes before class `c + 1`'s, and the ids used are exactly `0..classes`. Errors
    /// otherwise.
    pub fn from_class_map(class_of: Vec<u32>) -> Result<Self, CompressError> {
        let mut next = 0u32;
        let mut counts: Vec<u32> = Vec::new();
        for (neuron, &class) in class_of.iter().enumerate() {
            if class == next {
                next += 1;
                counts.push(0);
            } else if class > next {
                return Err(CompressError::ClassMap(format!(
                    "neuron {neuron} opens class {class} before class {next}"
                )));
            }
            counts[class as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0u32);
        for &count in &counts {
            offsets.push(offsets[offsets.len() - 1] + count);
        }
        let mut fill: Vec<u32> = offsets[..counts.len()].to_vec();
        let mut members = vec![0u32; class_of.len()];
        for (neuron, &class) in class_of.iter().enumerate() {
            members[fill[class as usize] as usize] = neuron as u32;
            fill[class as usize] += 1;
        }
        Ok(Self {
            class_of,
            offsets,
            members,
        })
    }

    /// Number of neurons partitioned (the layer's original width `N_l`).
    pub fn width(&self) -> usize {
        self.class_of.len()
    }

    /// Number of classes (the compressed width `N'_l`).
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no classes (a layer without outputs).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every class has one member (nothing to merge).
    pub fn is_trivial(&self) -> bool {
        self.len() == self.width()
    }

    /// The class of every neuron, `class_map()[neuron]`.
    pub fn class_map(&self) -> &[u32] {
        &self.class_of
    }

    /// The class of `neuron`, or `None` past the width.
    pub fn class_of(&self, neuron: usize) -> Option<u32> {
        self.class_of.get(neuron).copied()
    }

    /// The members of `class` in ascending order, or `None` past the last class.
    pub fn members(&self, class: usize) -> Option<&[u32]> {
        let start = *self.offsets.get(class)? as usize;
        let end = *self.offsets.get(class + 1)? as usize;
        Some(&self.members[start..end])
    }

    /// The smallest member of `class` (the column the compressed layer keeps).
    pub fn representative(&self, class: usize) -> Option<u32> {
        self.members(class).and_then(|m| m.first().copied())
    }

    /// Size of the largest class (0 without neurons).
    pub fn largest(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Number of classes with at least two members.
    pub fn merged(&self) -> usize {
        self.offsets.windows(2).filter(|w| w[1] - w[0] > 1).count()
    }

    /// Expands values over the classes (`rows × len()`, row-major) to values over the
    /// neurons (`rows × width()`): neuron `j` of a row takes its class's value.
    ///
    /// Errors when `values` is not `rows × len()` long.
    pub fn expand<T: Copy>(&self, values: &[T], rows: usize) -> Result<Vec<T>, CompressError> {
        let classes = self.len();
        let expected = rows.checked_mul(classes).ok_or(CompressError::Length {
            what: "compressed values (rows × classes overflows)",
            expected: usize::MAX,
            found: values.len(),
        })?;
        if values.len() != expected {
            return Err(CompressError::Length {
                what: "compressed values (rows × classes)",
                expected,
                found: values.len(),
            });
        }
        let width = self.width();
        let mut out = Vec::with_capacity(rows.saturating_mul(width));
        if classes == 0 {
            return Ok(out);
        }
        for row in values.chunks_exact(classes) {
            out.extend(self.class_of.iter().map(|&c| row[c as usize]));
        }
        Ok(out)
    }
}

/// Columns in compressed sparse form: column `j` holds `rows/vals[offsets[j]..offsets[j+1]]`
/// with strictly increasing row indices, and, when the layer has a bias per output, the
/// bias `biases[j]` (part of what makes two columns identical).
pub(crate) struct Columns<'a> {
    pub offsets: &'a [u32],
    pub rows: &'a [u32],
    pub vals: &'a [f32],
    pub biases: Option<&'a [f32]>,
}

impl Columns<'_> {
    fn column(&self, j: usize) -> (&[u32], &[f32]) {
        let range = self.offsets[j] as usize..self.offsets[j + 1] as usize;
        (&self.rows[range.clone()], &self.vals[range])
    }

    /// Whether columns `a` and `b` store the same rows with bit-identical values (and
    /// bit-identical biases, when the layer has a bias per output).
    fn identical(&self, a: usize, b: usize) -> bool {
        let (rows_a, vals_a) = self.column(a);
        let (rows_b, vals_b) = self.column(b);
        let same_bias = self
            .biases
            .is_none_or(|b_of| b_of[a].to_bits() == b_of[b].to_bits());
        same_bias
            && rows_a == rows_b
            && vals_a
                .iter()
                .zip(vals_b)
                .all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// An order-dependent proposal hash of column `j` (tests only).
    #[cfg(test)]
    fn hash(&self, j: usize) -> u64 {
        let (rows, vals) = self.column(j);
        column_hash(rows, vals)
    }
}

/// An order-dependent 64-bit hash of a column's `(row, value bits)` entries (tests only:
/// the compressor's signatures are order-independent sums, see `merge.rs`).
#[cfg(test)]
fn column_hash(rows: &[u32], vals: &[f32]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (rows.len() as u64).wrapping_mul(K) ^ 0x5151_5151_5151_5151;
    for (&r, &v) in rows.iter().zip(vals) {
        let word = (u64::from(r) << 32) | u64::from(v.to_bits());
        h = (h.rotate_left(23) ^ word).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// Partitions the columns into classes of identical columns. `hashes[j]` proposes (columns
/// with different hashes are never compared); [`Columns::identical`] decides.
pub(crate) fn group(columns: &Columns<'_>, hashes: &[u64]) -> Classes {
    let width = hashes.len();
    let mut order: Vec<u32> = (0..width as u32).collect();
    order.par_sort_unstable_by_key(|&j| (hashes[j as usize], j));
    // Runs of equal hash, ascending column within a run. Each run splits into classes by
    // exact comparison with the representative (first member) of each class found so far.
    let mut found: Vec<Vec<u32>> = Vec::new();
    let mut run_start = 0;
    while run_start < width {
        let hash = hashes[order[run_start] as usize];
        let mut run_end = run_start + 1;
        while run_end < width && hashes[order[run_end] as usize] == hash {
            run_end += 1;
        }
        let first_class = found.len();
        for &j in &order[run_start..run_end] {
            let home = found[first_class..]
                .iter()
                .position(|class| columns.identical(class[0] as usize, j as usize));
            match home {
                Some(k) => found[first_class + k].push(j),
                None => found.push(vec![j]),
            }
        }
        run_start = run_end;
    }
    Classes::from_groups(width, found)
}

impl Classes {
    /// The partition of `width` neurons into `groups` (each ascending, together covering
    /// every neuron once, in any order), numbered by smallest member.
    pub(crate) fn from_groups(width: usize, mut groups: Vec<Vec<u32>>) -> Classes {
        groups.sort_unstable_by_key(|class| class[0]);
        let mut class_of = vec![0u32; width];
        let mut offsets = Vec::with_capacity(groups.len() + 1);
        let mut members = Vec::with_capacity(width);
        offsets.push(0u32);
        for (id, class) in groups.iter().enumerate() {
            for &j in class {
                class_of[j as usize] = id as u32;
            }
            members.extend_from_slice(class);
            offsets.push(members.len() as u32);
        }
        Classes {
            class_of,
            offsets,
            members,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns_of(cols: &[Vec<(u32, f32)>]) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
        let mut offsets = vec![0u32];
        let (mut rows, mut vals) = (Vec::new(), Vec::new());
        for col in cols {
            for &(r, v) in col {
                rows.push(r);
                vals.push(v);
            }
            offsets.push(rows.len() as u32);
        }
        (offsets, rows, vals)
    }

    #[test]
    fn identical_columns_share_a_class_numbered_by_smallest_member() {
        let cols = vec![
            vec![(0, 1.0), (2, 0.5)],
            vec![(1, 1.0)],
            vec![(0, 1.0), (2, 0.5)],
            vec![],
            vec![(1, 1.0)],
            vec![],
            vec![(0, 1.0), (2, 0.25)],
        ];
        let (offsets, rows, vals) = columns_of(&cols);
        let columns = Columns {
            offsets: &offsets,
            rows: &rows,
            vals: &vals,
            biases: None,
        };
        let hashes: Vec<u64> = (0..cols.len()).map(|j| columns.hash(j)).collect();
        let classes = group(&columns, &hashes);
        assert_eq!(classes.class_map(), &[0, 1, 0, 2, 1, 2, 3]);
        assert_eq!(classes.members(0), Some(&[0u32, 2][..]));
        assert_eq!(classes.members(2), Some(&[3u32, 5][..]));
        assert_eq!(classes.representative(3), Some(6));
        assert_eq!(classes.len(), 4);
        assert_eq!(classes.largest(), 2);
        assert_eq!(classes.merged(), 3);
        assert!(!classes.is_trivial());
        assert_eq!(classes.members(4), None);
    }

    #[test]
    fn a_colliding_hash_only_proposes() {
        // Every column hashes to 0: the exact comparison alone must split them.
        let cols = vec![
            vec![(0, 1.0)],
            vec![(0, -0.0)],
            vec![(0, 0.0)],
            vec![(0, 1.0)],
            vec![(1, 1.0)],
            vec![(0, -0.0)],
        ];
        let (offsets, rows, vals) = columns_of(&cols);
        let columns = Columns {
            offsets: &offsets,
            rows: &rows,
            vals: &vals,
            biases: None,
        };
        let classes = group(&columns, &vec![0; cols.len()]);
        // −0.0 and 0.0 differ bit for bit, so they are different classes (conservative).
        assert_eq!(classes.class_map(), &[0, 1, 2, 0, 3, 1]);
        let honest: Vec<u64> = (0..cols.len()).map(|j| columns.hash(j)).collect();
        assert_eq!(group(&columns, &honest), classes);
    }

    #[test]
    fn identical_columns_need_equal_biases() {
        // Every column hashes to 0, so only the exact comparison decides: columns 0, 1 and
        // 3 store the same entries, 1's bias differs, 3's equals 0's; −0.0 and 0.0 differ.
        let cols = vec![
            vec![(0, 1.0)],
            vec![(0, 1.0)],
            vec![],
            vec![(0, 1.0)],
            vec![],
        ];
        let (offsets, rows, vals) = columns_of(&cols);
        let biases = [-0.5f32, -0.25, 0.0, -0.5, -0.0];
        let columns = Columns {
            offsets: &offsets,
            rows: &rows,
            vals: &vals,
            biases: Some(&biases),
        };
        let classes = group(&columns, &vec![0; cols.len()]);
        assert_eq!(classes.class_map(), &[0, 1, 2, 0, 3]);
        let plain = Columns {
            biases: None,
            ..columns
        };
        assert_eq!(
            group(&plain, &vec![0; cols.len()]).class_map(),
            &[0, 0, 1, 0, 1]
        );
    }

    #[test]
    fn class_maps_round_trip_and_bad_ones_are_errors() {
        let classes = Classes::from_class_map(vec![0, 1, 0, 2, 1]).unwrap();
        assert_eq!(classes.members(1), Some(&[1u32, 4][..]));
        assert_eq!(classes.len(), 3);
        // The representative is the smallest member, the same column the class numbering
        // orders by.
        let representatives: Vec<_> = (0..4).map(|c| classes.representative(c)).collect();
        assert_eq!(representatives, vec![Some(0), Some(1), Some(3), None]);
        assert!(Classes::from_class_map(vec![1, 0]).is_err());
        assert!(Classes::from_class_map(vec![0, 2, 1]).is_err());
        assert!(Classes::identity(4).is_trivial());
        assert_eq!(
            Classes::from_class_map(vec![0, 1, 2]).unwrap(),
            Classes::identity(3)
        );
    }

    #[test]
    fn expansion_copies_each_class_value() {
        let classes = Classes::from_class_map(vec![0, 1, 0, 2, 1]).unwrap();
        let out = classes
            .expand(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], 2)
            .unwrap();
        assert_eq!(out, vec![1.0, 2.0, 1.0, 3.0, 2.0, 4.0, 5.0, 4.0, 6.0, 5.0]);
        assert!(matches!(
            classes.expand(&[1.0f32; 5], 2),
            Err(CompressError::Length { .. })
        ));
        assert!(classes.expand::<f64>(&[], 0).unwrap().is_empty());
    }
}
