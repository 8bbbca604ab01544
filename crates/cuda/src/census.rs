//! Counts of the global-memory accesses a kernel made and the ones it skipped, one record
//! per layer, gathered by the census variants of the GLARE kernels (`kernels-cu/glare.cuh`).

/// Words of one layer's record on the device, in the order of the fields of
/// [`AccessCounts`]; reaches the kernels as `GLARE_CENSUS_WORDS` (`spdnn_glare::DEFINES`),
/// as do the word indices below (`GLARE_READS`, …).
pub const CENSUS_WORDS: usize = 8;

/// Word of [`AccessCounts::activation_reads`].
pub const READS: usize = 0;
/// Word of [`AccessCounts::activation_reads_skipped`].
pub const READS_SKIPPED: usize = 1;
/// Word of [`AccessCounts::activation_writes`].
pub const WRITES: usize = 2;
/// Word of [`AccessCounts::activation_writes_skipped`].
pub const WRITES_SKIPPED: usize = 3;
/// Word of [`AccessCounts::weight_reads`].
pub const WEIGHT_READS: usize = 4;
/// Word of [`AccessCounts::recorder_reads`].
pub const RECORDER_READS: usize = 5;
/// Word of [`AccessCounts::recorder_writes`].
pub const RECORDER_WRITES: usize = 6;
/// Word of [`AccessCounts::write_backs`].
pub const WRITE_BACKS: usize = 7;

/// One layer's global-memory accesses, counted in elements (a float, an index or a flag
/// byte each count one, as in the GLARE paper's model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessCounts {
    /// Activations read.
    pub activation_reads: u64,
    /// Activation reads skipped because their unit was recorded at the upper bound.
    pub activation_reads_skipped: u64,
    /// Activations written (write-backs excluded).
    pub activation_writes: u64,
    /// Activation writes skipped because the block's part of a unit was at the bound.
    pub activation_writes_skipped: u64,
    /// Weight entries and offsets read.
    pub weight_reads: u64,
    /// Recorder flags (and unit bookkeeping words) read.
    pub recorder_reads: u64,
    /// Recorder flags (and unit bookkeeping words) written.
    pub recorder_writes: u64,
    /// Bound values written back into skipped parts of a unit that another block vetoed.
    pub write_backs: u64,
}

impl AccessCounts {
    /// A record from its [`CENSUS_WORDS`] device words; `None` when `words` is shorter.
    pub fn from_words(words: &[u64]) -> Option<Self> {
        let w: &[u64; CENSUS_WORDS] = words.get(..CENSUS_WORDS)?.try_into().ok()?;
        Some(Self {
            activation_reads: w[READS],
            activation_reads_skipped: w[READS_SKIPPED],
            activation_writes: w[WRITES],
            activation_writes_skipped: w[WRITES_SKIPPED],
            weight_reads: w[WEIGHT_READS],
            recorder_reads: w[RECORDER_READS],
            recorder_writes: w[RECORDER_WRITES],
            write_backs: w[WRITE_BACKS],
        })
    }

    /// Accesses the same kernel makes without the recorder: every skipped activation
    /// read and write happens, no flag is touched.
    pub fn without_recorder(&self) -> u64 {
        self.activation_reads
            + self.activation_reads_skipped
            + self.activation_writes
            + self.activation_writes_skipped
            + self.weight_reads
    }

    /// Accesses made with the recorder, its own reads, writes and write-backs included.
    pub fn with_recorder(&self) -> u64 {
        self.activation_reads
            + self.activation_writes
            + self.write_backs
            + self.weight_reads
            + self.recorder_reads
            + self.recorder_writes
    }

    /// Accesses avoided (negative when the recorder costs more than it saves).
    pub fn avoided(&self) -> i64 {
        self.without_recorder() as i64 - self.with_recorder() as i64
    }

    /// `avoided / without_recorder` (0 for a layer that touched nothing): the GLARE
    /// paper's reduction rate (its Fig. 3).
    pub fn reduction(&self) -> f64 {
        let base = self.without_recorder();
        if base == 0 {
            0.0
        } else {
            self.avoided() as f64 / base as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_map_to_fields_in_order() {
        let counts = AccessCounts::from_words(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(counts.activation_reads, 1);
        assert_eq!(counts.write_backs, 8);
        assert_eq!(counts.without_recorder(), 1 + 2 + 3 + 4 + 5);
        assert_eq!(counts.with_recorder(), 1 + 3 + 8 + 5 + 6 + 7);
        assert_eq!(counts.avoided(), 15 - 30);
        assert!(AccessCounts::from_words(&[1, 2, 3]).is_none());
    }

    #[test]
    fn word_indices_cover_the_record_once() {
        let mut words = [
            READS,
            READS_SKIPPED,
            WRITES,
            WRITES_SKIPPED,
            WEIGHT_READS,
            RECORDER_READS,
            RECORDER_WRITES,
            WRITE_BACKS,
        ];
        words.sort_unstable();
        assert_eq!(words.to_vec(), (0..CENSUS_WORDS).collect::<Vec<_>>());
    }

    #[test]
    fn reduction_is_the_share_avoided() {
        let counts = AccessCounts {
            activation_reads_skipped: 60,
            activation_reads: 40,
            weight_reads: 100,
            recorder_reads: 10,
            ..AccessCounts::default()
        };
        assert_eq!(counts.without_recorder(), 200);
        assert_eq!(counts.with_recorder(), 150);
        assert!((counts.reduction() - 0.25).abs() < 1e-12);
        assert_eq!(AccessCounts::default().reduction(), 0.0);
    }
}
