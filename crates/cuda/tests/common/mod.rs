//! Helpers shared by the integration tests.

/// True when NVRTC can be loaded. When it cannot: panics if `CI` is set (CI must
/// compile every kernel), otherwise prints why the test is skipped and returns false.
pub fn nvrtc_or_skip(test: &str) -> bool {
    if spdnn_cuda::nvrtc_present() {
        return true;
    }
    let how = "install NVRTC 13.0 with `pip install --target .nvrtc nvidia-cuda-nvrtc==13.0.88` \
               and run with LD_LIBRARY_PATH=$PWD/.nvrtc/nvidia/cu13/lib (or `cargo xtask setup`)";
    if std::env::var_os("CI").is_some() {
        panic!("{test}: libnvrtc not found and CI is set; {how}");
    }
    eprintln!("skipping {test}: libnvrtc not found; {how}");
    false
}
