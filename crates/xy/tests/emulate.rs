//! CPU emulations of `kernels-cu/xy.cu`'s index arithmetic on chains of rectangular layers
//! (no GPU needed). Every kernel is written out with the same indices as the CUDA code,
//! reading and writing `Vec`s of exactly the lengths `XyRun` allocates (`capacity ×` the
//! widest width), so an index past a buffer panics here instead of corrupting memory
//! there; the phases follow `XyRun` (row-major layers on the row list, the transpose of the
//! listed rows, neuron-major layers, the deletion, the export), and the result must equal
//! a dense evaluation bit for bit (dyadic values: every order of additions is exact), with
//! one bias for every neuron or a bias per output neuron (put into each layer's position
//! order by `XyLayer::position_biases`, as the `_neurons` kernels read it).
//! GLARE's unit arithmetic (`xy_neuron_major_layer`'s and `xy_row_major_layer`'s parts
//! and units, the fill) is checked on every width of such chains for every segment length
//! the kernels accept for the widest one.

use proptest::prelude::*;
use spdnn_formats::{Csr, SparseMatrix};
use spdnn_glare::{GlareKernel, model};
use spdnn_xy::gpu::{COLUMN_THREADS, ROW_THREADS};
use spdnn_xy::{GROUP, Xy, XyLayer, XyNetwork};

/// `min(max(v, 0), upper)` with +0.0 for non-positive values (`spdnn_clamp_activation`).
fn clip(value: f32, upper: f32) -> f32 {
    if value > 0.0 { value.min(upper) } else { 0.0 }
}

/// `xy_row_major_layer` (plain or `_neurons`): every listed row, every output position;
/// position `p` gets `biases[p]` (the layer's biases in position order).
#[allow(clippy::too_many_arguments)]
fn row_major_layer(
    layer: &XyLayer,
    y_in: &[f32],
    y_out: &mut [f32],
    list: &[u32],
    row_alive: &mut [u8],
    (n_in, n_out): (usize, usize),
    biases: &[f32],
    upper: f32,
) {
    let g = layer.group as usize;
    assert_eq!(layer.blocks() * g, n_out);
    for &row in list {
        let row = row as usize;
        for position in 0..n_out {
            let (block, out) = (position / g, position % g);
            let mut acc = 0.0f32;
            for k in layer.block_offsets[block] as usize..layer.block_offsets[block + 1] as usize {
                let v = y_in[row * n_in + layer.inputs[k] as usize];
                acc = v.mul_add(layer.values[k * g + out], acc);
            }
            let v = clip(acc + biases[position], upper);
            y_out[row * n_out + position] = v;
            if v != 0.0 {
                row_alive[row] = 1;
            }
        }
    }
}

/// `xy_rows_to_columns`: `out[p·stride + j] = in[rows[j]·n + p]`.
fn rows_to_columns(input: &[f32], out: &mut [f32], rows: &[u32], n: usize, stride: usize) {
    for (j, &row) in rows.iter().enumerate() {
        for p in 0..n {
            out[p * stride + j] = input[row as usize * n + p];
        }
    }
}

/// `xy_neuron_major_layer` (plain or `_neurons`): y_in is `N_in × stride`, y_out
/// `N_out × stride`; position `p` gets `biases[p]`.
fn neuron_major_layer(
    layer: &XyLayer,
    y_in: &[f32],
    y_out: &mut [f32],
    (columns, stride): (usize, usize),
    column_alive: &mut [u8],
    biases: &[f32],
    upper: f32,
) {
    let g = layer.group as usize;
    for block in 0..layer.blocks() {
        for column in 0..columns {
            let mut acc = vec![0.0f32; g];
            for k in layer.block_offsets[block] as usize..layer.block_offsets[block + 1] as usize {
                let v = y_in[layer.inputs[k] as usize * stride + column];
                if v != 0.0 {
                    for (o, sum) in acc.iter_mut().enumerate() {
                        *sum += v * layer.values[k * g + o];
                    }
                }
            }
            for (o, sum) in acc.iter().enumerate() {
                let v = clip(sum + biases[block * g + o], upper);
                y_out[(block * g + o) * stride + column] = v;
                if v != 0.0 {
                    column_alive[column] = 1;
                }
            }
        }
    }
}

/// `xy_gather_columns`: `out[p·count + j] = in[p·in_stride + columns[j]]`.
fn gather_columns(input: &[f32], out: &mut [f32], columns: &[u32], n: usize, in_stride: usize) {
    let count = columns.len();
    for (j, &column) in columns.iter().enumerate() {
        for p in 0..n {
            out[p * count + j] = input[p * in_stride + column as usize];
        }
    }
}

/// `xy_columns_to_rows`: `out[j·n + p] = in[p·stride + columns[j]]`.
fn columns_to_rows(input: &[f32], out: &mut [f32], columns: &[u32], n: usize, stride: usize) {
    for (j, &column) in columns.iter().enumerate() {
        for p in 0..n {
            out[j * n + p] = input[p * stride + column as usize];
        }
    }
}

/// `xy_gather_rows` with the identity permutation: `out[j·n + p] = in[rows[j]·n + p]`.
fn gather_rows(input: &[f32], out: &mut [f32], rows: &[u32], n: usize) {
    for (j, &row) in rows.iter().enumerate() {
        for p in 0..n {
            out[j * n + p] = input[row as usize * n + p];
        }
    }
}

/// `XyRun` on the CPU: the rows alive after every layer, in original neuron order of the
/// last layer (dead rows zero), `rows × N_L`; `room` is what a caller of `export_rows`
/// asks for (SNICIT: its widest later width). `biases[l][k]` is the bias of original
/// output neuron `k` of layer `l` (one value repeated for the challenge's networks).
fn xy_run(
    network: &XyNetwork,
    input: &Csr,
    row_major_layers: usize,
    delete_at: Option<usize>,
    (biases, upper): (&[Vec<f32>], f32),
    room: usize,
) -> Vec<f32> {
    let widths = network.widths();
    let capacity = input.nrows().max(1);
    let widest = *widths.iter().max().unwrap();
    let mut y = [
        vec![0.0f32; capacity * widest],
        vec![0.0f32; capacity * widest],
    ];
    let mut alive = vec![0u8; capacity];
    // load_input: scatter the rows (stride N_0), list them all.
    let mut width = widths[0];
    for (r, c, v) in input.triplets() {
        y[0][r as usize * width + c as usize] = v;
    }
    let mut list: Vec<u32> = (0..input.nrows() as u32).collect();
    let mut current = 0;
    let mut neuron_major = false;
    let (mut column_ids, mut columns) = (Vec::new(), 0usize);
    for (index, layer) in network.layers.iter().enumerate() {
        assert_eq!(widths[index], width);
        let writes = layer.width();
        // What DeviceXyLayer uploads for the `_neurons` kernels.
        let position_biases = layer
            .position_biases(&biases[index])
            .expect("one bias per output");
        if !neuron_major && index >= row_major_layers {
            // transpose: the listed rows, ascending, become columns 0..count.
            list.sort_unstable();
            let (a, b) = y.split_at_mut(1);
            let (y_in, y_out) = if current == 0 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            rows_to_columns(y_in, y_out, &list, width, list.len().max(1));
            current = 1 - current;
            column_ids = list.clone();
            columns = list.len();
            neuron_major = true;
        }
        alive.fill(0);
        let (a, b) = y.split_at_mut(1);
        let (y_in, y_out) = if current == 0 {
            (&a[0], &mut b[0])
        } else {
            (&b[0], &mut a[0])
        };
        if neuron_major {
            let stride = columns.max(1);
            neuron_major_layer(
                layer,
                y_in,
                y_out,
                (columns, stride),
                &mut alive,
                &position_biases,
                upper,
            );
        } else {
            row_major_layer(
                layer,
                y_in,
                y_out,
                &list,
                &mut alive,
                (width, writes),
                &position_biases,
                upper,
            );
            list.retain(|&r| alive[r as usize] != 0);
        }
        current = 1 - current;
        width = writes;
        if neuron_major && delete_at == Some(index + 1) {
            let live: Vec<u32> = (0..columns as u32)
                .filter(|&c| alive[c as usize] != 0)
                .collect();
            if !live.is_empty() {
                let (a, b) = y.split_at_mut(1);
                let (y_in, y_out) = if current == 0 {
                    (&a[0], &mut b[0])
                } else {
                    (&b[0], &mut a[0])
                };
                gather_columns(y_in, y_out, &live, width, columns.max(1));
                current = 1 - current;
            }
            column_ids = live.iter().map(|&c| column_ids[c as usize]).collect();
            columns = live.len();
            alive.fill(0);
            alive[..columns].fill(1);
        }
    }
    // export_rows(room): the live rows, ascending, as count × width in a buffer with room.
    let rows: Vec<u32> = if neuron_major {
        (0..columns as u32)
            .filter(|&c| alive[c as usize] != 0)
            .map(|c| column_ids[c as usize])
            .collect()
    } else {
        let mut rows = list.clone();
        rows.sort_unstable();
        rows
    };
    let mut exported = vec![0.0f32; (rows.len() * width.max(room)).max(1)];
    if neuron_major {
        let wanted: Vec<u32> = rows
            .iter()
            .map(|row| column_ids.iter().position(|c| c == row).unwrap() as u32)
            .collect();
        columns_to_rows(&y[current], &mut exported, &wanted, width, columns.max(1));
    } else {
        gather_rows(&y[current], &mut exported, &rows, width);
    }
    let mut dense = vec![0.0f32; input.nrows() * width];
    for (j, &row) in rows.iter().enumerate() {
        let original = network.to_original(&exported[j * width..(j + 1) * width]);
        dense[row as usize * width..(row as usize + 1) * width].copy_from_slice(&original);
    }
    dense
}

/// The dense evaluation of every row (`biases[l][k]`: the bias of output `k` of layer
/// `l`).
fn dense_run(layers: &[Csr], input: &Csr, biases: &[Vec<f32>], upper: f32) -> Vec<f32> {
    let mut out = Vec::new();
    for row in 0..input.nrows() {
        let mut y = vec![0.0f32; input.ncols()];
        for (r, c, v) in input.triplets() {
            if r as usize == row {
                y[c as usize] = v;
            }
        }
        for (layer, b) in layers.iter().zip(biases) {
            let w = layer.to_dense();
            y = (0..layer.ncols())
                .map(|k| {
                    let sum: f32 = (0..layer.nrows()).map(|j| y[j] * w[[j, k]]).sum();
                    clip(sum + b[k], upper)
                })
                .collect();
        }
        out.extend(y);
    }
    out
}

/// A random `rows × cols` layer with dyadic weights; `grouped`: outputs share input sets
/// 16 at a time (cols a multiple of 16).
fn layer(rows: usize, cols: usize, grouped: bool, cells: &[(bool, i8)]) -> Csr {
    let mut triplets = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let key = if grouped { c / GROUP } else { c };
            let (keep, _) = cells[(r * 131 + key * 17) % cells.len()];
            let (_, weight) = cells[(r * 31 + c * 7) % cells.len()];
            let weight = if weight == 0 { 1 } else { weight };
            if keep {
                triplets.push((r as u32, c as u32, f32::from(weight) / 4.0));
            }
        }
    }
    Csr::from_triplets(rows, cols, &triplets).unwrap()
}

/// Random rectangular chains (some layers grouped), their input rows, and XY's phases.
fn chain() -> impl Strategy<Value = (Vec<Csr>, Csr, usize, Option<usize>, usize)> {
    (
        prop::collection::vec((1usize..=5, any::<bool>()), 2..=5),
        1usize..=40,
        prop::collection::vec((prop::bool::weighted(0.3), -8i8..=8), 97),
        prop::collection::vec(prop::bool::weighted(0.5), 1..=12),
        0usize..=5,
        prop::option::of(1usize..=4),
        0usize..=100,
    )
        .prop_map(
            |(shape, input_width, cells, input_cells, row_major, delete_at, room)| {
                // A grouped layer has 16·k outputs; an ungrouped one any width up to 70.
                let mut widths = vec![input_width];
                let mut grouped = Vec::new();
                for (i, &(k, g)) in shape[1..].iter().enumerate() {
                    widths.push(if g { k * GROUP } else { k * 13 + i });
                    grouped.push(g);
                }
                let layers: Vec<Csr> = widths
                    .windows(2)
                    .zip(&grouped)
                    .map(|(pair, &g)| layer(pair[0], pair[1], g, &cells))
                    .collect();
                let rows = input_cells.len();
                let mut triplets = Vec::new();
                for r in 0..rows {
                    for c in 0..input_width {
                        if input_cells[(r * 5 + c * 3) % input_cells.len()] {
                            triplets.push((r as u32, c as u32, ((r + c) % 8 + 1) as f32 / 2.0));
                        }
                    }
                }
                let input = Csr::from_triplets(rows, input_width, &triplets).unwrap();
                (layers, input, row_major, delete_at, room)
            },
        )
}

/// Outputs `c` and `c + 2` share their input set: two classes, even and odd outputs, so a
/// grouped layer's positions interleave the neurons (`outputs` is not the identity). A
/// bias that differs for every neuron then lands on the wrong output unless it is put
/// into position order.
#[test]
fn per_neuron_biases_follow_the_grouped_positions() {
    let (n, rows) = (32usize, 6usize);
    let parity_layer = |salt: usize| {
        let mut triplets = Vec::new();
        for j in 0..n {
            for c in 0..n {
                if !(j + c % 2 + salt).is_multiple_of(3) {
                    let w = ((j * 5 + c * 3 + salt) % 7) as f32 / 4.0 - 0.5;
                    triplets.push((j as u32, c as u32, w));
                }
            }
        }
        Csr::from_triplets(n, n, &triplets).unwrap()
    };
    let layers = vec![parity_layer(0), parity_layer(1), parity_layer(2)];
    let network = XyNetwork::prepare(&layers).unwrap();
    for layer in &network.layers {
        assert!(layer.is_grouped());
        assert_ne!(layer.outputs, (0..n as u32).collect::<Vec<_>>());
    }
    let biases: Vec<Vec<f32>> = (0..layers.len())
        .map(|l| (0..n).map(|k| -(((k + l) % 5) as f32) / 4.0).collect())
        .collect();
    let mut triplets = Vec::new();
    for r in 0..rows {
        for c in 0..n {
            if !(r + c).is_multiple_of(3) {
                triplets.push((r as u32, c as u32, ((r * c) % 8 + 1) as f32 / 2.0));
            }
        }
    }
    let input = Csr::from_triplets(rows, n, &triplets).unwrap();
    let expected = dense_run(&layers, &input, &biases, 32.0);
    assert!(expected.iter().any(|&v| v != 0.0));
    for (row_major, delete_at) in [(0, Some(1)), (1, Some(2)), (2, None), (5, None)] {
        let found = xy_run(&network, &input, row_major, delete_at, (&biases, 32.0), 0);
        assert_eq!(found, expected, "{row_major} row-major layers");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn xy_phases_on_rectangular_chains_stay_in_their_buffers_and_exact(
        (layers, input, row_major, delete_at, room) in chain(),
        bias_quarters in 1u32..=4,
    ) {
        let network = XyNetwork::prepare(&layers).unwrap();
        let (bias, upper) = (-(bias_quarters as f32) / 4.0, 32.0);
        let biases: Vec<Vec<f32>> = layers.iter().map(|w| vec![bias; w.ncols()]).collect();
        let found = xy_run(&network, &input, row_major, delete_at, (&biases, upper), room);
        let expected = dense_run(&layers, &input, &biases, upper);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&found), bits(&expected));
    }

    /// A bias per output neuron (trained networks, biases ≤ 0, zero included): each
    /// layer's biases in its position order give the dense result in every phase, with
    /// grouped layers (whose positions permute the neurons) and general ones.
    #[test]
    fn xy_phases_with_a_bias_per_neuron_are_exact(
        (layers, input, row_major, delete_at, room) in chain(),
        seeds in prop::collection::vec(0i8..=8, 1..=53),
        upper in prop_oneof![Just(32.0f32), Just(1.5)],
    ) {
        let network = XyNetwork::prepare(&layers).unwrap();
        let mut next = 0usize;
        let biases: Vec<Vec<f32>> = layers
            .iter()
            .map(|w| {
                (0..w.ncols())
                    .map(|_| {
                        next += 1;
                        -f32::from(seeds[(next * 7) % seeds.len()]) / 4.0
                    })
                    .collect()
            })
            .collect();
        let found = xy_run(&network, &input, row_major, delete_at, (&biases, upper), room);
        let expected = dense_run(&layers, &input, &biases, upper);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&found), bits(&expected));
    }
}

/// `xy_neuron_major_layer`'s GLARE bookkeeping for a layer of `blocks` blocks of `g`
/// outputs reading `n_in` positions, units of `2^shift` positions of a tile, `units` flags
/// a tile (the stride), `tiles` tiles and `parts` bytes of block parts (`Recorder::new`).
fn check_neuron_major_units(
    (n_in, blocks, g): (usize, usize, usize),
    shift: u32,
    units: usize,
    tiles: usize,
    parts_allocated: usize,
) {
    let n = blocks * g;
    let m = 1usize << shift;
    let mut covered = vec![0u32; n];
    for tile in 0..tiles {
        let tile_flags = tile * units;
        // Reads: every staged input's flag.
        for input in 0..n_in {
            assert!(tile_flags + (input >> shift) < tiles * units, "input flag");
        }
        for block in 0..blocks {
            let unit = (block * g) >> shift;
            let unit_begin = unit << shift;
            let unit_end = (unit_begin + m).min(n);
            assert!(unit < units, "unit {unit} of {units} (n = {n}, m = {m})");
            assert_eq!((unit_end - unit_begin) % g, 0, "a unit of whole blocks");
            let first_part = unit_begin / g;
            let parts = (unit_end - unit_begin) / g;
            assert!((first_part..first_part + parts).contains(&block));
            assert!(first_part + parts <= blocks);
            assert!(tile * blocks + block < parts_allocated, "skipped byte");
            if tile == 0 {
                for (p, count) in covered.iter_mut().enumerate().skip(block * g).take(g) {
                    assert_eq!(p >> shift, unit, "position {p} in its block's unit");
                    *count += 1;
                }
            }
        }
        // xy_glare_fill_columns over the layer's positions.
        for p in 0..n {
            assert!(tile_flags + (p >> shift) < tiles * units, "fill flag");
        }
    }
    assert!(covered.iter().all(|&c| c == 1));
}

/// `xy_row_major_layer`'s GLARE bookkeeping (SNICIT's post-convergence layers) for a layer
/// of `n` outputs, units of `2^shift` positions of a row, `units` flags a row, block parts
/// of [`ROW_THREADS`] positions, `parts_per_row` the allocation's parts a row.
fn check_row_major_units(n: usize, shift: u32, units: usize, parts_per_row: usize) {
    let block = ROW_THREADS as usize;
    let m = 1usize << shift;
    assert!(units <= model::MAX_ROW_UNITS, "{units} units a row");
    let grid_y = n.div_ceil(block);
    assert!(grid_y <= parts_per_row, "skipped bytes of a row");
    let mut written = vec![false; n.div_ceil(m)];
    for by in 0..grid_y {
        let unit = (by * block) >> shift;
        let unit_begin = unit << shift;
        let unit_end = (unit_begin + m).min(n);
        assert!(unit < units);
        let first_part = unit_begin / block;
        let parts = (unit_end - 1) / block + 1 - first_part;
        assert!((first_part..first_part + parts).contains(&by));
        assert!(first_part + parts <= grid_y);
        if parts == 1 {
            // The block's positions are the whole unit (2^shift ≥ 128 or one unit a row).
            assert!(unit_begin <= by * block && (by * block + block).min(n) <= unit_end);
            assert_eq!(
                (unit_begin, unit_end),
                (by * block, (by * block + block).min(n))
            );
        }
        written[unit] = true;
    }
    assert!(
        written.iter().all(|&w| w),
        "every unit of the row gets its flag"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn glare_units_fit_every_width_of_a_chain(
        widths in prop::collection::vec((1usize..=300, any::<bool>()), 2..=6),
        rows in 1usize..=700,
    ) {
        // Widths as XY sees them: a grouped layer has 16·k outputs.
        let widths: Vec<(usize, usize)> = widths
            .iter()
            .map(|&(w, grouped)| {
                if grouped && w >= GROUP {
                    (w - w % GROUP, GROUP)
                } else {
                    (w, 1)
                }
            })
            .collect();
        let widest = widths.iter().map(|&(w, _)| w).max().unwrap();
        let shape = model::Shape { neurons: widest, slab_width: 0, first_layer: 0 };
        // XY's neuron-major recorder: XyRun::with_glare.
        for m in Xy::candidates(&shape) {
            let shift = m.trailing_zeros();
            let tiles = rows.div_ceil(COLUMN_THREADS as usize);
            let units = widest.div_ceil(m);
            for pair in widths.windows(2) {
                let ((n_in, _), (n_out, g)) = (pair[0], pair[1]);
                check_neuron_major_units((n_in, n_out / g, g), shift, units, tiles, tiles * widest);
            }
        }
        // SNICIT's row-major recorder (Snicit::candidates): units from the widest width.
        for m in model::row_unit_lengths(ROW_THREADS as usize, widest) {
            let shift = m.trailing_zeros();
            let units = widest.div_ceil(m);
            for &(n, _) in &widths[1..] {
                check_row_major_units(n, shift, units, widest.div_ceil(ROW_THREADS as usize));
            }
        }
    }
}
