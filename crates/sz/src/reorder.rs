//! The similarity reordering of S&Z-2022, found from the data: each layer's outputs are
//! ordered so that tiles of [`TILE`] consecutive outputs read similar input sets, its
//! inputs so that chunks of [`CHUNK`] consecutive inputs feed similar sets of tiles; a
//! (tile, chunk) pair with enough nonzeros is a dense block for the tensor cores, every
//! other nonzero belongs to the CSR rest.
//!
//! The grouping ([`similarity_order`]) first puts items with identical sets together (the
//! challenge's 16 outputs sharing 32 inputs, the 16 inputs feeding the same two tiles), then
//! grows groups of the remaining items greedily around a seed by the largest overlap
//! (bounded work per seed). On the challenge's networks every tile gets two full blocks and
//! the rest is empty; on unstructured networks few blocks reach the fill and the rest
//! carries the layer.
//!
//! The input order of a layer is free of the previous layer's output order: the kernel
//! gathers each chunk's inputs through a map into the previous layer's positions (the
//! paper's fused permutation `F_l = Q_{l-1}^T P_l^T`), so activations are never permuted.

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};

/// Outputs per tile: the tensor cores' two n8 halves.
pub const TILE: usize = 16;
/// Inputs per chunk: the k16 of one `mma.m16n8k16`.
pub const CHUNK: usize = 16;
/// Entries a dense block can hold.
pub const BLOCK_ENTRIES: usize = TILE * CHUNK;
/// Inverted-list entries scanned per seed in the greedy grouping: the bound that keeps
/// dense layers from costing O(N²) a seed.
pub const SCAN_BUDGET: usize = 16384;

/// One layer's reordering: the output and input orders and the dense blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reordering {
    /// Output position → output neuron (`N_l` entries); tile `t` is positions
    /// `16t..16t + 16`.
    pub outputs: Vec<u32>,
    /// Input slot → input neuron (`N_{l-1}` entries); chunk `c` is slots `16c..16c + 16`.
    pub inputs: Vec<u32>,
    /// Where each tile's blocks start in [`Self::chunks`] (tiles + 1 entries).
    pub tile_blocks: Vec<u32>,
    /// Each dense block's chunk, ascending within a tile.
    pub chunks: Vec<u32>,
}

impl Reordering {
    /// Tiles of the layer (`⌈N_l / 16⌉`).
    pub fn tiles(&self) -> usize {
        self.outputs.len().div_ceil(TILE)
    }

    /// Chunks of the layer (`⌈N_{l-1} / 16⌉`).
    pub fn chunk_count(&self) -> usize {
        self.inputs.len().div_ceil(CHUNK)
    }

    /// Dense blocks of the layer.
    pub fn blocks(&self) -> usize {
        self.chunks.len()
    }

    /// Checks the invariants against a layer of `inputs × outputs`: both orders are
    /// permutations, the offsets run from 0 to the block count, chunks are in range and
    /// strictly increasing within each tile. Errors name what is wrong.
    pub fn validate(&self, inputs: usize, outputs: usize) -> Result<(), String> {
        check_permutation(&self.outputs, outputs, "output order")?;
        check_permutation(&self.inputs, inputs, "input order")?;
        let tiles = outputs.div_ceil(TILE);
        if self.tile_blocks.len() != tiles + 1
            || self.tile_blocks.first() != Some(&0)
            || self.tile_blocks.last().map(|&b| b as usize) != Some(self.chunks.len())
            || self.tile_blocks.windows(2).any(|w| w[0] > w[1])
        {
            return Err(format!(
                "tile offsets must run from 0 to {} over {tiles} tiles",
                self.chunks.len()
            ));
        }
        let chunks = inputs.div_ceil(CHUNK) as u32;
        for (t, w) in self.tile_blocks.windows(2).enumerate() {
            let list = &self.chunks[w[0] as usize..w[1] as usize];
            if list.iter().any(|&c| c >= chunks) || list.windows(2).any(|p| p[0] >= p[1]) {
                return Err(format!(
                    "tile {t}'s chunks must increase strictly below {chunks}"
                ));
            }
        }
        Ok(())
    }
}

/// `order` is a permutation of `0..n`.
fn check_permutation(order: &[u32], n: usize, what: &str) -> Result<(), String> {
    if order.len() != n {
        return Err(format!("the {what} has {} entries for {n}", order.len()));
    }
    let mut seen = vec![false; n];
    for &i in order {
        match seen.get_mut(i as usize) {
            Some(s) if !*s => *s = true,
            _ => return Err(format!("the {what} is not a permutation of 0..{n}")),
        }
    }
    Ok(())
}

/// The inverse of a permutation: `inverse(order)[order[p]] = p`.
pub fn inverse(order: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; order.len()];
    for (p, &i) in order.iter().enumerate() {
        inv[i as usize] = p as u32;
    }
    inv
}

/// Sets of `u32` keys, one per item, as CSR-like offsets and keys (each set sorted).
#[derive(Debug, Clone, Copy)]
pub struct Sets<'a> {
    /// `offsets[i]..offsets[i + 1]` index item `i`'s keys (items + 1 entries).
    pub offsets: &'a [u32],
    /// The keys, each set strictly increasing.
    pub keys: &'a [u32],
    /// Every key is below this.
    pub key_space: usize,
}

impl Sets<'_> {
    fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    fn set(&self, item: usize) -> &[u32] {
        &self.keys[self.offsets[item] as usize..self.offsets[item + 1] as usize]
    }
}

/// An order of the items of `sets` in which groups of `group` consecutive items have
/// similar sets: first every full group of identical sets, then groups grown greedily
/// around a seed (the first unplaced item in lexicographic order of the sets, empty sets
/// last) from the items sharing the most keys with it (at most [`SCAN_BUDGET`]
/// inverted-list entries scanned), filled up with the next unplaced items in that order.
/// Deterministic.
pub fn similarity_order(sets: Sets<'_>, group: usize) -> Vec<u32> {
    let n = sets.len();
    let group = group.max(1);
    let mut sorted: Vec<u32> = (0..n as u32).collect();
    // Lexicographic order of the sets, empty sets last: an item that reads nothing must
    // not seed a group (it would fill the group with the next items in order whatever they
    // read), and it can sit in any tile.
    sorted.sort_by(|&a, &b| {
        let (sa, sb) = (sets.set(a as usize), sets.set(b as usize));
        (sa.is_empty(), sa)
            .cmp(&(sb.is_empty(), sb))
            .then(a.cmp(&b))
    });

    let mut order = Vec::with_capacity(n);
    let mut pool = Vec::new();
    let mut start = 0;
    while start < n {
        let key = sets.set(sorted[start] as usize);
        let mut end = start + 1;
        while end < n && sets.set(sorted[end] as usize) == key {
            end += 1;
        }
        let full = (end - start) / group * group;
        order.extend_from_slice(&sorted[start..start + full]);
        pool.extend_from_slice(&sorted[start + full..end]);
        start = end;
    }
    order.extend(greedy_groups(sets, &pool, group));
    order
}

/// Groups `pool` (in lexicographic order of the sets) greedily, as [`similarity_order`]
/// describes.
fn greedy_groups(sets: Sets<'_>, pool: &[u32], group: usize) -> Vec<u32> {
    if pool.is_empty() {
        return Vec::new();
    }
    let n = sets.len();
    // Rank in the pool of each item (u32::MAX: not in the pool).
    let mut rank = vec![u32::MAX; n];
    for (r, &item) in pool.iter().enumerate() {
        rank[item as usize] = r as u32;
    }
    // Key → pool items holding it, in pool order.
    let mut counts = vec![0u32; sets.key_space + 1];
    for &item in pool {
        for &k in sets.set(item as usize) {
            counts[k as usize + 1] += 1;
        }
    }
    for k in 0..sets.key_space {
        counts[k + 1] += counts[k];
    }
    let mut next = counts.clone();
    let mut holders = vec![0u32; counts[sets.key_space] as usize];
    for &item in pool {
        for &k in sets.set(item as usize) {
            holders[next[k as usize] as usize] = item;
            next[k as usize] += 1;
        }
    }

    let mut placed = vec![false; n];
    let mut score = vec![0u32; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut out = Vec::with_capacity(pool.len());
    let mut cursor = 0;
    loop {
        while cursor < pool.len() && placed[pool[cursor] as usize] {
            cursor += 1;
        }
        if cursor == pool.len() {
            break;
        }
        let seed = pool[cursor] as usize;
        placed[seed] = true;
        out.push(seed as u32);
        let mut budget = SCAN_BUDGET;
        'scan: for &k in sets.set(seed) {
            let list = &holders[counts[k as usize] as usize..counts[k as usize + 1] as usize];
            for &other in list {
                if budget == 0 {
                    break 'scan;
                }
                budget -= 1;
                if placed[other as usize] {
                    continue;
                }
                if score[other as usize] == 0 {
                    touched.push(other);
                }
                score[other as usize] += 1;
            }
        }
        touched.sort_by(|&a, &b| {
            score[b as usize]
                .cmp(&score[a as usize])
                .then(rank[a as usize].cmp(&rank[b as usize]))
        });
        let mut members = 1;
        for &other in touched.iter().take(group - 1) {
            placed[other as usize] = true;
            out.push(other);
            members += 1;
        }
        for &other in &touched {
            score[other as usize] = 0;
        }
        touched.clear();
        // Fill with the next unplaced items in pool order.
        let mut fill = cursor + 1;
        while members < group && fill < pool.len() {
            let item = pool[fill] as usize;
            if !placed[item] {
                placed[item] = true;
                out.push(item as u32);
                members += 1;
            }
            fill += 1;
        }
    }
    out
}

/// The fewest nonzeros a block of fill `min_fill` holds (at least one).
pub fn block_threshold(min_fill: f32) -> usize {
    let t = (f64::from(min_fill) * BLOCK_ENTRIES as f64).ceil();
    if t.is_nan() || t < 1.0 {
        1
    } else {
        (t as usize).min(BLOCK_ENTRIES + 1)
    }
}

/// The reordering of `layer` (`N_{l-1} × N_l`, row = input): outputs grouped by their
/// input sets, inputs by the tiles they feed, and the (tile, chunk) pairs holding at least
/// [`block_threshold`]`(min_fill)` nonzeros as dense blocks (explicit zeros are not
/// counted). `min_fill` above 1 gives no blocks.
pub fn reorder_layer(layer: &Csr, min_fill: f32) -> Reordering {
    let (n_in, n_out) = (layer.nrows(), layer.ncols());
    let columns = layer.transpose();
    let outputs = similarity_order(
        Sets {
            offsets: columns.row_offsets(),
            keys: columns.col_indices(),
            key_space: n_in,
        },
        TILE,
    );
    let position = inverse(&outputs);
    let tiles = n_out.div_ceil(TILE);

    // Each input's tiles (sorted, distinct).
    let mut offsets = Vec::with_capacity(n_in + 1);
    offsets.push(0u32);
    let mut keys: Vec<u32> = Vec::with_capacity(layer.nnz());
    for i in 0..n_in {
        let start = keys.len();
        let (cols, vals) = layer.row(i);
        keys.extend(
            cols.iter()
                .zip(vals)
                .filter(|(_, v)| **v != 0.0)
                .map(|(&o, _)| position[o as usize] / TILE as u32),
        );
        keys[start..].sort_unstable();
        let mut write = start;
        for read in start..keys.len() {
            if write == start || keys[write - 1] != keys[read] {
                keys[write] = keys[read];
                write += 1;
            }
        }
        keys.truncate(write);
        offsets.push(keys.len() as u32);
    }
    let inputs = similarity_order(
        Sets {
            offsets: &offsets,
            keys: &keys,
            key_space: tiles,
        },
        CHUNK,
    );
    let slot = inverse(&inputs);

    let threshold = block_threshold(min_fill);
    let mut tile_blocks = Vec::with_capacity(tiles + 1);
    tile_blocks.push(0u32);
    let mut chunks = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    for t in 0..tiles {
        seen.clear();
        for &o in &outputs[t * TILE..((t + 1) * TILE).min(n_out)] {
            let (ins, vals) = columns.row(o as usize);
            seen.extend(
                ins.iter()
                    .zip(vals)
                    .filter(|(_, v)| **v != 0.0)
                    .map(|(&i, _)| slot[i as usize] / CHUNK as u32),
            );
        }
        seen.sort_unstable();
        let mut start = 0;
        while start < seen.len() {
            let mut end = start + 1;
            while end < seen.len() && seen[end] == seen[start] {
                end += 1;
            }
            if end - start >= threshold {
                chunks.push(seen[start]);
            }
            start = end;
        }
        tile_blocks.push(chunks.len() as u32);
    }
    Reordering {
        outputs,
        inputs,
        tile_blocks,
        chunks,
    }
}

/// [`reorder_layer`] of every layer, in parallel.
pub fn reorder_network(layers: &[Csr], min_fill: f32) -> Vec<Reordering> {
    layers
        .par_iter()
        .map(|w| reorder_layer(w, min_fill))
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sets_of(lists: &[Vec<u32>], key_space: usize) -> (Vec<u32>, Vec<u32>, usize) {
        let mut offsets = vec![0u32];
        let mut keys = Vec::new();
        for l in lists {
            keys.extend_from_slice(l);
            offsets.push(keys.len() as u32);
        }
        (offsets, keys, key_space)
    }

    #[test]
    fn identical_sets_form_groups() {
        // 40 items: sets A (17 items), B (16), C (7); A's 17th and C go to the pool.
        let a = vec![1, 5, 9];
        let b = vec![2, 3];
        let c = vec![1, 5];
        let kinds: Vec<&Vec<u32>> = std::iter::repeat_n(&a, 17)
            .chain(std::iter::repeat_n(&b, 16))
            .chain(std::iter::repeat_n(&c, 7))
            .collect();
        // Interleaved by a fixed permutation of the 40 items.
        let lists: Vec<Vec<u32>> = (0..40).map(|i| kinds[(i * 7) % 40].clone()).collect();
        let (offsets, keys, space) = sets_of(&lists, 10);
        let sets = Sets {
            offsets: &offsets,
            keys: &keys,
            key_space: space,
        };
        let order = similarity_order(sets, 16);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<u32>>());
        for g in order.chunks(16).take(2) {
            let first = &lists[g[0] as usize];
            assert!(g.iter().all(|&i| lists[i as usize] == *first), "{g:?}");
        }
    }

    #[test]
    fn the_greedy_groups_gather_overlapping_sets() {
        // 32 items, two families of overlapping (not identical) sets, interleaved.
        let lists: Vec<Vec<u32>> = (0..32u32)
            .map(|i| {
                let base = if i % 2 == 0 { 0 } else { 100 };
                let mut s = vec![base, base + 1, base + 2, base + 3 + i];
                s.sort_unstable();
                s
            })
            .collect();
        let (offsets, keys, space) = sets_of(&lists, 200);
        let order = similarity_order(
            Sets {
                offsets: &offsets,
                keys: &keys,
                key_space: space,
            },
            16,
        );
        for g in order.chunks(16) {
            let parity = g[0] % 2;
            assert!(g.iter().all(|&i| i % 2 == parity), "{g:?}");
        }
    }

    #[test]
    fn challenge_layers_are_all_full_blocks() {
        let net = spdnn_sdgc::generator::network(1024, 12, 3).unwrap();
        for (l, w) in net.layers().iter().enumerate() {
            let r = reorder_layer(w, 0.25);
            r.validate(1024, 1024).unwrap();
            assert_eq!(r.tiles(), 64);
            assert_eq!(r.blocks(), 128, "layer {}: two blocks a tile", l + 1);
            // Every block full: 128 blocks × 256 = all 32768 nonzeros.
            let dense: usize = count_dense(w, &r);
            assert_eq!(dense, w.nnz(), "layer {}", l + 1);
        }
    }

    /// Nonzeros of `w` inside `r`'s dense blocks.
    fn count_dense(w: &Csr, r: &Reordering) -> usize {
        let position = inverse(&r.outputs);
        let slot = inverse(&r.inputs);
        w.triplets()
            .filter(|&(i, o, v)| {
                let t = position[o as usize] as usize / TILE;
                let c = slot[i as usize] / CHUNK as u32;
                v != 0.0
                    && r.chunks[r.tile_blocks[t] as usize..r.tile_blocks[t + 1] as usize]
                        .contains(&c)
            })
            .count()
    }

    #[test]
    fn thresholds() {
        assert_eq!(block_threshold(0.0), 1);
        assert_eq!(block_threshold(0.25), 64);
        assert_eq!(block_threshold(1.0), 256);
        assert_eq!(block_threshold(2.0), 257);
        assert_eq!(block_threshold(f32::NAN), 1);
    }

    proptest! {
        #[test]
        fn random_layers_give_valid_reorderings(
            n_in in 1usize..70,
            n_out in 1usize..70,
            density in 0.0f64..0.8,
            fill in prop_oneof![Just(0.0f32), Just(0.1), Just(0.5), Just(1.0), Just(1.5)],
            seed in any::<u64>(),
        ) {
            let mut state = seed | 1;
            let mut triplets = Vec::new();
            for i in 0..n_in as u32 {
                for o in 0..n_out as u32 {
                    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                    if (state % 1000) as f64 / 1000.0 < density {
                        triplets.push((i, o, 0.5));
                    }
                }
            }
            let w = Csr::from_triplets(n_in, n_out, &triplets).unwrap();
            let r = reorder_layer(&w, fill);
            prop_assert_eq!(r.validate(n_in, n_out), Ok(()));
            let threshold = block_threshold(fill);
            // Every block holds at least the threshold; none is empty.
            let position = inverse(&r.outputs);
            let slot = inverse(&r.inputs);
            let mut counts = std::collections::HashMap::new();
            for (i, o, _) in w.triplets() {
                let key = (position[o as usize] as usize / TILE, slot[i as usize] / CHUNK as u32);
                *counts.entry(key).or_insert(0usize) += 1;
            }
            for t in 0..r.tiles() {
                for &c in &r.chunks[r.tile_blocks[t] as usize..r.tile_blocks[t + 1] as usize] {
                    prop_assert!(counts.get(&(t, c)).copied().unwrap_or(0) >= threshold);
                }
            }
            if fill > 1.0 {
                prop_assert_eq!(r.blocks(), 0);
            }
        }
    }
}
