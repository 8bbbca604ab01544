// snig.cu: SNIG-2020, output sections with per-(row, section) nonzero flags.
#include "common.cuh"
#include "slabs.cuh"

// One (row, output section) per block. Input sections whose flag is clear are skipped;
// a row with no nonzero input section only clears its output section, and only when
// that section was nonzero before (incremental resetting: the buffer still holds the
// row's values of two layers ago). Sections are the weight slabs.
// Launch: grid (rows, num_slabs), block 256, shared slab_width floats.
extern "C" __global__ void snig_layer(const float* __restrict__ y_in, float* __restrict__ y_out,
                                      const unsigned char* __restrict__ in_flags,
                                      unsigned char* __restrict__ out_flags,
                                      const unsigned int* __restrict__ slab_offsets,
                                      const unsigned int* __restrict__ slab_cols, const float* __restrict__ vals,
                                      unsigned int n, unsigned int slab_width, unsigned int num_slabs, float bias,
                                      float upper) {
    extern __shared__ float acc[];
    const unsigned int row = blockIdx.x;
    const unsigned int section = blockIdx.y;
    const unsigned char* row_flags = in_flags + (unsigned long long)row * num_slabs;
    int any_input = 0;
    for (unsigned int s = 0; s < num_slabs; ++s) {
        any_input |= row_flags[s];
    }
    const unsigned int first_col = section * slab_width;
    const unsigned int width = min(slab_width, n - first_col);
    unsigned char* flag_out = out_flags + (unsigned long long)row * num_slabs + section;
    float* out = y_out + (unsigned long long)row * n + first_col;
    if (!any_input) {
        const bool was_nonzero = *flag_out != 0;
        if (was_nonzero) {
            for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
                out[c] = 0.0f;
            }
        }
        __syncthreads();
        if (threadIdx.x == 0 && was_nonzero) {
            *flag_out = 0;
        }
        return;
    }
    spdnn_zero_shared(acc, width);
    __syncthreads();
    const float* y = y_in + (unsigned long long)row * n;
    const unsigned int* offsets = slab_offsets + (unsigned long long)section * (n + 1);
    for (unsigned int s = 0; s < num_slabs; ++s) {
        if (row_flags[s]) {
            const unsigned int first_input = s * slab_width;
            spdnn_slab_scatter(acc, y, offsets, slab_cols, vals, first_input, min(first_input + slab_width, n));
        }
    }
    __syncthreads();
    int nonzero = spdnn_slab_activate(acc, out, width, bias, upper);
    nonzero = __syncthreads_or(nonzero);
    if (threadIdx.x == 0) {
        *flag_out = nonzero ? 1 : 0;
    }
}

// flags[row * num_slabs + s] = whether section s of row `row` of Y has a nonzero.
// Launch: grid (rows, num_slabs), block 256, no shared memory.
extern "C" __global__ void snig_section_flags(const float* __restrict__ y, unsigned char* __restrict__ flags,
                                              unsigned int n, unsigned int slab_width, unsigned int num_slabs) {
    const unsigned int row = blockIdx.x;
    const unsigned int first_col = blockIdx.y * slab_width;
    const unsigned int width = min(slab_width, n - first_col);
    const float* in = y + (unsigned long long)row * n + first_col;
    int any = 0;
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        any |= in[c] != 0.0f;
    }
    any = __syncthreads_or(any);
    if (threadIdx.x == 0) {
        flags[(unsigned long long)row * num_slabs + blockIdx.y] = any ? 1 : 0;
    }
}

// row_flags[row] = whether any section flag of the row is set (the categories).
// Launch: grid ceil(rows / 256), block 256, no shared memory.
extern "C" __global__ void snig_row_categories(const unsigned char* __restrict__ flags, unsigned int rows,
                                               unsigned int num_slabs, unsigned char* __restrict__ row_flags) {
    const unsigned long long row = spdnn_global_thread_x();
    if (row < rows) {
        unsigned char any = 0;
        for (unsigned int s = 0; s < num_slabs; ++s) {
            any |= flags[row * num_slabs + s];
        }
        row_flags[row] = any ? 1 : 0;
    }
}
