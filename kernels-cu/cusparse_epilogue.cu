// cusparse_epilogue.cu: the activation applied after cuSPARSE's SpMM in the baseline.
// Launch shape: the kernel declarations of spdnn-cusparse (crates/cusparse/src/lib.rs).
#include "common.cuh"

#if SPDNN_KEEP(cusparse_bias_clip)
// z[i] = min(max(z[i] + bias, 0), upper) over the whole rows x n block.
// With bias < 0 this equals the official rule (bias only on structural nonzeros).
// Launch: grid min(ceil(total / 256), 65535·16) (grid-stride), block 256, no shared memory.
extern "C" __global__ void cusparse_bias_clip(float* __restrict__ z, unsigned long long total, float bias,
                                              float upper) {
    for (unsigned long long i = spdnn_global_thread_x(); i < total; i += spdnn_grid_threads_x()) {
        z[i] = spdnn_clamp_activation(__fadd_rn(z[i], bias), upper);
    }
}
#endif  // SPDNN_KEEP(cusparse_bias_clip)

#if SPDNN_KEEP(cusparse_bias_clip_neurons)
// A bias per output neuron: z holds rows of n values, z[i] gets bias[i % n]. Equals the
// official rule for biases <= 0.
// Launch: grid min(ceil(total / 256), 65535·16) (grid-stride), block 256, no shared memory.
extern "C" __global__ void cusparse_bias_clip_neurons(float* __restrict__ z, unsigned long long total,
                                                      unsigned int n, const float* __restrict__ bias,
                                                      float upper) {
    for (unsigned long long i = spdnn_global_thread_x(); i < total; i += spdnn_grid_threads_x()) {
        z[i] = spdnn_clamp_activation(__fadd_rn(z[i], bias[i % n]), upper);
    }
}
#endif  // SPDNN_KEEP(cusparse_bias_clip_neurons)

#if SPDNN_KEEP(cusparse_bias_clip_structural)
// The official rule for biases of any sign: s = Y·pattern(W) with Y >= 0 is positive
// exactly where Z is structurally nonzero; elsewhere Z is 0 and stays 0 (no bias).
// Launch: grid min(ceil(total / 256), 65535·16) (grid-stride), block 256, no shared memory.
extern "C" __global__ void cusparse_bias_clip_structural(float* __restrict__ z, const float* __restrict__ s,
                                                         unsigned long long total, unsigned int n,
                                                         const float* __restrict__ bias, float upper) {
    for (unsigned long long i = spdnn_global_thread_x(); i < total; i += spdnn_grid_threads_x()) {
        z[i] = s[i] > 0.0f ? spdnn_clamp_activation(__fadd_rn(z[i], bias[i % n]), upper) : 0.0f;
    }
}
#endif  // SPDNN_KEEP(cusparse_bias_clip_structural)
