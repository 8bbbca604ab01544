//! `spdnn`: sparse deep-neural-network inference, the way the IEEE HPEC Sparse DNN Graph
//! Challenge defines it.
//!
//! Exit status: 0 on success, 1 when a truth was given and the categories did not match it,
//! 2 for any error (bad input, missing file, missing GPU…).

mod biases;
mod commands;
mod figures;
mod method_args;
mod progress;
mod results;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `spdnn --version`: the package version and the commit built.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SPDNN_COMMIT"),
    ")"
);

/// Sparse DNN inference (IEEE HPEC Sparse DNN Graph Challenge).
#[derive(Parser)]
#[command(name = "spdnn", version = VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a challenge-shaped (RadiX-Net) network in the official TSV format.
    Generate(commands::generate::GenerateArgs),
    /// Write an input in the official images format (MNIST recipe or synthetic).
    Images(commands::images::ImagesArgs),
    /// Run inference with one method and report categories, times and correctness.
    Infer(commands::infer::InferArgs),
    /// Run a trained network (a bias per neuron) over the MNIST test images: top-1 accuracy,
    /// categories and times per method, checked against the CPU reference.
    Classify(commands::classify::ClassifyArgs),
    /// Run benchmarks on every available method and write results/ (JSON, Markdown, SVG).
    Bench(commands::bench::BenchArgs),
    /// Run one method over the values of one parameter (e.g. SNICIT's threshold).
    Sweep(commands::sweep::SweepArgs),
    /// Draw the SVG figures of saved results files again.
    Plot(commands::plot::PlotArgs),
    /// Download the official challenge files and MNIST (no flags: MNIST and 1024-120).
    Fetch(commands::fetch::FetchArgs),
    /// Print the statistics of a network, an input, or a forward pass.
    Inspect(commands::inspect::InspectArgs),
    /// List the inference methods, whether each needs a GPU and runs on this machine.
    Methods,
}

/// Where the weights come from: a path, or the generator.
#[derive(Args, Clone)]
pub struct WeightsArgs {
    /// A folder of n{N}-l{i}.tsv files, the official neuron{N}.tar.gz, or a binary cache.
    #[arg(long, conflicts_with = "generate_seed")]
    weights: Option<PathBuf>,
    /// Use a generated network with this seed instead of --weights.
    #[arg(long)]
    generate_seed: Option<u64>,
}

impl WeightsArgs {
    /// The engine's spec; an error when neither was given.
    pub fn spec(&self) -> anyhow::Result<spdnn_engine::data::WeightsSpec> {
        use spdnn_engine::data::WeightsSpec;
        match (&self.weights, self.generate_seed) {
            (Some(path), _) => Ok(WeightsSpec::Path(path.clone())),
            (None, Some(seed)) => Ok(WeightsSpec::Generated { seed }),
            (None, None) => anyhow::bail!("give --weights PATH or --generate-seed S"),
        }
    }
}

/// Precision of the CPU reference.
#[derive(Clone, Copy, ValueEnum, Default)]
pub enum PrecisionArg {
    /// Single precision.
    #[default]
    F32,
    /// Double precision.
    F64,
}

impl From<PrecisionArg> for spdnn_engine::Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::F32 => Self::F32,
            PrecisionArg::F64 => Self::F64,
        }
    }
}

/// The outcome of a command that may check a truth.
pub enum Outcome {
    /// Done, and nothing was found wrong.
    Success,
    /// A truth was given and the result did not match it.
    Mismatch,
}

fn main() -> ExitCode {
    // The phase lines of a log count from here.
    progress::start_clock();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(args) => commands::generate::run(&args),
        Command::Images(args) => commands::images::run(&args),
        Command::Infer(args) => commands::infer::run(&args),
        Command::Classify(args) => commands::classify::run(&args),
        Command::Bench(args) => commands::bench::run(&args),
        Command::Sweep(args) => {
            commands::sweep::run(&args, &std::env::args_os().collect::<Vec<_>>())
        }
        Command::Plot(args) => commands::plot::run(&args),
        Command::Fetch(args) => commands::fetch::run(&args),
        Command::Inspect(args) => commands::inspect::run(&args),
        Command::Methods => commands::list_methods(),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Mismatch) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_top_help_names_every_subcommand() {
        let cli = Cli::command();
        let about = cli.get_about().unwrap().to_string();
        for sub in cli.get_subcommands() {
            assert!(
                about.contains(sub.get_name()),
                "{about} lacks {}",
                sub.get_name()
            );
        }
    }

    #[test]
    fn infer_and_bench_take_the_method_parameters() {
        let infer = Cli::try_parse_from([
            "spdnn",
            "infer",
            "--method",
            "snicit",
            "--layers",
            "120",
            "--generate-seed",
            "0",
            "--threshold",
            "30",
            "--pre-convergence",
            "bf",
            "--delete-at",
            "never",
        ]);
        assert!(matches!(
            infer,
            Ok(Cli {
                command: Command::Infer(_)
            })
        ));
        let bench = Cli::try_parse_from([
            "spdnn",
            "bench",
            "--methods",
            "xy,snicit",
            "--row-major-layers",
            "4",
            "--no-xy-cache",
            "--batch",
            "5000",
        ]);
        assert!(matches!(
            bench,
            Ok(Cli {
                command: Command::Bench(_)
            })
        ));
    }

    #[test]
    fn infer_and_bench_take_the_glare_flags() {
        let glare = [
            "--glare",
            "--glare-segment",
            "1024",
            "--glare-model-rows",
            "256",
            "--no-glare-census",
        ];
        let infer = ["spdnn", "infer", "--method", "bf", "--layers", "120"];
        let infer = infer
            .into_iter()
            .chain(["--generate-seed", "0"])
            .chain(glare);
        assert!(matches!(
            Cli::try_parse_from(infer),
            Ok(Cli {
                command: Command::Infer(_)
            })
        ));
        let bench = ["spdnn", "bench", "--methods", "bf,xy+glare"];
        assert!(matches!(
            Cli::try_parse_from(bench.into_iter().chain(glare)),
            Ok(Cli {
                command: Command::Bench(_)
            })
        ));
        for flag in ["--glare-segment", "--glare-model-rows"] {
            let error = match Cli::try_parse_from(["spdnn", "bench", flag, "0"]) {
                Err(e) => e,
                Ok(_) => panic!("{flag} 0 was accepted"),
            };
            assert_eq!(error.exit_code(), 2);
            assert!(error.to_string().contains(flag), "{error}");
        }
    }

    #[test]
    fn a_bad_parameter_is_a_usage_error_with_status_2() {
        for command in ["infer", "bench"] {
            let error = match Cli::try_parse_from(["spdnn", command, "--epsilon", "nan"]) {
                Err(e) => e,
                Ok(_) => panic!("{command} accepted --epsilon nan"),
            };
            assert_eq!(error.exit_code(), 2);
            assert!(error.to_string().contains("--epsilon"), "{error}");
        }
    }
}
