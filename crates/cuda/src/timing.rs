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
        let [start, stop] = timing_events(ctx)?;
        Ok(EventTimer {
            start,
            stop,
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

/// The time a captured CUDA graph spends on the GPU, from its first node to its last: two
/// timing events that the graph's own nodes record (`CU_EVENT_RECORD_EXTERNAL` during the
/// capture). An [`EventTimer`] around a replay starts when the stream reaches its start event,
/// before the host has enqueued the graph; the span starts when the graph does, so it leaves
/// out the host's enqueue.
///
/// ```ignore
/// let span = gpu.graph_span()?;
/// let graph = gpu.capture_graph(&stream, |s| { span.open(s)?; /* launches */ span.close(s) })?;
/// graph.launch()?;
/// let ms = span.elapsed_ms()?; // of the last replay
/// ```
#[derive(Debug)]
pub struct GraphSpan {
    open: CudaEvent,
    close: CudaEvent,
}

impl GraphSpan {
    /// Creates the two events in `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<GraphSpan, CudaError> {
        let [open, close] = timing_events(ctx)?;
        Ok(GraphSpan { open, close })
    }

    /// Adds the node that records the opening event to the capture in progress on `stream`:
    /// call it before the graph's first work.
    pub fn open(&self, stream: &CudaStream) -> Result<(), CudaError> {
        record_in_capture(&self.open, stream).context("recording a graph's opening event")
    }

    /// Adds the node that records the closing event: call it after the graph's last work.
    pub fn close(&self, stream: &CudaStream) -> Result<(), CudaError> {
        record_in_capture(&self.close, stream).context("recording a graph's closing event")
    }

    /// Waits for the last replay's closing node and returns the milliseconds between its
    /// two nodes, as measured on the device.
    pub fn elapsed_ms(&self) -> Result<f64, CudaError> {
        let ms = self
            .open
            .elapsed_ms(&self.close)
            .context("reading a graph's span")?;
        Ok(f64::from(ms))
    }
}

/// Two `CU_EVENT_DEFAULT` events in `ctx` (timing enabled; cudarc's `new_event(None)` would
/// disable timing).
fn timing_events(ctx: &Arc<CudaContext>) -> Result<[CudaEvent; 2], CudaError> {
    let event = || {
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .context("creating a timing event")
    };
    Ok([event()?, event()?])
}

/// Records `event` on `stream` as a node of the graph being captured there
/// (`CU_EVENT_RECORD_EXTERNAL`: a node that records the event at each replay, where a plain
/// record only orders the capture).
fn record_in_capture(
    event: &CudaEvent,
    stream: &CudaStream,
) -> Result<(), cudarc::driver::DriverError> {
    use cudarc::driver::sys;
    stream.context().bind_to_thread()?;
    // SAFETY: both handles are live (borrowed); the flag is a valid CUevent_record_flags.
    unsafe {
        sys::cuEventRecordWithFlags(
            event.cu_event(),
            stream.cu_stream(),
            sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32,
        )
    }
    .result()
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
