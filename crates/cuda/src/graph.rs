//! CUDA-graph capture on a stream.

use std::sync::{Arc, RwLock, RwLockReadGuard};

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaGraph, CudaStream, DriverError};

use crate::{CudaError, DriverResultExt, Gpu};

/// Held for writing by a capture and for reading by every whole-device synchronisation
/// ([`Gpu::new`], [`Gpu::synchronize`], the retry of an allocation): threads of one process
/// share a device's primary context, and a `cuCtxSynchronize` from one thread while another
/// captures a stream of that context would have to wait on the capturing stream, which
/// invalidates the capture (a GPU test suite on two threads lost a capture so, 2026-11-28).
static CAPTURING: RwLock<()> = RwLock::new(());

/// [`CAPTURING`] held for reading: no capture starts until the guard drops.
fn captures_held_off() -> RwLockReadGuard<'static, ()> {
    CAPTURING
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `ctx.synchronize()` with captures held off meanwhile ([`CAPTURING`]): every
/// whole-device synchronisation of the crate goes through here.
pub(crate) fn synchronize(ctx: &CudaContext) -> Result<(), DriverError> {
    let _no_capture = captures_held_off();
    ctx.synchronize()
}

/// Waits until all work on every stream of the device is done and reports errors recorded by
/// earlier asynchronous frees. The caller holds [`CAPTURING`] (either way).
fn settle(ctx: &CudaContext) -> Result<(), CudaError> {
    ctx.synchronize().context("synchronising the device")?;
    ctx.check_err()
        .context("a deferred operation (e.g. a free) reported")
}

/// [`settle`] with captures held off meanwhile: [`Gpu::synchronize`].
pub(crate) fn settle_guarded(ctx: &CudaContext) -> Result<(), CudaError> {
    let _no_capture = captures_held_off();
    settle(ctx)
}

/// An instantiated CUDA graph, replayed on the stream it was captured on.
pub struct CapturedGraph {
    graph: CudaGraph,
}

impl std::fmt::Debug for CapturedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapturedGraph").finish_non_exhaustive()
    }
}

impl CapturedGraph {
    /// Uploads the graph to the device ahead of the first launch (optional; makes
    /// the first launch as fast as later ones).
    pub fn upload(&self) -> Result<(), CudaError> {
        self.graph.upload().context("uploading a CUDA graph")
    }

    /// Enqueues one replay of the whole graph on its stream (asynchronous).
    pub fn launch(&self) -> Result<(), CudaError> {
        self.graph.launch().context("launching a CUDA graph")
    }

    /// The cudarc graph.
    pub fn inner(&self) -> &CudaGraph {
        &self.graph
    }
}

impl Gpu {
    /// Captures the work `body` enqueues on `stream` into a CUDA graph
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`) and instantiates it.
    ///
    /// `stream` must be a `new_stream()` stream (e.g. [`Gpu::stream`]), never the
    /// legacy NULL stream. The device is synchronised first, and cudarc's automatic
    /// cross-stream event tracking, should a context have it on ([`Gpu::new`] turns it
    /// off), is paused during the capture (a wait on an event recorded outside the capture
    /// would invalidate it), so: enqueue work only on `stream` inside `body`, do not use
    /// this device from other threads meanwhile (whole-device synchronisations of other
    /// threads wait for the capture; `body` must not synchronise the device itself, nor
    /// allocate, whose retry when memory is short synchronises: it would wait on the capture
    /// it is in), and order later work on other streams
    /// after the graph yourself ([`crate::Fence`]). Buffers used inside must outlive the
    /// graph.
    pub fn capture_graph<F>(
        &self,
        stream: &Arc<CudaStream>,
        body: F,
    ) -> Result<CapturedGraph, CudaError>
    where
        F: FnOnce(&Arc<CudaStream>) -> Result<(), CudaError>,
    {
        if stream.cu_stream().is_null() {
            return Err(CudaError::InvalidArgument(
                "CUDA graphs cannot be captured on the legacy NULL stream; use Gpu::stream() or Gpu::new_stream()".into(),
            ));
        }
        // One capture at a time in the process, and no whole-device synchronisation of
        // another thread meanwhile ([`CAPTURING`]).
        let _capturing = CAPTURING
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ctx = self.context();
        settle(ctx)?;
        let was_tracking = ctx.is_event_tracking();
        // SAFETY: tracking is paused only for the capture; the device was synchronised,
        // so no earlier cross-stream dependency is pending.
        unsafe { ctx.disable_event_tracking() };
        let result = (|| {
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .context("beginning stream capture")?;
            let body_result = body(stream);
            // Always end the capture so the stream is usable again.
            let ended = stream
                .end_capture(CUgraphInstantiate_flags(0))
                .context("ending stream capture and instantiating the graph");
            body_result?;
            match ended? {
                Some(graph) => Ok(CapturedGraph { graph }),
                None => Err(CudaError::InvalidArgument(
                    "stream capture produced no graph (nothing was enqueued)".into(),
                )),
            }
        })();
        if was_tracking {
            // SAFETY: restores the state found on entry.
            unsafe { ctx.enable_event_tracking() };
        }
        result
    }
}
