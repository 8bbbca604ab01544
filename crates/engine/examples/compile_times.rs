//! What a cold start compiles, timed with NVRTC on this machine (no GPU needed).
//!
//! - Before (spdnn up to 7d7f952): every source whole, for `sm_90`, to PTX (NVRTC runs ptxas
//!   for a real architecture even then), and the driver compiled the PTX again at load time.
//! - Now: each kernel a run loads, alone (`SPDNN_KEEP`), to a CUBIN the driver loads as it is;
//!   the kernels of a method's plan compile side by side on worker threads.
//!
//! For every method of the registry, on the official 1024-120 with default options: the
//! kernels its plan compiles ahead (its crate's `plan_kernels`; blockdepend's plan is made
//! from the network, with an H100's limits), the sum of their times, and the time on
//! `--cores` workers (the list in order, each kernel to the first free worker). Times are the
//! compiling thread's CPU time (from `/proc/thread-self/stat`), which a loaded machine does not
//! inflate; the wall time is printed beside it.
//!
//! ```text
//! LD_LIBRARY_PATH=$PWD/.nvrtc/nvidia/cu13/lib cargo run --release -p spdnn-engine \
//!     --example compile_times -- [--official ../shared/data/sdgc/neuron1024.tar.gz] \
//!     [--cores 16] [--whole] [--arch sm_90]
//! ```
//!
//! `--whole` also times every source whole (the before column; minutes for sz.cu and
//! blockdepend.cu).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use spdnn_cuda::{ImageKind, KernelDecl, KernelSource, compile_text_to, selection_options};
use spdnn_engine::data::{WeightsSpec, load_network};

/// CPU seconds of the calling thread so far (user + system), when Linux says.
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may hold spaces), 1-based: utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// One compile's CPU and wall milliseconds.
#[derive(Debug, Clone, Copy)]
struct Timed {
    cpu_ms: f64,
    wall_ms: f64,
}

/// Compiles `source` (only `kernel` of it, or all) for `arch` to `kind` and times it.
fn time_compile(
    source: &KernelSource,
    kernel: Option<&str>,
    arch: &str,
    kind: ImageKind,
) -> Result<Timed> {
    let text = source.expand_builtin()?;
    let mut options = source.nvrtc_options(arch)?;
    if let Some(kernel) = kernel {
        options.extend(selection_options(&[kernel]));
    }
    let (cpu, wall) = (thread_cpu_s(), Instant::now());
    compile_text_to(source.name, &text, arch, &options, kind)
        .with_context(|| format!("compiling {}:{kernel:?}", source.name))?;
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = match (cpu, thread_cpu_s()) {
        (Some(a), Some(b)) => (b - a) * 1e3,
        _ => wall_ms,
    };
    Ok(Timed { cpu_ms, wall_ms })
}

/// The time `times` take on `cores` workers, in order, each to the first free worker.
fn on_workers(times: &[f64], cores: usize) -> f64 {
    let mut free = vec![0.0f64; cores.max(1)];
    for &t in times {
        let first = free
            .iter_mut()
            .min_by(|a, b| a.total_cmp(b))
            .expect("at least one worker");
        *first += t;
    }
    free.into_iter().fold(0.0, f64::max)
}

/// blockdepend's plan for the official network with an H100's limits: `bd_chain_shared` and
/// the instances it launches, compiled for the layer formats a run compiles them for
/// (`KernelFormats`, the default).
fn blockdepend_plan(official: &Path) -> Result<Vec<KernelDecl>> {
    use spdnn_blockdepend::{BlockDependOptions, Chain, Layout, Limits, plan};
    let (network, _) = load_network(
        &WeightsSpec::Path(official.to_path_buf()),
        Some(1024),
        120,
        &mut |_| {},
    )?;
    let options = BlockDependOptions::default();
    let chain = Chain::build(
        network.layers(),
        -0.3f32,
        32.0,
        options.compress,
        options.retire,
    )
    .map_err(anyhow::Error::msg)?;
    let layout = Layout::build(&chain, options.format).map_err(anyhow::Error::msg)?;
    let cuts = plan::cut_points(layout.layers.len(), options.cuts.as_deref())
        .map_err(anyhow::Error::msg)?;
    // bd_chain_shared's static shared memory is its BdTile: 3 · 4 · MAX_TILE + 4 + MAX_TILE
    // + 12 bytes (1680 at MAX_TILE 128, as an H100 reports).
    let static_shared = 13 * plan::MAX_TILE + 16;
    let mut segments = plan::plan(
        &layout,
        &Limits::hopper(static_shared),
        &cuts,
        options.placement,
        options.tile_rows,
    )
    .map_err(anyhow::Error::msg)?;
    plan::choose_items(&mut segments, options.items);
    plan::choose_spread(&mut segments, &layout, options.spread);
    let labels: Vec<String> = segments
        .iter()
        .map(|s| format!("{}:{:?}", s.label(), s.placement))
        .collect();
    eprintln!(
        "blockdepend's plan on the official 1024-120: {}",
        labels.join(" ")
    );
    let formats = options.kernel_formats.set(layout.formats());
    let shared = &spdnn_blockdepend::CHAIN_SHARED;
    Ok(std::iter::once(shared)
        .chain(
            spdnn_blockdepend::plan_kernels(&segments)
                .into_iter()
                .filter(|d| d.name != shared.name),
        )
        .map(|decl| spdnn_blockdepend::for_formats(decl, formats))
        .collect())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut official, mut cores, mut whole, mut arch) =
        (None, 16usize, false, "sm_90".to_string());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--official" => official = args.next().map(PathBuf::from),
            "--cores" => cores = args.next().context("--cores N")?.parse()?,
            "--whole" => whole = true,
            "--arch" => arch = args.next().context("--arch sm_XY")?,
            other => bail!("unknown argument {other}"),
        }
    }
    if !spdnn_cuda::nvrtc_present() {
        bail!("NVRTC not found: put .nvrtc/nvidia/cu13/lib on LD_LIBRARY_PATH");
    }
    let blockdepend: Vec<KernelDecl> = match &official {
        Some(path) => blockdepend_plan(path)?,
        None => {
            eprintln!("no --official: blockdepend counted with every instance");
            spdnn_blockdepend::KERNELS.to_vec()
        }
    };
    let methods: Vec<(&str, Vec<&KernelDecl>)> = vec![
        ("bf", spdnn_bf::BF_KERNELS.to_vec()),
        ("snig", spdnn_snig::SNIG_KERNELS.to_vec()),
        ("cusparse", spdnn_cusparse::EPILOGUES.to_vec()),
        ("xy", spdnn_xy::plan_kernels(&Default::default(), false)),
        (
            "snicit",
            spdnn_snicit::plan_kernels(&Default::default(), false),
        ),
        ("hp", spdnn_hp::plan_kernels(&Default::default(), false)),
        ("sz", spdnn_sz::plan_kernels(&Default::default(), false)),
        (
            "sz+t4",
            spdnn_sz::plan_kernels(
                &spdnn_sz::SzOptions {
                    t4: true,
                    ..Default::default()
                },
                false,
            ),
        ),
        ("blockdepend", blockdepend.iter().collect()),
    ];

    // Each kernel once, in the order first named.
    let mut times: BTreeMap<(&str, &str), Timed> = BTreeMap::new();
    println!("| method | kernels | CPU ms each (in order) | sum CPU ms | on {cores} workers ms |");
    println!("|---|---|---|---|---|");
    for (method, decls) in &methods {
        let mut each = Vec::new();
        for decl in decls {
            let key = (decl.source.name, decl.name);
            let timed = match times.get(&key) {
                Some(t) => *t,
                None => {
                    let t = time_compile(decl.source, Some(decl.name), &arch, ImageKind::Cubin)?;
                    eprintln!(
                        "{:22} {:40} {:7.0} ms CPU {:7.0} ms wall",
                        decl.source.name, decl.name, t.cpu_ms, t.wall_ms
                    );
                    times.insert(key, t);
                    t
                }
            };
            each.push(timed.cpu_ms);
        }
        // blockdepend: bd_chain_shared first (its static shared memory is a plan input), then
        // the plan's instances side by side.
        let workers = if *method == "blockdepend" {
            each[0] + on_workers(&each[1..], cores)
        } else {
            on_workers(&each, cores)
        };
        let list: Vec<String> = decls
            .iter()
            .zip(&each)
            .map(|(d, ms)| format!("{} {ms:.0}", d.name))
            .collect();
        println!(
            "| {method} | {} | {} | {:.0} | {workers:.0} |",
            decls.len(),
            list.join(", "),
            each.iter().sum::<f64>()
        );
    }

    if whole {
        println!();
        println!("| source | whole, {arch} PTX: CPU ms | wall ms |");
        println!("|---|---|---|");
        let mut seen = Vec::new();
        for (_, decls) in &methods {
            for decl in decls {
                if seen.contains(&decl.source.name) {
                    continue;
                }
                seen.push(decl.source.name);
                let t = time_compile(decl.source, None, &arch, ImageKind::Ptx)?;
                println!(
                    "| {} | {:.0} | {:.0} |",
                    decl.source.name, t.cpu_ms, t.wall_ms
                );
            }
        }
    }
    Ok(())
}
