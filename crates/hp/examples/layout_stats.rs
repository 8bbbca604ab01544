//! The H&P layout of a generated challenge network in both layouts, the live rows per
//! layer from the CPU reference over MNIST-recipe rows, and the floor of `hp` on them.
//! The numbers of `docs/hp.md` come from here (no GPU needed).
//!
//!     cargo run -p spdnn-hp --example layout_stats -- N L [ROWS] [LAYOUT_LAYERS]
//!
//! ROWS (default 60000) MNIST rows go through the reference to count the live rows of
//! each layer (fractions are scaled to 60000 rows); LAYOUT_LAYERS (default L) layers are
//! put into the layout, whose per-layer statistics stand for all L layers (the generated
//! networks repeat their structure every log2(N/16) layers). Needs the MNIST training
//! images in `$SPDNN_DATA/mnist` or `data/mnist` (`spdnn fetch --mnist`).

use std::path::PathBuf;
use std::time::Instant;

use spdnn_formats::SparseMatrix;
use spdnn_hp::{HpNetwork, Layout, LayoutStats, Params, default_buffer};

/// One shared-memory load per slot and row, 32 lanes per SM and clock: 132 SMs at
/// 1.98 GHz (H100/H200 SXM).
const SLOT_RATE: f64 = 132.0 * 32.0 * 1.98e9;
/// Device-memory bandwidth as measured on the H200 (read + write of a large copy).
const HBM_RATE: f64 = 4.25e12;
/// The minibatch and buffer the default options use.
const MINIBATCH: usize = 16;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (n, l) = match args[..] {
        [n, l, ..] => (n, l),
        _ => return Err("usage: layout_stats N L [ROWS] [LAYOUT_LAYERS]".into()),
    };
    let rows = args.get(2).copied().unwrap_or(60000);
    let layout_layers = args.get(3).copied().unwrap_or(l).min(l);

    let started = Instant::now();
    let network = spdnn_sdgc::generator::network(n, l, 0)?;
    eprintln!(
        "generated {n}-{l} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let nnz_per_layer = network.layers()[0].nnz();

    let mut per_layer = Vec::new();
    for layout in [Layout::Grouped, Layout::Paper] {
        let params = Params {
            buffer: default_buffer(MINIBATCH),
            layout,
        };
        let started = Instant::now();
        let hp = HpNetwork::build(&network.layers()[..layout_layers], &params)?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let mut s = LayoutStats::default();
        hp.layers.iter().for_each(|layer| s.add(layer));
        let blocks = s.blocks as f64;
        println!(
            "{:8} fill {:.4}  buffers/block {:.2}  footprint/block {:.1}  \
             sectors/block {:.1} ({:.2} floats used per 32-byte sector)  max buffer {}  \
             {:.1} MB/layer  build {:.0} ms for {layout_layers} layers",
            layout.name(),
            s.fill(),
            s.buffers as f64 / blocks,
            s.footprint as f64 / blocks,
            s.sectors as f64 / blocks,
            s.footprint as f64 / s.sectors.max(1) as f64,
            s.max_buffer,
            s.bytes as f64 / layout_layers as f64 / 1e6,
            ms
        );
        let layers: Vec<LayoutStats> = hp
            .layers
            .iter()
            .map(|layer| {
                let mut one = LayoutStats::default();
                one.add(layer);
                one
            })
            .collect();
        if std::env::var_os("HP_STATS_PER_LAYER").is_some() {
            for (k, s) in layers.iter().enumerate() {
                println!(
                    "  layer {:4}: footprint/block {:7.1}  sectors/block {:7.1}  buffers/block {:5.2}  fill {:.4}",
                    k + 1,
                    s.footprint as f64 / s.blocks as f64,
                    s.sectors as f64 / s.blocks as f64,
                    s.buffers as f64 / s.blocks as f64,
                    s.fill()
                );
            }
        }
        per_layer.push((layout, layers));
    }

    let data = std::env::var_os("SPDNN_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"));
    let mnist = spdnn_sdgc::images::load_mnist_train(&data)?;
    let input = spdnn_sdgc::images::from_mnist(&mnist, n, &|_, _| {})?.features;
    let input = input.rows_slice(0..rows.min(input.nrows()));
    let rows = input.nrows();
    let started = Instant::now();
    let bias = spdnn_sdgc::benchmark::official_bias(n).unwrap_or(-0.3);
    let activation = spdnn_reference::Activation::new(bias, 32.0)?;
    let options = spdnn_reference::Options {
        keep_output: false,
        collect_stats: true,
        segment_lengths: vec![32],
    };
    let reference = spdnn_reference::infer::<f32>(network.layers(), &input, activation, &options)?;
    eprintln!(
        "reference over {rows} rows in {:.1} s: {} categories",
        started.elapsed().as_secs_f64(),
        reference.categories.len()
    );
    // Live rows entering each layer, scaled to 60000.
    let scale = 60000.0 / rows as f64;
    let mut live_in = vec![rows as f64 * scale];
    live_in.extend(reference.stats.iter().map(|s| s.active_rows as f64 * scale));
    print!("live rows entering layers 1, 2, 3, 5, 10, 20, 30, 40, L:");
    for k in [1, 2, 3, 5, 10, 20, 30, 40, l] {
        if k <= l {
            print!(" {:.0}", live_in[k - 1]);
        }
    }
    println!();

    let edges = 60000.0 * 32.0 * n as f64 * l as f64;
    let useful: f64 = live_in[..l].iter().map(|r| r * nnz_per_layer as f64).sum();
    println!(
        "useful multiply-adds {useful:.3e} ({:.1} % of the challenge's {edges:.3e} edges)",
        100.0 * useful / edges
    );
    for (layout, layers) in &per_layer {
        let at = |k: usize| &layers[k % layers.len()];
        let (mut slots, mut hbm, mut fill) = (0.0, 0.0, 0.0);
        for (k, &live) in live_in[..l].iter().enumerate() {
            let s = at(k);
            slots += live * s.slots as f64;
            // Each live row read once and written once, the layer's layout read once.
            hbm += 2.0 * live * n as f64 * 4.0 + s.bytes as f64;
            // Sectors the buffer fills pull from L2 per live row.
            fill += live * s.sectors as f64 * 32.0;
        }
        println!(
            "{:8} shared-load floor {:.2} ms ({slots:.3e} slot-rows), device memory {:.2} ms \
             ({:.1} GB), L2→SM staging {:.1} GB",
            layout.name(),
            slots / SLOT_RATE * 1e3,
            hbm / HBM_RATE * 1e3,
            hbm / 1e9,
            fill / 1e9
        );
    }
    Ok(())
}
