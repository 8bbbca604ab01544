// hp.cu: H&P-2020 (Hidayetoglu & Pearson et al.). One thread per output position in blocks
// of HP_BLOCK; for each block its input footprint is staged buffer by buffer in shared
// memory, and each warp walks its sliced-ELL slice of the buffer (16-bit offsets into the
// buffer), updating a minibatch of MB rows held in registers.
//
// Layout of one layer (built by crates/hp/src/format.rs, which documents it in full):
//   block_buffers[blocks + 1]         buffers of output block b: block_buffers[b] .. [b + 1]
//   buffer_starts[buffers + 1], map[] input positions of buffer k: map[buffer_starts[k] .. [k + 1]]
//   slice_starts[buffers * HP_WARPS + 1]  slot rows of (buffer k, warp w)
//   index[32 * slot rows], value[...]  entry of lane i in slot row s at s * 32 + i
// A layer is n_in x n_out (n_in = n_out for the challenge's layers; rectangular after
// compression): it reads rows x n_in activations and writes rows x n_out, each row-major at
// its own width, in position order. map[] holds positions < n_in; blocks = ceil(n_out / HP_BLOCK).
#include "common.cuh"

// Definitions from Rust (spdnn_hp::HP_DEFINES); launch shapes: the kernel declarations of
// spdnn-hp (crates/hp/src/lib.rs).
// Threads per block, one per output position (spdnn_hp::format::BLOCK).
#ifndef HP_BLOCK
#error "HP_BLOCK must come from Rust (-D)"
#endif
// Warps per block (spdnn_hp::format::WARPS): the slices of a buffer.
#ifndef HP_WARPS
#error "HP_WARPS must come from Rust (-D)"
#endif
// Blocks per SM the register budget must allow (spdnn_hp::MIN_BLOCKS_PER_SM), the
// __launch_bounds__ of the layer kernels: with 256 threads and 4 blocks, at most
// 65536 / (256 * 4) = 64 registers per thread.
#ifndef HP_MIN_BLOCKS
#error "HP_MIN_BLOCKS must come from Rust (-D)"
#endif
// Rust's lanes per warp (spdnn_hp::format::WARP = BLOCK / WARPS) are the device's.
static_assert(HP_WARPS * SPDNN_WARP_SIZE == HP_BLOCK, "HP_BLOCK must be HP_WARPS warps");

// One layer over the rows listed in rows_in[0 .. *count_in). Work items are (minibatch of
// MB listed rows, output block), output block fastest, so blocks running at the same time
// share their rows; the grid (a resident set of blocks) strides over them. For each item:
// per buffer, stage features[k * STRIDE + f] = y_in[row_f][map[k]] (STRIDE = MB | 1, odd,
// so entries that differ mod 32 fall in different banks; = spdnn_hp::feature_stride), then
// every lane adds value * features[index * STRIDE + f] into its MB accumulators. Products
// and sums are rounded separately (no contraction), in the layout's entry order.
// y_in rows are n_in floats apart, y_out rows n_out.
// Writes clip(acc + bias) for every listed row of the item and every position < n_out (with
// `biases`, not null only in the hp_layer_neurons instances: clip(acc + biases[position]),
// one bias per output position, trained networks with biases <= 0), and sets
// alive[list position] when the row has a nonzero output (plain stores of 1).
// Block 0 also zeroes *count_out for hp_compact_rows, which runs next.
template <int MB>
__device__ __forceinline__ void hp_layer_body(const float* __restrict__ y_in, float* __restrict__ y_out,
                                              const unsigned int* __restrict__ rows_in,
                                              const unsigned int* __restrict__ count_in,
                                              unsigned char* __restrict__ alive,
                                              unsigned int* __restrict__ count_out,
                                              const unsigned int* __restrict__ block_buffers,
                                              const unsigned int* __restrict__ buffer_starts,
                                              const unsigned int* __restrict__ map,
                                              const unsigned int* __restrict__ slice_starts,
                                              const unsigned short* __restrict__ index,
                                              const float* __restrict__ value, unsigned int n_in,
                                              unsigned int n_out, unsigned int blocks, float bias,
                                              float upper, const float* __restrict__ biases) {
    constexpr unsigned int STRIDE = MB | 1;
    extern __shared__ float hp_features[];
    __shared__ unsigned int hp_rows[MB];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *count_out = 0u;
    }
    const unsigned int live = *count_in;
    const unsigned int minibatches = live / MB + (live % MB != 0 ? 1u : 0u);
    const unsigned long long items = (unsigned long long)minibatches * blocks;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    for (unsigned long long item = blockIdx.x; item < items; item += gridDim.x) {
        const unsigned int block = (unsigned int)(item % blocks);
        const unsigned int first = (unsigned int)(item / blocks) * MB;
        const unsigned int here = min((unsigned int)MB, live - first);
        // The previous item's readers of hp_rows and hp_features are done.
        __syncthreads();
        if (threadIdx.x < here) {
            hp_rows[threadIdx.x] = rows_in[first + threadIdx.x];
        }
        __syncthreads();
        float acc[MB];
#pragma unroll
        for (int f = 0; f < MB; ++f) {
            acc[f] = 0.0f;
        }
        const unsigned int buffer_end = block_buffers[block + 1];
        for (unsigned int buffer = block_buffers[block]; buffer < buffer_end; ++buffer) {
            const unsigned int start = buffer_starts[buffer];
            const unsigned int length = buffer_starts[buffer + 1] - start;
            // One row at a time (the accumulators are live here: staging every row at
            // once would need MB 64-bit addresses in registers too).
#pragma unroll 1
            for (unsigned int f = 0; f < MB; ++f) {
                const bool real = f < here;
                const float* y_row = y_in + (real ? (unsigned long long)hp_rows[f] * n_in : 0ull);
#pragma unroll 4
                for (unsigned int k = threadIdx.x; k < length; k += HP_BLOCK) {
                    hp_features[k * STRIDE + f] = real ? y_row[map[start + k]] : 0.0f;
                }
            }
            __syncthreads();
            const unsigned int slot_end = slice_starts[buffer * HP_WARPS + warp + 1];
#pragma unroll 4
            for (unsigned int slot = slice_starts[buffer * HP_WARPS + warp]; slot < slot_end; ++slot) {
                const unsigned int entry = slot * SPDNN_WARP_SIZE + lane;
                const float* feature = hp_features + (unsigned int)index[entry] * STRIDE;
                const float w = value[entry];
#pragma unroll
                for (int f = 0; f < MB; ++f) {
                    acc[f] = __fadd_rn(acc[f], __fmul_rn(feature[f], w));
                }
            }
            // Every warp is done with this buffer before the next one is staged.
            __syncthreads();
        }
        const unsigned int position = block * HP_BLOCK + threadIdx.x;
        // The instances without per-neuron biases pass a literal null: this folds to `bias`.
        const float b = (biases != nullptr && position < n_out) ? biases[position] : bias;
#pragma unroll
        for (int f = 0; f < MB; ++f) {
            bool nonzero = false;
            if ((unsigned int)f < here && position < n_out) {
                const float v = spdnn_clamp_activation(__fadd_rn(acc[f], b), upper);
                y_out[(unsigned long long)hp_rows[f] * n_out + position] = v;
                nonzero = v != 0.0f;
            }
            if (__any_sync(SPDNN_FULL_MASK, nonzero) && lane == 0) {
                alive[first + f] = 1;
            }
        }
    }
}

#define HP_LAYER_ARGS                                                                                          \
    const float *__restrict__ y_in, float *__restrict__ y_out, const unsigned int *__restrict__ rows_in,       \
        const unsigned int *__restrict__ count_in, unsigned char *__restrict__ alive,                          \
        unsigned int *__restrict__ count_out, const unsigned int *__restrict__ block_buffers,                  \
        const unsigned int *__restrict__ buffer_starts, const unsigned int *__restrict__ map,                  \
        const unsigned int *__restrict__ slice_starts, const unsigned short *__restrict__ index,               \
        const float *__restrict__ value, unsigned int n_in, unsigned int n_out, unsigned int blocks,           \
        float bias, float upper
#define HP_LAYER_PASS                                                                                          \
    y_in, y_out, rows_in, count_in, alive, count_out, block_buffers, buffer_starts, map, slice_starts, index,  \
        value, n_in, n_out, blocks, bias, upper
// The arguments of the hp_layer_neurons instances: a bias per output position after them.
#define HP_NEURONS_ARGS HP_LAYER_ARGS, const float *__restrict__ biases

#if SPDNN_KEEP(hp_layer_mb1)
// The instances, one per supported minibatch MB (spdnn_hp::MINIBATCHES and spdnn_hp::LAYERS):
// the grid is the resident set of blocks (at most the items at full capacity), striding over
// the ceil(*count_in / MB) * blocks items.
// Launch: grid min(ceil(capacity / 1) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 1 floats, static shared 1 word.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb1(HP_LAYER_ARGS) {
    hp_layer_body<1>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb1)

#if SPDNN_KEEP(hp_layer_mb2)
// Launch: grid min(ceil(capacity / 2) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 3 floats, static shared 2 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb2(HP_LAYER_ARGS) {
    hp_layer_body<2>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb2)

#if SPDNN_KEEP(hp_layer_mb4)
// Launch: grid min(ceil(capacity / 4) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 5 floats, static shared 4 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb4(HP_LAYER_ARGS) {
    hp_layer_body<4>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb4)

#if SPDNN_KEEP(hp_layer_mb8)
// Launch: grid min(ceil(capacity / 8) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 9 floats, static shared 8 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb8(HP_LAYER_ARGS) {
    hp_layer_body<8>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb8)

#if SPDNN_KEEP(hp_layer_mb12)
// Launch: grid min(ceil(capacity / 12) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 13 floats, static shared 12 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb12(HP_LAYER_ARGS) {
    hp_layer_body<12>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb12)

#if SPDNN_KEEP(hp_layer_mb16)
// Launch: grid min(ceil(capacity / 16) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 17 floats, static shared 16 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb16(HP_LAYER_ARGS) {
    hp_layer_body<16>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb16)

#if SPDNN_KEEP(hp_layer_mb24)
// Launch: grid min(ceil(capacity / 24) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 25 floats, static shared 24 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb24(HP_LAYER_ARGS) {
    hp_layer_body<24>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb24)

#if SPDNN_KEEP(hp_layer_mb32)
// Launch: grid min(ceil(capacity / 32) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 33 floats, static shared 32 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_mb32(HP_LAYER_ARGS) {
    hp_layer_body<32>(HP_LAYER_PASS, nullptr);
}
#endif  // SPDNN_KEEP(hp_layer_mb32)

#if SPDNN_KEEP(hp_layer_neurons_mb1)
// hp_layer_mb* with a bias per output position (biases: n_out values in the layer's position
// order; `bias` unused), for trained networks with biases <= 0.
// Launch: grid min(ceil(capacity / 1) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 1 floats, static shared 1 word.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb1(HP_NEURONS_ARGS) {
    hp_layer_body<1>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb1)

#if SPDNN_KEEP(hp_layer_neurons_mb2)
// Launch: grid min(ceil(capacity / 2) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 3 floats, static shared 2 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb2(HP_NEURONS_ARGS) {
    hp_layer_body<2>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb2)

#if SPDNN_KEEP(hp_layer_neurons_mb4)
// Launch: grid min(ceil(capacity / 4) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 5 floats, static shared 4 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb4(HP_NEURONS_ARGS) {
    hp_layer_body<4>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb4)

#if SPDNN_KEEP(hp_layer_neurons_mb8)
// Launch: grid min(ceil(capacity / 8) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 9 floats, static shared 8 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb8(HP_NEURONS_ARGS) {
    hp_layer_body<8>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb8)

#if SPDNN_KEEP(hp_layer_neurons_mb12)
// Launch: grid min(ceil(capacity / 12) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 13 floats, static shared 12 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb12(HP_NEURONS_ARGS) {
    hp_layer_body<12>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb12)

#if SPDNN_KEEP(hp_layer_neurons_mb16)
// Launch: grid min(ceil(capacity / 16) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 17 floats, static shared 16 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb16(HP_NEURONS_ARGS) {
    hp_layer_body<16>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb16)

#if SPDNN_KEEP(hp_layer_neurons_mb24)
// Launch: grid min(ceil(capacity / 24) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 25 floats, static shared 24 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb24(HP_NEURONS_ARGS) {
    hp_layer_body<24>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb24)

#if SPDNN_KEEP(hp_layer_neurons_mb32)
// Launch: grid min(ceil(capacity / 32) * blocks, resident blocks), block HP_BLOCK,
// dynamic shared (longest buffer) * 33 floats, static shared 32 words.
extern "C" __global__ void __launch_bounds__(HP_BLOCK, HP_MIN_BLOCKS) hp_layer_neurons_mb32(HP_NEURONS_ARGS) {
    hp_layer_body<32>(HP_LAYER_PASS, biases);
}
#endif  // SPDNN_KEEP(hp_layer_neurons_mb32)

#if SPDNN_KEEP(hp_compact_rows)
// Lists the rows that stayed non-empty: rows_out gets rows_in[i] for every i < *count_in
// with alive[i] (order not kept), *count_out (zeroed by the layer kernel) counts them, and
// alive[i] is cleared for the next layer. One atomic per warp (ballot + popc).
// Launch: grid ceil(capacity / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void hp_compact_rows(const unsigned int* __restrict__ rows_in,
                                           const unsigned int* __restrict__ count_in,
                                           unsigned char* __restrict__ alive, unsigned int* __restrict__ rows_out,
                                           unsigned int* __restrict__ count_out) {
    const unsigned long long i = spdnn_global_thread_x();
    bool keep = false;
    unsigned int row = 0u;
    if (i < *count_in) {
        keep = alive[i] != 0;
        alive[i] = 0;
        row = rows_in[i];
    }
    spdnn_warp_append(keep, row, rows_out, count_out);
}
#endif  // SPDNN_KEEP(hp_compact_rows)

#if SPDNN_KEEP(hp_scatter_rows)
// Scatters sparse input rows (CSR: row_offsets[rows + 1], cols, vals) into a zeroed dense
// Y (rows x n, n the first layer's inputs) in that layer's position order:
// y[row][positions[col]] = value.
// Launch: grid min(rows, 65535·16) (blocks stride over rows), block 128, no shared memory.
extern "C" __global__ void hp_scatter_rows(const unsigned int* __restrict__ row_offsets,
                                           const unsigned int* __restrict__ cols,
                                           const float* __restrict__ vals, unsigned int rows, unsigned int n,
                                           const unsigned int* __restrict__ positions, float* __restrict__ y) {
    for (unsigned int row = blockIdx.x; row < rows; row += gridDim.x) {
        float* out = y + (unsigned long long)row * n;
        for (unsigned int k = row_offsets[row] + threadIdx.x; k < row_offsets[row + 1]; k += blockDim.x) {
            out[positions[cols[k]]] = vals[k];
        }
    }
}
#endif  // SPDNN_KEEP(hp_scatter_rows)
