//! `spdnn bench`: every available method on the chosen benchmarks; a table, JSON and Markdown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use spdnn_engine::cached::{self, TruthCache, TruthKey};
use spdnn_engine::compress::Compression;
use spdnn_engine::data::{InputSpec, WeightsSpec, load_network, load_truth, official_files};
use spdnn_engine::report::{markdown_table, terminal_table};
use spdnn_engine::run::execute;
use spdnn_engine::spdnn_adaptive::MemorySettings;
use spdnn_engine::{
    OptionSet, Precision, Problem, Registry, RunConfig, RunReport, SharedWork, Truth,
};
use spdnn_reference::{Activation, Inference, Options};
use spdnn_sdgc::benchmark::{Benchmark, OFFICIAL_ROWS};
use spdnn_sdgc::{Input, InputOrigin, Network, generator, paths};

use crate::method_args::MethodArgs;
use crate::{Outcome, progress};

pub mod reuse;

/// Work (rows·N·L) above which the CPU runs only a slice of the rows: 4× the 1024-120 benchmark.
const CPU_WORK_LIMIT: u64 = 4 * 60_000 * 1024 * 120;

/// Arguments of `spdnn bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// N values (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1024")]
    neurons: Vec<usize>,
    /// L values (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "120")]
    layers: Vec<usize>,
    /// Input rows.
    #[arg(long, default_value_t = OFFICIAL_ROWS)]
    rows: usize,
    /// Methods to run (comma-separated; default: every method this machine can run, the
    /// +glare variants only with --glare, which swaps each method for its variant).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Timed repetitions per GPU method (the median is reported).
    #[arg(long, default_value_t = 5)]
    repetitions: usize,
    /// Untimed warm-up runs per GPU method.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Timed repetitions of the CPU reference.
    #[arg(long, default_value_t = 1)]
    cpu_repetitions: usize,
    /// Seed of the generated networks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The generated network: RadiX-Net (the challenge's topology), or random unstructured
    /// (--fan-in random inputs per output, random real weights; the official networks are
    /// then not run).
    #[arg(long, value_enum, default_value_t = NetworkArg::Radix)]
    network: NetworkArg,
    /// Inputs per output neuron of --network random [default: 32].
    #[arg(long)]
    fan_in: Option<usize>,
    /// Skip the official N-L networks even when their files are at hand.
    #[arg(long)]
    no_official: bool,
    /// Rows the CPU method runs at most, and the rows the uncompressed f64 oracle checks;
    /// default: all when cheap, else a slice.
    #[arg(long)]
    cpu_rows: Option<usize>,
    /// Take the truth of generated networks from the uncompressed oracle on the CPU slice
    /// only, instead of the compressed oracle on every row (cross-checked on the slice).
    #[arg(long)]
    no_compressed_truth: bool,
    /// Run each GPU method on the first K GPUs for every K given (e.g. 1,2,4), over one
    /// network, input and truth per shape: the tables then name the runs `METHOD×K` and a
    /// scaling line gives each method's speed-up over the smallest K. Not with --gpus.
    #[arg(long, value_delimiter = ',', value_name = "K,…")]
    gpu_counts: Vec<usize>,
    /// Keep generated networks in the binary cache under the data folder
    /// (`cache/networks/`) and read them back on the next bench: `auto` for random networks
    /// only (reading one back is faster than generating it; a RadiX-Net network is generated
    /// faster than it is read), `on` for both, `off` for neither.
    #[arg(long, value_enum, default_value_t = NetworkCacheArg::Auto)]
    network_cache: NetworkCacheArg,
    /// Compute the truth of generated networks again instead of reading the one an earlier
    /// bench stored for the same network, input and oracle (`cache/truth/`; the oracle's
    /// truth is always shared by every method and GPU count of one bench).
    #[arg(long)]
    no_truth_cache: bool,
    /// Folder for <date>-<host>.json and .md.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print the JSON document instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    method_options: MethodArgs,
}

/// Which generated network `spdnn bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NetworkArg {
    /// RadiX-Net, the challenge's topology (`spdnn generate`).
    Radix,
    /// Random unstructured (`spdnn generate --random`).
    Random,
}

/// When `spdnn bench` keeps generated networks in the binary cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NetworkCacheArg {
    /// Random networks only.
    Auto,
    /// Every generated network.
    On,
    /// Never.
    Off,
}

impl BenchArgs {
    /// The generated network's spec; an error for --fan-in without --network random.
    fn weights_spec(&self) -> Result<WeightsSpec> {
        match (self.network, self.fan_in) {
            (NetworkArg::Radix, None) => Ok(WeightsSpec::Generated { seed: self.seed }),
            (NetworkArg::Radix, Some(_)) => {
                anyhow::bail!("--fan-in applies to --network random only")
            }
            (NetworkArg::Random, fan_in) => Ok(WeightsSpec::Random {
                seed: self.seed,
                fan_in: fan_in.unwrap_or(generator::DEFAULT_FAN_IN),
            }),
        }
    }
}

/// The results document written to `results/`.
#[derive(Serialize)]
struct ResultsFile {
    date: String,
    host: String,
    gpu: Option<String>,
    cpu_threads: usize,
    reports: Vec<RunReport>,
    notes: Vec<String>,
}

/// One benchmark to run: its network, input and truth, and the work its methods share.
pub(crate) struct Case {
    benchmark: Benchmark,
    network: Network,
    input: Arc<Input>,
    truth: Truth,
    shared: SharedWork,
}

/// Runs every case on every chosen method.
pub fn run(args: &BenchArgs) -> Result<Outcome> {
    let weights = args.weights_spec()?;
    if let WeightsSpec::Random { fan_in, .. } = weights {
        for &neurons in &args.neurons {
            generator::check_random(neurons, fan_in)?;
        }
    }
    let registry = Registry::default();
    let (named, skipped_for_gpu) = if args.methods.is_empty() {
        super::default_methods(&registry)
    } else {
        let named = args
            .methods
            .iter()
            .map(|name| registry.get(name).map(|m| m.name()))
            .collect::<Result<_>>()?;
        (named, Vec::new())
    };
    let (names, mut warnings) = args.method_options.resolve_methods(&registry, &named);
    let methods: Vec<&dyn spdnn_engine::Method> = names
        .iter()
        .map(|name| registry.get(name))
        .collect::<Result<_>>()?;
    let method_options = args.method_options.options()?;
    warnings.extend(args.method_options.unused_warnings(&registry, &names));
    if !skipped_for_gpu.is_empty() {
        warnings.push(format!(
            "note: no CUDA GPU here, so the default run leaves out {}",
            skipped_for_gpu.join(", ")
        ));
    }
    for warning in warnings {
        eprintln!("{warning}");
    }
    // Options a method cannot run with (a GLARE segment the kernel cannot use) are
    // found for every N before anything runs.
    for &neurons in &args.neurons {
        for method in &methods {
            method.check(&method_options, neurons)?;
        }
    }
    let any_gpu_method = methods.iter().any(|m| m.needs_gpu());
    let gpu_sets = gpu_sets(
        &args.gpu_counts,
        &method_options,
        any_gpu_method,
        spdnn_engine::gpu_count,
    )?;
    let log = progress::Log::stderr(args.json);
    let mut preparer = Preparer::new(args, &log);
    let mut notes = Vec::new();
    let mut reports = Vec::new();

    for &neurons in &args.neurons {
        for &layers in &args.layers {
            let cases = preparer.cases(&weights, neurons, layers, &mut notes)?;
            for case in &cases {
                for (&method, gpus) in methods.iter().flat_map(|m| {
                    let sets: &[Option<Vec<usize>>] =
                        if m.needs_gpu() { &gpu_sets } else { &[None] };
                    sets.iter().map(move |set| (m, set))
                }) {
                    let options = with_gpus(&method_options, gpus.as_deref());
                    let mut report = run_case(method, case, args, &options, &log, gpus.as_deref())
                        .with_context(|| {
                            format!("{} on {}", method.name(), case.benchmark.name())
                        })?;
                    if let Some(set) = gpus {
                        report.method = format!("{}×{}", report.method, set.len());
                    }
                    if !args.json {
                        eprintln!(
                            "{:<14} {:<9} {:>10.2} ms  matched {}",
                            report.method,
                            report.benchmark,
                            report.infer_ms,
                            report.matched_label()
                        );
                        if let Some(lossy) =
                            report.details.found.get("lossy").and_then(|v| v.as_str())
                        {
                            eprintln!("{:<14} lossy: {lossy}", "");
                        }
                        if let Some(choice) = super::auto_choice(&report.details.found) {
                            eprintln!("{:<14} {choice}", "");
                        }
                        if let Some(glare) = report.glare() {
                            eprintln!("{:<14} {}", "", glare.text());
                        }
                        if let Some(choice) = phase_choice(&report) {
                            eprintln!("{:<14} {choice}", "");
                        }
                    }
                    reports.push(report);
                }
            }
            // What the oracle and the methods shared for this network is not needed any more.
            drop(cases);
            spdnn_engine::forget_shared_preparations();
        }
    }

    let results = ResultsFile {
        date: chrono::Local::now().format("%Y-%m-%d").to_string(),
        host: host_name(),
        gpu: spdnn_engine::gpu_name(),
        cpu_threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        reports,
        notes,
    };
    let phase = log.phase("write results");
    let (json_path, md_path) = write_results(&args.out, &results)?;
    phase.done_with(&format!(
        "{} and {}",
        json_path.display(),
        md_path.display()
    ));
    // The results are on disk before the figures: a figure that fails costs no results.
    let figures = crate::figures::write_beside(&json_path, &results.reports)
        .map_err(|e| eprintln!("warning: figures not written: {e:#}"))
        .unwrap_or_default();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!();
        print!("{}", terminal_table(&results.reports));
        for line in glare_lines(&results.reports) {
            println!("{line}");
        }
        for line in blockdepend_lines(&results.reports) {
            println!("{line}");
        }
        for line in scaling_lines(&results.reports) {
            println!("{line}");
        }
        for note in &results.notes {
            println!("note: {note}");
        }
        println!("wrote {} and {}", json_path.display(), md_path.display());
        if !figures.is_empty() {
            let names: Vec<String> = figures.iter().map(|p| p.display().to_string()).collect();
            println!("figures: {}", names.join(", "));
        }
    }
    let all_matched = results.reports.iter().all(|r| r.matched != Some(false));
    Ok(if all_matched {
        Outcome::Success
    } else {
        Outcome::Mismatch
    })
}

/// Rows the CPU may run for an N-L benchmark.
fn cpu_rows(args: &BenchArgs, neurons: usize, layers: usize) -> usize {
    let affordable = (CPU_WORK_LIMIT / (neurons as u64 * layers as u64)).max(1) as usize;
    args.cpu_rows.unwrap_or(affordable).min(args.rows)
}

/// What the cases of a bench share as they are prepared: the flags, the data folder, the
/// log, and the input of the last N (one input serves every L of an N).
pub(crate) struct Preparer<'a> {
    args: &'a BenchArgs,
    data_dir: PathBuf,
    log: &'a progress::Log,
    input: Option<(usize, Arc<Input>)>,
}

impl<'a> Preparer<'a> {
    pub(crate) fn new(args: &'a BenchArgs, log: &'a progress::Log) -> Self {
        Self {
            args,
            data_dir: paths::data_dir(),
            log,
            input: None,
        }
    }

    /// The benchmarks of one N-L: the generated network, and the official one when its
    /// files are at hand (RadiX-Net networks only).
    pub(crate) fn cases(
        &mut self,
        weights: &WeightsSpec,
        neurons: usize,
        layers: usize,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Case>> {
        let mut cases = vec![self.generated_case(weights, neurons, layers, notes)?];
        if !self.args.no_official
            && self.args.network == NetworkArg::Radix
            && let Some(case) = self.official_case(neurons, layers, notes)?
        {
            cases.push(case);
        }
        Ok(cases)
    }

    /// The input of `neurons` features (MNIST when fetched, else synthetic; `mnist_only`:
    /// MNIST or an error), loaded once per N.
    fn input(&mut self, neurons: usize, mnist_only: bool) -> Result<Arc<Input>> {
        if let Some((n, input)) = &self.input
            && *n == neurons
            && (!mnist_only || input.origin == InputOrigin::Mnist)
        {
            return Ok(input.clone());
        }
        let spec = if mnist_only {
            InputSpec::Mnist
        } else {
            InputSpec::MnistOrSynthetic
        };
        let phase = self.log.phase(&format!("input {neurons}"));
        let input = Arc::new(super::load_input_shown(
            &spec,
            neurons,
            Some(self.args.rows),
            &self.data_dir,
            self.log.bars(),
        )?);
        phase.done_with(&format!("{} rows, {}", input.rows(), input.origin.label()));
        self.input = Some((neurons, input.clone()));
        Ok(input)
    }

    /// The network cache's folder for `weights`, when the bench uses it.
    fn network_cache(&self, weights: &WeightsSpec) -> Option<PathBuf> {
        let used = match self.args.network_cache {
            NetworkCacheArg::On => true,
            NetworkCacheArg::Off => false,
            NetworkCacheArg::Auto => matches!(weights, WeightsSpec::Random { .. }),
        };
        used.then(|| cached::network_dir(&self.data_dir))
    }

    /// The generated N-L network with the MNIST (or synthetic) input; truth from the CPU in
    /// f64 (or from the truth cache).
    fn generated_case(
        &mut self,
        weights: &WeightsSpec,
        neurons: usize,
        layers: usize,
        notes: &mut Vec<String>,
    ) -> Result<Case> {
        let (args, log) = (self.args, self.log);
        let phase = log.phase_with_bar(
            &format!("generate {neurons}-{layers}"),
            layers as u64,
            "generating",
        );
        let generated = cached::generated_network(
            weights,
            neurons,
            layers,
            self.network_cache(weights).as_deref(),
            &|done| phase.bar().set_position(done as u64),
        )?;
        phase.done_with(&generated.source.text());
        if let Some(warning) = &generated.warning {
            eprintln!("warning: {warning}");
        }
        let network = generated.network;
        let input = self.input(neurons, false)?;
        if let InputOrigin::Synthetic { seed } = input.origin {
            notes.push(format!(
                "{neurons}-{layers}: MNIST not fetched, SYNTHETIC input (seed {seed}); run `spdnn fetch --mnist`"
            ));
        }
        let benchmark = Benchmark::new(
            neurons,
            layers,
            input.rows(),
            None,
            generated.origin,
            input.origin.clone(),
        )?;
        let check_rows = cpu_rows(args, neurons, layers);
        let compressed_oracle = check_rows < input.rows() && !args.no_compressed_truth;
        let shared = SharedWork::default();
        let phase = log.phase(&format!("truth {neurons}-{layers}"));
        let store =
            (!args.no_truth_cache).then(|| TruthCache::new(cached::truth_dir(&self.data_dir)));
        let key = store.as_ref().map(|_| {
            TruthKey::new(
                &network,
                &input,
                benchmark.bias,
                benchmark.upper_bound,
                check_rows,
                compressed_oracle,
            )
        });
        let stored = match (&store, &key) {
            (Some(store), Some(key)) => store.read(key).unwrap_or_else(|e| {
                eprintln!("warning: computing the truth again: {e:#}");
                None
            }),
            _ => None,
        };
        let truth = match stored {
            Some(truth) => {
                let path = store.as_ref().zip(key.as_ref()).map(|(s, k)| s.path(k));
                let shown = path.map(|p| p.display().to_string()).unwrap_or_default();
                phase.done_with(&format!("read from the cache {shown}"));
                notes.push(format!(
                    "{neurons}-{layers}: truth read from {shown} (the oracle's, from an earlier run)"
                ));
                truth
            }
            None => {
                let truth = oracle_truth(
                    &network,
                    &input,
                    &benchmark,
                    check_rows,
                    compressed_oracle,
                    &shared,
                    log,
                )?;
                let written = match (&store, &key) {
                    (Some(store), Some(key)) => match store.write(key, &truth) {
                        Ok(path) => format!("written to the cache {}", path.display()),
                        Err(e) => {
                            eprintln!("warning: the truth was not cached: {e:#}");
                            "not cached".into()
                        }
                    },
                    _ => "truth cache off".into(),
                };
                phase.done_with(&format!(
                    "{} categories over {} rows; {written}",
                    truth.categories.len(),
                    truth.rows.min(input.rows())
                ));
                truth
            }
        };
        if truth.rows < input.rows() {
            notes.push(format!(
                "{neurons}-{layers}: truth from the CPU reference (f64) on the first {} rows only",
                truth.rows
            ));
        } else if check_rows < input.rows() {
            notes.push(format!(
                "{neurons}-{layers}: truth on all {} rows from the CPU reference (f64) on the \
                 compressed network; it agrees with the original network on the first {check_rows}",
                input.rows()
            ));
        }
        Ok(Case {
            benchmark,
            network,
            input,
            truth,
            shared,
        })
    }

    /// The official N-L network with its official truth, when the files and MNIST are at
    /// hand.
    fn official_case(
        &mut self,
        neurons: usize,
        layers: usize,
        notes: &mut Vec<String>,
    ) -> Result<Option<Case>> {
        let root = std::env::current_dir().context("reading the current directory")?;
        let Some((weights_path, truth_path)) = official_files(&root, neurons, layers) else {
            return Ok(None);
        };
        if spdnn_sdgc::images::load_mnist_train(&self.data_dir).is_err() {
            notes.push(format!(
                "official {neurons}-{layers} skipped: its truth needs the MNIST input (`spdnn fetch --mnist`)"
            ));
            return Ok(None);
        }
        let phase = self.log.phase_with_bar(
            &format!("load official {neurons}-{layers}"),
            layers as u64,
            "official net",
        );
        let (network, weights) = load_network(
            &WeightsSpec::Path(weights_path.clone()),
            Some(neurons),
            layers,
            &mut |done| phase.bar().set_position(done as u64),
        )?;
        phase.done_with(&weights_path.display().to_string());
        let input = self.input(neurons, true)?;
        let benchmark = Benchmark::new(
            neurons,
            layers,
            input.rows(),
            None,
            weights,
            input.origin.clone(),
        )?;
        let truth = load_truth(&truth_path, input.rows())?;
        Ok(Some(Case {
            benchmark,
            network,
            input,
            truth,
            shared: SharedWork::default(),
        }))
    }
}

/// The truth of a generated network by the CPU reference in f64: the first `check_rows`
/// rows on the network as it is and, when `compressed_oracle`, every row on the exactly
/// compressed network (cross-checked on those rows). The compression is `shared`'s, and the
/// process's ([`spdnn_compress::compress_shared`]): the methods that compress reuse it. The
/// slice's oracle and the compression are independent and run side by side on the thread
/// pool (at 65536-1920 on 64 cores they took 54 and 76 s one after the other).
fn oracle_truth(
    network: &Network,
    input: &Input,
    benchmark: &Benchmark,
    check_rows: usize,
    compressed_oracle: bool,
    shared: &SharedWork,
    log: &progress::Log,
) -> Result<Truth> {
    let name = benchmark.name();
    let slice_oracle = || -> Result<Truth> {
        let phase = log.phase(&format!("oracle {name}: first {check_rows} rows, f64"));
        let slice = reference_truth(network, input, benchmark, check_rows)?;
        phase.done_with(&format!("{} categories", slice.categories.len()));
        Ok(slice)
    };
    if !compressed_oracle {
        return slice_oracle();
    }
    let problem = Problem {
        network,
        input,
        bias: benchmark.bias,
        upper_bound: benchmark.upper_bound,
    };
    let compress = || -> Result<_> {
        // No spinner of its own: the oracle's is on the terminal meanwhile.
        let phase = log.phase_without_spinner(&format!("compress {name}"));
        let compression = Compression::shared(&problem, shared)?;
        let report = &compression.report;
        if report.identity {
            phase.done_with("nothing merged: the oracle's slice is the truth");
        } else {
            phase.done_with(&format!(
                "{} entries of {} kept",
                compression.network.nnz(),
                network.nnz()
            ));
        }
        Ok(compression)
    };
    let (slice, compression) = rayon::join(slice_oracle, compress);
    let (slice, compression) = (slice?, compression?);
    if compression.report.identity {
        return Ok(slice);
    }
    let phase = log.phase(&format!(
        "oracle {name}: all {} rows on the compressed network, f64",
        input.rows()
    ));
    let full = reference_truth(&compression.network, input, benchmark, input.rows())?;
    phase.done_with(&format!("{} categories", full.categories.len()));
    if full.restricted(check_rows).categories != slice.categories {
        anyhow::bail!(
            "{name}: the oracle on the compressed network disagrees with the uncompressed one on \
             the first {check_rows} rows"
        );
    }
    Ok(Truth {
        source: format!(
            "cpu reference f64 on the compressed network (agrees with the original on the \
             first {check_rows} rows)"
        ),
        ..full
    })
}

/// Categories of the first `rows` rows by the CPU reference in f64.
fn reference_truth(
    network: &Network,
    input: &Input,
    benchmark: &Benchmark,
    rows: usize,
) -> Result<Truth> {
    let activation = Activation::new(benchmark.bias, benchmark.upper_bound)?;
    let options = Options {
        keep_output: false,
        collect_stats: false,
        ..Options::default()
    };
    let head = input.head(rows);
    let out: Inference<f64> =
        spdnn_reference::infer(network.layers(), &head.features, activation, &options)?;
    Ok(Truth {
        categories: out.categories,
        source: "cpu reference f64".into(),
        rows,
    })
}

/// One line per GLARE run: its method, benchmark, segment and access reduction.
fn glare_lines(reports: &[RunReport]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| {
            let glare = r.glare()?;
            Some(format!(
                "glare: {} on {}: {}",
                r.method,
                r.benchmark,
                glare.text()
            ))
        })
        .collect()
}

/// The per-phase choice of a BlockDepend run (any report that names its `path` and
/// `launches`): the path, each launch as `layers:placement×tile@grid x threads`, and the
/// rows each later launch took over.
fn phase_choice(report: &RunReport) -> Option<String> {
    let text = |key: &str| report.details.found.get(key).and_then(|v| v.as_str());
    let mut line = format!("{}; launches {}", text("path")?, text("launches")?);
    if let Some(carried) = text("rows_carried") {
        line.push_str(&format!("; rows carried {carried}"));
    }
    Some(line)
}

/// One line per BlockDepend run: its method, benchmark, weights and per-phase choice.
fn blockdepend_lines(reports: &[RunReport]) -> Vec<String> {
    reports
        .iter()
        .filter_map(|r| {
            Some(format!(
                "blockdepend: {} on {} ({}): {}",
                r.method,
                r.benchmark,
                r.weights,
                phase_choice(r)?
            ))
        })
        .collect()
}

/// The GPU sets the GPU methods run on: `[None]` (the options as given) without
/// `--gpu-counts`, else the first K GPUs for each K. Errors before anything is generated:
/// a zero or repeated K, `--gpus` given too, or more GPUs than `visible` reports (asked
/// only when a GPU method runs).
fn gpu_sets(
    counts: &[usize],
    options: &OptionSet,
    any_gpu_method: bool,
    visible: impl Fn() -> usize,
) -> Result<Vec<Option<Vec<usize>>>> {
    if counts.is_empty() {
        return Ok(vec![None]);
    }
    if !options.get::<MemorySettings>().gpus.is_empty() {
        anyhow::bail!("give --gpu-counts or --gpus, not both");
    }
    if counts.contains(&0) {
        anyhow::bail!("--gpu-counts: every count must be at least 1");
    }
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != counts.len() {
        anyhow::bail!("--gpu-counts: a count is given twice");
    }
    let most = sorted[sorted.len() - 1];
    if any_gpu_method {
        let seen = visible();
        if most > seen {
            anyhow::bail!(
                "--gpu-counts {most}: this machine sees {seen} GPU{}",
                if seen == 1 { "" } else { "s" }
            );
        }
    }
    Ok(sorted.into_iter().map(|k| Some((0..k).collect())).collect())
}

/// `options` with the run's GPUs set to `gpus` when given.
fn with_gpus(options: &OptionSet, gpus: Option<&[usize]>) -> OptionSet {
    let mut options = options.clone();
    if let Some(gpus) = gpus {
        options.edit::<MemorySettings>(|memory| memory.gpus = gpus.to_vec());
    }
    options
}

/// One line per method and benchmark run on several GPU counts (`--gpu-counts`): each
/// count's time and its speed-up over the smallest count, and whether the categories were
/// the same at every count.
fn scaling_lines(reports: &[RunReport]) -> Vec<String> {
    // (method, "benchmark (weights)") → the runs at each count, in the order run.
    type Runs<'a> = Vec<(usize, &'a RunReport)>;
    let mut groups: Vec<((String, String), Runs<'_>)> = Vec::new();
    for report in reports {
        let Some((method, count)) = report
            .method
            .rsplit_once('×')
            .and_then(|(m, k)| Some((m, k.parse::<usize>().ok()?)))
        else {
            continue;
        };
        let key = (
            method.to_string(),
            format!("{} ({})", report.benchmark, report.weights),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => runs.push((count, report)),
            None => groups.push((key, vec![(count, report)])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, runs)| runs.len() > 1)
        .map(|((method, benchmark), runs)| {
            let base = runs[0].1.infer_ms;
            let times: Vec<String> = runs
                .iter()
                .map(|(k, r)| {
                    let speedup = if r.infer_ms > 0.0 {
                        base / r.infer_ms
                    } else {
                        0.0
                    };
                    format!(
                        "{k} GPU{} {:.2} ms ({speedup:.2}×)",
                        if *k == 1 { "" } else { "s" },
                        r.infer_ms
                    )
                })
                .collect();
            let same = runs
                .iter()
                .all(|(_, r)| r.categories == runs[0].1.categories && r.matched != Some(false));
            format!(
                "scaling: {method} on {benchmark}: {}; categories {}",
                times.join(", "),
                if same {
                    format!("{} at every count", runs[0].1.categories)
                } else {
                    "DIFFER between counts".to_string()
                }
            )
        })
        .collect()
}

/// Runs one method on one case (the CPU on its affordable slice of rows; `gpus`: the GPUs
/// of a `--gpu-counts` run, named `METHOD×K`).
fn run_case(
    method: &dyn spdnn_engine::Method,
    case: &Case,
    args: &BenchArgs,
    method_options: &OptionSet,
    log: &progress::Log,
    gpus: Option<&[usize]>,
) -> Result<RunReport> {
    let name = match gpus {
        Some(set) => format!("{}×{}", method.name(), set.len()),
        None => method.name().to_string(),
    };
    let phase = log.phase(&format!("run {name} {}", case.benchmark.name()));
    let head;
    let (input, config) = if method.needs_gpu() {
        let config = RunConfig {
            warmup: args.warmup,
            repetitions: args.repetitions.max(1),
            precision: Precision::F32,
            options: method_options.clone(),
            // Work shared by the methods run on this case (the compression, GLARE's
            // statistics).
            shared: case.shared.clone(),
        };
        (&*case.input, config)
    } else {
        let rows = cpu_rows(args, case.benchmark.neurons, case.benchmark.layers);
        let config = RunConfig {
            warmup: 0,
            repetitions: args.cpu_repetitions.max(1),
            precision: Precision::F32,
            options: method_options.clone(),
            shared: SharedWork::default(),
        };
        head = case.input.head(rows);
        (&head, config)
    };
    let benchmark = Benchmark {
        rows: input.rows(),
        ..case.benchmark.clone()
    };
    let problem = Problem {
        network: &case.network,
        input,
        bias: benchmark.bias,
        upper_bound: benchmark.upper_bound,
    };
    let execution = execute(method, &benchmark, &problem, &config, Some(&case.truth))?;
    phase.done_with(&run_summary(&execution.report));
    Ok(execution.report)
}

/// Where a run's time went, for its log line: the median timed pass, the whole run, and of
/// that the kernel compiles and the method's own preprocessing when it reports them (the
/// rest is uploads, untimed and profiled passes).
fn run_summary(report: &RunReport) -> String {
    let mut parts = vec![
        format!("infer {:.2} ms", report.infer_ms),
        format!("total {:.1} s", report.total_ms / 1e3),
    ];
    if let Some(ms) = report.compile_ms {
        parts.push(format!("compile {:.1} s", ms / 1e3));
    }
    let preprocessing = ["preprocessing_ms", "preprocess_ms"]
        .iter()
        .find_map(|key| report.details.found.get(*key))
        .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()));
    if let Some(ms) = preprocessing {
        parts.push(format!("preprocessing {:.1} s", ms / 1e3));
    }
    parts.push(format!("matched {}", report.matched_label()));
    parts.join(", ")
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

fn write_results(dir: &Path, results: &ResultsFile) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stem = format!("{}-{}", results.date, sanitize(&results.host));
    let json_path = dir.join(format!("{stem}.json"));
    let md_path = dir.join(format!("{stem}.md"));
    std::fs::write(&json_path, serde_json::to_string_pretty(results)?)
        .with_context(|| format!("writing {}", json_path.display()))?;
    let mut md = format!(
        "# spdnn bench, {} on {}\n\nGPU: {}. CPU threads: {}.\n\n",
        results.date,
        results.host,
        results.gpu.as_deref().unwrap_or("none"),
        results.cpu_threads
    );
    md.push_str(&markdown_table(&results.reports));
    for line in glare_lines(&results.reports) {
        md.push_str(&format!("\n- {line}"));
    }
    for line in blockdepend_lines(&results.reports) {
        md.push_str(&format!("\n- {line}"));
    }
    for line in scaling_lines(&results.reports) {
        md.push_str(&format!("\n- {line}"));
    }
    for note in &results.notes {
        md.push_str(&format!("\n- {note}"));
    }
    md.push('\n');
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;
    Ok((json_path, md_path))
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use spdnn_engine::method::Details;
    use spdnn_engine::{MethodOutput, Timing};
    use spdnn_sdgc::benchmark::WeightsOrigin;

    fn report(method: &str, found: &[(&str, &str)]) -> RunReport {
        let benchmark = Benchmark::new(
            4096,
            120,
            10,
            None,
            WeightsOrigin::Random {
                seed: 0,
                fan_in: 32,
            },
            InputOrigin::Mnist,
        )
        .unwrap();
        let details = Details {
            found: found
                .iter()
                .map(|&(k, v)| (k.to_string(), v.into()))
                .collect(),
            ..Details::default()
        };
        let output = MethodOutput {
            categories: vec![1],
            infer_ms: vec![1.0],
            total_ms: 1.0,
            timing: Timing::CudaEvents,
            details,
        };
        RunReport::new(method, &benchmark, &output, None)
    }

    #[test]
    fn one_line_per_blockdepend_run_names_its_phases() {
        let reports = [
            report("bf", &[("slab_width", "64")]),
            report(
                "blockdepend",
                &[
                    ("path", "tiles in global memory"),
                    ("launches", "1-2:global×32@528x256 3-120:global×32@528x256"),
                    ("rows_carried", "3-120:59000"),
                ],
            ),
            report(
                "blockdepend+compress",
                &[
                    ("path", "fused chain (tiles in shared memory)"),
                    ("launches", "1:shared×7@132x768"),
                ],
            ),
        ];
        let lines = blockdepend_lines(&reports);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "blockdepend: blockdepend on 4096-120 (random(fan-in 32, seed 0)): tiles in global \
             memory; launches 1-2:global×32@528x256 3-120:global×32@528x256; rows carried \
             3-120:59000"
        );
        assert!(
            lines[1].ends_with("fused chain (tiles in shared memory); launches 1:shared×7@132x768")
        );
        assert!(phase_choice(&reports[0]).is_none());
    }

    #[test]
    fn gpu_counts_give_the_first_k_gpus_and_refuse_what_cannot_run() {
        let none = OptionSet::default();
        let two = || 2;
        assert_eq!(gpu_sets(&[], &none, true, two).unwrap(), [None]);
        assert_eq!(
            gpu_sets(&[2, 1], &none, true, two).unwrap(),
            [Some(vec![0]), Some(vec![0, 1])]
        );
        let error = |counts: &[usize], options: &OptionSet, gpu: bool| {
            gpu_sets(counts, options, gpu, two).unwrap_err().to_string()
        };
        assert_eq!(
            error(&[1, 4], &none, true),
            "--gpu-counts 4: this machine sees 2 GPUs"
        );
        assert_eq!(
            error(&[0, 1], &none, true),
            "--gpu-counts: every count must be at least 1"
        );
        assert_eq!(
            error(&[1, 1], &none, true),
            "--gpu-counts: a count is given twice"
        );
        let mut named = OptionSet::default();
        named.edit::<MemorySettings>(|memory| memory.gpus = vec![1]);
        assert_eq!(
            error(&[1], &named, true),
            "give --gpu-counts or --gpus, not both"
        );
        // CPU methods alone never ask how many GPUs there are.
        let sets = gpu_sets(&[4], &none, false, || panic!("asked for the GPUs")).unwrap();
        assert_eq!(sets, [Some(vec![0, 1, 2, 3])]);
        let set = with_gpus(&none, Some(&[0, 1]));
        assert_eq!(set.get::<MemorySettings>().gpus, [0, 1]);
        assert_eq!(with_gpus(&named, None), named);
    }

    #[test]
    fn scaling_lines_give_the_speed_up_over_the_fewest_gpus() {
        let timed = |method: &str, ms: f64, categories: usize| {
            let mut r = report(method, &[]);
            r.infer_ms = ms;
            r.categories = categories;
            r
        };
        let reports = [
            timed("cpu", 50.0, 3),
            timed("xy×1", 9.0, 3),
            timed("xy×2", 4.5, 3),
            timed("xy×4", 3.0, 3),
            timed("sz×1", 8.0, 3),
            timed("sz×2", 4.0, 2),
            timed("hp×2", 1.0, 3),
        ];
        let lines = scaling_lines(&reports);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "scaling: xy on 4096-120 (random(fan-in 32, seed 0)): 1 GPU 9.00 ms (1.00×), \
             2 GPUs 4.50 ms (2.00×), 4 GPUs 3.00 ms (3.00×); categories 3 at every count"
        );
        assert!(
            lines[1].starts_with("scaling: sz on 4096-120"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].ends_with("categories DIFFER between counts"),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn the_network_flag_picks_the_generator() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
                .unwrap()
                .bench
                .weights_spec()
        };
        assert!(matches!(parse(&[]), Ok(WeightsSpec::Generated { seed: 0 })));
        assert!(matches!(
            parse(&["--network", "random", "--seed", "4"]),
            Ok(WeightsSpec::Random {
                seed: 4,
                fan_in: 32
            })
        ));
        assert!(matches!(
            parse(&["--network", "random", "--fan-in", "8"]),
            Ok(WeightsSpec::Random { seed: 0, fan_in: 8 })
        ));
        let error = parse(&["--fan-in", "8"]).unwrap_err().to_string();
        assert!(error.contains("--network random"), "{error}");
    }
}
