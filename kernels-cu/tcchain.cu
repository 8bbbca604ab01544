// tcchain.cu: the whole layer chain of a dense-ish network fused in one launch, every layer a
// dense product on the tensor cores with fp32-accurate split operands (crates/tcchain,
// docs/tcchain.md).
//
// A block carries a tile of 16 * MT rows through every layer. The tile's activations stay in
// shared memory from the first layer to the last, in two buffers (the layer's input and its
// output, swapped each layer); the weights stream from L2. Layer 0's input is staged from
// the dense input rows (global, rows x input_width fp32) in chunks as wide as a buffer.
//
// The split (docs/tcchain.md, "Exactness"): every value x is scaled by a power of two (the
// activations by act_scale, chosen from the bound; layer 0's input by input_scale, from its
// largest value; each layer's weights by their own, from their largest magnitude) so that
// |x| <= 2^15, then written as two fp16 terms, hi = fp16(x) and lo = fp16(x - hi) (both
// round to nearest; x - hi is exact in fp32). A product a * w is computed as
// a_hi*w_hi + a_hi*w_lo + a_lo*w_hi (a layer whose weights are all one fp16 term skips the
// middle one: w_lo = 0 there, proved on the host), each product of terms exact in the
// MMA. The three MMAs of one k-step of 16 inputs sum into a zero fragment that is then added
// to the fp32 accumulators on the CUDA cores (round to nearest): the tensor cores'
// accumulation truncates to the largest addend's precision, and fed back into one
// accumulator that loss repeats every step (docs/sz.md, error analysis). The accumulators
// are scaled back by the layer's inv_scale (a power of two, exact), the bias is added and the
// result clipped to [0, upper].
//
// Shared memory: two buffers, each two planes (hi and lo) of 16 * MT rows of row_words
// 32-bit words (2 fp16 columns a word); row_words = buffer_width / 2 + TC_ROW_PAD_WORDS,
// buffer_width a multiple of 64 columns, so the fragment loads of a warp hit 32 distinct
// banks.
//
// Work of a layer: its output tiles of 8 columns are dealt to the warps, NT a warp a pass
// (one NT for the chain, chosen on the host so that every warp is busy; every layer's tile
// count padded with zero weights to a multiple of TC_WARPS * NT); a warp computes all
// 16 * MT rows of its tiles. The MMA is
// mma.m16n8k16.row.col.f32.f16.f16.f32 (sm_80 and later; the host refuses older GPUs, and
// there the MMA traps). Weights come from the host in the MMA's register layout: per
// (k-step, tile, lane) one uint4 = (hi b0, hi b1, lo b0, lo b1), and one step of zeros past
// the last.
//
// Layer descriptor (TC_DESC_WORDS 64-bit words, crates/tcchain/src/layout.rs):
//   [0] weights (const uint4*), [1] biases (const float*, one per padded output; 0: the
//   scalar `bias` for all), [2] k_steps | n_tiles << 32 (padded), [3] n_out,
//   [4] 1 / the weights' scale (fp32 bits) | two_term_weights << 32.
//
// The last layer writes fp32 rows of n_out values to `output` and one flag per row (a
// nonzero output) to `row_flags`; rows past `rows` are never written.
#include "common.cuh"

#ifndef TC_WARPS
#error "TC_WARPS must come from Rust (-D)"
#endif
#ifndef TC_ROW_PAD_WORDS
#error "TC_ROW_PAD_WORDS must come from Rust (-D)"
#endif
#ifndef TC_DESC_WORDS
#error "TC_DESC_WORDS must come from Rust (-D)"
#endif
#ifndef TC_MAX_M_TILES
#error "TC_MAX_M_TILES must come from Rust (-D)"
#endif

#define TC_THREADS (TC_WARPS * SPDNN_WARP_SIZE)

static_assert(TC_MAX_M_TILES >= 5, "the largest instance is tcchain_m5");

// fp16 round to nearest of x, as the low 16 bits.
__device__ __forceinline__ unsigned int tc_half(float x) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}

// The fp16 value h as fp32.
__device__ __forceinline__ float tc_float(unsigned int h) {
    float x;
    const unsigned short s = (unsigned short)h;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(s));
    return x;
}

// x0 and x1 (already scaled) as two fp16 terms each: hi = (hi(x1) << 16) | hi(x0), lo alike.
__device__ __forceinline__ void tc_split2(float x0, float x1, unsigned int& hi, unsigned int& lo) {
    const unsigned int h0 = tc_half(x0), h1 = tc_half(x1);
    const unsigned int l0 = tc_half(x0 - tc_float(h0)), l1 = tc_half(x1 - tc_float(h1));
    hi = h0 | (h1 << 16);
    lo = l0 | (l1 << 16);
}

// d += A * B for a 16 x 16 fp16 A (registers a) and a 16 x 8 fp16 B (b0, b1).
__device__ __forceinline__ void tc_mma(float (&d)[4], const unsigned int (&a)[4], unsigned int b0,
                                       unsigned int b1) {
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
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

// One layer's descriptor, read from global memory.
struct TcLayer {
    const uint4* __restrict__ weights;
    const float* __restrict__ biases;
    unsigned int k_steps;
    unsigned int n_tiles;
    unsigned int n_out;
    float inv_scale;
    bool two_term_weights;
};

__device__ __forceinline__ TcLayer tc_layer(const unsigned long long* __restrict__ descriptors, unsigned int l) {
    const unsigned long long* d = descriptors + (unsigned long long)l * TC_DESC_WORDS;
    TcLayer layer;
    layer.weights = reinterpret_cast<const uint4*>(d[0]);
    layer.biases = reinterpret_cast<const float*>(d[1]);
    layer.k_steps = (unsigned int)(d[2] & 0xffffffffull);
    layer.n_tiles = (unsigned int)(d[2] >> 32);
    layer.n_out = (unsigned int)(d[3] & 0xffffffffull);
    layer.inv_scale = __uint_as_float((unsigned int)(d[4] & 0xffffffffull));
    layer.two_term_weights = (d[4] >> 32) != 0;
    return layer;
}

// Stages columns [first, first + 2 * row_words_used) of the tile's input rows (global,
// rows x input_width fp32, scaled by input_scale) as hi and lo planes; columns past the
// input and rows past `rows` are 0.
__device__ __forceinline__ void tc_stage_input(unsigned int* __restrict__ hi_plane, unsigned int* __restrict__ lo_plane,
                                               unsigned int row_words, unsigned int tile_rows,
                                               unsigned int words, const float* __restrict__ input,
                                               unsigned int input_width, unsigned int rows,
                                               unsigned int row0, unsigned int first, float input_scale) {
    for (unsigned int i = threadIdx.x; i < tile_rows * words; i += TC_THREADS) {
        const unsigned int r = i / words, w = i % words;
        const unsigned int row = row0 + r, col = first + 2 * w;
        float x0 = 0.0f, x1 = 0.0f;
        if (row < rows) {
            const float* at = input + (unsigned long long)row * input_width;
            if (col < input_width) {
                x0 = at[col] * input_scale;
            }
            if (col + 1 < input_width) {
                x1 = at[col + 1] * input_scale;
            }
        }
        unsigned int hi, lo;
        tc_split2(x0, x1, hi, lo);
        hi_plane[r * row_words + w] = hi;
        lo_plane[r * row_words + w] = lo;
    }
}

// `steps` k-steps of one pass: acc += the tile's rows (MT m-tiles, input buffer planes in_hi,
// in_lo, step 0 at word column 0) times the NT output tiles of the weights at w (step s of
// tile j at w[(s * n_tiles + j) * 32], the lane's entry). The weights array holds one step
// of zeros past its last, so the next step is prefetched without a bounds check; with the
// tile counts fixed at compile time the loop body is one basic block the scheduler can
// interleave.
template <int MT, int NT, bool TWO_TERM_WEIGHTS>
__device__ __forceinline__ void tc_steps(float (&acc)[MT][NT][4], const unsigned int* __restrict__ in_hi,
                                         const unsigned int* __restrict__ in_lo, unsigned int row_words,
                                         const uint4* __restrict__ w, unsigned int n_tiles, unsigned int steps,
                                         unsigned int g, unsigned int t) {
    const unsigned long long step_stride = (unsigned long long)n_tiles * 32;
    uint4 next[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        next[j] = __ldg(w + j * 32);
    }
    for (unsigned int s = 0; s < steps; ++s) {
        uint4 b[NT];
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            b[j] = next[j];
            next[j] = __ldg(w + (s + 1) * step_stride + j * 32);
        }
        // A fragments: rows m * 16 + g (+ 8), input columns 16 s + 2 t (+ 1) and + 8.
        const unsigned int col_word = s * 8 + t;
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            const unsigned int r0 = (m * 16 + g) * row_words + col_word;
            const unsigned int r1 = r0 + 8 * row_words;
            const unsigned int a_hi[4] = {in_hi[r0], in_hi[r1], in_hi[r0 + 4], in_hi[r1 + 4]};
            const unsigned int a_lo[4] = {in_lo[r0], in_lo[r1], in_lo[r0 + 4], in_lo[r1 + 4]};
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                tc_mma(part, a_lo, b[j].x, b[j].y);
                if (TWO_TERM_WEIGHTS) {
                    tc_mma(part, a_hi, b[j].z, b[j].w);
                }
                tc_mma(part, a_hi, b[j].x, b[j].y);
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    acc[m][j][i] += part[i];
                }
            }
        }
    }
}

// The chain for tiles of 16 * MT rows, NT output tiles a warp a pass. Dynamic shared memory:
// 2 buffers x 2 planes x 16 * MT x row_words words.
template <int MT, int NT>
__device__ __forceinline__ void tc_chain(const unsigned long long* __restrict__ descriptors, unsigned int layer_count,
                                         const float* __restrict__ input, unsigned int input_width,
                                         float input_scale, unsigned int rows, unsigned int buffer_width,
                                         float act_scale, float bias, float upper, float* __restrict__ output,
                                         unsigned char* __restrict__ row_flags) {
    extern __shared__ unsigned int tc_shared[];
    __shared__ unsigned int row_nonzero[16 * TC_MAX_M_TILES];
    constexpr unsigned int tile_rows = 16 * MT;
    const unsigned int row_words = buffer_width / 2 + TC_ROW_PAD_WORDS;
    const unsigned int plane = tile_rows * row_words;
    // buffer b: hi plane at b * 2 * plane, lo plane after it.
    unsigned int* const buffers = tc_shared;
    const unsigned int row0 = blockIdx.x * tile_rows;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE, lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int g = lane >> 2, t = lane & 3;
    // Powers of two: exact.
    const float act_inv = 1.0f / act_scale, input_inv = 1.0f / input_scale;

    for (unsigned int i = threadIdx.x; i < tile_rows; i += TC_THREADS) {
        row_nonzero[i] = 0;
    }

    for (unsigned int l = 0; l < layer_count; ++l) {
        const TcLayer layer = tc_layer(descriptors, l);
        const bool last = l + 1 == layer_count;
        // Layer l writes buffer l % 2 and reads the other (layer 0: its staged input).
        unsigned int* const out_hi = buffers + (l % 2) * 2 * plane;
        unsigned int* const out_lo = out_hi + plane;
        unsigned int* const in_hi = buffers + ((l + 1) % 2) * 2 * plane;
        unsigned int* const in_lo = in_hi + plane;
        const bool staged = l == 0;
        const unsigned int chunk_steps = staged ? buffer_width / 16 : layer.k_steps;
        // n_tiles is a multiple of TC_WARPS * NT (padded on the host with zero weights).
        const unsigned int passes = layer.n_tiles / (TC_WARPS * NT);
        // Sums of scaled products back to the activations' scale: 1 / (input scale * weight scale).
        const float inv_scale = layer.inv_scale * (staged ? input_inv : act_inv);

        for (unsigned int pass = 0; pass < passes; ++pass) {
            const unsigned int first_tile = (pass * TC_WARPS + warp) * NT;
            float acc[MT][NT][4];
#pragma unroll
            for (int m = 0; m < MT; ++m) {
#pragma unroll
                for (int j = 0; j < NT; ++j) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        acc[m][j][i] = 0.0f;
                    }
                }
            }
            for (unsigned int chunk = 0; chunk < layer.k_steps; chunk += chunk_steps) {
                const unsigned int steps = min(chunk_steps, layer.k_steps - chunk);
                if (staged) {
                    __syncthreads();  // every warp is done with the previous chunk
                    tc_stage_input(in_hi, in_lo, row_words, tile_rows, buffer_width / 2, input, input_width, rows,
                                   row0, chunk * 16, input_scale);
                    __syncthreads();
                }
                const uint4* w = layer.weights + ((unsigned long long)chunk * layer.n_tiles + first_tile) * 32 + lane;
                if (layer.two_term_weights) {
                    tc_steps<MT, NT, true>(acc, in_hi, in_lo, row_words, w, layer.n_tiles, steps, g, t);
                } else {
                    tc_steps<MT, NT, false>(acc, in_hi, in_lo, row_words, w, layer.n_tiles, steps, g, t);
                }
            }
            // Epilogue: scale back, bias, clip; the next layer's split (or the output).
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const unsigned int col = (first_tile + j) * 8 + 2 * t;
                const float b0 = layer.biases != nullptr ? layer.biases[col] : bias;
                const float b1 = layer.biases != nullptr ? layer.biases[col + 1] : bias;
#pragma unroll
                for (int m = 0; m < MT; ++m) {
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        const unsigned int r = m * 16 + g + 8 * half;
                        const float y0 = spdnn_clamp_activation(acc[m][j][2 * half] * inv_scale + b0, upper);
                        const float y1 = spdnn_clamp_activation(acc[m][j][2 * half + 1] * inv_scale + b1, upper);
                        if (last) {
                            const unsigned int row = row0 + r;
                            const bool in0 = col < layer.n_out, in1 = col + 1 < layer.n_out;
                            if (row < rows) {
                                float* at = output + (unsigned long long)row * layer.n_out;
                                if (in0) {
                                    at[col] = y0;
                                }
                                if (in1) {
                                    at[col + 1] = y1;
                                }
                                if ((in0 && y0 != 0.0f) || (in1 && y1 != 0.0f)) {
                                    atomicOr(&row_nonzero[r], 1u);
                                }
                            }
                        } else {
                            unsigned int hi, lo;
                            tc_split2(y0 * act_scale, y1 * act_scale, hi, lo);
                            const unsigned int at = r * row_words + col / 2;
                            out_hi[at] = hi;
                            out_lo[at] = lo;
                        }
                    }
                }
            }
        }
        __syncthreads();  // the layer's output is complete before the next layer reads it
    }
    for (unsigned int r = threadIdx.x; r < tile_rows; r += TC_THREADS) {
        if (row0 + r < rows) {
            row_flags[row0 + r] = row_nonzero[r] != 0 ? 1 : 0;
        }
    }
}

#define TC_CHAIN_PARAMS                                                                                      \
    const unsigned long long *__restrict__ descriptors, unsigned int layer_count,                          \
        const float *__restrict__ input, unsigned int input_width, float input_scale, unsigned int rows,   \
        unsigned int buffer_width, float act_scale, float bias, float upper, float *__restrict__ output, \
        unsigned char *__restrict__ row_flags
#define TC_CHAIN_ARGS \
    descriptors, layer_count, input, input_width, input_scale, rows, buffer_width, act_scale, bias, upper, output, row_flags

#if SPDNN_KEEP(tcchain_m1_n1)
// Launch: grid ceil(rows / 16), block 256, dynamic shared 4 * 16 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m1_n1(TC_CHAIN_PARAMS) { tc_chain<1, 1>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m1_n1)

#if SPDNN_KEEP(tcchain_m2_n1)
// Launch: grid ceil(rows / 32), block 256, dynamic shared 4 * 32 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m2_n1(TC_CHAIN_PARAMS) { tc_chain<2, 1>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m2_n1)

#if SPDNN_KEEP(tcchain_m3_n1)
// Launch: grid ceil(rows / 48), block 256, dynamic shared 4 * 48 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m3_n1(TC_CHAIN_PARAMS) { tc_chain<3, 1>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m3_n1)

#if SPDNN_KEEP(tcchain_m4_n1)
// Launch: grid ceil(rows / 64), block 256, dynamic shared 4 * 64 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m4_n1(TC_CHAIN_PARAMS) { tc_chain<4, 1>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m4_n1)

#if SPDNN_KEEP(tcchain_m5_n1)
// Launch: grid ceil(rows / 80), block 256, dynamic shared 4 * 80 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m5_n1(TC_CHAIN_PARAMS) { tc_chain<5, 1>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m5_n1)

#if SPDNN_KEEP(tcchain_m1_n2)
// Launch: grid ceil(rows / 16), block 256, dynamic shared 4 * 16 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m1_n2(TC_CHAIN_PARAMS) { tc_chain<1, 2>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m1_n2)

#if SPDNN_KEEP(tcchain_m2_n2)
// Launch: grid ceil(rows / 32), block 256, dynamic shared 4 * 32 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m2_n2(TC_CHAIN_PARAMS) { tc_chain<2, 2>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m2_n2)

#if SPDNN_KEEP(tcchain_m3_n2)
// Launch: grid ceil(rows / 48), block 256, dynamic shared 4 * 48 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m3_n2(TC_CHAIN_PARAMS) { tc_chain<3, 2>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m3_n2)

#if SPDNN_KEEP(tcchain_m4_n2)
// Launch: grid ceil(rows / 64), block 256, dynamic shared 4 * 64 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m4_n2(TC_CHAIN_PARAMS) { tc_chain<4, 2>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m4_n2)

#if SPDNN_KEEP(tcchain_m5_n2)
// Launch: grid ceil(rows / 80), block 256, dynamic shared 4 * 80 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m5_n2(TC_CHAIN_PARAMS) { tc_chain<5, 2>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m5_n2)

#if SPDNN_KEEP(tcchain_m1_n4)
// Launch: grid ceil(rows / 16), block 256, dynamic shared 4 * 16 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m1_n4(TC_CHAIN_PARAMS) { tc_chain<1, 4>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m1_n4)

#if SPDNN_KEEP(tcchain_m2_n4)
// Launch: grid ceil(rows / 32), block 256, dynamic shared 4 * 32 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m2_n4(TC_CHAIN_PARAMS) { tc_chain<2, 4>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m2_n4)

#if SPDNN_KEEP(tcchain_m3_n4)
// Launch: grid ceil(rows / 48), block 256, dynamic shared 4 * 48 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m3_n4(TC_CHAIN_PARAMS) { tc_chain<3, 4>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m3_n4)

#if SPDNN_KEEP(tcchain_m4_n4)
// Launch: grid ceil(rows / 64), block 256, dynamic shared 4 * 64 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m4_n4(TC_CHAIN_PARAMS) { tc_chain<4, 4>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m4_n4)

#if SPDNN_KEEP(tcchain_m5_n4)
// Launch: grid ceil(rows / 80), block 256, dynamic shared 4 * 80 * row_words words.
extern "C" __global__ void __launch_bounds__(TC_THREADS) tcchain_m5_n4(TC_CHAIN_PARAMS) { tc_chain<5, 4>(TC_CHAIN_ARGS); }
#endif  // SPDNN_KEEP(tcchain_m5_n4)
