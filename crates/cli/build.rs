//! Records the commit the binary is built from for `spdnn --version` (`SPDNN_COMMIT`:
//! the short hash, or `unknown` outside a git checkout).

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SPDNN_COMMIT={commit}");

    // Rebuild when HEAD moves: HEAD itself, the branch it names, and the packed refs.
    let git = Path::new("../../.git");
    let head = git.join("HEAD");
    if head.is_file() {
        let mut watched = vec![head.clone(), git.join("packed-refs")];
        if let Ok(text) = std::fs::read_to_string(&head)
            && let Some(branch) = text.trim().strip_prefix("ref: ")
        {
            watched.push(git.join(branch));
        }
        // A path that does not exist would make cargo rerun this script on every build.
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
