//! Default cache location from the environment. One test in its own binary, because
//! it changes process environment variables.

use std::path::PathBuf;

use spdnn_cuda::KernelCache;

#[test]
fn default_location_follows_the_environment() {
    // SAFETY: the only test in this binary, so no other thread reads the environment.
    unsafe {
        std::env::set_var("SPDNN_PTX_CACHE", "/some/where");
        assert_eq!(
            KernelCache::default_location(),
            Some(PathBuf::from("/some/where"))
        );
        std::env::set_var("SPDNN_PTX_CACHE", "off");
        assert_eq!(KernelCache::default_location(), None);
        std::env::set_var("SPDNN_PTX_CACHE", "");
        assert_eq!(KernelCache::default_location(), None);
        assert!(KernelCache::open_default().dir().is_none());

        std::env::remove_var("SPDNN_PTX_CACHE");
        std::env::set_var("XDG_CACHE_HOME", "/xdg");
        assert_eq!(
            KernelCache::default_location(),
            Some(PathBuf::from("/xdg/spdnn/ptx"))
        );

        std::env::remove_var("XDG_CACHE_HOME");
        std::env::set_var("HOME", "/home/someone");
        assert_eq!(
            KernelCache::default_location(),
            Some(PathBuf::from("/home/someone/.cache/spdnn/ptx"))
        );

        std::env::remove_var("HOME");
        assert_eq!(KernelCache::default_location(), None);
    }
}
