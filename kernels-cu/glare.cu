// glare.cu: GLARE kernels shared by every family whose activations are row-major
// (BF, SNICIT); the per-family GLARE variants include glare.cuh instead.
// Launch shape: the kernel declaration of spdnn-glare (crates/glare/src/recorder.rs).
#include "common.cuh"

#if SPDNN_KEEP(glare_fill_listed_rows)
// Writes the bound into every flagged unit of the listed rows of a row-major rows x n
// block (flags rows x row_units, units of 2^shift neurons), so the activations can be read
// back without the recorder.
// Launch: grid (list capacity; blocks past *count exit), block 256, no shared memory.
extern "C" __global__ void glare_fill_listed_rows(float* __restrict__ y, const unsigned int* __restrict__ rows,
                                                  const unsigned int* __restrict__ count,
                                                  const unsigned char* __restrict__ flags, unsigned int n,
                                                  unsigned int shift, unsigned int row_units, float upper) {
    if (blockIdx.x >= *count) {
        return;
    }
    const unsigned long long row = rows[blockIdx.x];
    for (unsigned int c = threadIdx.x; c < n; c += blockDim.x) {
        if (flags[row * row_units + (c >> shift)]) {
            y[row * n + c] = upper;
        }
    }
}
#endif  // SPDNN_KEEP(glare_fill_listed_rows)
