//! Device discovery, the per-device [`Gpu`] handle, the module registry and
//! memory-accounted buffers.

use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    DriverError, PinnedHostSlice, ValidAsZeroBits,
};

use crate::compile::{CompileTarget, driver_present};
use crate::modules::{CompileStats, LastHandle, Loader, ModuleSpec, PreparationClock};
use crate::{CudaError, DriverResultExt, Kernel, KernelDecl, KernelSource};

/// What [`probe`] reports about one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal (as `CUDA_VISIBLE_DEVICES` exposes it).
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (i32, i32),
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// Free device memory in bytes at probe time.
    pub free_memory: usize,
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
}

impl DeviceInfo {
    /// The NVRTC architecture name, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        arch_name(self.compute_capability)
    }
}

fn arch_name((major, minor): (i32, i32)) -> String {
    format!("sm_{major}{minor}")
}

/// Number of visible devices (driver initialisation included); no driver is
/// [`CudaError::NoDriver`], no device is `Ok(0)`.
pub fn device_count() -> Result<usize, CudaError> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    match CudaContext::device_count() {
        Ok(n) => Ok(n.max(0) as usize),
        Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(0),
        Err(e) => Err(CudaError::driver("initialising the CUDA driver", e)),
    }
}

/// Lists every visible device. Never panics: no driver gives [`CudaError::NoDriver`],
/// zero devices give [`CudaError::NoDevice`].
pub fn probe() -> Result<Vec<DeviceInfo>, CudaError> {
    let count = device_count()?;
    if count == 0 {
        return Err(CudaError::NoDevice {
            requested: 0,
            available: 0,
        });
    }
    (0..count)
        .map(|ordinal| {
            let ctx = CudaContext::new(ordinal)
                .context(&format!("creating a context on device {ordinal}"))?;
            device_info(&ctx)
        })
        .collect()
}

fn device_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, CudaError> {
    let ordinal = ctx.ordinal();
    let what = |s: &str| format!("querying {s} of device {ordinal}");
    let (free, total) = ctx.mem_get_info().context(&what("memory"))?;
    let sm_count = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .context(&what("the SM count"))?;
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().context(&what("the name"))?,
        compute_capability: ctx
            .compute_capability()
            .context(&what("the compute capability"))?,
        total_memory: total,
        free_memory: free,
        sm_count: sm_count.max(0) as u32,
    })
}

/// Device memory as seen by the driver and by this process's accounted buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Free bytes on the device (all processes).
    pub free: usize,
    /// Total bytes on the device.
    pub total: usize,
    /// Bytes currently held by live [`DeviceBuffer`]s of this process on this device.
    pub held_by_us: usize,
}

/// Per-ordinal byte counters shared by every [`Gpu`] handle of the process.
fn held_counter(ordinal: usize) -> Arc<AtomicUsize> {
    static COUNTERS: OnceLock<Mutex<HashMap<usize, Arc<AtomicUsize>>>> = OnceLock::new();
    let mut map = COUNTERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    map.entry(ordinal).or_default().clone()
}

/// A budget over the buffers allocated through one [`Gpu`] handle and its clones
/// ([`Gpu::with_budget`]): what they hold, the peak, and the first allocation refused.
#[derive(Debug)]
struct Scope {
    limit: usize,
    held: AtomicUsize,
    peak: AtomicUsize,
    refused: Mutex<Option<Refusal>>,
}

impl Scope {
    fn add(&self, bytes: usize) {
        let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn refuse(&self, requested: usize, available: usize) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.get_or_insert(Refusal {
            requested,
            available,
            held: self.held.load(Ordering::Relaxed),
        });
    }
}

/// An allocation that did not fit (the budget of a handle, or the device's free memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Bytes asked for.
    pub requested: usize,
    /// Bytes that were available to it.
    pub available: usize,
    /// Bytes the handle's buffers held then.
    pub held: usize,
}

/// A handle's budget: its limit, what its buffers hold now and at most since the last
/// [`Gpu::reset_peak`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes the handle's buffers may hold together.
    pub limit: usize,
    /// Bytes they hold now.
    pub held: usize,
    /// The most they held at once.
    pub peak: usize,
}

/// One CUDA device: its (primary) context, a main stream, compiled modules and
/// accounted memory. Cloning is cheap and shares everything.
#[derive(Debug, Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (i32, i32),
    held: Arc<AtomicUsize>,
    scope: Option<Arc<Scope>>,
    loader: Loader,
    /// Held for its drop: the last clone waits for the compile workers.
    _last_handle: Arc<LastHandle>,
}

impl Gpu {
    /// Opens device `ordinal`. Checks for the driver first and never panics.
    pub fn new(ordinal: usize) -> Result<Gpu, CudaError> {
        let available = device_count()?;
        if ordinal >= available {
            return Err(CudaError::NoDevice {
                requested: ordinal,
                available,
            });
        }
        let ctx = CudaContext::new(ordinal)
            .context(&format!("creating a context on device {ordinal}"))?;
        // SAFETY: before any stream or buffer of this context exists. The project orders
        // its streams itself: everything runs on the main stream but the weight copies and
        // the copy-rate probe, which order themselves with fences (`crate::order`).
        // SPDNN_CUDARC_EVENT_TRACKING=1 keeps cudarc's tracking on (both then order the
        // streams): to measure what it costs.
        if std::env::var_os(crate::order::TRACKING_VAR).is_none_or(|v| v != "1") {
            unsafe { ctx.disable_event_tracking() };
        }
        let stream = ctx
            .new_stream()
            .context(&format!("creating a stream on device {ordinal}"))?;
        // Other handles of this device in the process may have frees pending on their
        // streams (asynchronous, stream-ordered): finish them, so that their memory counts as
        // free here (cudarc did this when it made a context's first stream with its event
        // tracking on).
        crate::graph::synchronize(&ctx).context(&format!("synchronising device {ordinal}"))?;
        let name = ctx
            .name()
            .context(&format!("querying the name of device {ordinal}"))?;
        let compute_capability = ctx.compute_capability().context(&format!(
            "querying the compute capability of device {ordinal}"
        ))?;
        let loader = Loader::new(ctx.clone(), compute_capability);
        Ok(Gpu {
            _last_handle: Arc::new(LastHandle::of(&loader)),
            loader,
            ctx,
            stream,
            name,
            compute_capability,
            held: held_counter(ordinal),
            scope: None,
        })
    }

    /// A handle to the same device, context and stream whose buffers (and those of its
    /// clones) may hold at most `limit` bytes together: a larger allocation is refused with
    /// [`CudaError::OutOfMemory`], [`Gpu::memory`] reports at most what is left as free, and
    /// the peak is tracked ([`Gpu::budget`]). Buffers allocated before are not counted.
    pub fn with_budget(&self, limit: usize) -> Gpu {
        Gpu {
            scope: Some(Arc::new(Scope {
                limit,
                held: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                refused: Mutex::new(None),
            })),
            ..self.clone()
        }
    }

    /// The budget of a handle made by [`Gpu::with_budget`].
    pub fn budget(&self) -> Option<Budget> {
        self.scope.as_ref().map(|s| Budget {
            limit: s.limit,
            held: s.held.load(Ordering::Relaxed),
            peak: s.peak.load(Ordering::Relaxed),
        })
    }

    /// Starts the budget's peak again from what is held now.
    pub fn reset_peak(&self) {
        if let Some(s) = &self.scope {
            s.peak
                .store(s.held.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// The first allocation refused since the last call (budgeted handles only), cleared.
    /// A method may turn an out-of-memory error into its own message; this says that
    /// memory was the cause.
    pub fn take_refusal(&self) -> Option<Refusal> {
        let s = self.scope.as_ref()?;
        s.refused.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    /// NVRTC architecture of this device, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        arch_name(self.compute_capability)
    }

    /// Full device description (queries free memory now).
    pub fn info(&self) -> Result<DeviceInfo, CudaError> {
        device_info(&self.ctx)
    }

    /// The cudarc context (the device's primary context).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The main stream: a `new_stream()` (non-blocking) stream, never the legacy NULL
    /// stream, so it can be captured into CUDA graphs.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A further non-blocking stream, e.g. for copies overlapping the main stream. Nothing
    /// orders it against the main stream (cudarc's event tracking is off, see
    /// [`crate::order`]): order it with a [`crate::Fence`], and synchronise it before
    /// dropping buffers it used.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>, CudaError> {
        self.ctx.new_stream().context("creating a stream")
    }

    /// Waits until all work on every stream of this device is done, and reports
    /// errors recorded by earlier asynchronous frees.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        crate::graph::settle_guarded(&self.ctx)
    }

    /// The module of every kernel of `source` on this device, compiled and loaded once
    /// per process (see [`crate::modules`]).
    pub fn module(&self, source: &KernelSource) -> Result<Arc<CudaModule>, CudaError> {
        self.loader.wait_for(ModuleSpec::whole(*source))
    }

    /// Kernel `name` (an `extern "C"` function) of the module of the whole of `source`.
    pub fn function(&self, source: &KernelSource, name: &str) -> Result<CudaFunction, CudaError> {
        self.module(source)?
            .load_function(name)
            .context(&format!("loading kernel {name} from {}", source.name))
    }

    /// The declared kernel `decl`, with its launch shape ([`crate::Kernel`]), from a module
    /// of that kernel alone: compiled (or found compiled by [`Gpu::compile_ahead`]'s
    /// workers) and loaded once per device and process. A kernel its source does not define
    /// is an error naming both.
    pub fn kernel(&self, decl: &KernelDecl) -> Result<Kernel, CudaError> {
        let function = self
            .loader
            .wait_for(ModuleSpec::of(decl))?
            .load_function(decl.name)
            .context(&format!(
                "loading kernel {} from its module of {}",
                decl.name, decl.source.name
            ))?;
        Ok(Kernel::new(*decl, function))
    }

    /// Starts compiling and loading the modules of `decls` on worker threads (one a CPU
    /// core at most, in the order given: the longest first is best) and returns at once,
    /// so that a method's CPU preprocessing runs meanwhile; [`Gpu::kernel`] then finds them
    /// loaded, or waits for the one still compiling. Errors come back from `kernel`. When
    /// the last clone of this handle is dropped, it waits for these workers to end (a run
    /// refused after asking ahead must not leave them inside NVRTC or the driver while the
    /// process exits).
    pub fn compile_ahead<'a>(&self, decls: impl IntoIterator<Item = &'a KernelDecl>) {
        self.loader
            .compile_ahead(decls.into_iter().map(ModuleSpec::of));
    }

    /// What compiling and loading modules has cost this handle and its clones so far
    /// (subtract an earlier snapshot with [`CompileStats::since`]).
    pub fn compile_stats(&self) -> CompileStats {
        self.loader.stats()
    }

    /// A clock for a method's preprocessing that leaves out the time this handle waits for
    /// kernel modules (counted in the run's `compile_ms` instead).
    pub fn preparation_clock(&self) -> PreparationClock {
        PreparationClock::start(&self.loader)
    }

    /// What this device's modules are compiled to: a CUBIN for `sm_XY` where NVRTC targets
    /// it ([`crate::compile_target`]). Needs NVRTC.
    pub fn compile_target(&self) -> Result<CompileTarget, CudaError> {
        self.loader.target()
    }

    /// Free / total device memory and the bytes held by this process's buffers. Under a
    /// budget ([`Gpu::with_budget`]) `free` is at most what the budget has left.
    pub fn memory(&self) -> Result<MemoryInfo, CudaError> {
        let (free, total) = self.ctx.mem_get_info().context("querying device memory")?;
        let free = match &self.scope {
            Some(s) => free.min(s.limit.saturating_sub(s.held.load(Ordering::Relaxed))),
            None => free,
        };
        Ok(MemoryInfo {
            free,
            total,
            held_by_us: self.held.load(Ordering::Relaxed),
        })
    }

    /// Checks that `bytes` fit into free memory. When they do not at first, the
    /// stream-ordered pool may still hold freed blocks: synchronise (which releases
    /// them) and look again.
    fn ensure_fits(&self, bytes: usize) -> Result<(), CudaError> {
        if let Some(s) = &self.scope {
            let left = s.limit.saturating_sub(s.held.load(Ordering::Relaxed));
            if bytes > left {
                s.refuse(bytes, left);
                return Err(CudaError::OutOfMemory {
                    requested: bytes,
                    free: left,
                });
            }
        }
        let (free, _) = self.ctx.mem_get_info().context("querying device memory")?;
        if bytes <= free {
            return Ok(());
        }
        crate::graph::synchronize(&self.ctx).context("synchronising before an allocation")?;
        let (free, _) = self.ctx.mem_get_info().context("querying device memory")?;
        if bytes <= free {
            Ok(())
        } else {
            if let Some(s) = &self.scope {
                s.refuse(bytes, free);
            }
            Err(CudaError::OutOfMemory {
                requested: bytes,
                free,
            })
        }
    }

    fn wrap<T>(&self, slice: CudaSlice<T>, bytes: usize) -> DeviceBuffer<T> {
        self.held.fetch_add(bytes, Ordering::Relaxed);
        if let Some(s) = &self.scope {
            s.add(bytes);
        }
        DeviceBuffer {
            slice: ManuallyDrop::new(slice),
            bytes,
            held: self.held.clone(),
            scope: self.scope.clone(),
        }
    }

    fn map_alloc_error(&self, bytes: usize, e: DriverError) -> CudaError {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let free = self.ctx.mem_get_info().map(|(f, _)| f).unwrap_or(0);
            if let Some(s) = &self.scope {
                s.refuse(bytes, free);
            }
            CudaError::OutOfMemory {
                requested: bytes,
                free,
            }
        } else {
            CudaError::driver(format!("allocating {bytes} bytes"), e)
        }
    }

    /// `n` zeroed elements on the device (on the main stream), accounted in
    /// [`MemoryInfo::held_by_us`]. Too large a request is [`CudaError::OutOfMemory`].
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<DeviceBuffer<T>, CudaError> {
        let bytes = byte_size::<T>(n)?;
        self.ensure_fits(bytes)?;
        let slice = self
            .stream
            .alloc_zeros::<T>(n)
            .map_err(|e| self.map_alloc_error(bytes, e))?;
        Ok(self.wrap(slice, bytes))
    }

    /// A device copy of `host` (allocated and copied on the main stream).
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<DeviceBuffer<T>, CudaError> {
        let bytes = byte_size::<T>(host.len())?;
        self.ensure_fits(bytes)?;
        let slice = self
            .stream
            .clone_htod(host)
            .map_err(|e| self.map_alloc_error(bytes, e))?;
        Ok(self.wrap(slice, bytes))
    }

    /// [`Gpu::upload`] of `host`, or of one default element when `host` is empty: a
    /// zero-length allocation is not a valid kernel argument, and an empty table (a layer
    /// without a CSR rest, …) still needs a pointer.
    pub fn upload_nonempty<T: DeviceRepr + Default + Copy>(
        &self,
        host: &[T],
    ) -> Result<DeviceBuffer<T>, CudaError> {
        if host.is_empty() {
            self.upload(&[T::default()])
        } else {
            self.upload(host)
        }
    }

    /// A device attribute that is a count (SMs, bytes of shared memory, …); a negative
    /// answer reads as 0.
    pub fn attribute_count(&self, attribute: CUdevice_attribute) -> Result<usize, CudaError> {
        let value = self
            .context()
            .attribute(attribute)
            .context("querying a device attribute")?;
        Ok(value.max(0) as usize)
    }

    /// Copies `host` into the start of `dst` on the main stream.
    pub fn upload_into<T: DeviceRepr>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), CudaError> {
        if host.len() > dst.len() {
            return Err(CudaError::InvalidArgument(format!(
                "upload of {} elements into a device buffer of {}",
                host.len(),
                dst.len()
            )));
        }
        self.stream
            .memcpy_htod(host, &mut **dst)
            .context("copying host data to the device")
    }

    /// Copies a device buffer (or view) back to the host; waits for the copy.
    pub fn download<T: DeviceRepr, S: DevicePtr<T>>(&self, src: &S) -> Result<Vec<T>, CudaError> {
        self.stream
            .clone_dtoh(src)
            .context("copying device data to the host")
    }

    /// `n` zeroed elements of page-locked host memory (portable across contexts),
    /// for fast and asynchronous host↔device copies.
    pub fn alloc_pinned<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<PinnedBuffer<T>, CudaError> {
        self.alloc_pinned_with_flags(n, cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE)
    }

    /// Like [`alloc_pinned`](Self::alloc_pinned) but write-combined: fastest for data
    /// the host only writes and the device reads (e.g. weights), slow for host reads.
    pub fn alloc_pinned_write_combined<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<PinnedBuffer<T>, CudaError> {
        use cudarc::driver::sys::{CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_WRITECOMBINED};
        self.alloc_pinned_with_flags(n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED)
    }

    /// `host` copied into new write-combined pinned memory
    /// ([`alloc_pinned_write_combined`](Self::alloc_pinned_write_combined)) of at least one
    /// element: weights kept on the host and streamed to the device.
    pub fn pin_write_combined<T: DeviceRepr + ValidAsZeroBits + Copy>(
        &self,
        host: &[T],
    ) -> Result<PinnedBuffer<T>, CudaError> {
        let mut pinned = self.alloc_pinned_write_combined::<T>(host.len().max(1))?;
        pinned.as_mut_slice()?[..host.len()].copy_from_slice(host);
        Ok(pinned)
    }

    fn alloc_pinned_with_flags<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
        flags: u32,
    ) -> Result<PinnedBuffer<T>, CudaError> {
        let bytes = byte_size::<T>(n)?;
        if bytes >= isize::MAX as usize {
            return Err(CudaError::InvalidArgument(format!(
                "pinned allocation of {bytes} bytes is too large"
            )));
        }
        // SAFETY: the memory is zeroed below before anyone can read it; T is valid
        // as all-zero bits.
        let mut slice = unsafe { self.ctx.alloc_pinned_with_flags::<T>(n, flags) }
            .context(&format!("allocating {bytes} bytes of pinned host memory"))?;
        let ptr = slice
            .as_mut_ptr()
            .context("synchronising a new pinned buffer")?;
        // SAFETY: ptr points at `n` elements of T owned by `slice`.
        unsafe { std::ptr::write_bytes(ptr, 0, n) };
        Ok(PinnedBuffer { slice })
    }

    /// A CUDA-event timer on this device (events created with timing enabled).
    pub fn timer(&self) -> Result<crate::EventTimer, CudaError> {
        crate::EventTimer::new(&self.ctx)
    }

    /// Two events a captured graph records at its first and last node
    /// ([`crate::GraphSpan`]).
    pub fn graph_span(&self) -> Result<crate::GraphSpan, CudaError> {
        crate::GraphSpan::new(&self.ctx)
    }
}

/// `n * size_of::<T>()`, overflow turned into [`CudaError::OutOfMemory`].
fn byte_size<T>(n: usize) -> Result<usize, CudaError> {
    n.checked_mul(std::mem::size_of::<T>())
        .ok_or(CudaError::OutOfMemory {
            requested: usize::MAX,
            free: 0,
        })
}

/// A device allocation whose bytes count towards [`MemoryInfo::held_by_us`] until it
/// is dropped. Dereferences to the cudarc [`CudaSlice`], so kernel launches take
/// `&*buffer` / `&mut *buffer`.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    bytes: usize,
    held: Arc<AtomicUsize>,
    scope: Option<Arc<Scope>>,
}

impl<T> DeviceBuffer<T> {
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The underlying slice, by reference (same as `&*self`).
    pub fn inner(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// The underlying slice, mutably (same as `&mut *self`).
    pub fn inner_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }

    /// Gives up the accounting and returns the plain cudarc slice.
    pub fn into_inner(self) -> CudaSlice<T> {
        let mut me = ManuallyDrop::new(self);
        me.held.fetch_sub(me.bytes, Ordering::Relaxed);
        if let Some(s) = &me.scope {
            s.sub(me.bytes);
        }
        // SAFETY: `me` is never dropped, so the slice and the Arcs are moved out
        // exactly once.
        unsafe {
            let held = std::ptr::read(&me.held);
            drop(held);
            drop(std::ptr::read(&me.scope));
            ManuallyDrop::take(&mut me.slice)
        }
    }
}

impl<T> Deref for DeviceBuffer<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for DeviceBuffer<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Ordering::Relaxed);
        if let Some(s) = &self.scope {
            s.sub(self.bytes);
        }
        // SAFETY: dropped exactly once, here.
        unsafe { ManuallyDrop::drop(&mut self.slice) };
    }
}

/// Zero-initialised page-locked host memory. Dereferences to cudarc's
/// [`PinnedHostSlice`], which `memcpy_htod` / `memcpy_dtoh` accept directly.
#[derive(Debug)]
pub struct PinnedBuffer<T> {
    slice: PinnedHostSlice<T>,
}

impl<T: ValidAsZeroBits> PinnedBuffer<T> {
    /// The host data (waits for pending asynchronous copies into it).
    pub fn as_slice(&self) -> Result<&[T], CudaError> {
        self.slice
            .as_slice()
            .context("synchronising a pinned buffer")
    }

    /// The host data, mutably (waits for pending asynchronous copies).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T], CudaError> {
        self.slice
            .as_mut_slice()
            .context("synchronising a pinned buffer")
    }
}

impl<T> Deref for PinnedBuffer<T> {
    type Target = PinnedHostSlice<T>;
    fn deref(&self) -> &PinnedHostSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut PinnedHostSlice<T> {
        &mut self.slice
    }
}
