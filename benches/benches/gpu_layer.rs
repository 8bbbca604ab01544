//! One layer of each GPU method, timed between CUDA events with `iter_custom`: each
//! iteration loads the rows (untimed) and runs the method's timed region, as the harness
//! (`spdnn_cuda::method::run`) does. The network is layer 1 of the generated 1024 network
//! (SNICIT: layer 1, the conversion and one post-convergence layer, threshold 1), over
//! 60000 synthetic rows. Without a GPU or NVRTC every bench is skipped with a line saying
//! why, and the program succeeds.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use spdnn_benches::{UPPER, problem};
use spdnn_cuda::Gpu;
use spdnn_cuda::method::{KernelMethod, LayerChain, Probe};
use spdnn_formats::Csr;
use spdnn_formats::SparseMatrix;

/// Rows of the input.
const ROWS: usize = 60000;

/// Times one `K` run of `layers` over `input` per iteration; skipped when `prepare` or a
/// first run fails (the reason is printed).
fn layer<K: KernelMethod>(
    c: &mut Criterion,
    gpu: &Gpu,
    (layers, input, bias): (&[Csr], &Csr, f32),
    options: &K::Options,
    label: &str,
) {
    let chain = LayerChain::new(layers, bias, UPPER);
    let mut run = match K::prepare(gpu, &chain, input.nrows(), options) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("gpu_layer/{label}: skipped, preparation failed: {e}");
            return;
        }
    };
    let stream = gpu.stream().clone();
    let mut timer = match gpu.timer() {
        Ok(timer) => timer,
        Err(e) => {
            eprintln!("gpu_layer/{label}: skipped, no CUDA events: {e}");
            return;
        }
    };
    let dry = run
        .load(input)
        .and_then(|()| run.run(&mut Probe::off()))
        .and_then(|()| gpu.synchronize());
    if let Err(e) = dry {
        eprintln!("gpu_layer/{label}: skipped, the first run failed: {e}");
        return;
    }
    c.bench_function(&format!("gpu_layer/{label}"), |b| {
        b.iter_custom(|iters| {
            let mut ms = 0.0;
            for _ in 0..iters {
                run.load(input).expect("loading the rows");
                timer.start(&stream).expect("recording the start event");
                run.run(&mut Probe::off()).expect("the timed run");
                ms += timer.stop(&stream).expect("recording the stop event");
            }
            Duration::from_secs_f64(ms * 1e-3)
        })
    });
}

fn gpu_layer(c: &mut Criterion) {
    if !spdnn_cuda::nvrtc_present() {
        eprintln!(
            "gpu_layer: skipped, NVRTC is not installed (cargo xtask setup puts it in .nvrtc/)"
        );
        return;
    }
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("gpu_layer: skipped, no CUDA GPU: {e}");
            return;
        }
    };
    let (network, input, bias) = problem(1024, 2, ROWS);
    let one = (&network[..1], &input, bias);
    layer::<spdnn_bf::Bf>(c, &gpu, one, &Default::default(), "bf");
    layer::<spdnn_snig::Snig>(c, &gpu, one, &Default::default(), "snig");
    layer::<spdnn_xy::Xy>(c, &gpu, one, &Default::default(), "xy");
    layer::<spdnn_hp::Hp>(c, &gpu, one, &Default::default(), "hp");
    layer::<spdnn_blockdepend::BlockDepend>(c, &gpu, one, &Default::default(), "blockdepend");
    if spdnn_cusparse::cusparse_present() {
        layer::<spdnn_cusparse::Cusparse>(c, &gpu, one, &Default::default(), "cusparse");
    } else {
        eprintln!("gpu_layer/cusparse: skipped, libcusparse is not installed");
    }
    let snicit = spdnn_snicit::SnicitOptions {
        threshold: 1,
        ..Default::default()
    };
    layer::<spdnn_snicit::Snicit>(
        c,
        &gpu,
        (&network[..2], &input, bias),
        &snicit,
        "snicit-t1-l2",
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = gpu_layer
}
criterion_main!(benches);
