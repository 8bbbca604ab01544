//! Traces one row of the real 1024-120 benchmark layer by layer: the emulation's
//! activations against the fp32 reference's (sequential fused multiply-adds in CSR
//! order) and the exact value (f64) of each layer from the emulation's inputs; prints
//! where the live sets differ and the values nearest the thresholds.
//!
//! `cargo run --release -p spdnn-sz --example row_trace ROW`

use spdnn_formats::{Csr, SparseMatrix};
use spdnn_sdgc::paths::{find_official, workspace_root_from_manifest};
use spdnn_sdgc::{images, tsv};
use spdnn_sz::emulate::{self, Split};
use spdnn_sz::format::{self, LayoutError};
use spdnn_sz::reorder::reorder_network;

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let row: usize = std::env::args().nth(1).ok_or("ROW")?.parse()?;
    let root = workspace_root_from_manifest(env!("CARGO_MANIFEST_DIR"));
    let find = |name: &str| find_official(&root, name).ok_or(format!("{name} not found"));
    let network = tsv::read_network(&find("neuron1024.tar.gz")?, Some(1024), 120, &mut |_| {})?;
    let mnist = images::load_mnist_train(&root.join("data"))?;
    let input = images::from_mnist(&mnist, 1024, &|_, _| {})?.features;
    let reorderings = reorder_network(network.layers(), 0.25);
    let mut layers = Vec::new();
    format::build_layers::<LayoutError>(
        network.layers(),
        &reorderings,
        |_| true,
        8,
        |_, l| {
            layers.push(l);
            Ok(())
        },
    )?;
    let (bias, upper) = (-0.3f32, 32.0f32);
    let (cols, vals) = input.row(row - 1);
    let mut x = vec![0f32; 1024];
    for (&c, &v) in cols.iter().zip(vals) {
        x[c as usize] = v;
    }
    // Emulation state: positions × 16 rows (row 0 live).
    let ld = 16;
    let mut y = vec![0f32; 1024 * ld];
    for (n, &v) in x.iter().enumerate() {
        y[n * ld] = v;
    }
    let first = emulate::activation_exponent(1.0)?;
    let later = emulate::activation_exponent(upper)?;
    let mut reference = x.clone();
    let mut rounded = x.clone();
    let mut wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let mut order: Option<Vec<u32>> = None;
    for (l, (w, sz)) in network.layers().iter().zip(&layers).enumerate() {
        let s = if l == 0 { first } else { later };
        let out = emulate::layer(sz, &y, 1, ld, s, Split::TENSOR, bias, upper);
        // Emulated outputs in neuron order; the emulation's inputs in neuron order.
        let mut emu = vec![0f32; w.ncols()];
        for (p, &n) in sz.order.iter().enumerate() {
            emu[n as usize] = out[p * ld];
        }
        let mut emu_in = vec![0f32; w.nrows()];
        match &order {
            None => emu_in.copy_from_slice(&y.iter().step_by(ld).copied().collect::<Vec<_>>()),
            Some(o) => {
                for (p, &n) in o.iter().enumerate() {
                    emu_in[n as usize] = y[p * ld];
                }
            }
        }
        // Reference fp32 and exact sums.
        let t: Csr = w.transpose();
        let mut next = vec![0f32; w.ncols()];
        let mut next_rounded = vec![0f32; w.ncols()];
        let mut next_wide = vec![0f64; w.ncols()];
        let mut report = Vec::new();
        for o in 0..w.ncols() {
            let (ins, ws) = t.row(o);
            let mut z = 0f32;
            let mut exact = 0f64;
            let mut exact_emu = 0f64;
            for (&i, &wv) in ins.iter().zip(ws) {
                z = reference[i as usize].mul_add(wv, z);
                exact += f64::from(reference[i as usize]) * f64::from(wv);
                exact_emu += f64::from(emu_in[i as usize]) * f64::from(wv);
            }
            next[o] = (z + bias).max(0.0).min(upper);
            let cr: f64 = ins
                .iter()
                .zip(ws)
                .map(|(&i, &wv)| f64::from(rounded[i as usize]) * f64::from(wv))
                .sum();
            next_rounded[o] = ((cr as f32) + bias).max(0.0).min(upper);
            let wz: f64 = ins
                .iter()
                .zip(ws)
                .map(|(&i, &wv)| wide[i as usize] * f64::from(wv))
                .sum();
            next_wide[o] = (wz - 0.3).clamp(0.0, 32.0);
            if (next[o] != 0.0) != (emu[o] != 0.0) || (next[o] - emu[o]).abs() > 0.0 {
                report.push(format!(
                    "  neuron {o}: ref z {z:e} -> {:e}, emu -> {:e}; exact(ref in) {exact:e}, exact(emu in) {exact_emu:e}, z+b {:e}",
                    next[o], emu[o], z + bias
                ));
            }
        }
        let live_ref = next.iter().filter(|&&v| v != 0.0).count();
        let live_emu = emu.iter().filter(|&&v| v != 0.0).count();
        if !report.is_empty() {
            println!(
                "layer {}: live ref {live_ref}, emu {live_emu}, {} values differ",
                l + 1,
                report.len()
            );
            for r in report.iter().take(8) {
                println!("{r}");
            }
        }
        println!(
            "layer {}: neuron 0: ref {:e}, emu {:e}, correctly rounded f32 {:e}, f64 {:e}",
            l + 1,
            next[0],
            emu[0],
            next_rounded[0],
            next_wide[0]
        );
        reference = next;
        rounded = next_rounded;
        wide = next_wide;
        y = out;
        order = Some(sz.order.clone());
        if live_ref == 0 && live_emu == 0 && l > 40 {
            println!("both dead after layer {}", l + 1);
            break;
        }
    }
    Ok(())
}
