//! The compression modifier's flag: `--compress` runs the `+compress` variant of every
//! chosen method (it has no parameters of its own).

use clap::Args;

/// Compression: which methods.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Compression (the +compress methods)")]
pub struct CompressArgs {
    /// Run every chosen method on the exactly compressed network (identical outputs kept
    /// once, their inputs merged; bf → bf+compress, xy+glare → xy+glare+compress).
    #[arg(long)]
    pub compress: bool,
}
