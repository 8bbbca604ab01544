//! `spdnn infer --biases FILE --upper-bound U` with the GPU methods, through the binary, on
//! the small TSV network of `tsv_net` (ignored here: they need a CUDA GPU; on the GPU
//! machine `cargo xtask device-pack` packs them as `spdnn-cli--gpu`).

mod common;
mod tsv_net;

use common::spdnn;

/// Runs `spdnn infer` with `method` (and `extra` arguments) and the bias file `biases` in
/// `dir`, and asserts that it succeeds with the reference's categories.
fn assert_reference_categories(dir: &std::path::Path, method: &str, extra: &[&str], biases: &str) {
    let out = format!("{}.categories.tsv", method.replace('+', "-"));
    let mut args = tsv_net::infer_args(method, biases, &out);
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = spdnn(dir, &args);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{method}: {stdout}{stderr}");
    assert_eq!(
        tsv_net::categories(dir, &out),
        tsv_net::reference(dir, biases, 0.75),
        "{method} with {biases}: {stdout}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_methods_run_a_tsv_network_with_a_bias_file_and_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    tsv_net::write(dir.path());
    for (method, extra) in [
        ("bf", &[][..]),
        ("snig", &[]),
        ("cusparse", &[]),
        ("xy", &[]),
        ("hp", &[]),
        ("snicit", &["--threshold", "3"]),
        ("blockdepend", &[]),
        ("blockdepend+compress", &[]),
        ("sz", &[]),
        ("sz+t4", &[]),
    ] {
        assert_reference_categories(dir.path(), method, extra, "biases.tsv");
    }
    // cusparse implements the structural rule for positive biases too.
    assert_reference_categories(dir.path(), "cusparse", &[], "positive.tsv");
}
