//! Missing driver / missing device come back as errors, never panics. Runs
//! everywhere: on a machine without a driver it checks NoDriver, with one NoDevice.

use spdnn_cuda::{CudaError, Gpu, driver_present, probe};

#[test]
fn missing_driver_or_device_is_an_error() {
    if !driver_present() {
        assert!(matches!(Gpu::new(0), Err(CudaError::NoDriver)));
        let err = probe().unwrap_err();
        assert!(matches!(err, CudaError::NoDriver));
        assert!(err.to_string().contains("libcuda not found"), "{err}");
    } else {
        match Gpu::new(4096) {
            Err(CudaError::NoDevice {
                requested,
                available,
            }) => {
                assert_eq!(requested, 4096);
                assert!(available < 4096);
            }
            other => panic!("expected NoDevice, got {other:?}"),
        }
    }
}

#[test]
fn error_messages_say_how_to_fix() {
    let nvrtc = CudaError::NoNvrtc.to_string();
    assert!(nvrtc.contains("nvidia-cuda-nvrtc==13.0.88"), "{nvrtc}");
    assert!(nvrtc.contains("LD_LIBRARY_PATH"), "{nvrtc}");
    assert!(nvrtc.contains("cargo xtask setup"), "{nvrtc}");
    let oom = CudaError::OutOfMemory {
        requested: 10,
        free: 3,
    }
    .to_string();
    assert!(
        oom.contains("requested 10 bytes") && oom.contains("3 bytes free"),
        "{oom}"
    );
    let none = CudaError::NoDevice {
        requested: 2,
        available: 1,
    }
    .to_string();
    assert!(
        none.contains("ordinal 2") && none.contains("1 device"),
        "{none}"
    );
}
