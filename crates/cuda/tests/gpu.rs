//! Tests on a real GPU. Run on the GPU machine with `--include-ignored`.

use std::sync::Arc;

use spdnn_cuda::{
    CudaError, DeviceBuffer, DriverResultExt, Gpu, PushKernelArg, SELFTEST, SELFTEST_ACTIVATION,
    SELFTEST_AXPY, probe,
};

fn gpu() -> Gpu {
    Gpu::new(0).unwrap_or_else(|e| panic!("cannot open GPU 0: {e}"))
}

/// Deterministic, non-trivial test data (no rand dependency needed).
fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 20_001) as f32 / 1000.0 - 10.0
        })
        .collect()
}

fn launch_axpy(
    gpu: &Gpu,
    stream: &Arc<spdnn_cuda::CudaStream>,
    y: &mut DeviceBuffer<f32>,
    x: &DeviceBuffer<f32>,
    a: f32,
) -> Result<(), CudaError> {
    let f = gpu.kernel(&SELFTEST_AXPY)?;
    let n = u32::try_from(y.len()).expect("test sizes fit u32");
    let cfg = f.config(n.div_ceil(f.decl().threads()).min(4096))?;
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut **y).arg(&**x).arg(&a).arg(&n);
    // SAFETY: argument types and count match the kernel's signature.
    unsafe { launch.launch(cfg) }.context("launching spdnn_selftest_axpy")?;
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn probe_finds_a_device() {
    let devices = probe().unwrap();
    assert!(!devices.is_empty());
    for d in &devices {
        eprintln!("{d:?} arch {}", d.arch());
        assert!(!d.name.is_empty());
        assert!(d.compute_capability.0 >= 7, "{:?}", d.compute_capability);
        assert!(d.total_memory > 0 && d.free_memory <= d.total_memory);
        assert!(d.sm_count > 0);
    }
    let gpu = gpu();
    assert_eq!(gpu.name(), devices[0].name);
    assert_eq!(gpu.arch(), devices[0].arch());
    assert!(
        !gpu.stream().cu_stream().is_null(),
        "main stream must not be the NULL stream"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn selftest_axpy_is_exact_and_memory_is_accounted() {
    let gpu = gpu();
    let n = (1 << 20) + 7;
    let a = 0.75f32;
    let (xh, yh) = (data(n, 1), data(n, 2));
    let before = gpu.memory().unwrap();
    let x = gpu.upload(&xh).unwrap();
    let mut y = gpu.upload(&yh).unwrap();
    let during = gpu.memory().unwrap();
    assert_eq!(during.held_by_us - before.held_by_us, 2 * n * 4);
    assert!(during.total >= during.free);

    launch_axpy(&gpu, gpu.stream(), &mut y, &x, a).unwrap();
    let got = gpu.download(&*y).unwrap();
    let expected: Vec<f32> = xh.iter().zip(&yh).map(|(x, y)| a * x + y).collect();
    assert_eq!(
        got, expected,
        "the kernel rounds like the CPU (no FMA contraction)"
    );

    // The module registry hands back the same module.
    let m1 = gpu.module(&SELFTEST).unwrap();
    let m2 = gpu.module(&SELFTEST).unwrap();
    assert!(Arc::ptr_eq(&m1, &m2));

    drop((x, y));
    assert_eq!(gpu.memory().unwrap().held_by_us, before.held_by_us);
    gpu.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn activation_kernel_clamps() {
    let gpu = gpu();
    let input = vec![-5.0f32, 0.0, 0.2, 0.3, 0.31, 10.0, 32.2, 40.0, 1e30, -1e30];
    let (bias, upper) = (-0.3f32, 32.0f32);
    let d_in = gpu.upload(&input).unwrap();
    let mut d_out = gpu.alloc_zeros::<f32>(input.len()).unwrap();
    let f = gpu.kernel(&SELFTEST_ACTIVATION).unwrap();
    let n = input.len() as u32;
    let mut launch = gpu.stream().launch_builder(&f);
    launch
        .arg(&mut *d_out)
        .arg(&*d_in)
        .arg(&bias)
        .arg(&upper)
        .arg(&n);
    let cfg = f.config(n.div_ceil(f.decl().threads())).unwrap();
    unsafe { launch.launch(cfg) }.unwrap();
    let got = gpu.download(&*d_out).unwrap();
    let expected: Vec<f32> = input.iter().map(|v| (v + bias).clamp(0.0, upper)).collect();
    assert_eq!(got, expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn event_timer_measures_positive_time() {
    let gpu = gpu();
    let n = 1 << 22;
    let x = gpu.upload(&data(n, 3)).unwrap();
    let mut y = gpu.alloc_zeros::<f32>(n).unwrap();
    launch_axpy(&gpu, gpu.stream(), &mut y, &x, 1.0).unwrap(); // warm-up
    let mut timer = gpu.timer().unwrap();
    assert!(matches!(
        timer.stop(gpu.stream()),
        Err(CudaError::InvalidArgument(_))
    ));
    timer.start(gpu.stream()).unwrap();
    for _ in 0..10 {
        launch_axpy(&gpu, gpu.stream(), &mut y, &x, 1.0).unwrap();
    }
    let ms = timer.stop(gpu.stream()).unwrap();
    eprintln!("10 axpy launches over {n} floats: {ms:.4} ms");
    assert!(ms > 0.0 && ms < 10_000.0, "{ms}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_capture_replays_correctly() {
    let gpu = gpu();
    let n = 100_003;
    let a = 1.5f32;
    let (xh, yh) = (data(n, 4), data(n, 5));
    let x = gpu.upload(&xh).unwrap();
    let mut y = gpu.upload(&yh).unwrap();
    // Load the function before capture (module loading is not capturable).
    gpu.kernel(&SELFTEST_AXPY).unwrap();
    let stream = gpu.stream().clone();
    let graph = gpu
        .capture_graph(&stream, |s| launch_axpy(&gpu, s, &mut y, &x, a))
        .unwrap();
    // Capture only records: y is unchanged so far.
    assert_eq!(gpu.download(&*y).unwrap(), yh);
    graph.upload().unwrap();
    graph.launch().unwrap();
    graph.launch().unwrap();
    let got = gpu.download(&*y).unwrap();
    let expected: Vec<f32> = xh
        .iter()
        .zip(&yh)
        .map(|(x, y)| {
            let once = a * x + y;
            a * x + once
        })
        .collect();
    assert_eq!(got, expected);

    // A span's nodes time each replay from its first node to its last: within the events
    // around the replay (stream order; the events' resolution is ~0.5 us).
    let span = gpu.graph_span().unwrap();
    let spanned = gpu
        .capture_graph(&stream, |s| {
            span.open(s)?;
            launch_axpy(&gpu, s, &mut y, &x, a)?;
            span.close(s)
        })
        .unwrap();
    let mut timer = gpu.timer().unwrap();
    for _ in 0..3 {
        timer.start(&stream).unwrap();
        spanned.launch().unwrap();
        let around = timer.stop(&stream).unwrap();
        let inside = span.elapsed_ms().unwrap();
        assert!(
            inside > 0.0 && inside <= around + 1e-3,
            "{inside} against {around}"
        );
    }

    // Capturing on the legacy NULL stream is refused, not a driver failure.
    let null = gpu.context().default_stream();
    let err = gpu.capture_graph(&null, |_| Ok(())).unwrap_err();
    assert!(matches!(err, CudaError::InvalidArgument(_)), "{err}");
    // A failing body ends the capture and leaves the stream usable.
    let err = gpu
        .capture_graph(&stream, |_| {
            Err(CudaError::InvalidArgument("body failed".into()))
        })
        .unwrap_err();
    assert!(err.to_string().contains("body failed"));
    launch_axpy(&gpu, &stream, &mut y, &x, 0.0).unwrap();
    gpu.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn captures_survive_other_threads_synchronising_the_device() {
    // Threads of one process share the device's primary context: one captures and replays
    // graphs while another opens handles (Gpu::new synchronises the device) and
    // synchronises. Every capture must hold and replay the right values.
    let gpu = gpu();
    gpu.kernel(&SELFTEST_AXPY).unwrap();
    let n = 4099;
    let xh = data(n, 6);
    let x = gpu.upload(&xh).unwrap();
    let stream = gpu.stream().clone();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let other = crate::gpu();
                other.synchronize().unwrap();
            }
        });
        for round in 0..50 {
            let mut y = gpu.upload(&vec![0.0f32; n]).unwrap();
            let graph = gpu
                .capture_graph(&stream, |s| launch_axpy(&gpu, s, &mut y, &x, 2.0))
                .unwrap_or_else(|e| panic!("capture {round}: {e}"));
            graph.launch().unwrap();
            let got = gpu.download(&*y).unwrap();
            assert!(
                got.iter().zip(&xh).all(|(g, x)| *g == 2.0 * x),
                "capture {round}"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn absurd_allocation_is_out_of_memory() {
    let gpu = gpu();
    let before = gpu.memory().unwrap();
    match gpu.alloc_zeros::<f32>(1 << 50) {
        Err(CudaError::OutOfMemory { requested, free }) => {
            assert_eq!(requested, 4 << 50);
            assert!(free <= before.total);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    assert!(matches!(
        gpu.alloc_zeros::<f64>(usize::MAX / 4),
        Err(CudaError::OutOfMemory { .. })
    ));
    // Nothing leaked into the accounting; normal allocations still work.
    assert_eq!(gpu.memory().unwrap().held_by_us, before.held_by_us);
    let small = gpu.alloc_zeros::<u32>(1024).unwrap();
    assert_eq!(gpu.download(&*small).unwrap(), vec![0u32; 1024]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_buffer_round_trip_on_a_copy_stream() {
    let gpu = gpu();
    let n = 1 << 20;
    let values = data(n, 6);
    let mut pinned = gpu.alloc_pinned::<f32>(n).unwrap();
    assert!(pinned.as_slice().unwrap().iter().all(|&v| v == 0.0));
    pinned.as_mut_slice().unwrap().copy_from_slice(&values);
    let mut wc = gpu.alloc_pinned_write_combined::<f32>(n).unwrap();
    wc.as_mut_slice().unwrap().copy_from_slice(&values);

    let copy = gpu.new_stream().unwrap();
    let mut d = gpu.alloc_zeros::<f32>(n).unwrap();
    let mut d2 = gpu.alloc_zeros::<f32>(n).unwrap();
    // Nothing orders a second stream against the main one but a fence: the zeroing first.
    spdnn_cuda::order::join(&gpu, gpu.stream(), &copy).unwrap();
    copy.memcpy_htod(&*pinned, &mut *d).unwrap();
    copy.memcpy_htod(&*wc, &mut *d2).unwrap();
    copy.synchronize().unwrap();
    assert_eq!(gpu.download(&*d).unwrap(), values);
    assert_eq!(gpu.download(&*d2).unwrap(), values);

    let mut timer = gpu.timer().unwrap();
    timer.start(&copy).unwrap();
    copy.memcpy_htod(&*pinned, &mut *d).unwrap();
    let ms = timer.stop(&copy).unwrap();
    eprintln!("pinned upload of {} MiB: {ms:.4} ms", (n * 4) >> 20);

    // Upload into a too-small buffer is an error, not a panic.
    let mut tiny = gpu.alloc_zeros::<f32>(4).unwrap();
    assert!(matches!(
        gpu.upload_into(&values, &mut tiny),
        Err(CudaError::InvalidArgument(_))
    ));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_missing_from_its_module_is_an_error_naming_both() {
    let gpu = gpu();
    const MISSING: spdnn_cuda::KernelDecl =
        spdnn_cuda::KernelDecl::new(&spdnn_cuda::SELFTEST, "spdnn_no_such_kernel", 32);
    let Err(error) = gpu.kernel(&MISSING) else {
        panic!("a kernel that does not exist was found");
    };
    // Refused by the source's text before any driver call (no failed cuModuleGetFunction
    // for compute-sanitizer's memcheck to count as an API error).
    assert!(matches!(error, CudaError::InvalidArgument(_)), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("spdnn_no_such_kernel") && message.contains("selftest.cu"),
        "{message}"
    );
    // The module itself still serves its kernels.
    assert!(gpu.kernel(&spdnn_cuda::SELFTEST_AXPY).is_ok());
}

/// A source no other test loads, so this test sees its own compile and load counts.
const COLD: spdnn_cuda::KernelSource = spdnn_cuda::KernelSource::new(
    "coldstart_test.cu",
    "#include \"common.cuh\"\n\
     #if SPDNN_KEEP(cold_fill)\n\
     // Launch: grid-stride, block 256, no shared memory.\n\
     extern \"C\" __global__ void cold_fill(float* y, float v, unsigned int n) {\n\
         for (unsigned long long i = spdnn_global_thread_x(); i < n; i += spdnn_grid_threads_x()) y[i] = v;\n\
     }\n\
     #endif\n\
     #if SPDNN_KEEP(cold_scale)\n\
     // Launch: grid-stride, block 128, no shared memory.\n\
     extern \"C\" __global__ void cold_scale(float* y, float a, unsigned int n) {\n\
         for (unsigned long long i = spdnn_global_thread_x(); i < n; i += spdnn_grid_threads_x()) y[i] *= a;\n\
     }\n\
     #endif\n",
);
const COLD_FILL: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(&COLD, "cold_fill", 256);
const COLD_SCALE: spdnn_cuda::KernelDecl = spdnn_cuda::KernelDecl::new(&COLD, "cold_scale", 128);

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_compile_ahead_as_cubins_and_their_cost_is_counted() {
    let gpu = gpu();
    let target = gpu.compile_target().unwrap();
    eprintln!("modules of {} compile to {target:?}", gpu.arch());
    if spdnn_cuda::nvrtc_supported_archs()
        .unwrap()
        .contains(&(gpu.compute_capability().0 * 10 + gpu.compute_capability().1))
        && !spdnn_cuda::ptx_forced()
    {
        assert_eq!(target.kind, spdnn_cuda::ImageKind::Cubin);
        assert_eq!(target.arch, gpu.arch());
    }
    let before = gpu.compile_stats();
    let wall = std::time::Instant::now();
    let clock = gpu.preparation_clock();
    gpu.compile_ahead([&COLD_FILL, &COLD_SCALE]);
    let fill = gpu.kernel(&COLD_FILL).unwrap();
    let scale = gpu.kernel(&COLD_SCALE).unwrap();
    let preparation_ms = clock.elapsed_ms();
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    let cost = gpu.compile_stats().since(&before);
    eprintln!("{cost:?}, wall {wall_ms:.1} ms, preparation clock {preparation_ms:.1} ms");
    assert_eq!(cost.loaded, 2, "one module per kernel");
    assert_eq!(cost.compiled + cost.from_cache, 2);
    assert!(cost.nvrtc_ms > 0.0 && cost.load_ms > 0.0);
    // The first kernel had to wait for its module; the preparation clock leaves that out.
    assert!(cost.waited_ms > 0.0 && cost.waited_ms <= wall_ms);
    assert!(
        (wall_ms - cost.waited_ms - preparation_ms).abs() < 5.0,
        "wall {wall_ms} - waited {} != {preparation_ms}",
        cost.waited_ms
    );

    // Loaded once: asking again costs nothing more.
    let again = gpu.compile_stats();
    gpu.compile_ahead([&COLD_FILL]);
    gpu.kernel(&COLD_FILL).unwrap();
    let repeat = gpu.compile_stats().since(&again);
    assert_eq!(
        (repeat.loaded, repeat.compiled, repeat.from_cache),
        (0, 0, 0)
    );

    // Both kernels run right from their own modules.
    let n = 10_000u32;
    let mut y = gpu.alloc_zeros::<f32>(n as usize).unwrap();
    let v = 3.0f32;
    let mut launch = gpu.stream().launch_builder(&fill);
    launch.arg(&mut *y).arg(&v).arg(&n);
    unsafe { launch.launch(fill.config(8).unwrap()) }.unwrap();
    let a = 0.5f32;
    let mut launch = gpu.stream().launch_builder(&scale);
    launch.arg(&mut *y).arg(&a).arg(&n);
    unsafe { launch.launch(scale.config(8).unwrap()) }.unwrap();
    assert_eq!(gpu.download(&*y).unwrap(), vec![1.5f32; n as usize]);

    // A clone shares the counts; another handle has its own.
    assert_eq!(gpu.clone().compile_stats(), gpu.compile_stats());
    assert_eq!(Gpu::new(0).unwrap().compile_stats().loaded, 0);
}
