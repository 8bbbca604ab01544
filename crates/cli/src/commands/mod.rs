//! One module per subcommand.

pub mod bench;
pub mod classify;
pub mod fetch;
pub mod generate;
pub mod images;
pub mod infer;
pub mod inspect;
pub mod plot;
pub mod sweep;

use std::path::Path;

use spdnn_engine::data::InputSpec;
use spdnn_sdgc::Input;

use crate::{Outcome, progress};

/// Loads an input with a progress bar for image making (hidden unless `show`).
pub fn load_input_shown(
    spec: &InputSpec,
    neurons: usize,
    rows: Option<usize>,
    data_dir: &Path,
    show: bool,
) -> anyhow::Result<Input> {
    let bar = progress::bar(show, 0, "images");
    let input = spdnn_engine::data::load_input(spec, neurons, rows, data_dir, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    Ok(input)
}

/// The methods `bench` and `classify` run when none are named: every method of the
/// registry's default run (no `+` variant) that runs on this machine, and apart, the GPU
/// methods left out for want of a GPU (for a note).
pub fn default_methods(registry: &spdnn_engine::Registry) -> (Vec<&str>, Vec<&str>) {
    let gpu = spdnn_engine::gpu_available();
    let (mut runs, mut left_out) = (Vec::new(), Vec::new());
    for method in registry.all().filter(|m| m.in_default_run()) {
        if !method.needs_gpu() || gpu {
            runs.push(method.name());
        } else {
            left_out.push(method.name());
        }
    }
    (runs, left_out)
}

/// What `--method auto` chose and why (`chose tcchain: …`), from a run's details; `None`
/// for every other method.
pub fn auto_choice(
    found: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Option<String> {
    let choice = found.get("auto_choice")?.as_str()?;
    let reason = found
        .get("auto_reason")
        .and_then(|r| r.as_str())
        .unwrap_or("");
    let cached = if found.get("auto_cached") == Some(&serde_json::json!(true)) {
        " (cached choice)"
    } else {
        ""
    };
    Some(format!("chose {choice}{cached}: {reason}"))
}

/// `spdnn methods`: the registry, one method a line: what it needs, whether it runs on this
/// machine (a GPU method runs where a CUDA GPU is found), what it is.
pub fn list_methods() -> anyhow::Result<Outcome> {
    let registry = spdnn_engine::Registry::default();
    let gpu_here = spdnn_engine::gpu_available();
    let width = registry.all().map(|m| m.name().len()).max().unwrap_or(0);
    println!("{:<width$}  needs  runs here  what", "method");
    for method in registry.all() {
        let (needs, runs) = if method.needs_gpu() {
            ("gpu", gpu_here)
        } else {
            ("cpu", true)
        };
        let runs = if runs { "yes" } else { "no" };
        println!(
            "{:<width$}  {needs:<5}  {runs:<9}  {}",
            method.name(),
            method.description()
        );
    }
    Ok(Outcome::Success)
}
