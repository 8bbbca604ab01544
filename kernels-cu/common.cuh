// common.cuh: small helpers shared by the spdnn kernel families.
//
// Kernel sources pull this in with `#include "common.cuh"`. At run time spdnn-cuda
// replaces the line with this file's text (once per program) before compiling, so no
// include path is needed; the include guard lets the same sources compile with a plain
// include path (`--include-path=kernels-cu`, `nvcc -I kernels-cu`).
//
// Everything here is plain IEEE fp32 arithmetic: the crate compiles without
// --use_fast_math, so results match a careful CPU reference within rounding.
#ifndef SPDNN_COMMON_CUH
#define SPDNN_COMMON_CUH

// Kernel selection. Every `extern "C" __global__` kernel of a source sits inside
// `#if SPDNN_KEEP(name)` ... `#endif`. Compiled with -DSPDNN_SELECT_KERNELS=1 and
// -DSPDNN_KEEP_<name>=1 for each kernel wanted, a program holds only those kernels and the
// device functions and templates they use (spdnn-cuda compiles a module per kernel this
// way, so a run compiles only what it launches). Without SPDNN_SELECT_KERNELS (nvcc, a
// plain include path) every kernel is kept. An SPDNN_KEEP_<name> left undefined is 0 in
// `#if`.
#ifdef SPDNN_SELECT_KERNELS
#define SPDNN_KEEP(name) SPDNN_KEEP_##name
#else
#define SPDNN_KEEP(name) 1
#endif

#define SPDNN_WARP_SIZE 32
#define SPDNN_FULL_MASK 0xffffffffu

// Ceiling division for non-negative integers.
__host__ __device__ __forceinline__ unsigned int spdnn_ceil_div(unsigned int a, unsigned int b) {
    return (a + b - 1u) / b;
}

// The challenge's activation: min(max(v, 0), upper).
__device__ __forceinline__ float spdnn_clamp_activation(float v, float upper) {
    return fminf(fmaxf(v, 0.0f), upper);
}

// Global thread index along x, as a 64-bit value so large grids never overflow.
__device__ __forceinline__ unsigned long long spdnn_global_thread_x() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// Total number of threads in the grid along x.
__device__ __forceinline__ unsigned long long spdnn_grid_threads_x() {
    return (unsigned long long)gridDim.x * blockDim.x;
}

// Stream compaction, one atomic per warp: every lane with `keep` appends `value` to
// out[0 .. *count) (order not kept). The whole warp must call it.
__device__ __forceinline__ void spdnn_warp_append(bool keep, unsigned int value, unsigned int* __restrict__ out,
                                                  unsigned int* __restrict__ count) {
    const unsigned int mask = __ballot_sync(SPDNN_FULL_MASK, keep);
    if (mask == 0) {
        return;
    }
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int leader = __ffs(mask) - 1;
    unsigned int base = 0;
    if (lane == leader) {
        base = atomicAdd(count, __popc(mask));
    }
    base = __shfl_sync(SPDNN_FULL_MASK, base, leader);
    if (keep) {
        out[base + __popc(mask & ((1u << lane) - 1u))] = value;
    }
}

#endif  // SPDNN_COMMON_CUH
