//! Kernel modules on demand: a module per kernel a run launches, compiled ahead on worker
//! threads, cached on disk as machine code, loaded once per device and process.
//!
//! [`crate::Gpu::kernel`] loads the module of one declared kernel: NVRTC compiles only that
//! kernel of its source, with the device functions and templates it uses (every kernel sits
//! inside `#if SPDNN_KEEP(name)`, `common.cuh`; [`crate::selection_options`]), to a CUBIN
//! for the device's architecture where NVRTC targets it ([`crate::compile_target`]), so the
//! driver loads machine code and compiles nothing; the image is cached on disk
//! ([`KernelCache`]). A method names the kernels it will launch at the start of its
//! preparation ([`crate::Gpu::compile_ahead`]): worker threads compile and load them while
//! the method preprocesses on the CPU, and its later `gpu.kernel` calls find them loaded
//! (or wait for the one still compiling).
//!
//! What this costs is counted per `Gpu` handle and its clones ([`CompileStats`]): the wall
//! time callers waited for modules (a run's `compile_ms`), the NVRTC and load time on every
//! thread, and how many modules were compiled, read from the cache and loaded.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::compile::{CompileTarget, compile_target, nvrtc_supported_archs, ptx_forced};
use crate::{
    CudaError, Define, DriverResultExt, KernelCache, KernelDecl, KernelSource, ModuleImage,
};

/// The code a module holds: one kernel of a source (what runs load), or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleSpec {
    /// The source.
    pub source: KernelSource,
    /// The kernel it keeps; `None`: every kernel of the source.
    pub kernel: Option<&'static str>,
}

impl ModuleSpec {
    /// Every kernel of `source`.
    pub const fn whole(source: KernelSource) -> Self {
        Self {
            source,
            kernel: None,
        }
    }

    /// Only the kernel `decl` declares.
    pub const fn of(decl: &KernelDecl) -> Self {
        Self {
            source: *decl.source,
            kernel: Some(decl.name),
        }
    }

    /// `sz.cu` or `sz.cu:sz_layer_r32_t2_c0`, for messages.
    pub fn label(&self) -> String {
        match self.kernel {
            Some(kernel) => format!("{}:{kernel}", self.source.name),
            None => self.source.name.to_string(),
        }
    }

    /// Its identity in the registries: a `&'static str` source text is one address.
    fn id(&self) -> SpecId {
        SpecId {
            name: self.source.name,
            text: self.source.source.as_ptr() as usize,
            len: self.source.source.len(),
            defines: self.source.defines,
            kernel: self.kernel,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SpecId {
    name: &'static str,
    text: usize,
    len: usize,
    defines: &'static [&'static [Define]],
    kernel: Option<&'static str>,
}

/// What compiling and loading kernel modules has cost a [`crate::Gpu`] handle (and its
/// clones) so far; [`CompileStats::since`] gives what one run cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompileStats {
    /// Wall time callers on this handle waited for modules, ms: compiling them (or waiting
    /// for the worker compiling them) and the driver loading them. What workers did while
    /// the caller went on with other work is not in it. A run's `compile_ms`.
    pub waited_ms: f64,
    /// NVRTC's time (or the disk cache's) for the modules this handle had compiled, summed
    /// over every thread, ms.
    pub nvrtc_ms: f64,
    /// The driver's time loading them, summed over every thread, ms.
    pub load_ms: f64,
    /// Modules NVRTC compiled.
    pub compiled: usize,
    /// Modules read from the disk cache.
    pub from_cache: usize,
    /// Modules the driver loaded.
    pub loaded: usize,
}

impl CompileStats {
    /// What was spent after `earlier` (a snapshot of the same handle).
    pub fn since(&self, earlier: &CompileStats) -> CompileStats {
        CompileStats {
            waited_ms: (self.waited_ms - earlier.waited_ms).max(0.0),
            nvrtc_ms: (self.nvrtc_ms - earlier.nvrtc_ms).max(0.0),
            load_ms: (self.load_ms - earlier.load_ms).max(0.0),
            compiled: self.compiled.saturating_sub(earlier.compiled),
            from_cache: self.from_cache.saturating_sub(earlier.from_cache),
            loaded: self.loaded.saturating_sub(earlier.loaded),
        }
    }

    /// The cost of two runs side by side (several GPUs): the longer wait, the work summed.
    pub fn alongside(&self, other: &CompileStats) -> CompileStats {
        CompileStats {
            waited_ms: self.waited_ms.max(other.waited_ms),
            nvrtc_ms: self.nvrtc_ms + other.nvrtc_ms,
            load_ms: self.load_ms + other.load_ms,
            compiled: self.compiled + other.compiled,
            from_cache: self.from_cache + other.from_cache,
            loaded: self.loaded + other.loaded,
        }
    }
}

/// The counters behind [`CompileStats`], in nanoseconds.
#[derive(Debug, Default)]
struct Counters {
    waited_ns: AtomicU64,
    nvrtc_ns: AtomicU64,
    load_ns: AtomicU64,
    compiled: AtomicUsize,
    from_cache: AtomicUsize,
    loaded: AtomicUsize,
}

fn add_elapsed(counter: &AtomicU64, since: Instant) {
    let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(ns, Ordering::Relaxed);
}

fn ms(counter: &AtomicU64) -> f64 {
    counter.load(Ordering::Relaxed) as f64 * 1e-6
}

/// A value computed once by whichever thread asks first; the others wait for it.
type Shared<T> = Arc<OnceLock<Result<T, CudaError>>>;

/// The slot of `key` in `map` (created empty).
fn slot<K: Hash + Eq, T>(map: &Mutex<HashMap<K, Shared<T>>>, key: K) -> Shared<T> {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.entry(key).or_default().clone()
}

type ImageSlots = Mutex<HashMap<(SpecId, CompileTarget), Shared<Arc<ModuleImage>>>>;
type ModuleSlots = Mutex<HashMap<(usize, SpecId), Shared<Arc<CudaModule>>>>;

/// Compiled images, per module and target, for every device of the process.
fn images() -> &'static ImageSlots {
    static IMAGES: OnceLock<ImageSlots> = OnceLock::new();
    IMAGES.get_or_init(Default::default)
}

/// Loaded modules, per device ordinal and module.
fn modules() -> &'static ModuleSlots {
    static MODULES: OnceLock<ModuleSlots> = OnceLock::new();
    MODULES.get_or_init(Default::default)
}

fn default_cache() -> &'static KernelCache {
    static CACHE: OnceLock<KernelCache> = OnceLock::new();
    CACHE.get_or_init(KernelCache::open_default)
}

/// What loads modules onto one device: its context and compute capability, and the
/// counters of the handle it belongs to. Worker threads take clones.
#[derive(Debug, Clone)]
pub(crate) struct Loader {
    ctx: Arc<CudaContext>,
    compute_capability: (i32, i32),
    counters: Arc<Counters>,
    workers: Arc<Workers>,
}

/// How many of a loader's compile workers are still running: the last [`crate::Gpu`]
/// handle waits for them ([`Workers::wait_until_idle`]), so that no worker is inside NVRTC
/// or the driver while the process exits (a run refused after its kernels were asked for
/// ahead returns at once, and the process's exit tore the driver down under a worker:
/// exit 11 under racecheck, 2026-11-27).
#[derive(Debug, Default)]
struct Workers {
    running: Mutex<usize>,
    idle: Condvar,
}

impl Workers {
    fn started(&self) {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    }

    fn ended(&self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        if *running == 0 {
            self.idle.notify_all();
        }
    }

    /// Blocks until no worker runs.
    fn wait_until_idle(&self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while *running > 0 {
            running = self.idle.wait(running).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Workers running now.
    #[cfg(test)]
    fn running(&self) -> usize {
        *self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Shared by a [`crate::Gpu`] and its clones: when the last of them goes, it waits for the
/// compile workers their loader started, so none outlives its handles.
#[derive(Debug)]
pub(crate) struct LastHandle {
    workers: Arc<Workers>,
}

impl LastHandle {
    pub(crate) fn of(loader: &Loader) -> Self {
        Self {
            workers: loader.workers.clone(),
        }
    }
}

impl Drop for LastHandle {
    fn drop(&mut self) {
        self.workers.wait_until_idle();
    }
}

/// Ends a worker's count when the worker ends, a panic included.
struct WorkerGuard(Arc<Workers>);

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        self.0.ended();
    }
}

impl Loader {
    pub(crate) fn new(ctx: Arc<CudaContext>, compute_capability: (i32, i32)) -> Self {
        Self {
            ctx,
            compute_capability,
            counters: Arc::default(),
            workers: Arc::default(),
        }
    }

    /// What this device's modules are compiled to.
    pub(crate) fn target(&self) -> Result<CompileTarget, CudaError> {
        let supported = nvrtc_supported_archs()?;
        Ok(compile_target(
            self.compute_capability,
            &supported,
            ptx_forced(),
        ))
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> CompileStats {
        let c = &self.counters;
        CompileStats {
            waited_ms: ms(&c.waited_ns),
            nvrtc_ms: ms(&c.nvrtc_ns),
            load_ms: ms(&c.load_ns),
            compiled: c.compiled.load(Ordering::Relaxed),
            from_cache: c.from_cache.load(Ordering::Relaxed),
            loaded: c.loaded.load(Ordering::Relaxed),
        }
    }

    /// Nanoseconds callers on this handle have waited so far.
    pub(crate) fn waited_ns(&self) -> u64 {
        self.counters.waited_ns.load(Ordering::Relaxed)
    }

    /// The module of `spec` on the caller's thread; the wall time is counted as waited.
    pub(crate) fn wait_for(&self, spec: ModuleSpec) -> Result<Arc<CudaModule>, CudaError> {
        let started = Instant::now();
        let module = self.load(spec);
        add_elapsed(&self.counters.waited_ns, started);
        module
    }

    /// The module of `spec` on this device: compiled and loaded once per process (a thread
    /// that asks while another does it waits for it; an error is kept and handed to every
    /// caller).
    fn load(&self, spec: ModuleSpec) -> Result<Arc<CudaModule>, CudaError> {
        let ordinal = self.ctx.ordinal();
        slot(modules(), (ordinal, spec.id()))
            .get_or_init(|| {
                let target = self.target()?;
                let image = self.image(spec, &target)?;
                let code = match &*image {
                    ModuleImage::Ptx(ptx) => Ptx::from_src(ptx.clone()),
                    ModuleImage::Cubin(cubin) => Ptx::from_binary(cubin.clone()),
                };
                let started = Instant::now();
                let module = self.ctx.load_module(code).context(&format!(
                    "loading module {} ({} for {}) on device {ordinal}",
                    spec.label(),
                    target.kind.name(),
                    target.arch
                ))?;
                add_elapsed(&self.counters.load_ns, started);
                self.counters.loaded.fetch_add(1, Ordering::Relaxed);
                Ok(module)
            })
            .clone()
    }

    /// The image of `spec` for `target`, compiled (or read from the disk cache) once per
    /// process.
    fn image(
        &self,
        spec: ModuleSpec,
        target: &CompileTarget,
    ) -> Result<Arc<ModuleImage>, CudaError> {
        slot(images(), (spec.id(), target.clone()))
            .get_or_init(|| {
                if let Some(kernel) = spec.kernel
                    && spec.source.kernel_line(kernel).is_none()
                {
                    return Err(CudaError::InvalidArgument(format!(
                        "kernel {kernel} is not defined in {}: it has no `extern \"C\" \
                         __global__ … {kernel}(` line",
                        spec.source.name
                    )));
                }
                let started = Instant::now();
                let (image, outcome) = default_cache().compile_module(
                    &spec.source,
                    spec.kernel,
                    &target.arch,
                    target.kind,
                )?;
                add_elapsed(&self.counters.nvrtc_ns, started);
                let count = if outcome.compiled() {
                    &self.counters.compiled
                } else {
                    &self.counters.from_cache
                };
                count.fetch_add(1, Ordering::Relaxed);
                Ok(Arc::new(image))
            })
            .clone()
    }

    /// Whether the module of `spec` is on this device already (or failed to get there).
    fn settled(&self, spec: &ModuleSpec) -> bool {
        slot(modules(), (self.ctx.ordinal(), spec.id()))
            .get()
            .is_some()
    }

    /// Starts compiling and loading `specs` on worker threads (at most one a CPU core, the
    /// list in order) and returns at once. Errors stay in the registry for the caller that
    /// asks for the module; a worker that cannot be started leaves its modules to the
    /// caller.
    pub(crate) fn compile_ahead(&self, specs: impl IntoIterator<Item = ModuleSpec>) {
        let mut pending: VecDeque<ModuleSpec> = VecDeque::new();
        for spec in specs {
            if !self.settled(&spec) && !pending.contains(&spec) {
                pending.push_back(spec);
            }
        }
        if pending.is_empty() {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = pending.len().min(cores);
        let queue = Arc::new(Mutex::new(pending));
        for _ in 0..workers {
            let loader = self.clone();
            let queue = queue.clone();
            self.workers.started();
            let guard = WorkerGuard(self.workers.clone());
            // A worker that cannot be started drops its guard (and count) with the closure.
            let _ = std::thread::Builder::new()
                .name("spdnn-compile".into())
                .spawn(move || {
                    let _guard = guard;
                    loop {
                        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                        let Some(spec) = next else { break };
                        // The result stays in the registry for the caller.
                        let _ = loader.load(spec);
                    }
                });
        }
    }
}

/// A wall clock that leaves out the time its [`crate::Gpu`] handle waits for kernel
/// modules: a method's preprocessing time, apart from the run's `compile_ms`
/// ([`crate::Gpu::preparation_clock`]).
#[derive(Debug, Clone)]
pub struct PreparationClock {
    started: Instant,
    waited_at_start: u64,
    loader: Loader,
}

impl PreparationClock {
    pub(crate) fn start(loader: &Loader) -> Self {
        Self {
            started: Instant::now(),
            waited_at_start: loader.waited_ns(),
            loader: loader.clone(),
        }
    }

    /// Milliseconds since the start, less those spent waiting for modules.
    pub fn elapsed_ms(&self) -> f64 {
        let waited = self.loader.waited_ns().saturating_sub(self.waited_at_start) as f64 * 1e-6;
        (self.started.elapsed().as_secs_f64() * 1e3 - waited).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_handle_waits_for_every_worker_a_panicking_one_included() {
        use std::time::Duration;
        let workers = Arc::new(Workers::default());
        let last = LastHandle {
            workers: workers.clone(),
        };
        // Nothing running: the wait returns at once.
        workers.wait_until_idle();
        // One worker ends when released, one panics after a while.
        let (release, released) = std::sync::mpsc::channel::<()>();
        workers.started();
        let guard = WorkerGuard(workers.clone());
        let waiting = std::thread::spawn(move || {
            let _guard = guard;
            released.recv().unwrap();
        });
        workers.started();
        let guard = WorkerGuard(workers.clone());
        let panicking = std::thread::spawn(move || {
            let _guard = guard;
            std::thread::sleep(Duration::from_millis(30));
            panic!("a worker that panics still ends its count");
        });
        assert_eq!(workers.running(), 2);
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(80));
            release.send(()).unwrap();
        });
        drop(last);
        assert_eq!(
            workers.running(),
            0,
            "the drop returned with a worker running"
        );
        releaser.join().unwrap();
        assert!(waiting.join().is_ok());
        assert!(panicking.join().is_err());
    }

    #[test]
    fn stats_subtract_and_add_side_by_side() {
        let a = CompileStats {
            waited_ms: 5.0,
            nvrtc_ms: 20.0,
            load_ms: 1.0,
            compiled: 4,
            from_cache: 1,
            loaded: 5,
        };
        let b = CompileStats {
            waited_ms: 2.0,
            nvrtc_ms: 5.0,
            load_ms: 0.5,
            compiled: 1,
            from_cache: 1,
            loaded: 2,
        };
        let d = a.since(&b);
        assert_eq!(
            (
                d.waited_ms,
                d.nvrtc_ms,
                d.load_ms,
                d.compiled,
                d.from_cache,
                d.loaded
            ),
            (3.0, 15.0, 0.5, 3, 0, 3)
        );
        // A snapshot taken later than `self` never gives negative costs.
        assert_eq!(b.since(&a).compiled, 0);
        assert_eq!(b.since(&a).waited_ms, 0.0);
        let both = a.alongside(&b);
        assert_eq!((both.waited_ms, both.nvrtc_ms, both.loaded), (5.0, 25.0, 7));
    }

    #[test]
    fn specs_name_their_kernel_and_differ_by_it() {
        const SRC: KernelSource = KernelSource::new("s.cu", "text");
        const A: KernelDecl = KernelDecl::new(&SRC, "a", 32);
        const B: KernelDecl = KernelDecl::new(&SRC, "b", 32);
        assert_eq!(ModuleSpec::of(&A).label(), "s.cu:a");
        assert_eq!(ModuleSpec::whole(SRC).label(), "s.cu");
        assert_ne!(ModuleSpec::of(&A).id(), ModuleSpec::of(&B).id());
        assert_ne!(ModuleSpec::of(&A).id(), ModuleSpec::whole(SRC).id());
        assert_eq!(ModuleSpec::of(&A).id(), ModuleSpec::of(&A).id());
    }
}
