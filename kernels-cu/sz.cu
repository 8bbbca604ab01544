// sz.cu: S&Z-2022 (dense 16 x 16 blocks on the tensor cores with exact bf16 splits, a CSR
// rest on the CUDA cores) and T4's tensor-core / CUDA-core split of one layer kernel.
//
// Activations are neuron-major: position p of live row r is y[p * ld + r]; `*count` rows
// are live, rows past them are never stored. One layer kernel works on items (a tile of BM
// rows x a group of `group` output tiles of 16 positions): its WT tensor-core warps take
// the group's first `tc_tiles` tiles, its WC CUDA-core warps the others. A tensor-core
// warp computes 16 rows x 16 outputs with mma.m16n8k16 .bf16 (sm_80 and later; the host
// refuses older GPUs, and there the MMA traps): the activations, scaled by 2^s, split into
// three bf16 terms b1 = bf16(x), b2 = bf16(x - b1), b3 = bf16(x - b1 - b2), each rounded
// toward zero (the upper 16 bits of the fp32 pattern), whose sum is x exactly; the weights'
// bf16 terms (1 to 3, SzLayerArgs::weight_terms) come from Rust in the PTX register
// layout; every product of terms is exact, each MMA sums 16 of them into a zero fragment
// that is added to fp32 accumulators (sz_mma_sum), one per activation term, the three added
// at the end. A CUDA-core thread computes one row x 8
// outputs from the blocks' fp32 weights in fp64, rounded to fp32 once. Both then add the
// tile's CSR rest in fp32, the bias and the clip. The sz_layer_neurons_* instances take a bias
// per output position (trained networks, biases <= 0: clip(Z + b) is the structural rule only
// then), `biases[pos]` in the layer's output order, where the others add the one `bias` (they
// pass a literal null that the compiler folds away: those kernels are unchanged). Layouts: crates/sz/src/format.rs; the
// split: crates/sz/src/half.rs; the error analysis: docs/sz.md.
#include "common.cuh"

#ifndef SZ_TILE
#error "SZ_TILE must come from Rust (-D)"
#endif
#ifndef SZ_CHUNK
#error "SZ_CHUNK must come from Rust (-D)"
#endif
#ifndef SZ_NO_ROW
#error "SZ_NO_ROW must come from Rust (-D)"
#endif

static_assert(SZ_TILE == 16 && SZ_CHUNK == 16, "an mma.m16n8k16 covers 16 outputs x 16 inputs");

// x0 * s and x1 * s split into three bf16 terms each (crates/sz/src/half.rs: split), term i
// of both packed in t[i] (x0 in the low half): b1 is the upper 16 bits of x's pattern
// (bf16(x) toward zero), r1 = x - b1 and r2 = r1 - b2 are exact in fp32 (no -ftz: the
// compile options never flush subnormals).
__device__ __forceinline__ void sz_split2(float x0, float x1, float s, unsigned int (&t)[3]) {
    float r0 = x0 * s, r1 = x1 * s;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const unsigned int u0 = __float_as_uint(r0) & 0xffff0000u, u1 = __float_as_uint(r1) & 0xffff0000u;
        t[i] = (u0 >> 16) | u1;
        r0 -= __uint_as_float(u0);
        r1 -= __uint_as_float(u1);
    }
}

// d += A * B for a 16 x 16 bf16 A (rows x inputs, registers a) and a 16 x 8 bf16 B
// (inputs x outputs, registers b0, b1), fp32 accumulators d. bf16 MMA needs sm_80; the
// host (device.rs) refuses older GPUs, so the trap only keeps sm_75 builds compiling.
__device__ __forceinline__ void sz_mma(float (&d)[4], const unsigned int (&a)[4], unsigned int b0,
                                       unsigned int b1) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)d;
    (void)a;
    (void)b0;
    (void)b1;
    __trap();
#endif
}

// d += A * B, the MMA summing into a zero fragment and d added on the CUDA cores (round to
// nearest). The tensor cores' fp32 accumulation is not IEEE: an MMA truncates its sum to
// the largest addend's precision, the accumulator included. Fed back into one accumulator,
// that loss repeats every MMA and does not average out; where products cancel (trained
// weights of both signs, weights of several bf16 terms) it grew to 6e-4 of an output on an
// H200 (docs/sz.md, "Error analysis"). Here each MMA truncates only its own 16 products.
__device__ __forceinline__ void sz_mma_sum(float (&d)[4], const unsigned int (&a)[4], unsigned int b0,
                                           unsigned int b1) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    sz_mma(part, a, b0, b1);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        d[i] += part[i];
    }
}

// One layer's arrays and scalars (crates/sz/src/format.rs, device.rs).
struct SzLayerArgs {
    const float* __restrict__ y_in;           // N_{l-1} positions x ld
    float* __restrict__ y_out;                // N_l positions x ld
    unsigned long long ld;                    // row stride of a position
    unsigned int rows;                        // live rows
    unsigned char* __restrict__ alive;        // per row: set to 1 when an output is nonzero (may be null)
    unsigned int n_out;                       // N_l
    const unsigned int* __restrict__ tile_blocks;  // tiles + 1
    const unsigned int* __restrict__ block_chunk;  // per block, its input chunk
    const unsigned int* __restrict__ fuse;         // per input slot, its position in y_in
    const uint2* __restrict__ frags;               // per (block, half, weight term, lane): B fragments
    unsigned int weight_terms;                     // bf16 terms of the weights, 1 to 3
    const float* __restrict__ block_f32;           // per block, 16 x 16 fp32 [output][input]
    const unsigned int* __restrict__ rest_offsets; // per output position
    const unsigned int* __restrict__ rest_inputs;
    const float* __restrict__ rest_values;
    float x_scale;    // 2^s: activations to at most 2^15
    float inv_scale;  // 2^-(s + t): tensor-core sums back to the activations' scale
    float bias;       // every output's, unless `biases`
    float upper;
    const float* __restrict__ biases;  // per output position (N_l values), or null: `bias` for all
};

// Output position pos's bias: biases[pos] with per-neuron biases, else the one bias (the
// one-bias instances pass a literal null: this folds to a.bias).
__device__ __forceinline__ float sz_bias(const SzLayerArgs& a, unsigned int pos) {
    return a.biases != nullptr ? a.biases[pos] : a.bias;
}

// Stores min(max(z + b, 0), upper) at (pos, row) of a live row, flagging nonzeros.
__device__ __forceinline__ void sz_store(const SzLayerArgs& a, unsigned int pos, unsigned int row, float z,
                                         float b) {
    const float y = spdnn_clamp_activation(z + b, a.upper);
    if (row < a.rows) {
        a.y_out[(unsigned long long)pos * a.ld + row] = y;
        if (a.alive != nullptr && y != 0.0f) {
            a.alive[row] = 1;
        }
    }
}

// Adds output position pos's rest to rows ra and rb, then stores both.
__device__ __forceinline__ void sz_finish2(const SzLayerArgs& a, unsigned int pos, unsigned int ra, float za,
                                           unsigned int rb, float zb) {
    if (pos >= a.n_out) {
        return;
    }
    const unsigned int end = a.rest_offsets[pos + 1];
    for (unsigned int e = a.rest_offsets[pos]; e < end; ++e) {
        const float w = a.rest_values[e];
        const float* x = a.y_in + (unsigned long long)a.rest_inputs[e] * a.ld;
        za = fmaf(x[ra], w, za);
        zb = fmaf(x[rb], w, zb);
    }
    const float b = sz_bias(a, pos);
    sz_store(a, pos, ra, za, b);
    sz_store(a, pos, rb, zb, b);
}

// The same for one row.
__device__ __forceinline__ void sz_finish1(const SzLayerArgs& a, unsigned int pos, unsigned int row, float z) {
    if (pos >= a.n_out) {
        return;
    }
    const unsigned int end = a.rest_offsets[pos + 1];
    for (unsigned int e = a.rest_offsets[pos]; e < end; ++e) {
        z = fmaf(a.y_in[(unsigned long long)a.rest_inputs[e] * a.ld + row], a.rest_values[e], z);
    }
    sz_store(a, pos, row, z, sz_bias(a, pos));
}

// Tensor-core warp: rows r0..r0+16 x tile t. Lane (g = lane / 4, q = lane % 4) holds the A
// registers {x[g][2q], x[g][2q+1]}, {x[g+8][2q], x[g+8][2q+1]}, {x[g][2q+8], x[g][2q+9]},
// {x[g+8][2q+8], x[g+8][2q+9]} (row, input of the block) of each bf16 term, and
// accumulators d1[h][i], d2[h][i], d3[h][i] of row g + 8 (i / 2), output 8h + 2q + (i % 2)
// of the tile (PTX ISA, mma.m16n8k16 fragments; .bf16 has the layout of .f16).
__device__ __forceinline__ void sz_tc_tile(const SzLayerArgs& a, unsigned int t, unsigned int r0,
                                           unsigned int lane) {
    const unsigned int g = lane >> 2, q = lane & 3u;
    // One accumulator set per activation term (d1, d2, d3; [half][register]): the products
    // of one term have like magnitudes, so their fp32 sums are nearly always exact; the
    // three are added at the end, the smallest first (docs/sz.md, "Error analysis").
    float d1[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    float d2[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    float d3[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    const float* base = a.y_in + r0 + g;
    const unsigned int end = a.tile_blocks[t + 1];
#pragma unroll 2
    for (unsigned int b = a.tile_blocks[t]; b < end; ++b) {
        const unsigned int* f = a.fuse + (unsigned long long)a.block_chunk[b] * SZ_CHUNK;
        const unsigned long long i0 = f[2 * q] * a.ld, i1 = f[2 * q + 1] * a.ld;
        const unsigned long long i8 = f[2 * q + 8] * a.ld, i9 = f[2 * q + 9] * a.ld;
        unsigned int t0[3], t1[3], t2[3], t3[3];
        sz_split2(base[i0], base[i1], a.x_scale, t0);
        sz_split2(base[i0 + 8], base[i1 + 8], a.x_scale, t1);
        sz_split2(base[i8], base[i9], a.x_scale, t2);
        sz_split2(base[i8 + 8], base[i9 + 8], a.x_scale, t3);
        // A lower term that is zero in the whole warp adds only zeros: skipped (one vote).
        const bool need2 = __any_sync(SPDNN_FULL_MASK, (t0[1] | t1[1] | t2[1] | t3[1]) != 0u);
        const bool need3 = __any_sync(SPDNN_FULL_MASK, (t0[2] | t1[2] | t2[2] | t3[2]) != 0u);
        const unsigned int x1[4] = {t0[0], t1[0], t2[0], t3[0]};
        const unsigned int x2[4] = {t0[1], t1[1], t2[1], t3[1]};
        const unsigned int x3[4] = {t0[2], t1[2], t2[2], t3[2]};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint2* w = a.frags + ((2ull * b + h) * a.weight_terms) * 32 + lane;
            for (unsigned int j = 0; j < a.weight_terms; ++j) {
                const uint2 wj = w[32 * j];
                sz_mma_sum(d1[h], x1, wj.x, wj.y);
                if (need2) {
                    sz_mma_sum(d2[h], x2, wj.x, wj.y);
                }
                if (need3) {
                    sz_mma_sum(d3[h], x3, wj.x, wj.y);
                }
            }
        }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const unsigned int pos = t * SZ_TILE + 8 * h + 2 * q + j;
            const float za = (d3[h][j] + d2[h][j]) + d1[h][j];
            const float zb = (d3[h][2 + j] + d2[h][2 + j]) + d1[h][2 + j];
            sz_finish2(a, pos, r0 + g, za * a.inv_scale, r0 + g + 8, zb * a.inv_scale);
        }
    }
}

// CUDA-core thread: one row x outputs 8h..8h+8 of tile t from the blocks' fp32 weights,
// accumulated in fp64 (each fp32 product is exact there) and rounded to fp32 once: the
// same value as the tensor cores' exact per-term sums nearly always, so that a row whose
// tiles are shared between the two kinds of warp (T4) sees one rounding, not two.
__device__ __forceinline__ void sz_cc_half(const SzLayerArgs& a, unsigned int t, unsigned int h, unsigned int row) {
    double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const unsigned int end = a.tile_blocks[t + 1];
    for (unsigned int b = a.tile_blocks[t]; b < end; ++b) {
        const unsigned int* f = a.fuse + (unsigned long long)a.block_chunk[b] * SZ_CHUNK;
        const float* w = a.block_f32 + (unsigned long long)b * (SZ_TILE * SZ_CHUNK) + 8 * h * SZ_CHUNK;
#pragma unroll 4
        for (int k = 0; k < SZ_CHUNK; ++k) {
            const double x = (double)a.y_in[(unsigned long long)f[k] * a.ld + row];
#pragma unroll
            for (int n = 0; n < 8; ++n) {
                acc[n] = fma(x, (double)w[n * SZ_CHUNK + k], acc[n]);
            }
        }
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) {
        sz_finish1(a, t * SZ_TILE + 8 * h + n, row, (float)acc[n]);
    }
}

// The layer over every item: grid-stride, items = ceil(rows / BM) x ceil(tiles / group),
// consecutive items on the same rows (their activations stay in L2).
template <int BM, int WT, int WC>
__device__ __forceinline__ void sz_layer(SzLayerArgs a, const unsigned int* __restrict__ count, unsigned int tiles,
                                         unsigned int group, unsigned int tc_tiles) {
    static_assert(BM % 32 == 0, "a CUDA-core warp covers 32 consecutive rows of one unit");
    constexpr unsigned int MSUB = BM / 16;
    const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    a.rows = *count;
    const unsigned int row_tiles = (a.rows + BM - 1) / BM;
    const unsigned int groups = (tiles + group - 1) / group;
    const unsigned long long items = (unsigned long long)row_tiles * groups;
    for (unsigned long long item = blockIdx.x; item < items; item += gridDim.x) {
        const unsigned int row0 = (unsigned int)(item / groups) * BM;
        const unsigned int first = (unsigned int)(item % groups) * group;
        const unsigned int in_group = min(group, tiles - first);
        const unsigned int n_tc = min(tc_tiles, in_group);
        if (warp < WT) {
            for (unsigned int pair = warp; pair < MSUB * n_tc; pair += WT) {
                const unsigned int r0 = row0 + (pair % MSUB) * 16;
                if (r0 < a.rows) {
                    sz_tc_tile(a, first + pair / MSUB, r0, lane);
                }
            }
        } else if (WC > 0) {
            const unsigned int c = threadIdx.x - 32 * WT;
            const unsigned int units = 2 * (in_group - n_tc);
            for (unsigned int p = c; p < BM * units; p += 32 * WC) {
                const unsigned int row = row0 + p % BM;
                if (row < a.rows) {
                    const unsigned int u = p / BM;
                    sz_cc_half(a, first + n_tc + u / 2, u % 2, row);
                }
            }
        }
    }
}

#define SZ_LAYER_PARAMS                                                                                        \
    const float *__restrict__ y_in, float *__restrict__ y_out, unsigned long long ld,                          \
        const unsigned int *__restrict__ count, unsigned char *__restrict__ alive, unsigned int n_out,         \
        unsigned int tiles, unsigned int group, unsigned int tc_tiles,                                         \
        const unsigned int *__restrict__ tile_blocks, const unsigned int *__restrict__ block_chunk,            \
        const unsigned int *__restrict__ fuse, const uint2 *__restrict__ frags, unsigned int weight_terms,     \
        const float *__restrict__ block_f32,                                                                   \
        const unsigned int *__restrict__ rest_offsets, const unsigned int *__restrict__ rest_inputs,           \
        const float *__restrict__ rest_values, float x_scale, float inv_scale, float bias, float upper

// The layer's arguments with `biases` (a literal null in the one-bias instances).
#define SZ_LAYER_ARGS_WITH(biases)                                                                             \
    SzLayerArgs{y_in,         y_out,       ld,        0u,        alive,       n_out,       tile_blocks,         \
                block_chunk,  fuse,        frags,     weight_terms, block_f32, rest_offsets,                    \
                rest_inputs,  rest_values, x_scale,   inv_scale, bias,        upper,       biases},             \
        count, tiles, group, tc_tiles
#define SZ_LAYER_ARGS SZ_LAYER_ARGS_WITH(nullptr)
// The _neurons instances: one more parameter, the layer's biases in its output order.
#define SZ_LAYER_NEURONS_PARAMS SZ_LAYER_PARAMS, const float *__restrict__ biases
#define SZ_LAYER_NEURONS_ARGS SZ_LAYER_ARGS_WITH(biases)

#if SPDNN_KEEP(sz_layer_r32_t2_c0)
// The layer kernels, one per (rows per item, tensor-core warps, CUDA-core warps): the
// plain S&Z kernels have no CUDA-core warps; T4's have four.
// Launch: grid min(items, resident blocks), block 64, no shared memory.
extern "C" __global__ void __launch_bounds__(64) sz_layer_r32_t2_c0(SZ_LAYER_PARAMS) {
    sz_layer<32, 2, 0>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r32_t2_c0)

#if SPDNN_KEEP(sz_layer_r64_t4_c0)
// Launch: grid min(items, resident blocks), block 128, no shared memory.
extern "C" __global__ void __launch_bounds__(128) sz_layer_r64_t4_c0(SZ_LAYER_PARAMS) {
    sz_layer<64, 4, 0>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r64_t4_c0)

#if SPDNN_KEEP(sz_layer_r128_t4_c0)
// Launch: grid min(items, resident blocks), block 128, no shared memory.
extern "C" __global__ void __launch_bounds__(128) sz_layer_r128_t4_c0(SZ_LAYER_PARAMS) {
    sz_layer<128, 4, 0>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r128_t4_c0)

#if SPDNN_KEEP(sz_layer_r32_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_r32_t2_c4(SZ_LAYER_PARAMS) {
    sz_layer<32, 2, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r32_t2_c4)

#if SPDNN_KEEP(sz_layer_r32_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_r32_t4_c4(SZ_LAYER_PARAMS) {
    sz_layer<32, 4, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r32_t4_c4)

#if SPDNN_KEEP(sz_layer_r64_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_r64_t2_c4(SZ_LAYER_PARAMS) {
    sz_layer<64, 2, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r64_t2_c4)

#if SPDNN_KEEP(sz_layer_r64_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_r64_t4_c4(SZ_LAYER_PARAMS) {
    sz_layer<64, 4, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r64_t4_c4)

#if SPDNN_KEEP(sz_layer_r128_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_r128_t2_c4(SZ_LAYER_PARAMS) {
    sz_layer<128, 2, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r128_t2_c4)

#if SPDNN_KEEP(sz_layer_r128_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_r128_t4_c4(SZ_LAYER_PARAMS) {
    sz_layer<128, 4, 4>(SZ_LAYER_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_r128_t4_c4)

#if SPDNN_KEEP(sz_layer_neurons_r32_t2_c0)
// The same nine shapes with a bias per output position (`biases`: N_l values in the layer's
// output order; `bias` unused): trained networks, biases <= 0.
// Launch: grid min(items, resident blocks), block 64, no shared memory.
extern "C" __global__ void __launch_bounds__(64) sz_layer_neurons_r32_t2_c0(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<32, 2, 0>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r32_t2_c0)

#if SPDNN_KEEP(sz_layer_neurons_r64_t4_c0)
// Launch: grid min(items, resident blocks), block 128, no shared memory.
extern "C" __global__ void __launch_bounds__(128) sz_layer_neurons_r64_t4_c0(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<64, 4, 0>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r64_t4_c0)

#if SPDNN_KEEP(sz_layer_neurons_r128_t4_c0)
// Launch: grid min(items, resident blocks), block 128, no shared memory.
extern "C" __global__ void __launch_bounds__(128) sz_layer_neurons_r128_t4_c0(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<128, 4, 0>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r128_t4_c0)

#if SPDNN_KEEP(sz_layer_neurons_r32_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_neurons_r32_t2_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<32, 2, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r32_t2_c4)

#if SPDNN_KEEP(sz_layer_neurons_r32_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_neurons_r32_t4_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<32, 4, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r32_t4_c4)

#if SPDNN_KEEP(sz_layer_neurons_r64_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_neurons_r64_t2_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<64, 2, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r64_t2_c4)

#if SPDNN_KEEP(sz_layer_neurons_r64_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_neurons_r64_t4_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<64, 4, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r64_t4_c4)

#if SPDNN_KEEP(sz_layer_neurons_r128_t2_c4)
// Launch: grid min(items, resident blocks), block 192, no shared memory.
extern "C" __global__ void __launch_bounds__(192) sz_layer_neurons_r128_t2_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<128, 2, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r128_t2_c4)

#if SPDNN_KEEP(sz_layer_neurons_r128_t4_c4)
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void __launch_bounds__(256) sz_layer_neurons_r128_t4_c4(SZ_LAYER_NEURONS_PARAMS) {
    sz_layer<128, 4, 4>(SZ_LAYER_NEURONS_ARGS);
}
#endif  // SPDNN_KEEP(sz_layer_neurons_r128_t4_c4)

#if SPDNN_KEEP(sz_scatter_input)
// Writes sparse input rows (CSR) into the zeroed neuron-major y: y[col * ld + row] = value.
// Launch: grid min(rows, 65535·16) (blocks stride over rows), block 128, no shared memory.
extern "C" __global__ void sz_scatter_input(const unsigned int* __restrict__ row_offsets,
                                            const unsigned int* __restrict__ cols, const float* __restrict__ vals,
                                            unsigned int rows, unsigned long long ld, float* __restrict__ y) {
    for (unsigned int row = blockIdx.x; row < rows; row += gridDim.x) {
        for (unsigned int k = row_offsets[row] + threadIdx.x; k < row_offsets[row + 1]; k += blockDim.x) {
            y[(unsigned long long)cols[k] * ld + row] = vals[k];
        }
    }
}
#endif  // SPDNN_KEEP(sz_scatter_input)

#if SPDNN_KEEP(sz_compact_rows)
// The live rows p < *count with alive[p] set move to new places: map[p] is the new place
// (SZ_NO_ROW for a dropped row), ids_out[map[p]] = ids_in[p], *count_out (zeroed before)
// counts them. One atomic per warp; order kept within a warp.
// Launch: grid ceil(capacity / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void sz_compact_rows(const unsigned int* __restrict__ count_in,
                                           const unsigned char* __restrict__ alive,
                                           const unsigned int* __restrict__ ids_in, unsigned int* __restrict__ ids_out,
                                           unsigned int* __restrict__ count_out, unsigned int* __restrict__ map) {
    const unsigned long long p = spdnn_global_thread_x();
    const bool live = p < *count_in;
    const bool keep = live && alive[p] != 0;
    const unsigned int mask = __ballot_sync(SPDNN_FULL_MASK, keep);
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    unsigned int base = 0;
    if (mask != 0) {
        const unsigned int leader = __ffs(mask) - 1;
        if (lane == leader) {
            base = atomicAdd(count_out, __popc(mask));
        }
        base = __shfl_sync(SPDNN_FULL_MASK, base, leader);
    }
    if (keep) {
        const unsigned int to = base + __popc(mask & ((1u << lane) - 1u));
        map[p] = to;
        ids_out[to] = ids_in[p];
    } else if (live) {
        map[p] = SZ_NO_ROW;
    }
}
#endif  // SPDNN_KEEP(sz_compact_rows)

#if SPDNN_KEEP(sz_gather_rows)
// Moves every kept row of y_in (map from sz_compact_rows) to its new place in y_out, for
// positions 0..width: items = width x ceil(*count_in / 256), one row a thread.
// Launch: grid min(items, resident blocks), block 256, no shared memory.
extern "C" __global__ void sz_gather_rows(const float* __restrict__ y_in, float* __restrict__ y_out,
                                          unsigned long long ld, const unsigned int* __restrict__ count_in,
                                          const unsigned int* __restrict__ map, unsigned int width) {
    const unsigned int rows = *count_in;
    const unsigned int segments = (rows + blockDim.x - 1) / blockDim.x;
    const unsigned long long items = (unsigned long long)width * segments;
    for (unsigned long long item = blockIdx.x; item < items; item += gridDim.x) {
        const unsigned long long pos = item / segments;
        const unsigned int p = (unsigned int)(item % segments) * blockDim.x + threadIdx.x;
        if (p < rows) {
            const unsigned int to = map[p];
            if (to != SZ_NO_ROW) {
                y_out[pos * ld + to] = y_in[pos * ld + p];
            }
        }
    }
}
#endif  // SPDNN_KEEP(sz_gather_rows)

#if SPDNN_KEEP(sz_mark_rows)
// row_flags[ids[p]] = 1 for the live rows p < *count with alive[p] set (flags zeroed before).
// Launch: grid ceil(capacity / 256) (at most 65535·16), block 256, no shared memory.
extern "C" __global__ void sz_mark_rows(const unsigned int* __restrict__ count, const unsigned char* __restrict__ alive,
                                        const unsigned int* __restrict__ ids, unsigned char* __restrict__ row_flags) {
    const unsigned long long p = spdnn_global_thread_x();
    if (p < *count && alive[p] != 0) {
        row_flags[ids[p]] = 1;
    }
}
#endif  // SPDNN_KEEP(sz_mark_rows)
