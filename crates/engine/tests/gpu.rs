//! Faults on the GPU, through the engine as `spdnn infer` runs them. These need a CUDA GPU:
//! run with `--include-ignored` on the GPU machine (`cargo xtask device-pack`). The device
//! sanitize mode skips them (names with `memory_exhausted`): they hold the whole GPU memory.

use spdnn_cuda::{CudaError, DeviceBuffer, Gpu};
use spdnn_engine::{OptionSet, Problem, Registry, RunConfig};
use spdnn_sdgc::{Input, Network, generator, images};

/// Holds every byte of free device memory it can get, in chunks from 1 GiB down to 64 KiB;
/// each failed allocation must be `OutOfMemory`.
fn exhaust(gpu: &Gpu) -> Vec<DeviceBuffer<u8>> {
    let mut held = Vec::new();
    let mut chunk = 1usize << 30;
    while chunk >= 64 << 10 {
        match gpu.alloc_zeros::<u8>(chunk) {
            Ok(buffer) => held.push(buffer),
            Err(CudaError::OutOfMemory { .. }) => chunk /= 2,
            Err(other) => panic!("allocating {chunk} bytes: expected OutOfMemory, got {other}"),
        }
    }
    held
}

/// A problem that needs several MiB on the device: N = 1024, 6 layers, 2000 rows.
fn problem() -> (Network, Input) {
    let network = generator::network(1024, 6, 3).unwrap();
    let input = images::synthetic(2000, 1024, 4).unwrap();
    (network, input)
}

fn config(dir: &std::path::Path) -> RunConfig {
    RunConfig {
        warmup: 0,
        repetitions: 1,
        options: OptionSet::new(dir.to_path_buf()),
        ..RunConfig::default()
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_gpu_method_is_a_clear_error_when_memory_exhausted_and_recovers() {
    let gpu = Gpu::new(0).expect("a GPU");
    let (network, input) = problem();
    let problem = Problem {
        network: &network,
        input: &input,
        bias: -0.3,
        upper_bound: 32.0,
    };
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::default();
    let truth = registry
        .get("cpu")
        .unwrap()
        .run(&problem, &config(dir.path()))
        .unwrap()
        .categories;
    let mut failures = Vec::new();
    for method in registry.all().filter(|m| m.needs_gpu()) {
        let name = method.name().to_string();
        let held = exhaust(&gpu);
        let free = gpu.memory().map(|m| m.free).unwrap_or(0);
        let starved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            method.run(&problem, &config(dir.path()))
        }));
        drop(held);
        match starved {
            Err(_) => failures.push(format!("{name}: panicked with {free} bytes free")),
            Ok(Ok(_)) => failures.push(format!(
                "{name}: ran with {free} bytes free (the problem needs more: the test is wrong)"
            )),
            Ok(Err(error)) => {
                let message = format!("{error:#}");
                if !(message.contains("out of GPU memory") || message.contains("OUT_OF_MEMORY")) {
                    failures.push(format!("{name}: unclear error out of memory: {message}"));
                }
            }
        }
        match method.run(&problem, &config(dir.path())) {
            Ok(output) if output.categories == truth => {}
            Ok(_) => failures.push(format!(
                "{name}: wrong categories after the memory came back"
            )),
            Err(error) => failures.push(format!(
                "{name}: fails after the memory came back: {error:#}"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn allocation_until_memory_exhausted_fails_cleanly_and_the_device_recovers() {
    let gpu = Gpu::new(0).expect("a GPU");
    let before = gpu.memory().unwrap();
    let held = exhaust(&gpu);
    let bytes: usize = held.iter().map(|b| b.bytes()).sum();
    let after = gpu.memory().unwrap();
    assert!(
        bytes as f64 > 0.5 * before.free as f64,
        "held only {bytes} of {} free bytes in {} buffers ({} free after, {} held by us)",
        before.free,
        held.len(),
        after.free,
        after.held_by_us
    );
    // Uploads fail the same way, naming the sizes.
    match gpu.upload(&vec![1.0f32; 1 << 20]) {
        Err(CudaError::OutOfMemory { requested, free }) => {
            // `free` is what the driver reports, which may exceed the request: free memory
            // in pieces too small for the allocation granularity (seen on an H200: the
            // 4 MiB upload refused with more than 4 MiB reported free). The error must name
            // both numbers as they are.
            assert_eq!(requested, 4 << 20);
            let message = CudaError::OutOfMemory { requested, free }.to_string();
            assert!(message.contains("out of GPU memory"), "{message}");
            assert!(
                message.contains(&format!("requested {requested} bytes, {free} bytes free")),
                "{message}"
            );
        }
        other => panic!("expected OutOfMemory, got {:?}", other.map(|b| b.bytes())),
    }
    drop(held);
    assert_eq!(gpu.memory().unwrap().held_by_us, before.held_by_us);
    let back = gpu.upload(&vec![2.0f32; 1 << 20]).unwrap();
    assert_eq!(gpu.download(&*back).unwrap(), vec![2.0f32; 1 << 20]);
}
