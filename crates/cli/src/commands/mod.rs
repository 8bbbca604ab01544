//! One module per subcommand.

pub mod bench;
pub mod fetch;
pub mod generate;
pub mod images;
pub mod infer;
pub mod inspect;

use crate::Outcome;

/// `spdnn methods`: the registry, one method a line.
pub fn list_methods() -> anyhow::Result<Outcome> {
    let registry = spdnn_engine::Registry::default();
    for method in registry.all() {
        let gpu = if method.needs_gpu() { "gpu" } else { "cpu" };
        println!("{:<16} {gpu}  {}", method.name(), method.description());
    }
    Ok(Outcome::Success)
}
