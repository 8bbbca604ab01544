// common.cuh: small helpers shared by the spdnn kernel families.
//
// Kernel sources pull this in with `#include "common.cuh"`. NVRTC never sees the
// #include: spdnn-cuda replaces the line with this file's text (once per program,
// like `#pragma once`) before compiling, so no include path is needed.
//
// Everything here is plain IEEE fp32 arithmetic: the crate compiles without
// --use_fast_math, so results match a careful CPU reference within rounding.

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
