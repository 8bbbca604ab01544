//! Where challenge data lives on disk.
//!
//! The project's data folder is `$SPDNN_DATA` when set, otherwise `data/` in the current
//! directory (git-ignored). Official files are looked up there, in `data/sdgc/`, and in
//! `../shared/data/sdgc/` (the team's copy beside a checkout).

use std::path::{Path, PathBuf};

/// The folder downloads and generated data go to.
pub fn data_dir() -> PathBuf {
    std::env::var_os("SPDNN_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("data"))
}

/// Folders searched for official files, in order, relative to `root` (usually the
/// current directory or the workspace root).
pub fn official_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("SPDNN_DATA") {
        let dir = PathBuf::from(dir);
        dirs.push(dir.join("sdgc"));
        dirs.push(dir);
    }
    dirs.push(root.join("data").join("sdgc"));
    dirs.push(root.join("data"));
    dirs.push(root.join("..").join("shared").join("data").join("sdgc"));
    dirs
}

/// The first existing `file_name` among [`official_dirs`] of `root`.
pub fn find_official(root: &Path, file_name: &str) -> Option<PathBuf> {
    official_dirs(root)
        .into_iter()
        .map(|d| d.join(file_name))
        .find(|p| p.exists())
}

/// The workspace root, for tests and tools run by cargo (two levels above a crate).
pub fn workspace_root_from_manifest(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir).join("..").join("..")
}
