//! The shared-memory wavefronts of the ELL gathers (docs/blockdepend.md, "Banks") on a
//! random network: per slot of layer 2, in input order, with the slots' matchings alone
//! (`banks::slot_order`), and with the outputs of layer 1 balanced over the banks
//! (`banks::lane_positions`); then the whole layout as the method builds it, with the
//! time it takes.
//!
//! ```text
//! cargo run --release -p spdnn-blockdepend --example banks -- 4096 120 32   # N, layers, fan-in
//! cargo run --release -p spdnn-blockdepend --example banks -- 4096 120 0    # challenge-shaped
//! ```

use std::error::Error;
use std::time::Instant;

use spdnn_blockdepend::banks::{bank_excess, lane_positions, order_cost, slot_cost, slot_order};
use spdnn_blockdepend::layout::WARP;
use spdnn_blockdepend::{Chain, FormatChoice, Layout};
use spdnn_formats::{Csr, SparseMatrix};

/// Wavefronts a slot of the layer whose transpose is `columns`, its inputs at
/// `position[k]`: in input order and in [`slot_order`].
fn per_slot(columns: &Csr, position: &[u32]) -> (f64, f64) {
    let (mut ascending, mut ordered, mut slots) = (0, 0, 0);
    for start in (0..columns.nrows()).step_by(WARP) {
        let lanes: Vec<Vec<u32>> = (start..(start + WARP).min(columns.nrows()))
            .map(|c| {
                let mut inputs: Vec<u32> = columns
                    .row(c)
                    .0
                    .iter()
                    .map(|&k| position[k as usize])
                    .collect();
                inputs.sort_unstable();
                inputs
            })
            .collect();
        let inputs: Vec<&[u32]> = lanes.iter().map(Vec::as_slice).collect();
        let longest = inputs.iter().map(|i| i.len()).max().unwrap_or(0);
        for s in 0..longest {
            let read: Vec<u32> = inputs.iter().filter_map(|i| i.get(s).copied()).collect();
            ascending += slot_cost(&read).0;
        }
        ordered += order_cost(&inputs, &slot_order(&inputs, longest));
        slots += longest;
    }
    let slots = slots.max(1) as f64;
    (ascending as f64 / slots, ordered as f64 / slots)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>())
        .collect::<Result<_, _>>()?;
    let &[neurons, layers, fan_in] = &args[..] else {
        return Err("usage: banks N LAYERS FAN_IN".into());
    };
    // Fan-in 0: the generated challenge network of that shape (seed 0) instead.
    let network = if fan_in == 0 {
        spdnn_sdgc::generator::network(neurons, layers.max(2), 0)?
    } else {
        spdnn_sdgc::generator::random_network(neurons, layers.max(2), fan_in, 0)?
    };
    let columns = network.layers()[1].transpose();
    let identity: Vec<u32> = (0..neurons as u32).collect();
    let (ascending, matched) = per_slot(&columns, &identity);
    let started = Instant::now();
    let position = lane_positions(&columns, neurons);
    let balance_ms = started.elapsed().as_secs_f64() * 1e3;
    let (_, balanced) = per_slot(&columns, &position);
    println!(
        "layer 2 of {neurons} (fan-in {fan_in}; 0: challenge): wavefronts a slot {ascending:.3} in input \
         order, {matched:.3} matched, {balanced:.3} matched with balanced lanes ({balance_ms:.0} ms)"
    );
    println!(
        "busiest bank over the slots: {:.3} as given, {:.3} balanced",
        1.0 + bank_excess(&columns, |k| k),
        1.0 + bank_excess(&columns, |k| position[k as usize])
    );
    let chain = Chain::build(network.layers(), -0.35f32, 32.0, true, true)?;
    let started = Instant::now();
    let layout = Layout::build(&chain, FormatChoice::Auto)?;
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let ell = layout.layers.iter().filter(|l| l.format.is_ell());
    let (wavefronts, slots) = ell.fold((0, 0), |(w, s), l| (w + l.wavefronts, s + l.slots));
    println!(
        "layout of {layers} layers in {build_ms:.0} ms: {} layers' outputs reordered, {:.3} \
         wavefronts a slot over the ELL layers",
        layout.reordered(),
        wavefronts as f64 / slots.max(1) as f64
    );
    Ok(())
}
