//! Several processes (ranks) over one input: each takes a contiguous slab of the rows (the
//! static block partition of H&P-2020's `balanced` code, remainder spread one row each over
//! the first ranks), runs any method on it under its own plan, and rank 0 gathers the
//! categories. The rank logic is written against [`Ranks`]: [`Single`] (one process),
//! [`InProcess`] (threads standing in for processes, for tests) and, with the `mpi` feature,
//! `MpiRanks` over the system's MPI.

use std::ops::Range;
use std::sync::{Arc, Barrier, Mutex};

/// The ranks of a run and a gather to rank 0.
pub trait Ranks: Send + Sync {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// This process's rank among the ranks on its own host (what picks its GPU); the
    /// default, the global rank, holds when every rank shares one host.
    fn local_rank(&self) -> usize {
        self.rank()
    }
    /// Every rank's `bytes`, in rank order, at rank 0 (`None` elsewhere). Every rank must
    /// call it, in the same order.
    fn gather(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>>;
}

/// Rows `rank` takes of `rows` over `size` ranks: contiguous, the first `rows % size`
/// ranks one row more.
pub fn slab(rows: usize, rank: usize, size: usize) -> Range<usize> {
    let size = size.max(1);
    let (base, extra) = (rows / size, rows % size);
    let start = rank * base + rank.min(extra);
    let end = start + base + usize::from(rank < extra);
    start.min(rows)..end.min(rows)
}

/// The GPU a rank runs on when the run names none: its host-local rank modulo the
/// GPUs it sees (one rank per GPU under `mpirun -np <GPUs>`; more ranks than GPUs share
/// them round-robin); `None` when it sees no GPU.
pub fn rank_gpu(local_rank: usize, visible_gpus: usize) -> Option<usize> {
    (visible_gpus > 0).then(|| local_rank % visible_gpus)
}

/// Gathers `u32`s at rank 0.
pub fn gather_u32(ranks: &dyn Ranks, values: &[u32]) -> Option<Vec<Vec<u32>>> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    ranks.gather(&bytes).map(|all| {
        all.iter()
            .map(|b| {
                b.chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            })
            .collect()
    })
}

/// Gathers `f64`s at rank 0.
pub fn gather_f64(ranks: &dyn Ranks, values: &[f64]) -> Option<Vec<Vec<f64>>> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    ranks.gather(&bytes).map(|all| {
        all.iter()
            .map(|b| {
                b.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect()
            })
            .collect()
    })
}

/// The 1-based global rows of every rank's 1-based slab categories, ascending.
pub fn merge_categories(rows: usize, per_rank: &[Vec<u32>]) -> Vec<u32> {
    let size = per_rank.len();
    let mut all: Vec<u32> = per_rank
        .iter()
        .enumerate()
        .flat_map(|(rank, cats)| {
            let start = slab(rows, rank, size).start as u32;
            cats.iter().map(move |&c| start + c)
        })
        .collect();
    all.sort_unstable();
    all
}

/// One process: rank 0 of 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct Single;

impl Ranks for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn gather(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
        Some(vec![bytes.to_vec()])
    }
}

/// Ranks as threads of one process (the rank logic tested without MPI).
#[derive(Clone)]
pub struct InProcess {
    rank: usize,
    shared: Arc<Shared>,
}

struct Shared {
    size: usize,
    barrier: Barrier,
    slots: Mutex<Vec<Vec<u8>>>,
}

impl InProcess {
    /// `size` ranks, one for each thread to run.
    pub fn group(size: usize) -> Vec<InProcess> {
        let size = size.max(1);
        let shared = Arc::new(Shared {
            size,
            barrier: Barrier::new(size),
            slots: Mutex::new(vec![Vec::new(); size]),
        });
        (0..size)
            .map(|rank| InProcess {
                rank,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Ranks for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn gather(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
        let lock = || self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        lock()[self.rank] = bytes.to_vec();
        self.shared.barrier.wait();
        let result = (self.rank == 0).then(|| lock().clone());
        // Nobody writes the next gather before rank 0 has read this one.
        self.shared.barrier.wait();
        result
    }
}

#[cfg(feature = "mpi")]
pub use self::mpi_ranks::MpiRanks;

#[cfg(feature = "mpi")]
mod mpi_ranks {
    use mpi::datatype::PartitionMut;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;

    use super::Ranks;

    /// The ranks of `MPI_COMM_WORLD` (MPI is initialised by [`MpiRanks::init`] and
    /// finalised when the value is dropped).
    pub struct MpiRanks {
        world: SimpleCommunicator,
        local_rank: usize,
        _universe: mpi::environment::Universe,
    }

    // SAFETY: the communicator is used from the thread that owns the value only (the
    // engine gathers from the main thread); MPI is initialised with the funneled level.
    unsafe impl Send for MpiRanks {}
    unsafe impl Sync for MpiRanks {}

    impl MpiRanks {
        /// Initialises MPI; `None` when it was initialised already or cannot be.
        pub fn init() -> Option<Self> {
            let universe = mpi::initialize()?;
            let world = universe.world();
            // The ranks sharing this host's memory, ordered by global rank.
            let local_rank = world.split_shared(world.rank()).rank().max(0) as usize;
            Some(Self {
                world,
                local_rank,
                _universe: universe,
            })
        }
    }

    impl Ranks for MpiRanks {
        fn rank(&self) -> usize {
            self.world.rank().max(0) as usize
        }
        fn size(&self) -> usize {
            self.world.size().max(1) as usize
        }
        fn local_rank(&self) -> usize {
            self.local_rank
        }
        fn gather(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
            // Every payload starts with one byte: the pointer of an empty slice is Rust's
            // dangling 0x1, which is Open MPI's MPI_IN_PLACE.
            let framed: Vec<u8> = std::iter::once(1u8).chain(bytes.iter().copied()).collect();
            let bytes = &framed[..];
            let root = self.world.process_at_rank(0);
            let count = bytes.len() as i32;
            if self.rank() == 0 {
                let mut counts = vec![0i32; self.size()];
                root.gather_into_root(&count, &mut counts[..]);
                let displs: Vec<i32> = counts
                    .iter()
                    .scan(0i32, |acc, &c| {
                        let d = *acc;
                        *acc += c;
                        Some(d)
                    })
                    .collect();
                let total: i32 = counts.iter().sum();
                let mut all = vec![0u8; total.max(0) as usize];
                {
                    let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
                    root.gather_varcount_into_root(bytes, &mut partition);
                }
                Some(
                    counts
                        .iter()
                        .zip(&displs)
                        .map(|(&c, &d)| all[(d + 1) as usize..(d + c) as usize].to_vec())
                        .collect(),
                )
            } else {
                root.gather_into(&count);
                root.gather_varcount_into(bytes);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_cover_the_rows_once_in_order() {
        for rows in [0usize, 1, 5, 7, 60000] {
            for size in 1..=6 {
                let slabs: Vec<_> = (0..size).map(|r| slab(rows, r, size)).collect();
                assert_eq!(slabs[0].start, 0);
                assert_eq!(slabs[size - 1].end, rows);
                for pair in slabs.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                    assert!(pair[0].len() >= pair[1].len());
                    assert!(pair[0].len() - pair[1].len() <= 1);
                }
            }
        }
        assert_eq!(slab(7, 0, 3), 0..3);
        assert_eq!(slab(7, 2, 3), 5..7);
    }

    #[test]
    fn ranks_take_the_gpus_round_robin_and_none_without_a_gpu() {
        assert_eq!(rank_gpu(0, 0), None);
        assert_eq!(rank_gpu(3, 0), None);
        let four: Vec<_> = (0..4).map(|r| rank_gpu(r, 4)).collect();
        assert_eq!(four, [Some(0), Some(1), Some(2), Some(3)]);
        let shared: Vec<_> = (0..5).map(|r| rank_gpu(r, 2)).collect();
        assert_eq!(shared, [Some(0), Some(1), Some(0), Some(1), Some(0)]);
    }

    #[test]
    fn threads_gather_at_rank_zero_and_categories_merge() {
        let rows = 10;
        let group = InProcess::group(3);
        let results: Vec<Option<Vec<u32>>> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|ranks| {
                    s.spawn(move || {
                        let r = ranks.rank();
                        // Each rank finds its slab's first row (1-based within the slab).
                        let mine = vec![1u32];
                        let times = gather_f64(ranks, &[r as f64]);
                        let cats = gather_u32(ranks, &mine);
                        assert_eq!(times.is_some(), r == 0);
                        cats.map(|all| merge_categories(rows, &all))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results[0], Some(vec![1, 5, 8]));
        assert!(results[1].is_none() && results[2].is_none());
        assert_eq!(gather_u32(&Single, &[4, 5]), Some(vec![vec![4, 5]]));
    }
}
