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

/// A chain of timing events on one stream: [`Timeline::mark`] records an event after
/// the work enqueued so far; [`Timeline::intervals`] waits and returns the time between
/// consecutive marks. Used for per-layer and per-stage breakdowns in a profiled run.
#[derive(Debug)]
pub struct Timeline {
    ctx: Arc<CudaContext>,
    marks: Vec<(String, CudaEvent)>,
}

impl Timeline {
    /// An empty timeline in `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Timeline {
        Timeline {
            ctx: ctx.clone(),
            marks: Vec::new(),
        }
    }

    /// Records an event labelled `label` on `stream`.
    pub fn mark(&mut self, stream: &CudaStream, label: impl Into<String>) -> Result<(), CudaError> {
        let event = self
            .ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating a timeline event")?;
        event.record(stream).context("recording a timeline event")?;
        self.marks.push((label.into(), event));
        Ok(())
    }

    /// Waits for the last mark and returns, for every mark after the first, its label and
    /// the milliseconds since the previous mark.
    pub fn intervals(&self) -> Result<Vec<(String, f64)>, CudaError> {
        let Some((_, last)) = self.marks.last() else {
            return Ok(Vec::new());
        };
        last.synchronize().context("waiting for the timeline")?;
        self.marks
            .windows(2)
            .map(|pair| {
                let ms = pair[0]
                    .1
                    .elapsed_ms(&pair[1].1)
                    .context("reading a timeline interval")?;
                Ok((pair[1].0.clone(), f64::from(ms)))
            })
            .collect()
    }
}
