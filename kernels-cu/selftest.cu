// selftest.cu: a tiny kernel family used only by spdnn-cuda's own GPU tests.
// It checks the whole path: common.cuh inclusion, NVRTC, module load, launch.
// Launch shapes: spdnn_cuda::SELFTEST_AXPY and SELFTEST_ACTIVATION (crates/cuda/src/source.rs).
#include "common.cuh"

#if SPDNN_KEEP(spdnn_selftest_axpy)
// y[i] = a * x[i] + y[i] for i < n (grid-stride loop). Multiply and add are
// rounded separately (__fmul_rn/__fadd_rn) so the result equals the CPU's a*x+y.
// Launch: any grid (grid-stride over i), block 256, no shared memory.
extern "C" __global__ void spdnn_selftest_axpy(float* y, const float* x, float a, unsigned int n) {
    for (unsigned long long i = spdnn_global_thread_x(); i < n; i += spdnn_grid_threads_x()) {
        y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
    }
}
#endif  // SPDNN_KEEP(spdnn_selftest_axpy)

#if SPDNN_KEEP(spdnn_selftest_activation)
// out[i] = min(max(in[i] + bias, 0), upper): exercises the shared activation helper.
// Launch: any grid (grid-stride over i), block 1024, no shared memory.
extern "C" __global__ void spdnn_selftest_activation(float* out, const float* in, float bias, float upper,
                                                     unsigned int n) {
    for (unsigned long long i = spdnn_global_thread_x(); i < n; i += spdnn_grid_threads_x()) {
        out[i] = spdnn_clamp_activation(__fadd_rn(in[i], bias), upper);
    }
}
#endif  // SPDNN_KEEP(spdnn_selftest_activation)
