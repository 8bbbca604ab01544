//! `spdnn infer`: one method on one network and input.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use spdnn_engine::data::{InputSpec, load_network, load_truth};
use spdnn_engine::report::{compile_line, layer_lines, stage_lines};
use spdnn_engine::{Problem, Registry, RunConfig, SharedWork, run};
use spdnn_sdgc::benchmark::Benchmark;
use spdnn_sdgc::{paths, tsv};

use crate::method_args::MethodArgs;
use crate::{Outcome, PrecisionArg, WeightsArgs, progress};

/// Arguments of `spdnn infer`.
#[derive(Args)]
pub struct InferArgs {
    /// Method name (`spdnn methods` lists them; with --glare, its GLARE variant runs). The
    /// default, `auto`, picks the method for the network and says why (the CPU reference
    /// where there is no GPU).
    #[arg(long, default_value = "auto")]
    method: String,
    /// N (inferred from the weights' file names when omitted).
    #[arg(long)]
    neurons: Option<usize>,
    /// L, the number of layers to run (the first L of the network).
    #[arg(long)]
    layers: usize,
    #[command(flatten)]
    weights: WeightsArgs,
    /// Images file (official TSV, .tsv.gz, MatrixMarket .mtx, or an input cache).
    #[arg(long, conflicts_with_all = ["mnist", "synthetic_seed"])]
    images: Option<PathBuf>,
    /// Use the MNIST-recipe input (after `spdnn fetch --mnist`).
    #[arg(long)]
    mnist: bool,
    /// Use seeded synthetic images (~10% density).
    #[arg(long)]
    synthetic_seed: Option<u64>,
    /// Keep only the first R rows of the input (after --skip-rows).
    #[arg(long)]
    rows: Option<usize>,
    /// Drop the first S rows of the input: with --rows R, rows S+1 .. S+R. E.g. one GPU times
    /// the slab another GPU of a larger machine would take. Row numbers (--categories-out)
    /// then count from the first row kept.
    #[arg(long, value_name = "S", conflicts_with = "truth")]
    skip_rows: Option<usize>,
    /// Bias (default: the official one for N).
    #[arg(long, allow_hyphen_values = true)]
    bias: Option<f32>,
    /// A bias per neuron instead of --bias: a file of `layer<TAB>neuron<TAB>bias` lines
    /// (1-based), one for every output neuron of every layer (docs/real-networks.md).
    #[arg(long, value_name = "FILE", conflicts_with = "bias")]
    biases: Option<PathBuf>,
    /// Upper bound of the activations (default: 32, the challenge's).
    #[arg(long, value_name = "U", allow_hyphen_values = true)]
    upper_bound: Option<f32>,
    /// Truth categories file; exit status 1 when the result does not match it.
    #[arg(long)]
    truth: Option<PathBuf>,
    /// Write the categories found (one 1-based row a line).
    #[arg(long)]
    categories_out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 0)]
    warmup: usize,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 1)]
    repetitions: usize,
    /// Precision of the CPU reference.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    precision: PrecisionArg,
    #[command(flatten)]
    method_options: MethodArgs,
    /// Run as one MPI rank of `mpirun -np P spdnn infer …`: each rank takes a slab of the
    /// rows, rank 0 gathers the categories and prints the report.
    #[cfg(feature = "mpi")]
    #[arg(long)]
    mpi: bool,
}

/// How this process takes part in a run.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
enum Ranked {
    /// One process.
    Alone,
    /// MPI rank 0, with the gathered execution.
    Root(Box<run::Execution>),
    /// Another MPI rank: rank 0 reports.
    Other,
}

/// Runs as a rank under `--mpi`, else says to run alone.
#[cfg(feature = "mpi")]
fn ranked(
    args: &InferArgs,
    method: &dyn spdnn_engine::Method,
    benchmark: &Benchmark,
    problem: &Problem<'_>,
    config: &RunConfig,
    truth: Option<&spdnn_engine::Truth>,
) -> Result<Ranked> {
    if !args.mpi {
        return Ok(Ranked::Alone);
    }
    let ranks = spdnn_engine::spdnn_adaptive::ranks::MpiRanks::init()
        .ok_or_else(|| anyhow::anyhow!("--mpi: MPI could not be initialised"))?;
    Ok(
        match run::execute_ranked(method, benchmark, problem, config, truth, &ranks)? {
            Some(execution) => Ranked::Root(Box::new(execution)),
            None => Ranked::Other,
        },
    )
}

/// Without the `mpi` feature every run is one process.
#[cfg(not(feature = "mpi"))]
fn ranked(
    _: &InferArgs,
    _: &dyn spdnn_engine::Method,
    _: &Benchmark,
    _: &Problem<'_>,
    _: &RunConfig,
    _: Option<&spdnn_engine::Truth>,
) -> Result<Ranked> {
    Ok(Ranked::Alone)
}

/// Loads, runs, checks, prints.
pub fn run(args: &InferArgs) -> Result<Outcome> {
    let registry = Registry::default();
    let named = registry.get(&args.method)?.name();
    let (names, mut warnings) = args.method_options.resolve_methods(&registry, &[named]);
    let method = registry.get(names.first().copied().unwrap_or(named))?;
    let method_options = args.method_options.options()?;
    warnings.extend(
        args.method_options
            .unused_warnings(&registry, &[method.name()]),
    );
    for warning in warnings {
        eprintln!("{warning}");
    }
    let upper_bound = crate::biases::upper_bound(args.upper_bound, None)?;
    let log = progress::Log::stderr(args.json);
    let total_start = std::time::Instant::now();

    let phase = log.phase_with_bar(
        &format!("load {} layers", args.layers),
        args.layers as u64,
        "weights",
    );
    let (network, weights_origin) = load_network(
        &args.weights.spec()?,
        args.neurons,
        args.layers,
        &mut |done| phase.bar().set_position(done as u64),
    )?;
    phase.done_with(&format!(
        "N = {}, {}",
        network.neurons(),
        weights_origin.label()
    ));
    let network = match &args.biases {
        Some(path) => crate::biases::with_bias_file(network, path)?,
        None => network,
    };
    let neurons = network.neurons();
    method.check(&method_options, neurons)?;

    let spec = match (&args.images, args.mnist, args.synthetic_seed) {
        (Some(path), _, _) => InputSpec::File(path.clone()),
        (None, true, _) => InputSpec::Mnist,
        (None, false, Some(seed)) => InputSpec::Synthetic { seed },
        (None, false, None) => anyhow::bail!("give --images FILE, --mnist or --synthetic-seed S"),
    };
    let skip = args.skip_rows.unwrap_or(0);
    let keep = args.rows.map(|r| r.saturating_add(skip));
    let phase = log.phase(&format!("input {neurons}"));
    let mut input = super::load_input_shown(&spec, neurons, keep, &paths::data_dir(), log.bars())?;
    phase.done_with(&format!("{} rows, {}", input.rows(), input.origin.label()));
    if skip > 0 {
        let rows = input.rows();
        anyhow::ensure!(
            skip < rows,
            "--skip-rows {skip} leaves no row of the input's {rows}"
        );
        input.features = input.features.rows_slice(skip..rows);
    }

    // With a bias per neuron the one bias is never read (the methods take the network's);
    // the placeholder only passes the benchmark's check, and the report says "per neuron".
    let one_bias = if args.biases.is_some() {
        Some(-1.0)
    } else {
        args.bias
    };
    let mut benchmark = Benchmark::new(
        neurons,
        network.num_layers(),
        input.rows(),
        one_bias,
        weights_origin,
        input.origin.clone(),
    )?;
    benchmark.upper_bound = upper_bound;
    let truth = args
        .truth
        .as_deref()
        .map(|p| load_truth(p, input.rows()))
        .transpose()?;
    let problem = Problem {
        network: &network,
        input: &input,
        bias: benchmark.bias,
        upper_bound: benchmark.upper_bound,
    };
    let config = RunConfig {
        warmup: args.warmup,
        repetitions: args.repetitions.max(1),
        precision: args.precision.into(),
        options: method_options,
        shared: SharedWork::default(),
    };

    let phase = log.phase(&format!("run {} {}", method.name(), benchmark.name()));
    let execution = match ranked(args, method, &benchmark, &problem, &config, truth.as_ref())? {
        Ranked::Root(execution) => *execution,
        Ranked::Other => {
            phase.done_with("this rank's rows; rank 0 reports");
            return Ok(Outcome::Success);
        }
        Ranked::Alone => run::execute(method, &benchmark, &problem, &config, truth.as_ref())?,
    };
    let report = &execution.report;
    phase.done_with(&format!(
        "infer {:.2} ms, total {:.1} s",
        report.infer_ms,
        report.total_ms / 1e3
    ));
    let wall_ms = total_start.elapsed().as_secs_f64() * 1e3;

    if let Some(path) = &args.categories_out {
        tsv::write_categories(path, &execution.categories)?;
    }

    if args.json {
        let mut value = serde_json::to_value(report)?;
        value["wall_ms"] = serde_json::json!(wall_ms);
        if let Some(path) = &args.biases {
            value["bias"] = serde_json::Value::Null;
            value["biases"] = serde_json::json!(path.display().to_string());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("method      {}", report.method);
        println!(
            "network     N = {}, L = {} ({})",
            report.neurons, report.layers, report.weights
        );
        println!("input       {} rows ({})", report.rows, report.input);
        if skip > 0 {
            println!("skipped     the input's first {skip} rows");
        }
        match &args.biases {
            Some(path) => println!(
                "bias/bound  per neuron ({}) / {}",
                path.display(),
                report.upper_bound
            ),
            None => println!("bias/bound  {} / {}", report.bias, report.upper_bound),
        }
        println!("categories  {}", report.categories);
        match &report.check {
            Some(check) if check.matched => println!("matched     yes ({})", check.truth),
            Some(check) => println!(
                "matched     NO ({}): {} missing (e.g. {:?}), {} extra (e.g. {:?})",
                check.truth, check.missing_count, check.missing, check.extra_count, check.extra
            ),
            None => println!("matched     - (no truth given)"),
        }
        if let Some(lossy) = report.details.found.get("lossy").and_then(|v| v.as_str()) {
            println!("lossy       {lossy}");
        }
        if let Some(choice) = super::auto_choice(&report.details.found) {
            println!("auto        {choice}");
        }
        let timing = match report.timing {
            spdnn_engine::Timing::WallClock => "wall clock",
            spdnn_engine::Timing::CudaEvents => "CUDA events",
        };
        println!("infer       {:.3} ms ({timing})", report.infer_ms);
        for line in stage_lines(&report.stages()) {
            println!("{line}");
        }
        for line in layer_lines(&report.layer_times()) {
            println!("{line}");
        }
        if let Some(glare) = report.glare() {
            println!("glare       {}", glare.text());
        }
        if let Some(plan) = &report.details.plan {
            for line in plan.lines() {
                println!("plan        {line}");
            }
        }
        if let Some(ranks) = report.details.found.get("ranks") {
            println!("ranks       {ranks} (MPI; time of the slowest rank)");
        }
        if let Some(gpus) = report
            .details
            .found
            .get("rank gpus")
            .and_then(|g| g.as_str())
        {
            println!("rank gpus   {gpus} (GPU ordinals of ranks 0, 1, …)");
        }
        println!("total       {:.3} ms", report.total_ms);
        if let Some(line) = compile_line(report) {
            println!("compile     {line}");
        }
        println!("rate        {:.4} TeraEdges/s", report.teraedges_per_s);
        println!("wall        {wall_ms:.0} ms including loading");
    }
    Ok(if report.matched == Some(false) {
        Outcome::Mismatch
    } else {
        Outcome::Success
    })
}
