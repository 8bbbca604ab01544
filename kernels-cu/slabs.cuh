// slabs.cuh: the column-slab CSR weights shared by the BF and SNIG families.
//
// A layer W (n_in x n_out, row = input neuron; n_in == n_out in the challenge's networks)
// is cut into `num_slabs` = ceil(n_out / slab_width) slabs of `slab_width` output columns
// (the last may be narrower). Slab s is a CSR over the n_in input rows: its entries for
// input j are offsets[s*(n_in+1) + j] .. offsets[s*(n_in+1) + j + 1] (global positions in
// cols/vals), cols holds the column minus s*slab_width.
#ifndef SPDNN_SLABS_CUH
#define SPDNN_SLABS_CUH

#include "common.cuh"

// Adds y_j * W[j, slab] into the shared accumulator for every nonzero y_j = load(j) with
// first_input <= j < end_input: one thread per input, looping over its entries.
// Consecutive threads take consecutive inputs, so their loads of y coalesce and, in
// RadiX-Net layers (row j feeds columns j + 64t), their atomics fall in different banks;
// lanes over the entries of one input would all hit one bank. A thread loads the values of
// `in_flight` inputs before adding any, so their loads overlap instead of
// each waiting for the one before (a block's time is then less bound by load latency).
// Returns the weight words this thread read (offsets, columns and values), for the GLARE
// census.
template <typename Load>
__device__ __forceinline__ unsigned int spdnn_slab_scatter_with(float* acc, Load load,
                                                                const unsigned int* __restrict__ offsets,
                                                                const unsigned int* __restrict__ cols,
                                                                const float* __restrict__ vals,
                                                                unsigned int first_input, unsigned int end_input) {
    constexpr unsigned int in_flight = 4;
    unsigned int weight_reads = 0;
    for (unsigned int j0 = first_input + threadIdx.x; j0 < end_input; j0 += in_flight * blockDim.x) {
        // Input j0 + u * blockDim.x, where it is below end_input (the test cannot overflow).
        float y[in_flight];
#pragma unroll
        for (unsigned int u = 0; u < in_flight; ++u) {
            y[u] = u * blockDim.x < end_input - j0 ? load(j0 + u * blockDim.x) : 0.0f;
        }
#pragma unroll
        for (unsigned int u = 0; u < in_flight; ++u) {
            if (y[u] != 0.0f) {
                const unsigned int j = j0 + u * blockDim.x;
                const unsigned int begin = offsets[j];
                const unsigned int end = offsets[j + 1];
                weight_reads += 2u + 2u * (end - begin);
                for (unsigned int k = begin; k < end; ++k) {
                    atomicAdd(&acc[cols[k]], __fmul_rn(y[u], vals[k]));
                }
            }
        }
    }
    return weight_reads;
}

// spdnn_slab_scatter_with over y itself.
__device__ __forceinline__ void spdnn_slab_scatter(float* acc, const float* __restrict__ y,
                                                   const unsigned int* __restrict__ offsets,
                                                   const unsigned int* __restrict__ cols,
                                                   const float* __restrict__ vals, unsigned int first_input,
                                                   unsigned int end_input) {
    spdnn_slab_scatter_with(acc, [y](unsigned int j) { return y[j]; }, offsets, cols, vals, first_input, end_input);
}

// Writes min(max(acc + bias, 0), upper) for `width` columns; returns whether this thread
// wrote a nonzero.
__device__ __forceinline__ int spdnn_slab_activate(const float* acc, float* __restrict__ out, unsigned int width,
                                                   float bias, float upper) {
    int nonzero = 0;
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        const float v = spdnn_clamp_activation(__fadd_rn(acc[c], bias), upper);
        out[c] = v;
        nonzero |= v != 0.0f;
    }
    return nonzero;
}

// As spdnn_slab_activate with a bias per column: bias[c] (the slab's first column at c = 0).
__device__ __forceinline__ int spdnn_slab_activate_each(const float* acc, float* __restrict__ out,
                                                        unsigned int width, const float* __restrict__ bias,
                                                        float upper) {
    int nonzero = 0;
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        const float v = spdnn_clamp_activation(__fadd_rn(acc[c], bias[c]), upper);
        out[c] = v;
        nonzero |= v != 0.0f;
    }
    return nonzero;
}

__device__ __forceinline__ void spdnn_zero_shared(float* acc, unsigned int width) {
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        acc[c] = 0.0f;
    }
}

#endif  // SPDNN_SLABS_CUH
