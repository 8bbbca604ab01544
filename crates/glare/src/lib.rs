//! GLARE (Jiang, Huang and Ho, HPEC 2023): global-memory access reduction for sparse
//! inference kernels whose activation has an upper bound.
//!
//! A *recorder* holds one flag per *unit*, a segment of `m` consecutive neurons of one
//! row (BF, SNIG, SNICIT) or of one tile of sample columns (XY): the flag is set when
//! every value of the unit equals the upper bound. A kernel reading a flagged unit uses
//! the bound instead of loading it (the paper's Algorithm 1); a block whose part of an
//! output unit is all at the bound does not write it (Algorithm 2). When a unit spans the
//! outputs of several blocks, each block reports to the unit's bookkeeping word and the
//! last one to arrive sets the flag, or, when some block vetoed it, writes the bound back
//! into the parts that were skipped, so memory and flags always agree (the paper's
//! write-back analogy, made exact). Two recorders are swapped each layer, as are the
//! activations.
//!
//! This crate holds the device side ([`Recorder`], [`Census`]), the options ([`Glare`]),
//! the access-count model that picks `m` ([`model`]) and the trait a kernel family
//! implements to have a GLARE variant ([`GlareKernel`]: its unit, candidate lengths and
//! expected accesses, written beside the kernel). The kernels themselves are variants of
//! each family's kernels (`kernels-cu/glare.cuh` holds the shared device code), chosen at
//! run time by the kernel crates when their options carry a [`Glare`].

pub mod model;
mod recorder;

pub use model::GlareKernel;
pub use recorder::{Census, FILL_LISTED_ROWS, GLARE, Recorder};
pub use spdnn_cuda::census::{AccessCounts, CENSUS_WORDS};

use spdnn_cuda::census;
use spdnn_cuda::{Define, KernelDecl};

/// The definitions `kernels-cu/glare.cuh` requires, from their Rust constants: the census
/// record (its length and the word of each count, [`spdnn_cuda::census`]) and
/// `GLARE_MAX_ROW_UNITS` ([`model::MAX_ROW_UNITS`]). Every source including glare.cuh is
/// compiled with them (`KernelSource::with_defines(&[spdnn_glare::DEFINES, …])`).
pub const DEFINES: &[Define] = &[
    Define::new("GLARE_CENSUS_WORDS", CENSUS_WORDS as u64),
    Define::new("GLARE_READS", census::READS as u64),
    Define::new("GLARE_READS_SKIPPED", census::READS_SKIPPED as u64),
    Define::new("GLARE_WRITES", census::WRITES as u64),
    Define::new("GLARE_WRITES_SKIPPED", census::WRITES_SKIPPED as u64),
    Define::new("GLARE_WEIGHT_READS", census::WEIGHT_READS as u64),
    Define::new("GLARE_RECORDER_READS", census::RECORDER_READS as u64),
    Define::new("GLARE_RECORDER_WRITES", census::RECORDER_WRITES as u64),
    Define::new("GLARE_WRITE_BACKS", census::WRITE_BACKS as u64),
    Define::new("GLARE_MAX_ROW_UNITS", model::MAX_ROW_UNITS as u64),
];

/// Every kernel this crate declares (`glare.cu`), checked against the source by the
/// kernel-table test.
pub const KERNELS: &[KernelDecl] = &[FILL_LISTED_ROWS];

/// GLARE settings of a kernel crate's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Glare {
    /// Segment length `m`: neurons per recorder unit (a power of two; each kernel has
    /// its own further constraints, see [`GlareKernel::candidates`]).
    pub segment: usize,
    /// After the timed runs, run once more with the census kernels and return the
    /// accesses of every layer (`GpuInference::accesses`).
    pub census: bool,
}

impl Glare {
    /// GLARE with segment length `segment` and a census.
    pub fn new(segment: usize) -> Self {
        Self {
            segment,
            census: true,
        }
    }

    /// Checks the segment length against what `K` accepts for `shape`
    /// ([`model::check_segment`]) and returns `log2(segment)`.
    pub fn checked_shift<K: GlareKernel>(
        &self,
        shape: &model::Shape,
    ) -> Result<u32, spdnn_cuda::CudaError> {
        model::check_segment::<K>(shape, self.segment)
            .map_err(spdnn_cuda::CudaError::InvalidArgument)?;
        self.shift()
    }

    /// `log2(segment)`, or an error naming the value when it is not a power of two.
    pub fn shift(&self) -> Result<u32, spdnn_cuda::CudaError> {
        if self.segment == 0 || !self.segment.is_power_of_two() {
            return Err(spdnn_cuda::CudaError::InvalidArgument(format!(
                "the GLARE segment length must be a power of two, not {}",
                self.segment
            )));
        }
        Ok(self.segment.trailing_zeros())
    }
}
