//! Ordering work between the streams of one GPU.
//!
//! [`Gpu::new`] turns cudarc's per-buffer event tracking off: with it, every buffer argument
//! of every launch cost a stream wait and an event record on the host (about 18 driver calls
//! for a launch of eight buffers; snicit on the official 1024-120, whose launches are short,
//! took 4.87 ms with it and 4.49 without, one H100, 2026-11-27). Work on the
//! main stream ([`Gpu::stream`]) is ordered by the stream itself; code that uses a second
//! stream ([`Gpu::new_stream`]: the weight streams, the copy-rate probe) orders it against
//! the main stream with a [`Fence`] and synchronises that stream before it frees buffers the
//! second stream used.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use crate::{CudaError, DriverResultExt, Gpu};

/// The environment variable that, set to `1`, keeps cudarc's event tracking on (to measure
/// its cost; the fences order the streams either way).
pub const TRACKING_VAR: &str = "SPDNN_CUDARC_EVENT_TRACKING";

/// A point in one stream's work that another stream can wait for (an event without
/// timing, recorded again for each use).
pub struct Fence {
    event: CudaEvent,
}

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence").finish_non_exhaustive()
    }
}

impl Fence {
    /// A fence of `gpu`'s context.
    pub fn new(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            event: gpu
                .context()
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .context("creating a stream fence")?,
        })
    }

    /// Marks the work enqueued on `stream` so far.
    pub fn mark(&self, stream: &CudaStream) -> Result<(), CudaError> {
        self.event
            .record(stream)
            .context("recording a stream fence")
    }

    /// Makes the work enqueued on `stream` from now on wait for the work the last
    /// [`Self::mark`] marked (a later mark does not change what it waits for).
    pub fn wait_on(&self, stream: &CudaStream) -> Result<(), CudaError> {
        stream
            .wait(&self.event)
            .context("waiting on a stream fence")
    }

    /// Makes `later` wait for everything enqueued on `earlier` so far.
    pub fn order(&self, earlier: &CudaStream, later: &CudaStream) -> Result<(), CudaError> {
        self.mark(earlier)?;
        self.wait_on(later)
    }
}

/// Makes `later` wait for everything enqueued on `earlier` so far (a fence used once).
pub fn join(gpu: &Gpu, earlier: &CudaStream, later: &CudaStream) -> Result<(), CudaError> {
    Fence::new(gpu)?.order(earlier, later)
}

/// A second stream that fills two device slots while the main stream reads them: the double
/// buffering of streamed weights (BF's slab batches, XY's layers), ordered with fences. A
/// copy into a slot waits for the main stream's work when it begins (the kernels that read
/// the slot before, and its allocation); the main stream's later work waits for the slot's
/// last copy once [`Self::ready`] says so. Dropped, it waits for its copies: hold it as
/// the first field of its owner, so that the slots and the pinned sources are freed after.
pub struct SlotCopies {
    copy: Arc<CudaStream>,
    main: Arc<CudaStream>,
    /// Each slot's last copy.
    copied: [Fence; 2],
    /// The main stream's work when a copy begins.
    released: Fence,
}

impl std::fmt::Debug for SlotCopies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotCopies").finish_non_exhaustive()
    }
}

impl SlotCopies {
    /// A new copy stream of `gpu`, against its main stream.
    pub fn new(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            copy: gpu.new_stream()?,
            main: gpu.stream().clone(),
            copied: [Fence::new(gpu)?, Fence::new(gpu)?],
            released: Fence::new(gpu)?,
        })
    }

    /// The main stream, which reads the slots.
    pub fn main(&self) -> &Arc<CudaStream> {
        &self.main
    }

    /// The copy stream, for copies into a slot, after the main stream's work so far.
    pub fn begin(&self) -> Result<&Arc<CudaStream>, CudaError> {
        self.released.order(&self.main, &self.copy)?;
        Ok(&self.copy)
    }

    /// The copies enqueued since [`Self::begin`] are `slot`'s, which its readers wait for.
    pub fn end(&self, slot: usize) -> Result<(), CudaError> {
        self.copied[slot].mark(&self.copy)
    }

    /// The main stream's work from now on waits for `slot`'s last copy.
    pub fn ready(&self, slot: usize) -> Result<(), CudaError> {
        self.copied[slot].wait_on(&self.main)
    }
}

impl Drop for SlotCopies {
    fn drop(&mut self) {
        // The slots and the pinned sources are freed next: no copy may still use them (an
        // error here has nowhere to go; the device reports it again on its next call).
        let _ = self.copy.synchronize();
    }
}
