//! BlockDepend against the CPU reference. These need a CUDA GPU: run with
//! `--include-ignored` on the GPU machine (`crates/blockdepend/device.sh`).

use proptest::prelude::*;
use spdnn_blockdepend::{
    BlockDependOptions, FormatChoice, ItemChoice, KernelFormats, PlacementChoice, SpreadChoice,
    infer, infer_with_biases,
};
use spdnn_cuda::Gpu;
use spdnn_cuda::rows::{GpuInference, RunSpec};
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_gputest::biased::{
    BiasedProblem, check_biased_random, check_trained_nets, check_trained_shaped,
    trained_shaped_problem,
};
use spdnn_gputest::scale::proptest_config;
use spdnn_gputest::{
    Problem, Tolerance, check_challenge, check_compressed, check_exact_random,
    check_general_random, check_grouped_random, check_official_1024, check_rectangular_random,
    compare, sized,
};

mod common;

use common::circulant_layer;

/// One warm-up and two timed runs (one at sanitize scale), the output kept.
fn spec() -> RunSpec {
    spdnn_gputest::run_spec(1, 2)
}

fn run_with(
    options: BlockDependOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| infer(gpu, &p.layers, &p.input, p.bias, p.upper, &options, &spec())
}

fn options(f: impl FnOnce(&mut BlockDependOptions)) -> BlockDependOptions {
    let mut o = BlockDependOptions::default();
    f(&mut o);
    o
}

/// The option sets every random suite runs: the defaults, no compression, tiles in global
/// memory, split tiles, small tiles with a launch after every layer, and each format forced.
fn variants() -> Vec<(&'static str, BlockDependOptions)> {
    vec![
        ("defaults", BlockDependOptions::default()),
        ("uncompressed", options(|o| o.compress = false)),
        ("no retirement", options(|o| o.retire = false)),
        (
            "global tiles",
            options(|o| o.placement = PlacementChoice::Global),
        ),
        (
            "split tiles",
            options(|o| o.placement = PlacementChoice::Split),
        ),
        (
            "tiles of 3, cut after every layer",
            options(|o| {
                o.tile_rows = Some(3);
                o.cuts = Some((1..12).collect());
            }),
        ),
        ("dense", options(|o| o.format = FormatChoice::Dense)),
        (
            "dense, a row a warp",
            options(|o| {
                o.format = FormatChoice::Dense;
                o.placement = PlacementChoice::Warps;
            }),
        ),
        (
            "dense, a row a warp, cut after every layer",
            options(|o| {
                o.format = FormatChoice::Dense;
                o.placement = PlacementChoice::Warps;
                o.cuts = Some((1..12).collect());
            }),
        ),
        ("ell", options(|o| o.format = FormatChoice::Ell)),
        (
            "predicated items",
            options(|o| o.items = ItemChoice::Predicated),
        ),
        (
            "spread everywhere",
            options(|o| o.spread = SpreadChoice::Always),
        ),
        (
            "spread, tiles of 2, cut after every layer",
            options(|o| {
                o.spread = SpreadChoice::Always;
                o.tile_rows = Some(2);
                o.cuts = Some((1..12).collect());
            }),
        ),
    ]
}

/// `options` with its cuts kept within a network of `layers` layers (the random suites vary
/// their depth).
fn within(options: &BlockDependOptions, layers: usize) -> BlockDependOptions {
    let mut o = options.clone();
    if let Some(cuts) = &mut o.cuts {
        cuts.retain(|&c| c < layers);
    }
    o
}

/// A run of `options` with its cuts kept within the network's layers.
fn run_variant(
    options: BlockDependOptions,
) -> impl Fn(&Gpu, &Problem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let o = within(&options, p.layers.len());
        infer(gpu, &p.layers, &p.input, p.bias, p.upper, &o, &spec())
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_random_networks() {
    for (name, o) in variants() {
        eprintln!("exact random: {name}");
        check_exact_random(&run_variant(o));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn general_random_networks() {
    for (name, o) in variants() {
        eprintln!("general random: {name}");
        check_general_random(&run_variant(o));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grouped_random_networks() {
    for (name, o) in variants() {
        eprintln!("grouped random: {name}");
        check_grouped_random(&run_variant(o));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rectangular_random_networks() {
    check_rectangular_random(&run_with(BlockDependOptions::default()));
    check_rectangular_random(&run_with(options(|o| {
        o.placement = PlacementChoice::Global;
    })));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compressed_networks() {
    // Already compressed by the caller: compressing again finds nothing more.
    check_compressed(&run_with(BlockDependOptions::default()));
    check_compressed(&run_with(options(|o| o.compress = false)));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn saturating_networks_retire_rows() {
    let gpu = spdnn_gputest::gpu();
    let mut runner = proptest::test_runner::TestRunner::new(proptest_config(None));
    let outcome = runner.run(&spdnn_gputest::saturating_problem(1, 90, 8, 200), |p| {
        for (name, o) in [
            ("retire", BlockDependOptions::default()),
            ("no retirement", options(|o| o.retire = false)),
        ] {
            let result = run_with(o)(&gpu, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            compare(&p, &result, Tolerance::Exact)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    for (n, l, rows) in [(64, 6, 300), (96, 40, 70), (300, 30, 33)] {
        let p = spdnn_gputest::all_saturating_problem(n, l, sized(rows, 8));
        let result = run_with(BlockDependOptions::default())(&gpu, &p).unwrap();
        compare(&p, &result, Tolerance::Exact).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_challenge_networks() {
    let defaults = run_with(BlockDependOptions::default());
    check_challenge(&defaults, 1024, 120, 3000);
    check_challenge(&defaults, 4096, 24, 500);
    check_challenge(&defaults, 16384, 12, 64);
    check_challenge(&run_with(options(|o| o.compress = false)), 1024, 30, 500);
    check_challenge(&run_with(options(|o| o.compress = false)), 4096, 12, 100);
    check_challenge(
        &run_with(options(|o| o.placement = PlacementChoice::Global)),
        1024,
        40,
        700,
    );
}

/// Circulant layers (`layout::Circulant`: a lane four outputs, a vector load a slot and row)
/// against the same runs with them gathered entry by entry (`ItemChoice::Gathers`): the same
/// categories and every output bit for bit (the same fused multiply-adds in the same order;
/// layer 1 is one value on binary rows, summed as integers, so no atomics' order moves a
/// bit), and both against the reference; some rows finish on the way and some reach the end.
/// Layers 2–7 are circulant: 16-byte loads (offsets 0
/// mod 4), 8-byte pairs (2 mod 4), 1 to 4 slots, weights of several values, a halving layer;
/// the last layer is not (gathered in every run). `width` 64 runs its first launch a row a
/// lane (`bd_lanes_circulant`: a lane one output column of all 32 rows of its warp, against
/// the shuffled entries of `bd_lanes_layer`); 256 narrow shared tiles; 4096 wide ones, 4 rows
/// a tile (split tiles, next in global memory, and shared ones); a run with a launch after
/// every layer carries rows into circulant layers; one with per-neuron biases loads them a
/// float4 at a time (a lane one bias a layer, a row a lane).
#[test]
#[ignore = "needs a CUDA GPU"]
fn circulant_items_agree_with_their_gathers() {
    let gpu = spdnn_gputest::gpu();
    let inputs = 1024;
    for width in [64usize, 256, 4096] {
        let rows = sized(if width > 256 { 600 } else { 3000 }, 96);
        // Layer 1: output c sums 16 inputs spread over the row, one value.
        let mut first: Vec<(u32, u32, f32)> = (0..width as u32)
            .flat_map(|c| (0..16u32).map(move |t| ((c * 3 + t * 37) % inputs as u32, c, 0.25)))
            .collect();
        first.sort_by_key(|&(k, c, _)| (k, c));
        first.dedup_by_key(|t| (t.0, t.1));
        let half = width / 2;
        let mut last: Vec<(u32, u32, f32)> = (0..half as u32)
            .flat_map(|k| [(k, (k * 7 + 3) % 64, 0.5), (k, (k * 13 + 1) % 64, 0.25)])
            .collect();
        last.sort_by_key(|&(k, c, _)| (k, c));
        last.dedup_by_key(|t| (t.0, t.1));
        let w = width as u32;
        let layers = vec![
            Csr::from_triplets(inputs, width, &first).unwrap(),
            circulant_layer(width, width, &[(0, 1.0), (2, 1.0)]),
            circulant_layer(width, width, &[(w - 8, 0.5), (0, 1.0), (12, 0.25)]),
            circulant_layer(
                width,
                width,
                &[(0, 0.75), (6, 0.5), (10, 0.5), (w - 2, 0.125)],
            ),
            circulant_layer(width, width, &[(w / 2, 1.0), (4, 1.5)]),
            circulant_layer(width, half, &[(0, 1.0)]),
            circulant_layer(half, half, &[(0, 0.5), (half as u32 / 2, 0.5)]),
            Csr::from_triplets(half, 64, &last).unwrap(),
        ];
        let input = spdnn_sdgc::images::synthetic(rows, inputs, 7)
            .unwrap()
            .features;
        let p = Problem {
            layers,
            input,
            bias: -0.3,
            upper: 32.0,
        };
        let biases: Vec<Vec<f32>> = p
            .layers
            .iter()
            .enumerate()
            .map(|(l, layer)| {
                (0..layer.ncols())
                    .map(|c| -0.05 * ((c * 7 + l) % 9) as f32)
                    .collect()
            })
            .collect();
        let tiles = if width > 256 { Some(4) } else { None };
        let cases = [
            ("shared", options(|o| o.tile_rows = tiles)),
            (
                "split",
                options(|o| {
                    o.tile_rows = tiles;
                    o.placement = PlacementChoice::Split;
                }),
            ),
            (
                "tiles of 3, cut after every layer",
                options(|o| {
                    o.tile_rows = Some(3);
                    o.cuts = Some((1..p.layers.len()).collect());
                }),
            ),
            ("per-neuron biases", options(|o| o.tile_rows = tiles)),
        ];
        for (name, base) in cases {
            let case = format!("{width} wide, {rows} rows, {name}");
            eprintln!("circulant items: {case}");
            let base = BlockDependOptions {
                compress: false,
                grid_blocks: sized(None, Some(SANITIZE_GRID_BLOCKS)),
                ..base
            };
            let biased = name == "per-neuron biases";
            let run = |o: BlockDependOptions| {
                if biased {
                    infer_with_biases(&gpu, &p.layers, &p.input, &biases, p.upper, &o, &spec())
                } else {
                    run_with(o)(&gpu, &p)
                }
                .unwrap_or_else(|e| panic!("{case}: {e}"))
            };
            let circulant = run(base.clone());
            assert_eq!(
                circulant.detail("circulant"),
                Some("2-7"),
                "{case}: {:?}",
                circulant.details
            );
            if width == 64 && (name == "shared" || biased) {
                assert!(
                    lanes_ran(&circulant, false),
                    "{case}: {:?}",
                    circulant.details
                );
            }
            let gathers = run(BlockDependOptions {
                items: ItemChoice::Gathers,
                ..base
            });
            assert!(
                gathers
                    .detail("items")
                    .is_some_and(|v| v.contains("exact-gathers")),
                "{case}: {:?}",
                gathers.details
            );
            let (a, b) = same_categories_and_outputs(&circulant, &gathers, &case);
            let differing = a
                .iter()
                .zip(b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            assert_eq!(differing, 0, "{case}: outputs not bit for bit the gathers'");
            if biased {
                let problem = BiasedProblem {
                    layers: p.layers.clone(),
                    input: p.input.clone(),
                    biases: biases.clone(),
                    upper: p.upper,
                };
                // The biases (multiples of 0.05) are not dyadic, so the sums round: a circulant
                // layer adds its slots in offset order, the reference in input order. A row
                // whose two best scores lie within the values' tolerance at the bound may then
                // predict either (2026-11-28j call 5: one row of the 64-wide case).
                let tie = 1e-4 * p.upper;
                spdnn_gputest::biased::compare(
                    &problem,
                    &circulant,
                    Tolerance::Relative(1e-4),
                    tie,
                )
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            } else {
                compare(&p, &circulant, Tolerance::Relative(1e-4))
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn official_1024_network() {
    check_official_1024(&run_with(BlockDependOptions::default()));
    check_official_1024(&run_with(options(|o| o.compress = false)));
    check_official_1024(&run_with(options(|o| o.retire = false)));
}

/// Inputs of `rows_each` rows (every tile size, spread or not) against the reference: tiles
/// straddle the input's end. The row counts are split over several tests, each one process
/// under racecheck. At sanitize scale the grids (the spread kernel's too) hold
/// [`SANITIZE_GRID_BLOCKS`] blocks: under racecheck a spread launch of every resident block
/// took up to 30 GB of host memory a process, and the tests of 1–2 and of 7 rows, run beside
/// others, were killed (exit 9, 0 hazards; each case alone was clean, 2026-11-27).
/// SPDNN_STRADDLE_ONLY=ROWS,TILE (TILE a number or `none`) runs that one case alone.
fn tiles_straddle_the_end_of_the_input(rows_each: &[usize]) {
    let only: Option<(usize, Option<usize>)> = std::env::var("SPDNN_STRADDLE_ONLY").ok().map(|v| {
        let (rows, tile) = v.split_once(',').expect("SPDNN_STRADDLE_ONLY=ROWS,TILE");
        let tile = (tile != "none").then(|| tile.parse().expect("TILE: a number or none"));
        (rows.parse().expect("ROWS: a number"), tile)
    });
    let gpu = spdnn_gputest::gpu();
    for &rows in rows_each {
        let p = spdnn_gputest::challenge_problem(1024, 30, rows, 3);
        for tile_rows in [None, Some(1), Some(4), Some(128)] {
            if only.is_some_and(|case| case != (rows, tile_rows)) {
                continue;
            }
            for spread in [SpreadChoice::Auto, SpreadChoice::Always] {
                // Each case is named before it runs (seen with --nocapture, e.g. under a
                // sanitizer that stops the process).
                eprintln!("tiles_straddle: {rows} rows, tile {tile_rows:?}, spread {spread:?}");
                let o = options(|o| {
                    o.tile_rows = tile_rows;
                    o.spread = spread;
                    o.grid_blocks = sized(None, Some(SANITIZE_GRID_BLOCKS));
                });
                let result = run_with(o)(&gpu, &p)
                    .unwrap_or_else(|e| panic!("{rows} rows, tile {tile_rows:?}: {e}"));
                compare(&p, &result, Tolerance::Relative(1e-5))
                    .unwrap_or_else(|e| panic!("{rows} rows, tile {tile_rows:?}: {e}"));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiles_straddle_the_end_of_1_and_2_rows() {
    tiles_straddle_the_end_of_the_input(&[1, 2]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiles_straddle_the_end_of_7_rows() {
    tiles_straddle_the_end_of_the_input(&[7]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiles_straddle_the_end_of_129_rows() {
    tiles_straddle_the_end_of_the_input(&[129]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tiles_straddle_the_end_of_1001_rows() {
    tiles_straddle_the_end_of_the_input(&[1001]);
}

/// Which ways a run's spread launches went: (some launch spread its rows, some launch had
/// more rows than it spreads and ran its tiles), from the details `spread_rows` and
/// `rows_carried` (`LAYERS:COUNT` pairs).
fn spread_paths(result: &GpuInference) -> (bool, bool) {
    let pairs = |key: &str| -> Vec<(String, usize)> {
        result
            .detail(key)
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|pair| {
                let (label, n) = pair.split_once(':')?;
                Some((label.to_string(), n.parse().ok()?))
            })
            .collect()
    };
    let carried = pairs("rows_carried");
    let (mut spread, mut tiles) = (false, false);
    for (label, capacity) in pairs("spread_rows") {
        let rows = carried.iter().find(|(l, _)| *l == label).map(|p| p.1);
        match rows {
            Some(n) if n > capacity => tiles = true,
            Some(n) if n > 0 => spread = true,
            _ => {}
        }
    }
    (spread, tiles)
}

/// Spread launches against the same launches running their tiles, on challenge networks
/// (`random` false) or random ones (`random` true): two tests, each one process of bounded
/// length under racecheck (together 312 s there, 2026-11-27).
fn spread_launches_agree_with_tiles(random: bool) {
    // Challenge networks compress (tiles in shared memory) and their rows die fast; a random
    // network's rows neither die nor compress (1024 floats a row). Under `always` every
    // launch after the first spreads while its rows fit grid × chunk (a chunk: the tile in
    // shared memory); 8000 random rows in chunks of 1 are more than that, so those launches
    // run their tiles. `auto` spreads only layers of 256 KiB or more (N = 65536), none here.
    // Fewer rows at sanitize scale; 4500 random rows in chunks of 1 are still more than
    // 132 SMs × 32 blocks (the most an SM holds) × 1.
    let gpu = spdnn_gputest::gpu();
    let random_problem = |rows| {
        let network = spdnn_sdgc::generator::random_network(1024, 6, 32, 13).unwrap();
        Problem {
            layers: network.layers().to_vec(),
            input: spdnn_sdgc::images::synthetic(rows, 1024, 13)
                .unwrap()
                .features,
            bias: -0.35,
            upper: 32.0,
        }
    };
    let every_layer = Some((1..6).collect::<Vec<usize>>());
    let challenge = |n, layers, rows| spdnn_gputest::challenge_problem(n, layers, rows, 5);
    let (always, auto) = (SpreadChoice::Always, SpreadChoice::Auto);
    // (name, problem, tile, cuts, spread, expected (spread ran, tiles ran))
    let cases = if random {
        vec![
            (
                "random, 600 rows",
                random_problem(sized(600, 200)),
                None,
                every_layer.clone(),
                always,
                (true, false),
            ),
            (
                "random, chunks of 1",
                random_problem(sized(8000, 4500)),
                Some(1),
                every_layer,
                always,
                (false, true),
            ),
        ]
    } else {
        vec![
            // These rows (seeded synthetic input) die within 4 layers: cut after 2 (the
            // default before 2026-11-27h) so that the second launch has rows to spread.
            (
                "challenge 16384-24",
                challenge(16384, 24, sized(600, 200)),
                None,
                Some(vec![2, 4, 8, 16]),
                always,
                (true, false),
            ),
            (
                "challenge 1024-120",
                challenge(1024, 120, sized(3000, 500)),
                None,
                Some(vec![2, 4, 8, 16, 32, 64]),
                always,
                (true, false),
            ),
            (
                "challenge 1024-120, auto",
                challenge(1024, 120, sized(3000, 500)),
                None,
                Some(vec![2, 4, 8, 16, 32, 64]),
                auto,
                (false, false),
            ),
        ]
    };
    for (name, p, tile_rows, cuts, spread, expected) in cases {
        eprintln!("spread against tiles: {name}");
        let run = |spread| {
            run_with(options(|o| {
                o.tile_rows = tile_rows;
                o.cuts = cuts.clone();
                o.spread = spread;
                // Chunks are the tiles (split tiles would halve them).
                o.placement = PlacementChoice::Shared;
            }))(&gpu, &p)
            .unwrap_or_else(|e| panic!("{name}, {spread:?}: {e}"))
        };
        let tiles = run(SpreadChoice::Off);
        let spread_run = run(spread);
        assert_eq!(
            spread_paths(&tiles),
            (false, false),
            "{name}: {:?}",
            tiles.details
        );
        assert_eq!(
            spread_paths(&spread_run),
            expected,
            "{name}: {:?}",
            spread_run.details
        );
        // Random layers sum in the layout's order, not the reference's: a little rounding.
        for result in [&tiles, &spread_run] {
            compare(&p, result, Tolerance::Relative(1e-4))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(
            tiles.detail("rows_carried"),
            spread_run.detail("rows_carried"),
            "{name}: the launches carried different rows"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn spread_launches_agree_with_tiles_on_challenge_networks() {
    spread_launches_agree_with_tiles(false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn spread_launches_agree_with_tiles_on_random_networks() {
    spread_launches_agree_with_tiles(true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_wide_networks_split_their_tiles() {
    // The general-network benchmark's kind of network, 4096 wide and uncompressible: the
    // model splits the tiles (14 rows with the inputs in shared memory instead of 7 with
    // both buffers there); two buffers and global tiles must agree.
    let n = 4096;
    let network = spdnn_sdgc::generator::random_network(n, 4, 32, 7).unwrap();
    let input = spdnn_sdgc::images::synthetic(sized(300, 64), n, 7)
        .unwrap()
        .features;
    let p = Problem {
        layers: network.layers().to_vec(),
        input,
        bias: -0.35,
        upper: 32.0,
    };
    let gpu = spdnn_gputest::gpu();
    for (placement, path) in [
        (PlacementChoice::Auto, "split"),
        (PlacementChoice::Split, "split"),
        (PlacementChoice::Shared, "shared"),
        (PlacementChoice::Global, "global"),
    ] {
        let result = run_with(options(|o| o.placement = placement))(&gpu, &p)
            .unwrap_or_else(|e| panic!("{placement:?}: {e}"));
        assert!(
            result.detail("path").is_some_and(|v| v.contains(path)),
            "{placement:?}: {:?}",
            result.details
        );
        // Slot order and layer 1's atomics differ from the reference's order; four random
        // layers grow the last bits a little.
        compare(&p, &result, Tolerance::Relative(1e-4))
            .unwrap_or_else(|e| panic!("{placement:?}: {e}"));
    }
}

/// Blocks of each launch's grid in [`exact_and_predicated_items_agree_on`] and
/// [`tiles_straddle_the_end_of_the_input`] at sanitize scale.
const SANITIZE_GRID_BLOCKS: usize = 8;

/// That the first launch of `result` (its `launches` detail: `LAYERS:PLACE×TILE@GRIDxTHREADS`)
/// ran at most `cap` blocks and that `rows` fill its tiles (⌈rows / (grid · waves)⌉ ≥ the
/// tile).
fn assert_tiles_fill(result: &GpuInference, rows: usize, cap: usize, case: &str) {
    let launches = result.detail("launches").unwrap_or_default();
    let first = launches.split_whitespace().next().unwrap_or_default();
    let shape = || -> Option<(usize, usize)> {
        let (_, sizes) = first.split_once('×')?;
        let (tile, rest) = sizes.split_once('@')?;
        let (grid, _) = rest.split_once('x')?;
        Some((tile.parse().ok()?, grid.parse().ok()?))
    };
    let (tile, grid) = shape().unwrap_or_else(|| panic!("{case}: launches {launches:?}"));
    assert!(grid <= cap, "{case}: grid {grid} above {cap}");
    assert!(
        rows.div_ceil(grid * spdnn_blockdepend::plan::TILE_WAVES) >= tile,
        "{case}: {rows} rows do not fill tiles of {tile} over {grid} blocks"
    );
}

/// Asserts that two runs of one problem found the same categories and kept outputs of the
/// same, non-zero size; returns the outputs to compare.
fn same_categories_and_outputs<'a>(
    a: &'a GpuInference,
    b: &'a GpuInference,
    case: &str,
) -> (&'a [f32], &'a [f32]) {
    assert_eq!(a.categories, b.categories, "{case}");
    let (x, y) = (
        a.output.as_deref().unwrap_or_default(),
        b.output.as_deref().unwrap_or_default(),
    );
    assert_eq!(x.len(), y.len(), "{case}: output sizes");
    assert!(!x.is_empty(), "{case}: no outputs kept");
    (x, y)
}

/// A case of [`exact_and_predicated_items_agree_on`]: width, rows, placement, most rows a tile.
type ItemsCase = (usize, usize, PlacementChoice, Option<usize>);

/// The exact items (one instance per row count, 32-bit shared addresses) against the
/// predicated ones on random fan-in-32 networks, uncompressible, `n` wide with `rows` rows,
/// for each case `(n, rows, placement, tile)`: the same categories, and outputs equal but
/// for rounding (the layers after the first sum in the same order, but layer 1 adds with
/// shared-memory atomics, whose order differs from run to run: bit equality failed on an
/// H200 for that reason, 2026-11-23). The cases are split over several tests so that each
/// is one process of bounded length under racecheck (the whole set did not finish in 544 s
/// there, 2026-11-27).
///
/// A launch's tiles hold ⌈rows / blocks⌉ rows (`plan::TILE_WAVES`), at most the tile: with
/// 132 blocks (H200) 800 rows fill the 3-row split tiles of 16384-wide rows (items of 3 rows,
/// the last tiles fewer), 2400 rows at 4096 fill tiles of 1–9 rows (every row count 1–8 and
/// items of 8 + 1). At sanitize scale the grid holds [`SANITIZE_GRID_BLOCKS`] blocks, so that 64
/// and 160 rows fill the same tiles (checked from the launches run: racecheck's time grows
/// with the rows, and the whole set took about 20 minutes of it at full rows), and the
/// networks have two layers instead of four (layer 1's atomics, then the exact items of
/// layer 2). There the predicated items run only where `predicated_when_sanitizing` (one
/// part): the exact items are checked against the reference in every part, and one method
/// run under racecheck took 5–30 s (`spdnn infer` at 8–160 rows, 2026-11-27).
fn exact_and_predicated_items_agree_on(cases: &[ItemsCase], predicated_when_sanitizing: bool) {
    let gpu = spdnn_gputest::gpu();
    let grid_blocks = sized(None, Some(SANITIZE_GRID_BLOCKS));
    let predicated_too = sized(true, predicated_when_sanitizing);
    for &(n, full_rows, placement, tile_rows) in cases {
        let rows = sized(full_rows, if n > 4096 { 64 } else { 160 });
        let case = format!("{n} wide, {rows} rows, {placement:?}, tile {tile_rows:?}");
        eprintln!("exact and predicated items: {case}");
        let network = spdnn_sdgc::generator::random_network(n, sized(4, 2), 32, 11).unwrap();
        let input = spdnn_sdgc::images::synthetic(rows, n, 11).unwrap().features;
        let p = Problem {
            layers: network.layers().to_vec(),
            input,
            bias: -0.35,
            upper: 32.0,
        };
        let base = options(|o| {
            o.placement = placement;
            o.tile_rows = tile_rows;
            o.grid_blocks = grid_blocks;
        });
        let exact = run_with(base.clone())(&gpu, &p).unwrap_or_else(|e| panic!("{case}: {e}"));
        if let Some(cap) = grid_blocks {
            assert_tiles_fill(&exact, rows, cap, &case);
        }
        assert!(
            exact.detail("items").is_some_and(|v| v.contains("exact")),
            "{case}: {:?}",
            exact.details
        );
        compare(&p, &exact, Tolerance::Relative(1e-4)).unwrap_or_else(|e| panic!("{case}: {e}"));
        if !predicated_too {
            continue;
        }
        let predicated = run_with(BlockDependOptions {
            items: ItemChoice::Predicated,
            ..base
        })(&gpu, &p)
        .unwrap_or_else(|e| panic!("{case}, predicated: {e}"));
        assert!(
            predicated
                .detail("items")
                .is_some_and(|v| !v.contains("exact")),
            "{case}"
        );
        let (a, b) = same_categories_and_outputs(&exact, &predicated, &case);
        let worst = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1.0))
            .fold(0f32, f32::max);
        assert!(
            worst <= 1e-5,
            "{case}: the exact items' outputs differ from the predicated ones' by {worst} (relative, absolute below 1)"
        );
        compare(&p, &predicated, Tolerance::Relative(1e-4))
            .unwrap_or_else(|e| panic!("{case}, predicated: {e}"));
    }
}

/// Split tiles of `tiles` rows at most, 4096 wide, 2400 rows.
fn split_tiles(tiles: std::ops::RangeInclusive<usize>) -> Vec<ItemsCase> {
    tiles
        .map(|t| (4096, 2400, PlacementChoice::Split, Some(t)))
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_and_predicated_items_agree_16384_wide() {
    exact_and_predicated_items_agree_on(&[(16384, 800, PlacementChoice::Auto, None)], false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_and_predicated_items_agree_split_tiles_of_1_to_3() {
    exact_and_predicated_items_agree_on(&split_tiles(1..=3), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_and_predicated_items_agree_split_tiles_of_4_to_6() {
    exact_and_predicated_items_agree_on(&split_tiles(4..=6), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_and_predicated_items_agree_split_tiles_of_7_to_9() {
    exact_and_predicated_items_agree_on(&split_tiles(7..=9), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_and_predicated_items_agree_shared_tiles() {
    exact_and_predicated_items_agree_on(&[(4096, 2400, PlacementChoice::Shared, None)], true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wide_chains_run_in_global_memory() {
    // 60000 neurons without classes: not one row fits a block's shared memory.
    let n = 60_000usize;
    let layer = |shift: u32, value: f32| {
        let mut t: Vec<(u32, u32, f32)> = (0..n as u32)
            .flat_map(|i| {
                [
                    (i, (i + shift) % n as u32, value),
                    (i, (i * 7 + 1) % n as u32, 0.5),
                ]
            })
            .collect();
        t.sort_by_key(|&(i, j, _)| (i, j));
        t.dedup_by_key(|&mut (i, j, _)| (i, j));
        Csr::from_triplets(n, n, &t).unwrap()
    };
    let layers = vec![layer(1, 1.0), layer(5, 0.75), layer(11, 1.25)];
    let input = Csr::from_triplets(
        5,
        n,
        &[
            (0, 3, 1.0),
            (0, 40_000, 1.0),
            (1, 59_999, 1.0),
            (3, 17, 0.5),
            (4, 0, 2.0),
        ],
    )
    .unwrap();
    let p = Problem {
        layers,
        input,
        bias: -0.25,
        upper: 32.0,
    };
    let gpu = spdnn_gputest::gpu();
    for o in [
        BlockDependOptions::default(),
        options(|o| o.cuts = Some(vec![1, 2])),
    ] {
        let result = run_with(o)(&gpu, &p).unwrap();
        assert!(
            result.detail("path").is_some_and(|v| v.contains("global")),
            "{:?}",
            result.details
        );
        compare(&p, &result, Tolerance::Exact).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn batches_reuse_the_prepared_run() {
    // 2000 rows in batches of 700, 700 and 600 (300 in 120, 120 and 60 at sanitize scale):
    // every batch reloads the same buffers.
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 40, sized(2000, 300), 4);
    let spec = RunSpec {
        batch: Some(sized(700, 120)),
        ..spec()
    };
    let o = BlockDependOptions::default();
    let result = infer(&gpu, &p.layers, &p.input, p.bias, p.upper, &o, &spec).unwrap();
    compare(&p, &result, Tolerance::Relative(1e-5)).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_replays_the_launches_enqueued_one_by_one() {
    // The timed passes replay one captured graph, the tiles' launches and the spread ones
    // (cooperative) included; in batches, a batch with a new row count is captured anew.
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 40, sized(2000, 300), 5);
    let batched = RunSpec {
        batch: Some(sized(700, 120)),
        ..spec()
    };
    for (case, base) in [
        ("defaults", BlockDependOptions::default()),
        (
            "spread, cut after every layer",
            options(|o| {
                o.spread = SpreadChoice::Always;
                o.cuts = Some((1..40).collect());
            }),
        ),
    ] {
        for spec in [spec(), batched] {
            let run = |graph: bool| {
                let o = BlockDependOptions {
                    graph,
                    ..base.clone()
                };
                infer(&gpu, &p.layers, &p.input, p.bias, p.upper, &o, &spec).unwrap()
            };
            let (replayed, called) = (run(true), run(false));
            assert!(
                replayed
                    .detail("replay")
                    .is_some_and(|r| r.starts_with("one CUDA graph")),
                "{case}: {:?}",
                replayed.detail("replay")
            );
            assert_eq!(called.detail("replay"), Some("call by call"), "{case}");
            // Every timed pass replays the graph once a batch, and each replay's span (its
            // first node to its last) is read.
            let batches = p.input.nrows().div_ceil(spec.batch.unwrap_or(usize::MAX));
            let replays = (spec.warmup + spec.repetitions) * batches;
            let span = replayed.detail("graph_span_ms").unwrap_or_default();
            let median: f64 = span
                .strip_prefix("median ")
                .and_then(|rest| rest.split(' ').next())
                .and_then(|ms| ms.parse().ok())
                .unwrap_or_else(|| panic!("{case}: graph_span_ms {span:?}"));
            assert!(median > 0.0, "{case}: {span}");
            assert!(
                span.contains(&format!(" of {replays} replays")),
                "{case}: {span}"
            );
            assert_eq!(called.detail("graph_span_ms"), None, "{case}");
            assert_eq!(replayed.categories, called.categories, "{case}");
            assert_eq!(replayed.output, called.output, "{case}");
            compare(&p, &replayed, Tolerance::Relative(1e-5)).unwrap();
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn compression_on_and_off_agree() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 60, sized(2000, 200), 9);
    let on = run_with(BlockDependOptions::default())(&gpu, &p).unwrap();
    let off = run_with(options(|o| o.compress = false))(&gpu, &p).unwrap();
    assert_eq!(on.categories, off.categories);
    assert_eq!(on.output, off.output);
    assert!(
        on.detail("compression")
            .is_some_and(|v| v.contains("widths"))
    );
    assert_eq!(off.detail("compression"), Some("off"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_options_and_problems_are_errors() {
    let gpu = spdnn_gputest::gpu();
    let p = spdnn_gputest::challenge_problem(1024, 3, 8, 1);
    let run =
        |o: BlockDependOptions| infer(&gpu, &p.layers, &p.input, p.bias, p.upper, &o, &spec());
    assert!(run(options(|o| o.tile_rows = Some(0))).is_err());
    assert!(run(options(|o| o.tile_rows = Some(129))).is_err());
    assert!(run(options(|o| o.cuts = Some(vec![3]))).is_err());
    assert!(run(options(|o| o.cuts = Some(vec![2, 1]))).is_err());
    // Uncompressed 60000 wide rows cannot live in shared memory (compressed, this layer
    // of empty columns would shrink to two classes and fit).
    let n = 60_000;
    let w = Csr::from_triplets(n, n, &[(0, 1, 1.0)]).unwrap();
    let x = Csr::from_triplets(1, n, &[(0, 0, 1.0)]).unwrap();
    let shared = options(|o| {
        o.placement = PlacementChoice::Shared;
        o.compress = false;
    });
    let e = infer(
        &gpu,
        std::slice::from_ref(&w),
        &x,
        -0.3,
        32.0,
        &shared,
        &spec(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("shared memory"), "{e}");
    // Positive bias, wrong widths.
    assert!(
        infer(
            &gpu,
            std::slice::from_ref(&w),
            &x,
            0.3,
            32.0,
            &BlockDependOptions::default(),
            &spec()
        )
        .is_err()
    );
    let narrow = Csr::from_triplets(1, 5, &[(0, 0, 1.0)]).unwrap();
    assert!(
        infer(
            &gpu,
            &[w],
            &narrow,
            -0.3,
            32.0,
            &BlockDependOptions::default(),
            &spec()
        )
        .is_err()
    );
}

/// A run with per-neuron biases (trained networks), cuts kept within the network's layers.
fn run_biased(
    options: BlockDependOptions,
) -> impl Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError> {
    move |gpu, p| {
        let o = within(&options, p.layers.len());
        infer_with_biases(gpu, &p.layers, &p.input, &p.biases, p.upper, &o, &spec())
    }
}

/// Runs `strategy`'s problems through `runner`, each bit for bit against the reference with
/// its per-neuron biases (predictions included).
fn check_biased_exact(
    strategy: impl Strategy<Value = BiasedProblem>,
    runner: &dyn Fn(&Gpu, &BiasedProblem) -> Result<GpuInference, spdnn_cuda::CudaError>,
) {
    let gpu = spdnn_gputest::gpu();
    let mut proptest = proptest::test_runner::TestRunner::new(proptest_config(None));
    let outcome = proptest.run(&strategy, |p| {
        let result = runner(&gpu, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
        spdnn_gputest::biased::compare(&p, &result, Tolerance::Exact, 0.0)
            .map(|_| ())
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases() {
    // Random rectangular chains with dyadic biases ≤ 0, bit for bit, under every option set.
    for (name, o) in variants() {
        eprintln!("per-neuron biases: {name}");
        check_biased_random(&run_biased(o), false);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases_split_compressed_classes() {
    // Planted classes of identical columns with one bias each, some neurons with a bias of
    // their own: compression merges only equal biases, the kernel reads each class's bias.
    for (name, o) in variants() {
        eprintln!("planted classes with per-neuron biases: {name}");
        check_biased_exact(common::planted(), &run_biased(o));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn per_neuron_biases_retire_rows() {
    // Saturating chains with per-column biases: rows retire where every later column was
    // proved with its own bias; retiring or not, bit for bit.
    for (name, o) in [
        ("retire", BlockDependOptions::default()),
        ("no retirement", options(|o| o.retire = false)),
        (
            "retire, global tiles",
            options(|o| o.placement = PlacementChoice::Global),
        ),
    ] {
        eprintln!("saturating with per-neuron biases: {name}");
        check_biased_exact(common::saturating_biased(), &run_biased(o));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains() {
    // 784 → 128 × 6 → 10 and 784 → 256 × 4 → 10, dense ends, bound 1, 2000 rows.
    check_trained_shaped(&run_biased(BlockDependOptions::default()), false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_shaped_chains_other_placements() {
    // The variants that change where tiles live, how big they are and what runs.
    let placements: Vec<_> = variants()
        .into_iter()
        .filter(|(name, _)| {
            matches!(
                *name,
                "uncompressed"
                    | "global tiles"
                    | "split tiles"
                    | "tiles of 3, cut after every layer"
            )
        })
        .collect();
    assert_eq!(
        placements.len(),
        4,
        "a variant named here is missing from variants()"
    );
    for (name, o) in placements {
        eprintln!("trained-shaped: {name}");
        check_trained_shaped(&run_biased(o), false);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn trained_networks_a_b_c() {
    // data/nets/{A,B,C}.safetensors over the 10000 MNIST test images (skipped with a
    // message when absent).
    check_trained_nets(&run_biased(BlockDependOptions::default()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn positive_biases_are_refused() {
    let gpu = spdnn_gputest::gpu();
    let p = trained_shaped_problem(32, 1, 4, true, 3);
    let error = run_biased(BlockDependOptions::default())(&gpu, &p)
        .unwrap_err()
        .to_string();
    assert!(error.contains("blockdepend"), "{error}");
    assert!(error.contains("only for biases ≤ 0"), "{error}");
}

/// `o` with `format`.
fn with_format(o: &BlockDependOptions, format: FormatChoice) -> BlockDependOptions {
    BlockDependOptions {
        format,
        ..o.clone()
    }
}

/// Runs `p` with `o` three times, its layers stored scaled where their values allow
/// (`FormatChoice::Ell`) and as pairs (`FormatChoice::EllPairs`), both with kernels compiled
/// for their layers' formats (`KernelFormats::Layers`, whatever `o` says), and scaled again
/// with kernels of every format (`KernelFormats::Every`): the scaled run against the
/// reference within `tolerance`, and against the other two bit for bit (the same slots, each
/// entry decoding to its pair; the same sums whatever branches the module holds). Returns how
/// many layers the scaled run stored scaled.
fn scaled_agrees_with_pairs(
    gpu: &Gpu,
    p: &Problem,
    o: &BlockDependOptions,
    tolerance: Tolerance,
    what: &str,
) -> usize {
    let layers = |format| BlockDependOptions {
        kernel_formats: KernelFormats::Layers,
        ..with_format(o, format)
    };
    let scaled = run_variant(layers(FormatChoice::Ell))(gpu, p)
        .unwrap_or_else(|e| panic!("{what}, scaled: {e}"));
    let pairs = run_variant(layers(FormatChoice::EllPairs))(gpu, p)
        .unwrap_or_else(|e| panic!("{what}, pairs: {e}"));
    let every = run_variant(BlockDependOptions {
        kernel_formats: KernelFormats::Every,
        ..with_format(o, FormatChoice::Ell)
    })(gpu, p)
    .unwrap_or_else(|e| panic!("{what}, scaled, every format's kernels: {e}"));
    compare(p, &scaled, tolerance).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(scaled.categories, pairs.categories, "{what}");
    assert_eq!(scaled.categories, every.categories, "{what}");
    let bits = |r: &GpuInference| -> Vec<u32> {
        r.output
            .as_ref()
            .map_or_else(Vec::new, |v| v.iter().map(|x| x.to_bits()).collect())
    };
    assert!(
        bits(&scaled) == bits(&pairs),
        "{what}: scaled and pairs differ"
    );
    assert!(
        bits(&scaled) == bits(&every),
        "{what}: the kernels of the layers' formats and of every format differ"
    );
    let count = |r: &GpuInference| -> usize {
        r.detail("formats")
            .and_then(|f| f.split_once(" ell (")?.1.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no scaled count in {:?}", r.detail("formats")))
    };
    assert_eq!(count(&pairs), 0, "{what}");
    assert!(!first_layer_scaled(&pairs), "{what}");
    count(&scaled)
}

/// `p` with its input's values 1/2, 1 and 3/2 in turn (the same nonzeros): not binary, and
/// small dyadic sums, exact in any order.
fn in_halves(p: &Problem) -> Problem {
    let t: Vec<(u32, u32, f32)> = p
        .input
        .triplets()
        .enumerate()
        .map(|(i, (r, c, _))| (r, c, (1 + i % 3) as f32 / 2.0))
        .collect();
    Problem {
        input: Csr::from_triplets(p.input.nrows(), p.input.ncols(), &t).unwrap(),
        ..p.clone()
    }
}

/// Whether the run's layer 1 was read from scaled entries (`formats` in its details).
fn first_layer_scaled(r: &GpuInference) -> bool {
    r.detail("formats")
        .is_some_and(|f| f.contains("layer 1 scattered from scaled entries"))
}

/// Scaled ELL layers (multiples of one value: input index and multiple in 16 or 32 bits) on
/// the device, against the reference and the same runs with pairs, bit for bit: the
/// compressed challenge networks (one value in the first cycle, multiples of 1/16 after) at
/// 4096 (narrow shared tiles, every instance) and 65536 (wide shared tiles, spread tails),
/// a mixed random chain (scaled layers between pair ones), and 33000-wide layers (32-bit
/// entries) in split and global tiles.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scaled_ell_layers_agree_with_pairs_and_the_reference() {
    let gpu = spdnn_gputest::gpu();
    let relative = Tolerance::Relative(1e-5);
    // Every layer after the first ELL and scaled: 23 at 4096-24.
    let p = spdnn_gputest::challenge_problem_mnist(4096, 24, sized(600, 60), 2);
    for (name, o) in [
        ("defaults", BlockDependOptions::default()),
        (
            "predicated items",
            options(|o| o.items = ItemChoice::Predicated),
        ),
        (
            "spread everywhere",
            options(|o| o.spread = SpreadChoice::Always),
        ),
        (
            "split tiles",
            options(|o| o.placement = PlacementChoice::Split),
        ),
        (
            "global tiles",
            options(|o| o.placement = PlacementChoice::Global),
        ),
        (
            "tiles of 3, cut after every layer",
            options(|o| {
                o.tile_rows = Some(3);
                o.cuts = Some((1..24).collect());
            }),
        ),
    ] {
        let what = format!("4096-24, {name}");
        assert_eq!(
            scaled_agrees_with_pairs(&gpu, &p, &o, relative, &what),
            23,
            "{what}"
        );
    }
    // Layer 1 scaled on input that is not binary (values 1/2, 1 and 3/2: the float sums
    // stay exact): x·float(m)·b added as floats, against the pairs bit for bit; the binary
    // runs above summed whole multiples as integers.
    let halves = in_halves(&p);
    for problem in [&p, &halves] {
        let run = run_variant(BlockDependOptions::default())(&gpu, problem).unwrap();
        assert!(first_layer_scaled(&run), "{:?}", run.detail("formats"));
    }
    let what = "4096-24, input of halves";
    let o = BlockDependOptions::default();
    assert_eq!(
        scaled_agrees_with_pairs(&gpu, &halves, &o, relative, what),
        23,
        "{what}"
    );
    // 65536 compressed to 4096-wide rows (wide tiles); layers 13 and 14 hold several
    // multiples of 1/16.
    let p = spdnn_gputest::challenge_problem_mnist(65536, 14, sized(300, 30), 3);
    for (name, o) in [
        ("defaults", BlockDependOptions::default()),
        (
            "spread everywhere",
            options(|o| o.spread = SpreadChoice::Always),
        ),
    ] {
        let what = format!("65536-14, {name}");
        assert_eq!(
            scaled_agrees_with_pairs(&gpu, &p, &o, relative, &what),
            13,
            "{what}"
        );
    }
    // A random chain whose layers 2 and 4 hold multiples of 1/16 (1 to 3), the others
    // random values: two scaled layers between pair ones.
    let n = 1024;
    let mut layers = spdnn_sdgc::generator::random_network(n, 4, 32, 3)
        .unwrap()
        .layers()
        .to_vec();
    for l in [1, 3] {
        let t: Vec<(u32, u32, f32)> = layers[l]
            .triplets()
            .enumerate()
            .map(|(i, (r, c, _))| (r, c, (1 + i % 3) as f32 / 16.0))
            .collect();
        layers[l] = Csr::from_triplets(n, n, &t).unwrap();
    }
    // Layer 1 adds its terms with atomics, in any order: its random values rounded to
    // multiples of 2^-10 make its sums exact, so two runs agree bit for bit (with the
    // values as drawn, the scaled and pair runs differed in the last bits on an H100,
    // 2026-11-27f call 4, as two pair runs may).
    let t: Vec<(u32, u32, f32)> = layers[0]
        .triplets()
        .map(|(r, c, v)| {
            let steps = (v * 1024.0).round();
            (r, c, if steps == 0.0 { v.signum() } else { steps } / 1024.0)
        })
        .collect();
    layers[0] = Csr::from_triplets(n, n, &t).unwrap();
    let p = Problem {
        layers,
        input: spdnn_sdgc::images::synthetic(sized(400, 40), n, 3)
            .unwrap()
            .features,
        bias: -0.35,
        upper: 32.0,
    };
    // Every variant but the forced formats (the runs force theirs).
    for (name, o) in variants()
        .into_iter()
        .filter(|(name, _)| !["dense", "ell"].contains(name))
    {
        let what = format!("mixed random 1024, {name}");
        let o = within(&o, p.layers.len());
        // The slots' order is not the inputs' order: random values differ from the
        // reference's in the last bits.
        let scaled = scaled_agrees_with_pairs(&gpu, &p, &o, Tolerance::Relative(1e-4), &what);
        assert_eq!(scaled, 2, "{what}");
    }
    // 33000 inputs a layer: 16 index bits, with multiples up to 3 an entry takes 32 bits.
    // Two buffers of a row do not fit a block, one does.
    let p = common::wide_scaled_problem();
    // Uncompressed, so that the rows keep their 33000 inputs.
    for (name, placement, items) in [
        ("split", PlacementChoice::Split, ItemChoice::Auto),
        (
            "split, predicated items",
            PlacementChoice::Split,
            ItemChoice::Predicated,
        ),
        ("global", PlacementChoice::Global, ItemChoice::Auto),
    ] {
        let o = options(|o| {
            o.compress = false;
            o.placement = placement;
            o.items = items;
        });
        let what = format!("33000 wide, {name}");
        assert_eq!(
            scaled_agrees_with_pairs(&gpu, &p, &o, Tolerance::Exact, &what),
            2,
            "{what}"
        );
    }
}

/// Whether every launch of `result` (`all`) or its first ran a row a lane (the `launches`
/// detail: `LAYERS:PLACE×TILE@GRIDxTHREADS`).
fn lanes_ran(result: &GpuInference, all: bool) -> bool {
    let launches = result.detail("launches").unwrap_or_default();
    let mut places = launches
        .split_whitespace()
        .map(|l| l.split_once(':').map(|(_, rest)| rest.starts_with("lanes")));
    if all {
        places.all(|lanes| lanes == Some(true))
    } else {
        places.next().flatten() == Some(true)
    }
}

/// The launches of `result` that ran a row a warp (the `launches` detail:
/// `LAYERS:PLACE×TILE@GRIDxTHREADS`).
fn warps_launches(result: &GpuInference) -> usize {
    result
        .detail("launches")
        .unwrap_or_default()
        .split_whitespace()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(_, rest)| rest.starts_with("warps"))
        })
        .count()
}

/// Where `left` and `right` differ bit for bit: how many values, and the first few.
fn differences(left: &[f32], right: &[f32]) -> String {
    let differ: Vec<usize> = (0..left.len().min(right.len()))
        .filter(|&i| left[i].to_bits() != right[i].to_bits())
        .collect();
    let first: Vec<String> = differ
        .iter()
        .take(4)
        .map(|&i| format!("[{i}] {} against {}", left[i], right[i]))
        .collect();
    format!(
        "{} of {} values differ ({} against {} long): {}",
        differ.len(),
        left.len(),
        left.len(),
        right.len(),
        first.join(", ")
    )
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_dense_layers_run_a_row_a_warp() {
    // bd_chain_warps against the reference and against the tiles bit for bit. Random dense
    // networks 64, 48 and 96 wide (48: padded columns; 96: three groups a lane) on inputs of
    // two nonzeros a row (layer 1 then adds at most two products an output: the same sum in
    // any order, so that the later layers alone can differ), the later launches a row a warp
    // by default (merged into one) and with a launch after every layer (rows carried in and
    // out of warps launches), and on one block (its tiles one after another: the stages of
    // the layers a tile did not reach land before the next tile's). Then the compressed
    // challenge network (dense after layer 6), 24 layers, binary and with input values 1/2,
    // 1, 3/2. At sanitize scale every grid holds SANITIZE_GRID_BLOCKS blocks.
    let gpu = spdnn_gputest::gpu();
    let rows = sized(1000, 70);
    for (n, seed) in [(64, 3), (48, 4), (96, 5)] {
        let network = spdnn_sdgc::generator::random_network(n, 10, n / 2, seed).unwrap();
        let pairs: Vec<(u32, u32, f32)> = (0..rows as u32)
            .flat_map(|r| {
                let (a, b) = (r % n as u32, (r * 7 + 3) % n as u32);
                [(r, a, 1.0), (r, b, 1.0)]
                    .into_iter()
                    .take(if a == b { 1 } else { 2 })
            })
            .collect();
        let p = Problem {
            layers: network.layers().to_vec(),
            input: Csr::from_triplets(rows, n, &pairs).unwrap(),
            bias: -0.3,
            upper: 32.0,
        };
        let tiles = run_with(options(|o| o.placement = PlacementChoice::Shared))(&gpu, &p)
            .unwrap_or_else(|e| panic!("{n} wide, tiles: {e}"));
        assert_eq!(warps_launches(&tiles), 0, "{:?}", tiles.details);
        for (name, launches, mut o) in [
            ("defaults", 1, BlockDependOptions::default()),
            (
                "warps, cut after every layer",
                9,
                options(|o| {
                    o.placement = PlacementChoice::Warps;
                    o.cuts = Some((1..10).collect());
                }),
            ),
            (
                "one block: tiles one after another",
                1,
                options(|o| o.grid_blocks = Some(1)),
            ),
        ] {
            // Under racecheck a grid of every resident 512-thread block was killed (exit 9).
            o.grid_blocks = o.grid_blocks.or(sized(None, Some(SANITIZE_GRID_BLOCKS)));
            let case = format!("{n} wide, {name}");
            let result = run_with(o)(&gpu, &p).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(
                warps_launches(&result),
                launches,
                "{case}: {:?}",
                result.details
            );
            compare(&p, &result, Tolerance::Relative(1e-4))
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(result.categories, tiles.categories, "{case}");
            let (left, right) = (result.output.unwrap(), tiles.output.clone().unwrap());
            assert!(
                left.iter()
                    .zip(&right)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
                    && left.len() == right.len(),
                "{case}: against the tiles, {}",
                differences(&left, &right)
            );
        }
    }
    let p = spdnn_gputest::challenge_problem(1024, 24, rows, 5);
    let halves = in_halves(&p);
    for (name, problem) in [("binary", &p), ("halves", &halves)] {
        let o = options(|o| o.grid_blocks = sized(None, Some(SANITIZE_GRID_BLOCKS)));
        let warps = run_with(o)(&gpu, problem).unwrap();
        assert_eq!(warps_launches(&warps), 1, "{name}: {:?}", warps.details);
        compare(problem, &warps, Tolerance::Relative(1e-4))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let tiles =
            run_with(options(|o| o.placement = PlacementChoice::Shared))(&gpu, problem).unwrap();
        assert_eq!(warps_launches(&tiles), 0, "{name}: {:?}", tiles.details);
        assert_eq!(warps.categories, tiles.categories, "{name}");
        let (left, right) = (warps.output.unwrap(), tiles.output.unwrap());
        assert!(
            left.iter()
                .zip(&right)
                .all(|(a, b)| a.to_bits() == b.to_bits())
                && left.len() == right.len(),
            "{name}: warps against tiles, {}",
            differences(&left, &right)
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bitmap_inputs_count_the_folded_bins() {
    // A folded layer 1 on a binary batch loaded as a bitmap (bd_lanes_bins_bitmap): the
    // networks of emulate.rs's `networks_whose_layer_1_folds_run_it_a_row_a_lane` (32 and 64
    // bins; 40 and 1000 inputs leave a row's last word part full, 2000 take two rounds of 32
    // words) and the compressed challenge network, against the reference, and bit for bit
    // against the same run from the columns (`input_bitmap` off) and against the tiles. A
    // batch of one nonzero a row is smaller as columns, and is loaded so.
    let gpu = spdnn_gputest::gpu();
    let rows = sized(1000, 70);
    let mut problems: Vec<(String, Problem)> = [(1000, 32), (2000, 64), (1024, 64), (40, 32)]
        .into_iter()
        .map(|(inputs, width)| {
            (
                format!("{inputs} inputs, {width} bins"),
                common::folding_problem(inputs, width, 6, rows, 7),
            )
        })
        .collect();
    problems.push((
        "challenge 1024-24".into(),
        spdnn_gputest::challenge_problem(1024, 24, rows, 5),
    ));
    let columns_only = options(|o| o.input_bitmap = false);
    let tiles = options(|o| o.placement = PlacementChoice::Shared);
    for (name, p) in &problems {
        let bitmap = run_with(BlockDependOptions::default())(&gpu, p)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(lanes_ran(&bitmap, false), "{name}: {:?}", bitmap.details);
        let input = bitmap.detail("input").unwrap_or_default();
        assert!(input.starts_with("bitmap"), "{name}: {input}");
        compare(p, &bitmap, Tolerance::Relative(1e-4)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (other, o) in [("columns", &columns_only), ("tiles", &tiles)] {
            let result = run_with(o.clone())(&gpu, p).unwrap_or_else(|e| panic!("{name}: {e}"));
            let input = result.detail("input").unwrap_or_default();
            assert!(input.starts_with("CSR columns"), "{name}, {other}: {input}");
            assert_eq!(bitmap.categories, result.categories, "{name}, {other}");
            assert_eq!(
                bitmap.output, result.output,
                "{name}: bitmap against {other}, bit for bit"
            );
        }
    }
    let (_, p) = &problems[2];
    let sparse: Vec<(u32, u32, f32)> = (0..p.input.nrows())
        .map(|r| (r as u32, (r * 37 % 1024) as u32, 1.0))
        .collect();
    let sparse = Problem {
        input: Csr::from_triplets(p.input.nrows(), 1024, &sparse).unwrap(),
        ..p.clone()
    };
    let result = run_with(BlockDependOptions::default())(&gpu, &sparse).unwrap();
    let input = result.detail("input").unwrap_or_default();
    assert!(
        input.starts_with("CSR columns"),
        "one nonzero a row: {input}"
    );
    compare(&sparse, &result, Tolerance::Relative(1e-4)).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn narrow_networks_run_a_row_a_lane() {
    // bd_chain_lanes against the reference: random 64- and 48-wide networks (pairs, scaled
    // where the values allow), launch 1 a row a lane by default; every launch a row a lane
    // with a cut after every layer (rows carried in and out, the last launch's values);
    // layer 1 as pairs; rows that leave a warp part full. Then a compressed challenge network
    // (scaled layers, integer sums on binary input; its layer 1 repeats with the period of its
    // outputs, so the lanes fold it: bd_lanes_fold) and the same with input values 1/2, 1,
    // 3/2 (float sums, the entries' scatter), against the tiles bit for bit.
    let gpu = spdnn_gputest::gpu();
    let rows = sized(1000, 70);
    for (n, seed) in [(64, 3), (48, 4)] {
        let network = spdnn_sdgc::generator::random_network(n, 6, 8, seed).unwrap();
        let p = Problem {
            layers: network.layers().to_vec(),
            input: spdnn_sdgc::images::synthetic(rows, n, seed)
                .unwrap()
                .features,
            bias: -0.3,
            upper: 32.0,
        };
        for (name, all, o) in [
            (
                "defaults, ell",
                false,
                options(|o| o.format = FormatChoice::Ell),
            ),
            (
                "lanes, cut after every layer",
                true,
                options(|o| {
                    o.format = FormatChoice::Ell;
                    o.placement = PlacementChoice::Lanes;
                    o.cuts = Some((1..6).collect());
                }),
            ),
            (
                "lanes, pairs",
                true,
                options(|o| {
                    o.format = FormatChoice::EllPairs;
                    o.placement = PlacementChoice::Lanes;
                    o.cuts = Some(vec![3]);
                }),
            ),
        ] {
            let case = format!("{n} wide, {name}");
            let result = run_with(o)(&gpu, &p).unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(lanes_ran(&result, all), "{case}: {:?}", result.details);
            compare(&p, &result, Tolerance::Relative(1e-4))
                .unwrap_or_else(|e| panic!("{case}: {e}"));
        }
    }
    let p = spdnn_gputest::challenge_problem(1024, 24, rows, 5);
    let halves = in_halves(&p);
    for (name, problem) in [("binary", &p), ("halves", &halves)] {
        let lanes = run_with(BlockDependOptions::default())(&gpu, problem).unwrap();
        assert!(lanes_ran(&lanes, false), "{name}: {:?}", lanes.details);
        let formats = lanes.detail("formats").unwrap_or_default();
        assert!(formats.contains("folded into"), "{name}: {formats}");
        // A binary batch is loaded as a bitmap, whose bins the lanes count.
        let input = lanes.detail("input").unwrap_or_default();
        let form = if name == "binary" {
            "bitmap"
        } else {
            "CSR with values"
        };
        assert!(input.starts_with(form), "{name}: {input}");
        compare(problem, &lanes, Tolerance::Relative(1e-4))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let tiles =
            run_with(options(|o| o.placement = PlacementChoice::Shared))(&gpu, problem).unwrap();
        assert!(!lanes_ran(&tiles, false), "{name}: {:?}", tiles.details);
        assert_eq!(lanes.categories, tiles.categories, "{name}");
        assert_eq!(
            lanes.output, tiles.output,
            "{name}: lanes against tiles, bit for bit"
        );
    }
}
