//! The memory budget's flags: `--gpu-memory` and `--gpus` (every GPU method reads them).

use std::any::TypeId;

use clap::Args;
use spdnn_engine::OptionSet;
use spdnn_engine::spdnn_adaptive::{MemorySettings, parse_size};

use super::GroupArgs;

/// The device memory a run may use and the GPUs it runs on.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Memory and GPUs (every GPU method)")]
pub struct MemoryArgs {
    /// Bytes the run's buffers may hold on each GPU, e.g. 16GiB or 512MiB; more than the
    /// free memory is an error. The input then runs in batches and the weights stream where
    /// the method can (bf; snicit its post-convergence layers) [default: the free memory
    /// less 512 MiB].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub gpu_memory: Option<usize>,
    /// GPUs that take slabs of the input rows, e.g. 0,1 (a GPU named twice gets two
    /// handles with a plan each) [default: 0].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub gpus: Vec<usize>,
}

impl GroupArgs for MemoryArgs {
    fn group(&self) -> TypeId {
        TypeId::of::<MemorySettings>()
    }

    fn apply(&self, options: &mut OptionSet) {
        if self.given().is_empty() {
            return;
        }
        options.edit::<MemorySettings>(|memory| {
            memory.gpu_memory = self.gpu_memory;
            memory.gpus = self.gpus.clone();
        });
    }

    fn flags(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("--gpu-memory", self.gpu_memory.is_some()),
            ("--gpus", !self.gpus.is_empty()),
        ]
    }
}
