// bf.cu: BF-2019 (Bisson & Fatica), CSR weights in column slabs, dense row-major Y,
// work only on the list of non-empty rows.
#include "common.cuh"
#include "slabs.cuh"

// One layer for the rows in active_rows[0 .. *active_count): for each slab, zero a
// shared accumulator, add y_j * W[j, slab] over the nonzero y_j (shared atomics), add
// the bias, clip and write. row_alive[position] says whether the row is still non-empty.
// Launch: grid (capacity rows; blocks past *active_count exit), block 256, shared slab_width floats.
extern "C" __global__ void bf_layer(const float* __restrict__ y_in, float* __restrict__ y_out,
                                    const unsigned int* __restrict__ active_rows,
                                    const unsigned int* __restrict__ active_count,
                                    unsigned char* __restrict__ row_alive,
                                    const unsigned int* __restrict__ slab_offsets,
                                    const unsigned int* __restrict__ slab_cols, const float* __restrict__ vals,
                                    unsigned int n, unsigned int slab_width, unsigned int num_slabs, float bias,
                                    float upper) {
    extern __shared__ float acc[];
    const unsigned int position = blockIdx.x;
    if (position >= *active_count) {
        return;
    }
    const unsigned int row = active_rows[position];
    const float* y = y_in + (unsigned long long)row * n;
    float* out = y_out + (unsigned long long)row * n;
    int alive = 0;
    for (unsigned int slab = 0; slab < num_slabs; ++slab) {
        const unsigned int first_col = slab * slab_width;
        const unsigned int width = min(slab_width, n - first_col);
        spdnn_zero_shared(acc, width);
        __syncthreads();
        spdnn_slab_scatter(acc, y, slab_offsets + (unsigned long long)slab * (n + 1), slab_cols, vals, 0, n);
        __syncthreads();
        alive |= spdnn_slab_activate(acc, out + first_col, width, bias, upper);
        __syncthreads();
    }
    alive = __syncthreads_or(alive);
    if (threadIdx.x == 0) {
        row_alive[position] = alive ? 1 : 0;
    }
}

// Lists the rows that stayed non-empty: next_rows gets active_rows[i] for every
// i < *active_count with row_alive[i] (order not kept); *next_count (zeroed before) counts them.
// One atomic per warp (ballot + popc).
// Launch: grid ceil(capacity / 256), block 256, no shared memory.
extern "C" __global__ void bf_compact_rows(const unsigned int* __restrict__ active_rows,
                                           const unsigned int* __restrict__ active_count,
                                           const unsigned char* __restrict__ row_alive,
                                           unsigned int* __restrict__ next_rows,
                                           unsigned int* __restrict__ next_count) {
    const unsigned long long i = spdnn_global_thread_x();
    const bool keep = i < *active_count && row_alive[i] != 0;
    spdnn_warp_append(keep, keep ? active_rows[i] : 0u, next_rows, next_count);
}
