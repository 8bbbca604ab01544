// xy.cu: XY-2021 (Xu et al., HPEC 2021). Layers are stored as blocks of G outputs that
// share one input list (crates/xy/src/format.rs): block b reads inputs[off[b] .. off[b+1])
// and values[((k)*G + o) * value_step] is the weight from input k to its output o (value_step 0:
// every weight of the layer is the one stored value; 1: each is stored). Output position
// p = b*G + o; positions chain from layer to layer, so no permutation is ever applied.
// Every kernel exists for G = 16 (grouped layers) and G = 1 (general layers).
// Layers may be rectangular (N_in x N_out, e.g. compressed networks): row-major activations
// are rows x N_l (a layer reads rows of n_in values and writes rows of n_out), neuron-major
// ones N_l x stride; n below is the width of the activations a kernel touches.
// Definitions from Rust: glare.cuh's (spdnn_glare::DEFINES) and this file's
// (spdnn_xy::gpu::XY_DEFINES). Launch shapes: the kernel declarations of spdnn-xy
// (crates/xy/src/gpu.rs).
#include "common.cuh"
#include "glare.cuh"

// Samples (rows) per block of the row-major kernel: the grid's x is ceil(capacity / XY_ROW_TILE).
#ifndef XY_ROW_TILE
#error "XY_ROW_TILE must come from Rust (-D)"
#endif
// Edge of the square tile of the transposes; their blocks are XY_TRANSPOSE_TILE wide.
#ifndef XY_TRANSPOSE_TILE
#error "XY_TRANSPOSE_TILE must come from Rust (-D)"
#endif
// Input entries of a row-major block's outputs staged in shared memory (when they fit).
#ifndef XY_ROW_STAGE
#error "XY_ROW_STAGE must come from Rust (-D)"
#endif
// Rows of threads in a block of the transposes (each walks the tile with this stride).
#ifndef XY_TRANSPOSE_ROWS
#error "XY_TRANSPOSE_ROWS must come from Rust (-D)"
#endif
// The row-major GLARE kernel keeps one bit per row of its tile.
static_assert(XY_ROW_TILE >= 4 && XY_ROW_TILE <= 32 && (XY_ROW_TILE & (XY_ROW_TILE - 1)) == 0,
              "XY_ROW_TILE must be a power of two from 4 to 32 (the kernel's narrower tiles halve it)");

#define XY_CHUNK 64  // block inputs staged in shared memory at a time (neuron-major)

// The GLARE recorder of one XY layer. Row-major (SNICIT's post-convergence layers): a unit
// is 2^shift positions of a row, `units` per row, a part is one block's 128 positions of
// one row (2^shift >= 128 or one unit per row). Neuron-major: a unit is 2^shift positions
// of a tile of 256 sample columns, `units` per tile, a part is one block's G positions of
// the tile (2^shift >= G). `units` is the flags' stride, from the widest layer: a layer of
// N_l outputs uses the first ceil(N_l / 2^shift) units of each row or tile.
struct XyRecorder {
    const unsigned char* in_flags;
    unsigned char* out_flags;
    unsigned long long* arrivals;
    unsigned char* skipped;
    unsigned int shift;
    unsigned int units;
    unsigned long long* census;
};

// acc[i] += y_in[row i][input k] * w(k, out) over entries k in [begin, end), for the first R
// row slots of the tile, one rounding per term in a fixed order: rows with equal inputs get
// equal outputs wherever they sit in a tile, whatever R (SNICIT relies on it). Entry k's input
// is staged_inputs[k - stage_begin] (STAGED) or inputs[k]. GLARE: row_at_bound[i *
// GLARE_MAX_ROW_UNITS + unit], the tile's rows' flags.
template <int R, int G, bool GLARE, bool CENSUS, bool STAGED>
__device__ __forceinline__ void xy_row_major_terms(
    const unsigned int* __restrict__ staged_inputs, unsigned int stage_begin,
    const unsigned int* __restrict__ inputs, const float* __restrict__ values, unsigned int value_step,
    unsigned int begin, unsigned int end, unsigned int out, const float* __restrict__ y_in,
    const unsigned long long (&row_base)[XY_ROW_TILE], const unsigned char* __restrict__ row_at_bound,
    unsigned int shift, float upper, float (&acc)[XY_ROW_TILE], GlareTally<CENSUS>& tally) {
#pragma unroll 4
    for (unsigned int k = begin; k < end; ++k) {
        const unsigned int input = STAGED ? staged_inputs[k - stage_begin] : inputs[k];
        const float w = values[((unsigned long long)k * G + out) * value_step];
        tally.add(GLARE_WEIGHT_READS, 2);
#pragma unroll
        for (int i = 0; i < R; ++i) {
            float v;
            if (GLARE) {
                const bool at_bound = row_at_bound[i * GLARE_MAX_ROW_UNITS + (input >> shift)] != 0;
                tally.add(at_bound ? GLARE_READS_SKIPPED : GLARE_READS, 1);
                v = glare_read(at_bound, y_in + row_base[i] + input, upper);
            } else {
                v = y_in[row_base[i] + input];
            }
            acc[i] = __fmaf_rn(v, w, acc[i]);
        }
    }
}

// xy_row_major_terms with the input lists staged or not (each pointer keeps its memory space).
#define XY_ROW_MAJOR_TERMS(R)                                                                                   \
    do {                                                                                                       \
        if (staged) {                                                                                          \
            xy_row_major_terms<R, G, GLARE, CENSUS, true>(staged_inputs, stage_begin, inputs, values, value_step, \
                                                          begin, end, out, y_in, row_base, &row_at_bound[0][0],   \
                                                          recorder.shift, upper, acc, tally);                    \
        } else {                                                                                               \
            xy_row_major_terms<R, G, GLARE, CENSUS, false>(staged_inputs, stage_begin, inputs, values,           \
                                                           value_step, begin, end, out, y_in, row_base,          \
                                                           &row_at_bound[0][0], recorder.shift, upper, acc,      \
                                                           tally);                                               \
        }                                                                                                      \
    } while (0)

// Row-major layer on the listed rows: y_out[row][p] = clip(sum_k y_in[row][inputs[k]] *
// w(k, o) + bias) for p = b*G + o < n_out = blocks*G (with `biases`, not null only in
// the _neurons instances: biases[p] instead of `bias`, one per output position, trained
// networks with biases <= 0), and row_alive[row] = 1 when
// any output of the row is nonzero (row_alive zeroed before). y_in rows have n_in values,
// y_out rows n_out. Rows are read and written in place (no compaction).
// Each thread owns one output position and XY_ROW_TILE rows (accumulators in registers);
// the threads of one block read the same inputs (broadcast), the weights coalesce. With a
// few listed rows (SNICIT's post-convergence layers) a layer is bound by load latency, so:
// the input lists of the block's outputs, contiguous in `inputs`, are staged in shared memory
// with one coalesced load when they fit (XY_ROW_STAGE entries; else each thread reads its
// own), and the input loop is unrolled by four, four entries' gathers in flight; the sums
// keep their order.
// With GLARE, inputs in flagged units of a row are the bound (the row's flags are staged
// in shared memory) and the block's 128 outputs of a row are not written when all are at
// the bound; the unit's last block sets its flag or writes the bound back (glare.cuh).
template <int G, bool GLARE, bool CENSUS>
__device__ __forceinline__ void xy_row_major_layer(
    const float* __restrict__ y_in, float* __restrict__ y_out, const unsigned int* __restrict__ active_rows,
    const unsigned int* __restrict__ active_count, unsigned char* __restrict__ row_alive,
    const unsigned int* __restrict__ block_offsets, const unsigned int* __restrict__ inputs,
    const float* __restrict__ values, unsigned int value_step, unsigned int blocks, unsigned int n_in,
    unsigned int n_out, float bias, float upper, const float* __restrict__ biases, XyRecorder recorder) {
    __shared__ unsigned char row_at_bound[GLARE ? XY_ROW_TILE : 1][GLARE ? GLARE_MAX_ROW_UNITS : 1];
    __shared__ unsigned int off_bound_rows;
    __shared__ unsigned int vetoed_rows;
    __shared__ unsigned int staged_inputs[XY_ROW_STAGE];
    const unsigned int count = *active_count;
    const unsigned int first = blockIdx.x * XY_ROW_TILE;
    if (first >= count) {
        return;
    }
    const unsigned int position = blockIdx.y * blockDim.x + threadIdx.x;
    const unsigned int block = position / G;
    const bool valid = block < blocks;
    // The XY blocks of this block's outputs (the grid's y covers n_out = blocks * G, so the
    // first exists) and their input entries [stage_begin, stage_end).
    const unsigned int first_block = blockIdx.y * blockDim.x / G;
    const unsigned int end_block = min(blocks, ((blockIdx.y + 1) * blockDim.x + G - 1) / G);
    const unsigned int stage_begin = block_offsets[first_block];
    const unsigned int stage_end = block_offsets[end_block];
    const bool staged = stage_end - stage_begin <= XY_ROW_STAGE;  // the same for the whole block
    if (staged) {
        for (unsigned int i = threadIdx.x; i < stage_end - stage_begin; i += blockDim.x) {
            staged_inputs[i] = inputs[stage_begin + i];
        }
        __syncthreads();
    }
    if (!GLARE && !valid) {
        return;
    }
    const unsigned int out = position % G;
    const unsigned int tile = min((unsigned int)XY_ROW_TILE, count - first);
    unsigned int rows[XY_ROW_TILE];
    unsigned long long row_base[XY_ROW_TILE];
#pragma unroll
    for (int i = 0; i < XY_ROW_TILE; ++i) {
        rows[i] = active_rows[first + min((unsigned int)i, tile - 1)];
        row_base[i] = (unsigned long long)rows[i] * n_in;
    }
    GlareTally<CENSUS> tally;
    if (GLARE) {
        for (unsigned int idx = threadIdx.x; idx < XY_ROW_TILE * recorder.units; idx += blockDim.x) {
            const unsigned int i = idx / recorder.units;
            const unsigned int u = idx % recorder.units;
            row_at_bound[i][u] = recorder.in_flags[(unsigned long long)rows[i] * recorder.units + u];
            tally.add(GLARE_RECORDER_READS, 1);
        }
        if (threadIdx.x == 0) {
            off_bound_rows = 0;
            vetoed_rows = 0;
        }
        __syncthreads();
    }
    float acc[XY_ROW_TILE];
#pragma unroll
    for (int i = 0; i < XY_ROW_TILE; ++i) {
        acc[i] = 0.0f;
    }
    if (valid) {
        const unsigned int begin = block_offsets[block];
        const unsigned int end = block_offsets[block + 1];
        // Only as many row slots as the tile has rows (rounded up to a power of two): a
        // SNICIT post-convergence layer lists one or two rows, and the full tile's loads and
        // multiply-adds for them bound the kernel by instruction issue. GLARE keeps the full
        // tile (its census counts every slot).
        if (GLARE || tile > XY_ROW_TILE / 2) {
            XY_ROW_MAJOR_TERMS(XY_ROW_TILE);
        } else if (tile > 2) {
            XY_ROW_MAJOR_TERMS(XY_ROW_TILE / 2);
        } else if (tile == 2) {
            XY_ROW_MAJOR_TERMS(2);
        } else {
            XY_ROW_MAJOR_TERMS(1);
        }
        tally.add(GLARE_WEIGHT_READS, 2);
    }
    // The instances without per-neuron biases pass a literal null: this folds to `bias`.
    const float b = (biases != nullptr && valid) ? biases[position] : bias;
    if (!GLARE) {
        for (unsigned int i = 0; i < tile; ++i) {
            const float v = spdnn_clamp_activation(acc[i] + b, upper);
            y_out[(unsigned long long)rows[i] * n_out + position] = v;
            if (v != 0.0f) {
                row_alive[rows[i]] = 1;
            }
        }
        return;
    }
    unsigned int off_bound = 0;
    for (unsigned int i = 0; i < tile; ++i) {
        acc[i] = spdnn_clamp_activation(acc[i] + b, upper);
        if (valid && acc[i] != upper) {
            off_bound |= 1u << i;
        }
    }
    if (off_bound != 0) {
        atomicOr(&off_bound_rows, off_bound);
    }
    __syncthreads();
    const unsigned int rows_off_bound = off_bound_rows;
    if (valid) {
        for (unsigned int i = 0; i < tile; ++i) {
            if ((rows_off_bound >> i) & 1u) {
                y_out[(unsigned long long)rows[i] * n_out + position] = acc[i];
                tally.add(GLARE_WRITES, 1);
            } else {
                tally.add(GLARE_WRITES_SKIPPED, 1);
            }
            if (acc[i] != 0.0f) {
                row_alive[rows[i]] = 1;
            }
        }
    }
    // The unit of this block's positions, and how many blocks share it.
    const unsigned int parts_per_row = gridDim.y;
    const unsigned int unit = (blockIdx.y * blockDim.x) >> recorder.shift;
    const unsigned int unit_begin = unit << recorder.shift;
    const unsigned int unit_end = min((unsigned long long)unit_begin + (1ull << recorder.shift), (unsigned long long)n_out);
    const unsigned int first_part = unit_begin / blockDim.x;
    const unsigned int parts = (unit_end - 1) / blockDim.x + 1 - first_part;
    if (parts == 1) {
        // The unit is this block's part of the row (Algorithm 2, lines 4-5): no bookkeeping.
        if (threadIdx.x < tile) {
            const unsigned int i = threadIdx.x;
            recorder.out_flags[(unsigned long long)rows[i] * recorder.units + unit] = ((rows_off_bound >> i) & 1u) ? 0 : 1;
            tally.add(GLARE_RECORDER_WRITES, 1);
        }
        if (CENSUS) {
            tally.flush(recorder.census);
        }
        return;
    }
    if (threadIdx.x < tile) {
        const unsigned int i = threadIdx.x;
        recorder.skipped[(unsigned long long)rows[i] * parts_per_row + blockIdx.y] = ((rows_off_bound >> i) & 1u) ? 0 : 1;
        tally.add(GLARE_RECORDER_WRITES, 1);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x < tile) {
        const unsigned int i = threadIdx.x;
        const unsigned long long flag = (unsigned long long)rows[i] * recorder.units + unit;
        tally.add(GLARE_RECORDER_READS, 1);
        tally.add(GLARE_RECORDER_WRITES, 1);
        if (glare_arrive(recorder.arrivals + flag, parts, ((rows_off_bound >> i) & 1u) == 0,
                         recorder.out_flags + flag)) {
            atomicOr(&vetoed_rows, 1u << i);
        }
    }
    __syncthreads();
    const unsigned int vetoed = vetoed_rows;
    for (unsigned int i = 0; i < tile; ++i) {
        if (((vetoed >> i) & 1u) == 0) {
            continue;
        }
        for (unsigned int part = first_part; part < first_part + parts; ++part) {
            tally.add(GLARE_RECORDER_READS, 1);
            if (glare_part_skipped(recorder.skipped, (unsigned long long)rows[i] * parts_per_row + part)) {
                const unsigned int p = part * blockDim.x + threadIdx.x;
                if (p < unit_end) {
                    y_out[(unsigned long long)rows[i] * n_out + p] = upper;
                    tally.add(GLARE_WRITE_BACKS, 1);
                }
            }
        }
    }
    if (CENSUS) {
        tally.flush(recorder.census);
    }
}

#define XY_ROW_MAJOR_ARGS                                                                                      \
    const float *__restrict__ y_in, float *__restrict__ y_out, const unsigned int *__restrict__ active_rows,   \
        const unsigned int *__restrict__ active_count, unsigned char *__restrict__ row_alive,                  \
        const unsigned int *__restrict__ block_offsets, const unsigned int *__restrict__ inputs,               \
        const float *__restrict__ values, unsigned int value_step, unsigned int blocks, unsigned int n_in,     \
        unsigned int n_out, float bias, float upper
#define XY_ROW_MAJOR_PASS                                                                                      \
    y_in, y_out, active_rows, active_count, row_alive, block_offsets, inputs, values, value_step, blocks, n_in, \
        n_out, bias, upper
#define XY_RECORDER_ARGS                                                                                       \
    const unsigned char *__restrict__ in_flags, unsigned char *__restrict__ out_flags,                         \
        unsigned long long *__restrict__ arrivals, unsigned char *__restrict__ skipped, unsigned int shift,   \
        unsigned int units, unsigned long long *__restrict__ census
#define XY_RECORDER_PASS {in_flags, out_flags, arrivals, skipped, shift, units, census}
#define XY_NO_RECORDER {nullptr, nullptr, nullptr, nullptr, 0u, 0u, nullptr}

#if SPDNN_KEEP(xy_row_major_layer_g16)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_STAGE words.
extern "C" __global__ void xy_row_major_layer_g16(XY_ROW_MAJOR_ARGS) {
    xy_row_major_layer<16, false, false>(XY_ROW_MAJOR_PASS, nullptr, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g16)

#if SPDNN_KEEP(xy_row_major_layer_g1)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_STAGE words.
extern "C" __global__ void xy_row_major_layer_g1(XY_ROW_MAJOR_ARGS) {
    xy_row_major_layer<1, false, false>(XY_ROW_MAJOR_PASS, nullptr, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g1)

#if SPDNN_KEEP(xy_row_major_layer_neurons_g16)
// The row-major layer with a bias per output position (biases: n_out values in the layer's
// position order; `bias` unused). Trained networks, biases <= 0; not with GLARE.
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_STAGE words.
extern "C" __global__ void xy_row_major_layer_neurons_g16(XY_ROW_MAJOR_ARGS, const float* __restrict__ biases) {
    xy_row_major_layer<16, false, false>(XY_ROW_MAJOR_PASS, biases, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_neurons_g16)

#if SPDNN_KEEP(xy_row_major_layer_neurons_g1)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_STAGE words.
extern "C" __global__ void xy_row_major_layer_neurons_g1(XY_ROW_MAJOR_ARGS, const float* __restrict__ biases) {
    xy_row_major_layer<1, false, false>(XY_ROW_MAJOR_PASS, biases, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_neurons_g1)

#if SPDNN_KEEP(xy_row_major_layer_g16_glare)
// GLARE variants (census: counting accesses into census[0 .. GLARE_CENSUS_WORDS)).
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_TILE x GLARE_MAX_ROW_UNITS bytes + XY_ROW_STAGE + 2 words.
extern "C" __global__ void xy_row_major_layer_g16_glare(XY_ROW_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_row_major_layer<16, true, false>(XY_ROW_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g16_glare)

#if SPDNN_KEEP(xy_row_major_layer_g1_glare)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_TILE x GLARE_MAX_ROW_UNITS bytes + XY_ROW_STAGE + 2 words.
extern "C" __global__ void xy_row_major_layer_g1_glare(XY_ROW_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_row_major_layer<1, true, false>(XY_ROW_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g1_glare)

#if SPDNN_KEEP(xy_row_major_layer_g16_glare_census)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_TILE x GLARE_MAX_ROW_UNITS bytes + XY_ROW_STAGE + 2 words.
extern "C" __global__ void xy_row_major_layer_g16_glare_census(XY_ROW_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_row_major_layer<16, true, true>(XY_ROW_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g16_glare_census)

#if SPDNN_KEEP(xy_row_major_layer_g1_glare_census)
// Launch: grid (ceil(capacity / XY_ROW_TILE), ceil(n_out / 128)), block 128, static shared
// XY_ROW_TILE x GLARE_MAX_ROW_UNITS bytes + XY_ROW_STAGE + 2 words.
extern "C" __global__ void xy_row_major_layer_g1_glare_census(XY_ROW_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_row_major_layer<1, true, true>(XY_ROW_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_row_major_layer_g1_glare_census)

// Neuron-major layer: y_in is N_in x stride and y_out N_out x stride (position-major, one
// column per sample, `columns` in use; N_out = gridDim.x * G). One thread per sample
// column; the block's input list and G x inputs weights are staged in shared memory
// XY_CHUNK inputs at a time; G accumulators live in registers. Output position p gets
// clip(acc + bias), or clip(acc + biases[p]) with `biases` (not null only in the _neurons
// instances: one per output position, trained networks with biases <= 0).
// column_alive[c] = 1 when any output of the column is nonzero (zeroed before).
// With GLARE, an input whose unit (in this block's tile) is flagged is the bound for every
// column without a load; the block's G x 256 outputs are not written when all are at the
// bound, and the unit's last block sets its flag or writes the bound back (glare.cuh).
template <int G, bool GLARE, bool CENSUS>
__device__ __forceinline__ void xy_neuron_major_layer(
    const float* __restrict__ y_in, float* __restrict__ y_out, unsigned int columns, unsigned int stride,
    unsigned char* __restrict__ column_alive, const unsigned int* __restrict__ block_offsets,
    const unsigned int* __restrict__ inputs, const float* __restrict__ values, unsigned int value_step, float bias,
    float upper, const float* __restrict__ biases, XyRecorder recorder) {
    __shared__ unsigned int chunk_inputs[XY_CHUNK];
    __shared__ float chunk_values[XY_CHUNK * G];
    __shared__ unsigned char chunk_at_bound[GLARE ? XY_CHUNK : 1];
    __shared__ int vetoed;
    const unsigned int block = blockIdx.x;
    const unsigned int tile = blockIdx.y;
    const unsigned int column = blockIdx.y * blockDim.x + threadIdx.x;
    const bool in_range = column < columns;
    const unsigned long long tile_flags = (unsigned long long)tile * recorder.units;
    GlareTally<CENSUS> tally;
    float acc[G];
#pragma unroll
    for (int o = 0; o < G; ++o) {
        acc[o] = 0.0f;
    }
    const unsigned int begin = block_offsets[block];
    const unsigned int end = block_offsets[block + 1];
    for (unsigned int base = begin; base < end; base += XY_CHUNK) {
        const unsigned int len = min((unsigned int)XY_CHUNK, end - base);
        for (unsigned int i = threadIdx.x; i < len; i += blockDim.x) {
            const unsigned int input = inputs[base + i];
            chunk_inputs[i] = input;
            if (GLARE) {
                chunk_at_bound[i] = recorder.in_flags[tile_flags + (input >> recorder.shift)];
                tally.add(GLARE_RECORDER_READS, 1);
            }
            tally.add(GLARE_WEIGHT_READS, 1);
        }
        for (unsigned int i = threadIdx.x; i < len * G; i += blockDim.x) {
            chunk_values[i] = values[((unsigned long long)base * G + i) * value_step];
            tally.add(GLARE_WEIGHT_READS, 1);
        }
        __syncthreads();
        if (in_range) {
            for (unsigned int r = 0; r < len; ++r) {
                float v;
                if (GLARE) {
                    const bool at_bound = chunk_at_bound[r] != 0;
                    tally.add(at_bound ? GLARE_READS_SKIPPED : GLARE_READS, 1);
                    v = glare_read(at_bound, y_in + (unsigned long long)chunk_inputs[r] * stride + column, upper);
                } else {
                    v = y_in[(unsigned long long)chunk_inputs[r] * stride + column];
                }
                if (v != 0.0f) {
#pragma unroll
                    for (int o = 0; o < G; ++o) {
                        acc[o] += v * chunk_values[r * G + o];
                    }
                }
            }
        }
        __syncthreads();
    }
    if (!GLARE && !in_range) {
        return;
    }
    int any = 0;
    int off_bound = 0;
#pragma unroll
    for (int o = 0; o < G; ++o) {
        // The instances without per-neuron biases pass a literal null: this folds to `bias`.
        const float b = biases != nullptr ? biases[block * G + o] : bias;
        acc[o] = spdnn_clamp_activation(acc[o] + b, upper);
        any |= acc[o] != 0.0f;
        off_bound |= acc[o] != upper;
    }
    if (!GLARE) {
#pragma unroll
        for (int o = 0; o < G; ++o) {
            y_out[(unsigned long long)(block * G + o) * stride + column] = acc[o];
        }
        if (any) {
            column_alive[column] = 1;
        }
        return;
    }
    const bool part_at_bound = __syncthreads_and(!in_range || !off_bound) != 0;
    if (in_range) {
        if (!part_at_bound) {
#pragma unroll
            for (int o = 0; o < G; ++o) {
                y_out[(unsigned long long)(block * G + o) * stride + column] = acc[o];
            }
            tally.add(GLARE_WRITES, G);
        } else {
            tally.add(GLARE_WRITES_SKIPPED, G);
        }
        if (any) {
            column_alive[column] = 1;
        }
    }
    // This block's unit and the blocks sharing it (2^shift is a multiple of G).
    const unsigned int n = gridDim.x * G;
    const unsigned int unit = (block * G) >> recorder.shift;
    const unsigned int unit_begin = unit << recorder.shift;
    const unsigned int unit_end = min((unsigned long long)unit_begin + (1ull << recorder.shift), (unsigned long long)n);
    const unsigned int first_part = unit_begin / G;
    const unsigned int parts = (unit_end - unit_begin) / G;
    const unsigned long long tile_parts = (unsigned long long)tile * gridDim.x;
    if (parts == 1) {
        // The unit is this block's part (Algorithm 2, lines 4-5): no bookkeeping.
        if (threadIdx.x == 0) {
            recorder.out_flags[tile_flags + unit] = part_at_bound ? 1 : 0;
            tally.add(GLARE_RECORDER_WRITES, 1);
        }
        if (CENSUS) {
            tally.flush(recorder.census);
        }
        return;
    }
    if (threadIdx.x == 0) {
        recorder.skipped[tile_parts + block] = part_at_bound ? 1 : 0;
        tally.add(GLARE_RECORDER_WRITES, 1);
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        tally.add(GLARE_RECORDER_READS, 1);
        tally.add(GLARE_RECORDER_WRITES, 1);
        vetoed = glare_arrive(recorder.arrivals + tile_flags + unit, parts, part_at_bound,
                              recorder.out_flags + tile_flags + unit)
                     ? 1
                     : 0;
    }
    __syncthreads();
    if (vetoed) {
        for (unsigned int part = first_part; part < first_part + parts; ++part) {
            tally.add(GLARE_RECORDER_READS, threadIdx.x == 0 ? 1 : 0);
            if (glare_part_skipped(recorder.skipped, tile_parts + part) && in_range) {
#pragma unroll
                for (int o = 0; o < G; ++o) {
                    y_out[(unsigned long long)(part * G + o) * stride + column] = upper;
                }
                tally.add(GLARE_WRITE_BACKS, G);
            }
        }
    }
    if (CENSUS) {
        tally.flush(recorder.census);
    }
}

#define XY_NEURON_MAJOR_ARGS                                                                                   \
    const float *__restrict__ y_in, float *__restrict__ y_out, unsigned int columns, unsigned int stride,       \
        unsigned char *__restrict__ column_alive, const unsigned int *__restrict__ block_offsets,              \
        const unsigned int *__restrict__ inputs, const float *__restrict__ values, unsigned int value_step,       \
        float bias, float upper
#define XY_NEURON_MAJOR_PASS                                                                                   \
    y_in, y_out, columns, stride, column_alive, block_offsets, inputs, values, value_step, bias, upper

#if SPDNN_KEEP(xy_neuron_major_layer_g16)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 17 words.
extern "C" __global__ void xy_neuron_major_layer_g16(XY_NEURON_MAJOR_ARGS) {
    xy_neuron_major_layer<16, false, false>(XY_NEURON_MAJOR_PASS, nullptr, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g16)

#if SPDNN_KEEP(xy_neuron_major_layer_g1)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 2 words.
extern "C" __global__ void xy_neuron_major_layer_g1(XY_NEURON_MAJOR_ARGS) {
    xy_neuron_major_layer<1, false, false>(XY_NEURON_MAJOR_PASS, nullptr, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g1)

#if SPDNN_KEEP(xy_neuron_major_layer_neurons_g16)
// The neuron-major layer with a bias per output position (biases: N_out values in the
// layer's position order; `bias` unused). Trained networks, biases <= 0; not with GLARE.
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 17 words.
extern "C" __global__ void xy_neuron_major_layer_neurons_g16(XY_NEURON_MAJOR_ARGS,
                                                             const float* __restrict__ biases) {
    xy_neuron_major_layer<16, false, false>(XY_NEURON_MAJOR_PASS, biases, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_neurons_g16)

#if SPDNN_KEEP(xy_neuron_major_layer_neurons_g1)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 2 words.
extern "C" __global__ void xy_neuron_major_layer_neurons_g1(XY_NEURON_MAJOR_ARGS,
                                                            const float* __restrict__ biases) {
    xy_neuron_major_layer<1, false, false>(XY_NEURON_MAJOR_PASS, biases, XY_NO_RECORDER);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_neurons_g1)

#if SPDNN_KEEP(xy_neuron_major_layer_g16_glare)
// GLARE variants (census: counting accesses into census[0 .. GLARE_CENSUS_WORDS)).
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 17 words + 68 bytes.
extern "C" __global__ void xy_neuron_major_layer_g16_glare(XY_NEURON_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_neuron_major_layer<16, true, false>(XY_NEURON_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g16_glare)

#if SPDNN_KEEP(xy_neuron_major_layer_g1_glare)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 2 words + 68 bytes.
extern "C" __global__ void xy_neuron_major_layer_g1_glare(XY_NEURON_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_neuron_major_layer<1, true, false>(XY_NEURON_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g1_glare)

#if SPDNN_KEEP(xy_neuron_major_layer_g16_glare_census)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 17 words + 68 bytes.
extern "C" __global__ void xy_neuron_major_layer_g16_glare_census(XY_NEURON_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_neuron_major_layer<16, true, true>(XY_NEURON_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g16_glare_census)

#if SPDNN_KEEP(xy_neuron_major_layer_g1_glare_census)
// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 2 words + 68 bytes.
extern "C" __global__ void xy_neuron_major_layer_g1_glare_census(XY_NEURON_MAJOR_ARGS, XY_RECORDER_ARGS) {
    xy_neuron_major_layer<1, true, true>(XY_NEURON_MAJOR_PASS, nullptr, XY_RECORDER_PASS);
}
#endif  // SPDNN_KEEP(xy_neuron_major_layer_g1_glare_census)

#if SPDNN_KEEP(xy_glare_fill_columns)
// Writes the bound into every flagged unit of neuron-major activations (n x stride,
// `columns` in use; flags tiles x units, units of 2^shift positions of 256 columns).
// Launch: grid (ceil(columns / 256), min(n, 65535)), block 256 (grid-stride over positions), no shared memory.
extern "C" __global__ void xy_glare_fill_columns(float* __restrict__ y, unsigned int columns, unsigned int stride,
                                                 unsigned int n, const unsigned char* __restrict__ flags,
                                                 unsigned int shift, unsigned int units, float upper) {
    const unsigned int column = blockIdx.x * blockDim.x + threadIdx.x;
    if (column >= columns) {
        return;
    }
    const unsigned long long tile_flags = (unsigned long long)blockIdx.x * units;
    for (unsigned int p = blockIdx.y; p < n; p += gridDim.y) {
        if (flags[tile_flags + (p >> shift)]) {
            y[(unsigned long long)p * stride + column] = upper;
        }
    }
}
#endif  // SPDNN_KEEP(xy_glare_fill_columns)

#if SPDNN_KEEP(xy_rows_to_columns)
// Row-major rows -> neuron-major n x stride, keeping only the listed rows: column j is
// row rows[j] (j < count). Dead rows are left behind here, as XY-2021's compacted row
// list does before its neuron-major phase.
// Launch: grid (ceil(count / XY_TRANSPOSE_TILE), ceil(n / XY_TRANSPOSE_TILE)), block (XY_TRANSPOSE_TILE,
// XY_TRANSPOSE_ROWS), static shared XY_TRANSPOSE_TILE x (XY_TRANSPOSE_TILE + 1) floats.
extern "C" __global__ void xy_rows_to_columns(const float* __restrict__ in, float* __restrict__ out,
                                              const unsigned int* __restrict__ rows, unsigned int count,
                                              unsigned int n, unsigned int stride) {
    __shared__ float tile[XY_TRANSPOSE_TILE][XY_TRANSPOSE_TILE + 1];
    const unsigned int neuron = blockIdx.y * XY_TRANSPOSE_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TRANSPOSE_TILE; k += XY_TRANSPOSE_ROWS) {
        const unsigned int j = blockIdx.x * XY_TRANSPOSE_TILE + k;
        float v = 0.0f;
        if (j < count && neuron < n) {
            v = in[(unsigned long long)rows[j] * n + neuron];
        }
        tile[k][threadIdx.x] = v;
    }
    __syncthreads();
    const unsigned int j = blockIdx.x * XY_TRANSPOSE_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TRANSPOSE_TILE; k += XY_TRANSPOSE_ROWS) {
        const unsigned int out_neuron = blockIdx.y * XY_TRANSPOSE_TILE + k;
        if (j < count && out_neuron < n) {
            out[(unsigned long long)out_neuron * stride + j] = tile[threadIdx.x][k];
        }
    }
}
#endif  // SPDNN_KEEP(xy_rows_to_columns)

#if SPDNN_KEEP(xy_columns_to_rows)
// Neuron-major n x stride -> row-major count x n, taking the columns listed in
// `columns[0 .. count)`: out[j][p] = in[p][columns[j]].
// Launch: grid (ceil(count / XY_TRANSPOSE_TILE), ceil(n / XY_TRANSPOSE_TILE)), block (XY_TRANSPOSE_TILE,
// XY_TRANSPOSE_ROWS), static shared XY_TRANSPOSE_TILE x (XY_TRANSPOSE_TILE + 1) floats.
extern "C" __global__ void xy_columns_to_rows(const float* __restrict__ in, float* __restrict__ out,
                                              const unsigned int* __restrict__ columns, unsigned int count,
                                              unsigned int n, unsigned int stride) {
    __shared__ float tile[XY_TRANSPOSE_TILE][XY_TRANSPOSE_TILE + 1];
    const unsigned int j = blockIdx.x * XY_TRANSPOSE_TILE + threadIdx.x;
    const unsigned int column = j < count ? columns[j] : 0;
    for (unsigned int k = threadIdx.y; k < XY_TRANSPOSE_TILE; k += XY_TRANSPOSE_ROWS) {
        const unsigned int neuron = blockIdx.y * XY_TRANSPOSE_TILE + k;
        float v = 0.0f;
        if (j < count && neuron < n) {
            v = in[(unsigned long long)neuron * stride + column];
        }
        tile[k][threadIdx.x] = v;
    }
    __syncthreads();
    const unsigned int neuron = blockIdx.y * XY_TRANSPOSE_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TRANSPOSE_TILE; k += XY_TRANSPOSE_ROWS) {
        const unsigned int out_row = blockIdx.x * XY_TRANSPOSE_TILE + k;
        if (out_row < count && neuron < n) {
            out[(unsigned long long)out_row * n + neuron] = tile[threadIdx.x][k];
        }
    }
}
#endif  // SPDNN_KEEP(xy_columns_to_rows)

#if SPDNN_KEEP(xy_gather_columns)
// Deletes dead columns: out[p][j] = in[p][columns[j]] for p < n, j < count; `out` has
// row stride `count`.
// Launch: grid (ceil(count / 256), min(n, 65535)), block 256 (grid-stride over positions), no shared memory.
extern "C" __global__ void xy_gather_columns(const float* __restrict__ in, float* __restrict__ out,
                                             const unsigned int* __restrict__ columns, unsigned int count,
                                             unsigned int n, unsigned int in_stride) {
    const unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) {
        return;
    }
    const unsigned int column = columns[j];
    for (unsigned int p = blockIdx.y; p < n; p += gridDim.y) {
        out[(unsigned long long)p * count + j] = in[(unsigned long long)p * in_stride + column];
    }
}
#endif  // SPDNN_KEEP(xy_gather_columns)

#if SPDNN_KEEP(xy_gather_rows)
// Row gather with a neuron permutation: out[j][p] = in[rows[j]][perm[p]]. Turns listed
// row-major rows into a compact row-major block (perm maps between neuron orders).
// Launch: grid (count, 1), block 256, no shared memory.
extern "C" __global__ void xy_gather_rows(const float* __restrict__ in, float* __restrict__ out,
                                          const unsigned int* __restrict__ rows, unsigned int count,
                                          unsigned int n, const unsigned int* __restrict__ perm) {
    const unsigned int j = blockIdx.x;
    if (j >= count) {
        return;
    }
    const float* src = in + (unsigned long long)rows[j] * n;
    float* dst = out + (unsigned long long)j * n;
    for (unsigned int p = threadIdx.x; p < n; p += blockDim.x) {
        dst[p] = src[perm[p]];
    }
}
#endif  // SPDNN_KEEP(xy_gather_rows)

#if SPDNN_KEEP(xy_column_flags_to_rows)
// Category flags from neuron-major columns: row_flags[ids[c]] = 1 when column_alive[c],
// for c < columns (ids: the row of each column). row_flags zeroed before.
// Launch: grid ceil(columns / 256), block 256, no shared memory.
extern "C" __global__ void xy_column_flags_to_rows(const unsigned char* __restrict__ column_alive,
                                                   const unsigned int* __restrict__ ids, unsigned int columns,
                                                   unsigned char* __restrict__ row_flags) {
    const unsigned long long c = spdnn_global_thread_x();
    if (c < columns && column_alive[c] != 0) {
        row_flags[ids[c]] = 1;
    }
}
#endif  // SPDNN_KEEP(xy_column_flags_to_rows)
