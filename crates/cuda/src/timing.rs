//! CUDA-event timing.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};

use crate::{CudaError, DriverResultExt};

/// Times GPU work on a stream with two `CU_EVENT_DEFAULT` events (timing enabled;
/// cudarc's `new_event(None)` would disable timing).
///
/// ```ignore
/// let mut timer = gpu.timer()?;
/// timer.start(gpu.stream())?;
/// /* launches */
/// let ms = timer.stop(gpu.stream())?;
/// ```
#[derive(Debug)]
pub struct EventTimer {
    start: CudaEvent,
    stop: CudaEvent,
    started: bool,
}

impl EventTimer {
    /// Creates the two events in `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<EventTimer, CudaError> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        Ok(EventTimer {
            start: ctx.new_event(flags).context("creating a timing event")?,
            stop: ctx.new_event(flags).context("creating a timing event")?,
            started: false,
        })
    }

    /// Records the start event on `stream`.
    pub fn start(&mut self, stream: &CudaStream) -> Result<(), CudaError> {
        self.start
            .record(stream)
            .context("recording the start event")?;
        self.started = true;
        Ok(())
    }

    /// Records the stop event on `stream`, waits for it, and returns the milliseconds
    /// between start and stop as measured on the device.
    pub fn stop(&mut self, stream: &CudaStream) -> Result<f64, CudaError> {
        if !self.started {
            return Err(CudaError::InvalidArgument(
                "EventTimer::stop called before start".into(),
            ));
        }
        self.stop
            .record(stream)
            .context("recording the stop event")?;
        self.started = false;
        let ms = self
            .start
            .elapsed_ms(&self.stop)
            .context("reading the elapsed time between events")?;
        Ok(f64::from(ms))
    }
}
