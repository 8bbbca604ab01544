// xy.cu: XY-2021 (Xu et al., HPEC 2021). Layers are stored as blocks of G outputs that
// share one input list (crates/xy/src/format.rs): block b reads inputs[off[b] .. off[b+1])
// and values[(k)*G + o] is the weight from input k to its output o. Output position
// p = b*G + o; positions chain from layer to layer, so no permutation is ever applied.
// Every kernel exists for G = 16 (grouped layers) and G = 1 (general layers).
#include "common.cuh"

#define XY_ROW_TILE 8       // samples per block of the row-major kernel
#define XY_CHUNK 64         // block inputs staged in shared memory at a time (neuron-major)
#define XY_TILE 32          // transpose tile edge
#define XY_TILE_ROWS 8      // transpose block height

// Row-major layer on the listed rows: y_out[row][p] = clip(sum_k y_in[row][inputs[k]] *
// values[k*G + o] + bias) for p = b*G + o, and row_alive[row] = 1 when any output of the row
// is nonzero (row_alive zeroed before). Rows are read and written in place (no compaction).
// Each thread owns one output position and XY_ROW_TILE rows (accumulators in registers);
// the threads of one block read the same inputs (broadcast), the weights coalesce.
template <int G>
__device__ __forceinline__ void xy_row_major_layer(
    const float* __restrict__ y_in, float* __restrict__ y_out, const unsigned int* __restrict__ active_rows,
    const unsigned int* __restrict__ active_count, unsigned char* __restrict__ row_alive,
    const unsigned int* __restrict__ block_offsets, const unsigned int* __restrict__ inputs,
    const float* __restrict__ values, unsigned int blocks, unsigned int n, float bias, float upper) {
    const unsigned int count = *active_count;
    const unsigned int first = blockIdx.x * XY_ROW_TILE;
    if (first >= count) {
        return;
    }
    const unsigned int position = blockIdx.y * blockDim.x + threadIdx.x;
    const unsigned int block = position / G;
    if (block >= blocks) {
        return;
    }
    const unsigned int out = position % G;
    const unsigned int tile = min((unsigned int)XY_ROW_TILE, count - first);
    unsigned int rows[XY_ROW_TILE];
    unsigned long long row_base[XY_ROW_TILE];
#pragma unroll
    for (int i = 0; i < XY_ROW_TILE; ++i) {
        rows[i] = active_rows[first + min((unsigned int)i, tile - 1)];
        row_base[i] = (unsigned long long)rows[i] * n;
    }
    float acc[XY_ROW_TILE];
#pragma unroll
    for (int i = 0; i < XY_ROW_TILE; ++i) {
        acc[i] = 0.0f;
    }
    const unsigned int end = block_offsets[block + 1];
    for (unsigned int k = block_offsets[block]; k < end; ++k) {
        const unsigned int input = inputs[k];
        const float w = values[(unsigned long long)k * G + out];
#pragma unroll
        for (int i = 0; i < XY_ROW_TILE; ++i) {
            // One rounding per term, in a fixed order: rows with equal inputs get equal
            // outputs wherever they sit in a tile (SNICIT relies on it).
            acc[i] = __fmaf_rn(y_in[row_base[i] + input], w, acc[i]);
        }
    }
    for (unsigned int i = 0; i < tile; ++i) {
        const float v = spdnn_clamp_activation(acc[i] + bias, upper);
        y_out[row_base[i] + position] = v;
        if (v != 0.0f) {
            row_alive[rows[i]] = 1;
        }
    }
}

// Launch: grid (ceil(capacity / 8), ceil(N / 128)), block 128, no shared memory.
extern "C" __global__ void xy_row_major_layer_g16(const float* __restrict__ y_in, float* __restrict__ y_out,
                                                  const unsigned int* __restrict__ active_rows,
                                                  const unsigned int* __restrict__ active_count,
                                                  unsigned char* __restrict__ row_alive,
                                                  const unsigned int* __restrict__ block_offsets,
                                                  const unsigned int* __restrict__ inputs,
                                                  const float* __restrict__ values, unsigned int blocks,
                                                  unsigned int n, float bias, float upper) {
    xy_row_major_layer<16>(y_in, y_out, active_rows, active_count, row_alive, block_offsets, inputs, values, blocks,
                           n, bias, upper);
}

// Launch: grid (ceil(capacity / 8), ceil(N / 128)), block 128, no shared memory.
extern "C" __global__ void xy_row_major_layer_g1(const float* __restrict__ y_in, float* __restrict__ y_out,
                                                 const unsigned int* __restrict__ active_rows,
                                                 const unsigned int* __restrict__ active_count,
                                                 unsigned char* __restrict__ row_alive,
                                                 const unsigned int* __restrict__ block_offsets,
                                                 const unsigned int* __restrict__ inputs,
                                                 const float* __restrict__ values, unsigned int blocks,
                                                 unsigned int n, float bias, float upper) {
    xy_row_major_layer<1>(y_in, y_out, active_rows, active_count, row_alive, block_offsets, inputs, values, blocks,
                          n, bias, upper);
}

// Neuron-major layer: y is N x stride (position-major, one column per sample, `columns`
// in use). One thread per sample column; the block's input list and G x inputs weights are
// staged in shared memory XY_CHUNK inputs at a time; G accumulators live in registers.
// column_alive[c] = 1 when any output of the column is nonzero (zeroed before).
template <int G>
__device__ __forceinline__ void xy_neuron_major_layer(
    const float* __restrict__ y_in, float* __restrict__ y_out, unsigned int columns, unsigned int stride,
    unsigned char* __restrict__ column_alive, const unsigned int* __restrict__ block_offsets,
    const unsigned int* __restrict__ inputs, const float* __restrict__ values, float bias, float upper) {
    __shared__ unsigned int chunk_inputs[XY_CHUNK];
    __shared__ float chunk_values[XY_CHUNK * G];
    const unsigned int block = blockIdx.x;
    const unsigned int column = blockIdx.y * blockDim.x + threadIdx.x;
    const bool in_range = column < columns;
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
            chunk_inputs[i] = inputs[base + i];
        }
        for (unsigned int i = threadIdx.x; i < len * G; i += blockDim.x) {
            chunk_values[i] = values[(unsigned long long)base * G + i];
        }
        __syncthreads();
        if (in_range) {
            for (unsigned int r = 0; r < len; ++r) {
                const float v = y_in[(unsigned long long)chunk_inputs[r] * stride + column];
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
    if (!in_range) {
        return;
    }
    int any = 0;
#pragma unroll
    for (int o = 0; o < G; ++o) {
        const float v = spdnn_clamp_activation(acc[o] + bias, upper);
        y_out[(unsigned long long)(block * G + o) * stride + column] = v;
        any |= v != 0.0f;
    }
    if (any) {
        column_alive[column] = 1;
    }
}

// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 17 words.
extern "C" __global__ void xy_neuron_major_layer_g16(const float* __restrict__ y_in, float* __restrict__ y_out,
                                                     unsigned int columns, unsigned int stride,
                                                     unsigned char* __restrict__ column_alive,
                                                     const unsigned int* __restrict__ block_offsets,
                                                     const unsigned int* __restrict__ inputs,
                                                     const float* __restrict__ values, float bias, float upper) {
    xy_neuron_major_layer<16>(y_in, y_out, columns, stride, column_alive, block_offsets, inputs, values, bias, upper);
}

// Launch: grid (blocks, ceil(columns / 256)), block 256, static shared 64 x 2 words.
extern "C" __global__ void xy_neuron_major_layer_g1(const float* __restrict__ y_in, float* __restrict__ y_out,
                                                    unsigned int columns, unsigned int stride,
                                                    unsigned char* __restrict__ column_alive,
                                                    const unsigned int* __restrict__ block_offsets,
                                                    const unsigned int* __restrict__ inputs,
                                                    const float* __restrict__ values, float bias, float upper) {
    xy_neuron_major_layer<1>(y_in, y_out, columns, stride, column_alive, block_offsets, inputs, values, bias, upper);
}

// Row-major rows -> neuron-major n x stride, keeping only the listed rows: column j is
// row rows[j] (j < count). Dead rows are left behind here, as XY-2021's compacted row
// list does before its neuron-major phase.
// Launch: grid (ceil(count / 32), ceil(n / 32)), block (32, 8), static shared 32 x 33 floats.
extern "C" __global__ void xy_rows_to_columns(const float* __restrict__ in, float* __restrict__ out,
                                              const unsigned int* __restrict__ rows, unsigned int count,
                                              unsigned int n, unsigned int stride) {
    __shared__ float tile[XY_TILE][XY_TILE + 1];
    const unsigned int neuron = blockIdx.y * XY_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TILE; k += XY_TILE_ROWS) {
        const unsigned int j = blockIdx.x * XY_TILE + k;
        float v = 0.0f;
        if (j < count && neuron < n) {
            v = in[(unsigned long long)rows[j] * n + neuron];
        }
        tile[k][threadIdx.x] = v;
    }
    __syncthreads();
    const unsigned int j = blockIdx.x * XY_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TILE; k += XY_TILE_ROWS) {
        const unsigned int out_neuron = blockIdx.y * XY_TILE + k;
        if (j < count && out_neuron < n) {
            out[(unsigned long long)out_neuron * stride + j] = tile[threadIdx.x][k];
        }
    }
}

// Neuron-major n x stride -> row-major count x n, taking the columns listed in
// `columns[0 .. count)`: out[j][p] = in[p][columns[j]].
// Launch: grid (ceil(count / 32), ceil(n / 32)), block (32, 8), static shared 32 x 33 floats.
extern "C" __global__ void xy_columns_to_rows(const float* __restrict__ in, float* __restrict__ out,
                                              const unsigned int* __restrict__ columns, unsigned int count,
                                              unsigned int n, unsigned int stride) {
    __shared__ float tile[XY_TILE][XY_TILE + 1];
    const unsigned int j = blockIdx.x * XY_TILE + threadIdx.x;
    const unsigned int column = j < count ? columns[j] : 0;
    for (unsigned int k = threadIdx.y; k < XY_TILE; k += XY_TILE_ROWS) {
        const unsigned int neuron = blockIdx.y * XY_TILE + k;
        float v = 0.0f;
        if (j < count && neuron < n) {
            v = in[(unsigned long long)neuron * stride + column];
        }
        tile[k][threadIdx.x] = v;
    }
    __syncthreads();
    const unsigned int neuron = blockIdx.y * XY_TILE + threadIdx.x;
    for (unsigned int k = threadIdx.y; k < XY_TILE; k += XY_TILE_ROWS) {
        const unsigned int out_row = blockIdx.x * XY_TILE + k;
        if (out_row < count && neuron < n) {
            out[(unsigned long long)out_row * n + neuron] = tile[threadIdx.x][k];
        }
    }
}

// Deletes dead columns: out[p][j] = in[p][columns[j]] for p < n, j < count; `out` has
// row stride `count`.
// Launch: grid (ceil(count / 256), min(n, 65535)), block 256, grid-stride over positions.
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
