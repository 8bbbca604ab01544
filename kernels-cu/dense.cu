// dense.cu: the epilogue of the dense (cuBLAS) chain, one launch after each layer's SGEMM.
// Z is rows x n floats, row-major (the GEMM's column-major n x rows); flags one byte a row.
// Launch shape: the kernel declarations of spdnn-dense (crates/dense/src/lib.rs).
#include "common.cuh"

#if SPDNN_KEEP(dense_bias_clip)
// z[r, c] = min(max(z[r, c] + b_c, 0), upper) over the rows x n block, with b_c = biases[c]
// when `biases` is set (a bias per output neuron) and `bias` otherwise. With b <= 0 this is
// the official rule (the bias only where Y·W is structurally nonzero). When `flags` is set
// (the last layer; zeroed before), flags[r] = 1 for every row with a nonzero result.
// The row and column of each element follow the grid stride without a division per element.
// Launch: grid min(ceil(rows·n / 256), 65535·16) (grid-stride), block 256, no shared memory.
extern "C" __global__ void dense_bias_clip(float* __restrict__ z, unsigned long long total, unsigned int n,
                                           float bias, const float* __restrict__ biases, float upper,
                                           unsigned char* __restrict__ flags) {
    const unsigned long long start = spdnn_global_thread_x();
    const unsigned long long stride = spdnn_grid_threads_x();
    unsigned long long row = start / n;
    unsigned int col = (unsigned int)(start % n);
    const unsigned long long row_step = stride / n;
    const unsigned int col_step = (unsigned int)(stride % n);
    for (unsigned long long i = start; i < total; i += stride) {
        const float b = biases != nullptr ? biases[col] : bias;
        const float v = spdnn_clamp_activation(__fadd_rn(z[i], b), upper);
        z[i] = v;
        if (flags != nullptr && v != 0.0f) {
            flags[row] = 1;
        }
        row += row_step;
        col += col_step;
        if (col >= n) {
            col -= n;
            row += 1;
        }
    }
}
#endif  // SPDNN_KEEP(dense_bias_clip)
