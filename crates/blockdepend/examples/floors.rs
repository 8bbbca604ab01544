//! The floors of docs/blockdepend.md: for a network and the 60000 MNIST-recipe rows, the
//! bytes that must move and the multiply-adds that must happen once the network is
//! compressed exactly and finished rows retire, and the rows each layer computes (the CPU
//! emulation of the fused kernel, which computes exactly the rows the kernel computes: the
//! floor's with a row check after every layer, then the kernel's own, which skips the checks
//! before circulant layers).
//!
//! ```text
//! cargo run --release -p spdnn-blockdepend --example floors                 # official 1024-120
//! cargo run --release -p spdnn-blockdepend --example floors -- 4096 1920    # generated, seed 0
//! cargo run --release -p spdnn-blockdepend --example floors -- 65536 1920 6000   # first 6000 rows
//! ```
//!
//! A generated N-L run also reports every shorter challenge depth (120, 480) from the same
//! run: every layer of the generated networks preserves all-at-bound rows, so the rows
//! computed by the first 120 or 480 layers are those of the deeper network. With a row
//! count, only the first rows are run and the counts are scaled to 60000 (marked).

use std::error::Error;
use std::time::Instant;

use spdnn_blockdepend::emulate::emulate;
use spdnn_blockdepend::plan::{self, ItemChoice, Limits, PlacementChoice};
use spdnn_blockdepend::{Chain, FormatChoice, Layout};
use spdnn_compress::{Compressor, Retirement, compress, prove_layer};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::generator;
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};

/// Copy bandwidth measured on the H200 (read + write), bytes/s.
const BANDWIDTH: f64 = 4.25e12;
/// fp32 fused multiply-adds per second of an H200 (67 TFLOPS).
const FMA_RATE: f64 = 33.5e12;
/// The blocks the fused kernel runs on an H200 (132 SMs × about 3 resident blocks).
const BLOCKS: usize = 396;
const H200: Limits = Limits::hopper(1168);
const UPPER: f32 = 32.0;
const ROWS: usize = 60_000;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>())
        .collect::<Result<_, _>>()?;
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("data");
    let mnist = spdnn_sdgc::images::load_mnist_train(&data)?;
    match args[..] {
        [] => {
            let path = find_official(&root, "neuron1024.tar.gz")
                .ok_or("the official neuron1024.tar.gz is not there")?;
            let net = spdnn_sdgc::tsv::read_network(&path, Some(1024), 120, &mut |_| {})?;
            let started = Instant::now();
            let c = compress(net.layers())?;
            let retirement = c.retirement(-0.3, UPPER)?;
            eprintln!("compressed in {:.1} s", started.elapsed().as_secs_f64());
            let input = spdnn_sdgc::images::from_mnist(&mnist, 1024, &|_, _| {})?.features;
            report(
                "official 1024",
                c.into_layers(),
                &retirement,
                &input,
                &[120],
                -0.3,
            )?;
        }
        [n, l] | [n, l, _] => {
            let bias = spdnn_sdgc::benchmark::official_bias(n).unwrap_or(-0.3);
            let started = Instant::now();
            let mut compressor = Compressor::new();
            let mut layers = Vec::with_capacity(l);
            let mut proofs = Vec::with_capacity(l);
            let mut failure = None;
            generator::for_each_layer(n, l, 0, |_, layer| {
                match compressor
                    .push(&layer)
                    .map_err(|e| e.to_string())
                    .and_then(|small| {
                        let proof = prove_layer(&small, bias, UPPER).map_err(|e| e.to_string())?;
                        Ok((small, proof))
                    }) {
                    Ok((small, proof)) => {
                        layers.push(small);
                        proofs.push(proof);
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
                Ok::<(), spdnn_sdgc::SdgcError>(())
            })?;
            if let Some(e) = failure {
                return Err(e.into());
            }
            let retirement = Retirement::from_proofs(proofs, bias, UPPER)?;
            eprintln!(
                "generated and compressed {n}-{l} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let started = Instant::now();
            let mut input = spdnn_sdgc::images::from_mnist(&mnist, n, &|_, _| {})?.features;
            eprintln!("MNIST inputs in {:.1} s", started.elapsed().as_secs_f64());
            if let [_, _, rows] = args[..] {
                input = input.rows_slice(0..rows.min(input.nrows()));
            }
            let depths: Vec<usize> = [120, 480, 1920].into_iter().filter(|&d| d <= l).collect();
            report(
                &format!("generated {n}"),
                layers,
                &retirement,
                &input,
                &depths,
                bias,
            )?;
        }
        _ => return Err("arguments: [N L [rows]]".into()),
    }
    Ok(())
}

fn report(
    name: &str,
    layers: Vec<Csr>,
    retirement: &Retirement,
    input: &Csr,
    depths: &[usize],
    bias: f32,
) -> Result<(), Box<dyn Error>> {
    let suffix = retirement.suffix_start();
    let rows = input.nrows();
    let scale = ROWS as f64 / rows as f64;
    let marked = if rows == ROWS {
        String::new()
    } else {
        format!(" (first {rows} rows, scaled ×{scale:.1})")
    };
    let chain = Chain::from_parts(
        layers,
        (retirement.preserving_suffix_len() > 0).then_some(suffix),
    )?;
    let started = Instant::now();
    let layout = Layout::build(&chain, FormatChoice::Auto)?;
    let segments = plan::launches(&layout, &H200, None, PlacementChoice::Auto, None)?;
    let grids = vec![BLOCKS; segments.len()];
    let run = |segments: &[plan::Segment]| {
        emulate(
            &layout,
            segments,
            &grids,
            input,
            bias,
            UPPER,
            chain.suffix_start(),
        )
    };
    // The rows that must be computed: a row check after every layer (the gathers' items). The
    // kernel's tiles skip the checks before circulant layers (Segment::check_deferred) and
    // compute the rows that died there as well: reported apart.
    let mut checked = segments.clone();
    plan::choose_items(&mut checked, ItemChoice::Gathers);
    let emulation = run(&checked)?;
    let kernel = run(&segments)?;
    eprintln!(
        "layout, plan and emulations in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let computed = &emulation.computed;
    let categories = emulation.states.iter().filter(|&&s| s != 0).count();
    let w1 = &chain.layers()[0];
    // Layer 1: every input nonzero (k, x) costs the compressed layer-1 row k's entries.
    let row_len: Vec<u64> = (0..w1.nrows()).map(|k| w1.row(k).0.len() as u64).collect();
    let layer1_macs: f64 = input
        .col_indices()
        .iter()
        .map(|&k| row_len[k as usize] as f64)
        .sum();
    let input_csr = 8.0 * input.nnz() as f64;
    let input_bitmap = (rows * input.ncols()) as f64 / 8.0;
    let (dense, ell) = (
        layout
            .layers
            .iter()
            .filter(|l| l.format == spdnn_blockdepend::Format::Dense)
            .count(),
        layout.layers.iter().filter(|l| l.format.is_ell()).count(),
    );
    println!("## {name}{marked}");
    println!(
        "input: {} nonzeros ({:.1} a row); compressed widths {}..{}; {dense} dense and {ell} ELL layers; \
         suffix from layer {suffix}; categories {}",
        input.nnz(),
        input.nnz() as f64 / rows as f64,
        layout.layers.iter().map(|l| l.out_width).min().unwrap_or(0),
        layout.layers.iter().map(|l| l.out_width).max().unwrap_or(0),
        (categories as f64 * scale).round()
    );
    println!("circulant layers: {:?}", layout.circulant_layers());
    let at = |l: usize| computed.get(l - 1).map_or(0.0, |&c| c as f64 * scale);
    println!(
        "rows computed by layer 1, 2, 3, 5, 10, 15, 20, 25, 30, 50, 100: {:?}",
        [1, 2, 3, 5, 10, 15, 20, 25, 30, 50, 100].map(|l| at(l).round() as u64)
    );
    let last_busy = computed.iter().rposition(|&c| c > 0).map_or(0, |l| l + 1);
    println!("last layer computing a row: {last_busy}");
    println!(
        "launches (default cuts): {}",
        segments
            .iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "| shape | input MB: CSR / binary CSR / bitmap | weights read MB (all layers) | MACs (padded slots) | t_mem µs: binary CSR / bitmap | t_fp32 µs | floor µs (binary CSR) |"
    );
    for &depth in depths {
        let needed: f64 = layout.layers[..depth]
            .iter()
            .zip(computed)
            .filter(|(_, c)| **c > 0)
            .map(|(l, _)| l.bytes as f64)
            .sum();
        let all: f64 = layout.layers[..depth].iter().map(|l| l.bytes as f64).sum();
        let macs: f64 = layer1_macs * scale
            + layout.layers[1..depth]
                .iter()
                .zip(&computed[1..depth])
                .map(|(l, &c)| c as f64 * scale * l.nnz as f64)
                .sum::<f64>();
        let slots: f64 = layer1_macs * scale
            + layout.layers[1..depth]
                .iter()
                .zip(&computed[1..depth])
                .map(|(l, &c)| c as f64 * scale * l.macs_per_row() as f64)
                .sum::<f64>();
        // A binary input is read as its column indices only (4 B a nonzero).
        let binary = input_csr / 2.0 * scale;
        let t_mem = (binary + needed + ROWS as f64) / BANDWIDTH * 1e6;
        let t_bitmap = (input_bitmap * scale + needed + ROWS as f64) / BANDWIDTH * 1e6;
        let t_mac = macs / FMA_RATE * 1e6;
        println!(
            "| {}-{depth} | {:.1} / {:.1} / {:.1} | {:.2} ({:.1}) | {:.3e} ({:.3e}) | {:.1} / {:.1} | {:.1} | {:.1} |",
            name.rsplit(' ').next().unwrap_or(name),
            input_csr * scale / 1e6,
            binary / 1e6,
            input_bitmap * scale / 1e6,
            needed / 1e6,
            all / 1e6,
            macs,
            slots,
            t_mem,
            t_bitmap,
            t_mac,
            t_mem.max(t_mac)
        );
    }
    println!(
        "computed per layer (to the last busy one): {:?}",
        &computed[..last_busy.max(1)]
    );
    println!(
        "the kernel computes per layer (its checks before circulant layers skipped): {:?}",
        &kernel.computed[..last_busy.max(1)]
    );
    println!(
        "| layer | rows computed | out width | slots | stored entries | bytes | MACs (slots × rows) |"
    );
    for (index, (l, &c)) in layout.layers[..last_busy.max(1)]
        .iter()
        .zip(computed)
        .enumerate()
    {
        println!(
            "| {} | {c} | {} | {} | {} | {} | {:.3e} |",
            index + 1,
            l.out_width,
            l.slots,
            l.nnz,
            l.bytes,
            c as f64 * l.macs_per_row() as f64
        );
    }
    Ok(())
}
