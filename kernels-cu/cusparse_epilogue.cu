// cusparse_epilogue.cu: the activation applied after cuSPARSE's SpMM in the baseline.
#include "common.cuh"

// z[i] = min(max(z[i] + bias, 0), upper) over the whole rows x n block.
// With bias < 0 this equals the official rule (bias only on structural nonzeros).
// Launch: grid-stride, grid min(ceil(total / 256), 65535·4), block 256, no shared memory.
extern "C" __global__ void cusparse_bias_clip(float* __restrict__ z, unsigned long long total, float bias,
                                              float upper) {
    for (unsigned long long i = spdnn_global_thread_x(); i < total; i += spdnn_grid_threads_x()) {
        z[i] = spdnn_clamp_activation(__fadd_rn(z[i], bias), upper);
    }
}
