//! A compression computed once per network and reused by every caller in the process
//! ([`compress_shared`]): a benchmark compresses its network for the oracle, and each run
//! of a method that compresses (one per GPU, per GPU count) would otherwise compress the
//! same network again — at N = 65536 and 1920 layers, minutes of CPU each time.
//!
//! The network is recognised by its content, not by where it lives: [`fingerprint`] hashes
//! every layer's shape, row offsets, column indices and value bits (and the per-neuron
//! biases) with the 128-bit XXH3, layer by layer in parallel, at memory speed. Only the
//! last network compressed is remembered ([`SharedCompressions`] holds one), so a caller
//! moving on to the next network frees the previous compression; [`forget_shared`] frees
//! it at once. Callers that ask at the same time for the same network wait for the one
//! that computes it. A network that compresses to itself is remembered as such (its
//! classes), not as a copy of its layers: each caller then gets a copy of its own, as
//! [`crate::compress`] gives.

use std::sync::{Arc, Mutex, MutexGuard};

use rayon::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use crate::compress::{Compressed, Summary, check_biases, compress_network};
use crate::{Classes, CompressError};

/// The content fingerprint of a network: [`fingerprint`].
pub type Fingerprint = u128;

/// The 128-bit XXH3 of the network's content: per layer (in parallel) its rows, columns,
/// stored entries, row offsets, column indices and value bits, then its biases when
/// given; the layers' digests hashed in order with the layer count and whether biases were
/// given. Two networks with the same fingerprint are taken to be the same network.
pub fn fingerprint(layers: &[Csr], biases: Option<&[Vec<f32>]>) -> Fingerprint {
    let digests: Vec<u128> = layers
        .par_iter()
        .enumerate()
        .map(|(l, layer)| {
            let mut hasher = Xxh3::new();
            for size in [layer.nrows(), layer.ncols(), layer.nnz()] {
                hasher.update(&(size as u64).to_le_bytes());
            }
            hasher.update(as_bytes(layer.row_offsets()));
            hasher.update(as_bytes(layer.col_indices()));
            hasher.update(as_bytes(layer.values()));
            if let Some(b) = biases.and_then(|b| b.get(l)) {
                hasher.update(&(b.len() as u64).to_le_bytes());
                hasher.update(as_bytes(b));
            }
            hasher.digest128()
        })
        .collect();
    let mut all = Vec::with_capacity(16 * digests.len() + 16);
    all.extend_from_slice(&(layers.len() as u64).to_le_bytes());
    all.extend_from_slice(&u64::from(biases.is_some()).to_le_bytes());
    for digest in digests {
        all.extend_from_slice(&digest.to_le_bytes());
    }
    xxh3_128(&all)
}

/// The bytes of `words` in this machine's byte order (a fingerprint names content on one
/// machine; on a machine of the other byte order the same network only gets another name).
fn as_bytes<T: bytemuck::Pod>(words: &[T]) -> &[u8] {
    bytemuck::cast_slice(words)
}

/// One remembered compression: the network's fingerprint and the result, computed by the
/// first caller that asks (the others wait on the cell's lock).
struct Slot {
    key: Fingerprint,
    cell: Arc<Mutex<Option<Remembered>>>,
}

/// What is kept of a compression.
enum Remembered {
    /// Outputs merged: the compressed network.
    Merged(Arc<Compressed>),
    /// Nothing merged: the compressed network is the original bit for bit, so only its
    /// classes and summary are kept (not a copy of a network that may be tens of GB), and
    /// each caller gets its own copy of its layers.
    Identity {
        classes: Vec<Classes>,
        summary: Summary,
    },
}

impl Remembered {
    fn of(compressed: &Arc<Compressed>) -> Self {
        if compressed.is_identity() {
            Remembered::Identity {
                classes: compressed.classes.clone(),
                summary: compressed.summary.clone(),
            }
        } else {
            Remembered::Merged(compressed.clone())
        }
    }

    /// The compression of `layers` (with `biases`), the network this was remembered for.
    fn result(&self, layers: &[Csr], biases: Option<&[Vec<f32>]>) -> Arc<Compressed> {
        match self {
            Remembered::Merged(compressed) => compressed.clone(),
            Remembered::Identity { classes, summary } => Arc::new(Compressed {
                layers: layers.to_vec(),
                classes: classes.clone(),
                biases: biases.map(<[Vec<f32>]>::to_vec),
                summary: summary.clone(),
            }),
        }
    }
}

/// The last compression computed, by the network's fingerprint.
#[derive(Default)]
pub struct SharedCompressions {
    last: Mutex<Option<Slot>>,
}

impl SharedCompressions {
    /// A store that remembers nothing yet.
    pub const fn new() -> Self {
        Self {
            last: Mutex::new(None),
        }
    }

    /// [`crate::compress`] of `layers`, or [`crate::compress_with_biases`] with `biases`:
    /// the remembered result when the last network asked for has the same fingerprint,
    /// else computed now (and remembered in place of the last). Errors as those do; an
    /// error is not remembered.
    pub fn compress(
        &self,
        layers: &[Csr],
        biases: Option<&[Vec<f32>]>,
    ) -> Result<Arc<Compressed>, CompressError> {
        if let Some(biases) = biases {
            check_biases(layers, biases)?;
        }
        let key = fingerprint(layers, biases);
        let cell = {
            let mut last = lock(&self.last);
            match last.as_ref() {
                Some(slot) if slot.key == key => slot.cell.clone(),
                _ => {
                    let cell = Arc::new(Mutex::new(None));
                    *last = Some(Slot {
                        key,
                        cell: cell.clone(),
                    });
                    cell
                }
            }
        };
        let mut value = lock(&cell);
        if let Some(remembered) = value.as_ref() {
            return Ok(remembered.result(layers, biases));
        }
        let compressed = Arc::new(compress_network(layers, biases)?);
        *value = Some(Remembered::of(&compressed));
        Ok(compressed)
    }

    /// Drops the remembered compression (callers still holding it keep theirs).
    pub fn forget(&self) {
        *lock(&self.last) = None;
    }

    /// The fingerprint of the network remembered, if any.
    pub fn remembered(&self) -> Option<Fingerprint> {
        lock(&self.last).as_ref().map(|slot| slot.key)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The process's store.
static SHARED: SharedCompressions = SharedCompressions::new();

/// [`crate::compress`] of `layers`, computed once per network in this process (see the
/// module documentation).
pub fn compress_shared(layers: &[Csr]) -> Result<Arc<Compressed>, CompressError> {
    SHARED.compress(layers, None)
}

/// [`crate::compress_with_biases`] of `layers` and `biases`, computed once per network
/// and biases in this process.
pub fn compress_with_biases_shared(
    layers: &[Csr],
    biases: &[Vec<f32>],
) -> Result<Arc<Compressed>, CompressError> {
    SHARED.compress(layers, Some(biases))
}

/// Frees the compression the process remembers (a caller done with its network).
pub fn forget_shared() {
    SHARED.forget();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n × n` (`n` even), row `r` holding columns `r mod n/2` and `r mod n/2 + n/2`, every
    /// value `value`: columns `c` and `c + n/2` are identical, so outputs merge.
    fn layer(n: usize, value: f32) -> Csr {
        let half = n / 2;
        let mut offsets = vec![0u32];
        let mut cols = Vec::new();
        for r in 0..n {
            cols.extend_from_slice(&[(r % half) as u32, (r % half + half) as u32]);
            offsets.push(cols.len() as u32);
        }
        let values = vec![value; cols.len()];
        Csr::from_parts(n, n, offsets, cols, values).unwrap()
    }

    fn network(value: f32) -> Vec<Csr> {
        vec![layer(8, value), layer(8, value), layer(8, value)]
    }

    #[test]
    fn the_fingerprint_follows_the_content_not_the_allocation() {
        let a = network(0.25);
        let copy = a.clone();
        assert_eq!(fingerprint(&a, None), fingerprint(&copy, None));
        assert_ne!(fingerprint(&a, None), fingerprint(&network(0.5), None));
        assert_ne!(fingerprint(&a, None), fingerprint(&a[..2], None));
        let biases: Vec<Vec<f32>> = a.iter().map(|w| vec![-0.1; w.ncols()]).collect();
        assert_ne!(fingerprint(&a, None), fingerprint(&a, Some(&biases)));
        let mut other = biases.clone();
        other[2][7] = -0.2;
        assert_ne!(
            fingerprint(&a, Some(&biases)),
            fingerprint(&a, Some(&other))
        );
        // −0.0 and 0.0 are different bits, so different networks.
        let mut signed = a.clone();
        signed[1] = layer(8, -0.0);
        let mut zero = a.clone();
        zero[1] = layer(8, 0.0);
        assert_ne!(fingerprint(&signed, None), fingerprint(&zero, None));
    }

    #[test]
    fn the_same_network_is_compressed_once_and_another_replaces_it() {
        let store = SharedCompressions::new();
        let a = network(0.25);
        let first = store.compress(&a, None).unwrap();
        let direct = crate::compress(&a).unwrap();
        assert!(!direct.is_identity());
        assert_eq!(first.layers(), direct.layers());
        assert_eq!(first.final_classes(), direct.final_classes());
        // Another allocation of the same content: the remembered result itself.
        let again = store.compress(&a.clone(), None).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(store.remembered(), Some(fingerprint(&a, None)));
        // Another network: computed, and remembered in place of the first.
        let b = network(0.5);
        let other = store.compress(&b, None).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.layers(), crate::compress(&b).unwrap().layers());
        assert_eq!(store.remembered(), Some(fingerprint(&b, None)));
        let back = store.compress(&a, None).unwrap();
        assert!(!Arc::ptr_eq(&first, &back), "only the last one is kept");
        assert_eq!(back.layers(), first.layers());
        store.forget();
        assert_eq!(store.remembered(), None);
    }

    #[test]
    fn a_network_that_compresses_to_itself_is_remembered_without_its_layers() {
        let store = SharedCompressions::new();
        // Row r holds columns r and r + 1 (mod 8): no two columns alike.
        let offsets: Vec<u32> = (0..=8).map(|r| 2 * r).collect();
        let cols: Vec<u32> = (0..8u32)
            .flat_map(|r| {
                let mut row = [r, (r + 1) % 8];
                row.sort_unstable();
                row
            })
            .collect();
        let plain = Csr::from_parts(8, 8, offsets, cols, vec![0.5; 16]).unwrap();
        let layers = vec![plain.clone(), plain];
        let first = store.compress(&layers, None).unwrap();
        assert!(first.is_identity());
        let cell = lock(&store.last).as_ref().unwrap().cell.clone();
        assert!(matches!(
            lock(&cell).as_ref(),
            Some(Remembered::Identity { .. })
        ));
        let again = store.compress(&layers, None).unwrap();
        assert!(again.is_identity());
        assert_eq!(again.layers(), layers.as_slice());
        assert_eq!(again.final_classes(), first.final_classes());
        assert_eq!(again.summary(), first.summary());
    }

    #[test]
    fn callers_at_the_same_time_share_one_result() {
        let store = SharedCompressions::new();
        let a = network(0.25);
        let results: Vec<Arc<Compressed>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| store.compress(&a, None).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(|r| Arc::ptr_eq(r, &results[0])));
    }

    #[test]
    fn errors_are_returned_and_not_remembered() {
        let store = SharedCompressions::new();
        let a = network(0.25);
        let short = vec![vec![-0.1f32; 8]; 2];
        assert!(store.compress(&a, Some(&short)).is_err());
        assert_eq!(store.remembered(), None);
        let unchained = vec![layer(8, 0.25), layer(4, 0.25)];
        assert!(store.compress(&unchained, None).is_err());
        let fine = store.compress(&a, None).unwrap();
        assert!(Arc::ptr_eq(&fine, &store.compress(&a, None).unwrap()));
    }
}
