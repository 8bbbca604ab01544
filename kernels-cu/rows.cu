// rows.cu: dense row-major activation utilities shared by the kernel families.
// Y is `rows x n` floats, row-major; flags are one byte per row.
// Launch shapes: the kernel declarations of spdnn_cuda::rows (crates/cuda/src/rows.rs).
#include "common.cuh"

#if SPDNN_KEEP(spdnn_scatter_rows)
// Scatters sparse rows (CSR: row_offsets[rows + 1], cols, vals) into a zeroed dense Y.
// Launch: grid min(rows, 65535·16) (blocks stride over rows), block 128, no shared memory.
extern "C" __global__ void spdnn_scatter_rows(const unsigned int* __restrict__ row_offsets,
                                              const unsigned int* __restrict__ cols,
                                              const float* __restrict__ vals, unsigned int rows,
                                              unsigned int n, float* __restrict__ y) {
    for (unsigned int row = blockIdx.x; row < rows; row += gridDim.x) {
        float* out = y + (unsigned long long)row * n;
        for (unsigned int k = row_offsets[row] + threadIdx.x; k < row_offsets[row + 1]; k += blockDim.x) {
            out[cols[k]] = vals[k];
        }
    }
}
#endif  // SPDNN_KEEP(spdnn_scatter_rows)

#if SPDNN_KEEP(spdnn_row_nonzero_flags)
// flags[row] = 1 when row `row` of Y has a nonzero entry, else 0.
// Launch: grid min(rows, 65535·16) (blocks stride over rows), block 256, no shared memory.
extern "C" __global__ void spdnn_row_nonzero_flags(const float* __restrict__ y, unsigned int rows,
                                                   unsigned int n, unsigned char* __restrict__ flags) {
    for (unsigned int row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* in = y + (unsigned long long)row * n;
        int any = 0;
        for (unsigned int c = threadIdx.x; c < n; c += blockDim.x) {
            any |= in[c] != 0.0f;
        }
        any = __syncthreads_or(any);
        if (threadIdx.x == 0) {
            flags[row] = any ? 1 : 0;
        }
    }
}
#endif  // SPDNN_KEEP(spdnn_row_nonzero_flags)

#if SPDNN_KEEP(spdnn_mark_rows)
// flags[row_list[i]] = 1 for i < *count (flags zeroed beforehand).
// Launch: grid ceil(capacity / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void spdnn_mark_rows(const unsigned int* __restrict__ row_list,
                                           const unsigned int* __restrict__ count,
                                           unsigned char* __restrict__ flags) {
    unsigned long long i = spdnn_global_thread_x();
    if (i < *count) {
        flags[row_list[i]] = 1;
    }
}
#endif  // SPDNN_KEEP(spdnn_mark_rows)

#if SPDNN_KEEP(spdnn_all_rows)
// row_list[i] = i for i < rows; *count = rows. The list of every row, as a start.
// Launch: grid ceil(rows / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void spdnn_all_rows(unsigned int* __restrict__ row_list, unsigned int* __restrict__ count,
                                          unsigned int rows) {
    unsigned long long i = spdnn_global_thread_x();
    if (i < rows) {
        row_list[i] = (unsigned int)i;
    }
    if (i == 0) {
        *count = rows;
    }
}
#endif  // SPDNN_KEEP(spdnn_all_rows)

#if SPDNN_KEEP(spdnn_compact_flagged_rows)
// Lists the rows of active_rows[0 .. *active_count) whose row_flags[row] is set:
// next_rows gets them (order not kept), *next_count (zeroed before) counts them.
// One atomic per warp (ballot + popc).
// Launch: grid ceil(capacity / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void spdnn_compact_flagged_rows(const unsigned int* __restrict__ active_rows,
                                                      const unsigned int* __restrict__ active_count,
                                                      const unsigned char* __restrict__ row_flags,
                                                      unsigned int* __restrict__ next_rows,
                                                      unsigned int* __restrict__ next_count) {
    const unsigned long long i = spdnn_global_thread_x();
    const bool keep = i < *active_count && row_flags[active_rows[i]] != 0;
    spdnn_warp_append(keep, keep ? active_rows[i] : 0u, next_rows, next_count);
}
#endif  // SPDNN_KEEP(spdnn_compact_flagged_rows)
