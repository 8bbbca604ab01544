//! Times `XyNetwork::prepare` on a generated challenge network.
//!
//! Usage: `cargo run --release -p spdnn-xy --example prepare_time -- [N] [L]`
//! (defaults 65536 64). Generation is not timed.

use std::error::Error;
use std::time::Instant;

use spdnn_xy::XyNetwork;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argument = |index: usize, default: usize| -> Result<usize, Box<dyn Error>> {
        match args.get(index) {
            Some(text) => text
                .parse()
                .map_err(|_| format!("expected a positive integer, got {text:?}").into()),
            None => Ok(default),
        }
    };
    let neurons = argument(0, 65536)?;
    let layers = argument(1, 64)?;
    let network = spdnn_sdgc::generator::network(neurons, layers, 1)?;

    let start = Instant::now();
    let xy = XyNetwork::prepare(network.layers())?;
    let seconds = start.elapsed().as_secs_f64();

    let grouped = xy.layers.iter().filter(|layer| layer.is_grouped()).count();
    let per_layer = seconds / layers as f64;
    println!(
        "prepared {layers} layers of {neurons} in {seconds:.3} s ({:.1} ms/layer, {} threads); \
         1920 layers extrapolated: {:.1} s",
        per_layer * 1e3,
        rayon::current_num_threads(),
        per_layer * 1920.0
    );
    println!("{grouped} of {layers} layers grouped");
    Ok(())
}
