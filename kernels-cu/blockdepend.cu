// blockdepend.cu: BlockDepend's fused layer chain (crates/blockdepend, docs/blockdepend.md).
//
// One launch covers the layers first..end-1 of the (exactly compressed) network. Its blocks
// are persistent (as many as fit on the device): each takes tiles of rows from a device-side
// queue (*queue, an atomic counter), carries the tile through every layer of the launch in
// two buffers of tile_max × stride floats (shared memory, or a per-block scratch area of
// global memory), drops the rows that finish, and at the end appends the rows still live to
// the next launch's list, or writes their final values.
//
// Rows finish when all their activations are 0 (state BD_STATE_ZERO: they stay 0, never a
// category) or all equal the bound after at least suffix_start layers (BD_STATE_BOUND: every
// later layer was proved to keep them there, in any summation order; a category). Rows live
// after the last layer get BD_STATE_LIVE and their values in out.
//
// Layer 1 reads the sparse input rows (CSR): the tile's column indices are first staged in
// the second tile buffer (free during layer 1) with many loads in flight, then each x·W[k, c]
// is scattered with shared-memory atomics (any order). Later layers are pulled: lane c % 32
// of a warp computes output c for up to BD_ROWS rows of the tile from a dense (in quads of
// inputs, padded) or sliced-ELL layer (groups of 32 columns, slot-major (input, weight) pairs, or, for
// a layer whose weights are all small multiples m·b of one value b, 16- or 32-bit entries of
// the input index and m, b in the layer's first unit, padding m = 0: the same pairs decoded), one
// fused multiply-add per slot from 0 in the layout's order, then the bias and the clip.
// Every padded output column (up to a multiple of 32) is written (clip(0 + b) = 0 there,
// b <= 0), so float4 reads of the next layer never see stale data.
//
// The bias: one scalar for every neuron (the challenge's networks, b < 0; bias_stride 0), or,
// for trained networks, one per output neuron: layer l's output c at biases[l * bias_stride
// + c] (bias_stride: the widest padded layer; padding 0). Per-neuron biases are <= 0 (the
// host refuses others): clip(Z + b) then equals the official rule, which adds the bias only
// where Y·W is structurally nonzero. The choice is uniform over the launch (a parameter, no
// register), and the address needs only the layer index and the column, both live anyway:
// the scalar path loads nothing more and keeps its registers (sm_90: 64 / 80 / 128 / 80 /
// 108 for shared / shared wide / split / split wide / global, as before).
//
// Two block sizes: BD_THREADS for narrow tiles (several blocks an SM), BD_THREADS_WIDE for
// wide ones (one block an SM holding as many rows as fit, with as many warps as the
// registers allow). Three placements of the tile's two buffers (BD_PLACE_*): both in shared
// memory; the layer's input in shared memory and its output in a per-block scratch row of
// global memory, copied back after the layer (twice the rows a tile, for wide rows); both
// in scratch.
//
// Definitions from Rust (spdnn_blockdepend::DEFINES). Launch shapes: the kernel declarations
// of spdnn-blockdepend (crates/blockdepend/src/lib.rs).
#include "common.cuh"

#ifndef BD_THREADS
#error "BD_THREADS must come from Rust (-D)"
#endif
#ifndef BD_THREADS_WIDE
#error "BD_THREADS_WIDE must come from Rust (-D)"
#endif
#ifndef BD_ROWS
#error "BD_ROWS must come from Rust (-D)"
#endif
#ifndef BD_MAX_TILE
#error "BD_MAX_TILE must come from Rust (-D)"
#endif
#ifndef BD_DESC_WORDS
#error "BD_DESC_WORDS must come from Rust (-D)"
#endif
#ifndef BD_FORMAT_DENSE
#error "BD_FORMAT_DENSE must come from Rust (-D)"
#endif
#ifndef BD_FORMAT_ELL
#error "BD_FORMAT_ELL must come from Rust (-D)"
#endif
#ifndef BD_FORMAT_ELL_SCALED16
#error "BD_FORMAT_ELL_SCALED16 must come from Rust (-D)"
#endif
#ifndef BD_FORMAT_ELL_SCALED32
#error "BD_FORMAT_ELL_SCALED32 must come from Rust (-D)"
#endif
#ifndef BD_FORMATS
#error "BD_FORMATS must come from Rust (-D)"
#endif
#ifndef BD_TILE_WAVES
#error "BD_TILE_WAVES must come from Rust (-D)"
#endif
#ifndef BD_SCATTER_BATCH
#error "BD_SCATTER_BATCH must come from Rust (-D)"
#endif
#ifndef BD_ITEM_AHEAD
#error "BD_ITEM_AHEAD must come from Rust (-D)"
#endif
#ifndef BD_CIRCULANT_CODE
#error "BD_CIRCULANT_CODE must come from Rust (-D)"
#endif
#ifndef BD_CIRCULANT_SLOTS
#error "BD_CIRCULANT_SLOTS must come from Rust (-D)"
#endif
#ifndef BD_CIRCULANT_OUTPUTS
#error "BD_CIRCULANT_OUTPUTS must come from Rust (-D)"
#endif
#ifndef BD_LANES_THREADS
#error "BD_LANES_THREADS must come from Rust (-D)"
#endif
#ifndef BD_LANE_PITCH
#error "BD_LANE_PITCH must come from Rust (-D)"
#endif
#ifndef BD_LANES_GROUPS
#error "BD_LANES_GROUPS must come from Rust (-D)"
#endif
#ifndef BD_LANES_BLOCKS
#error "BD_LANES_BLOCKS must come from Rust (-D)"
#endif
#ifndef BD_LANES_BATCH
#error "BD_LANES_BATCH must come from Rust (-D)"
#endif
#ifndef BD_LANES_CHUNK
#error "BD_LANES_CHUNK must come from Rust (-D)"
#endif
#ifndef BD_WARPS_THREADS
#error "BD_WARPS_THREADS must come from Rust (-D)"
#endif
#ifndef BD_WARPS_ROWS
#error "BD_WARPS_ROWS must come from Rust (-D)"
#endif
#ifndef BD_WARPS_GROUPS
#error "BD_WARPS_GROUPS must come from Rust (-D)"
#endif
#ifndef BD_WARPS_SPREAD
#error "BD_WARPS_SPREAD must come from Rust (-D)"
#endif
#ifndef BD_WARPS_BLOCKS
#error "BD_WARPS_BLOCKS must come from Rust (-D)"
#endif
#ifndef BD_WARPS_SLOTS
#error "BD_WARPS_SLOTS must come from Rust (-D)"
#endif
#ifndef BD_BITMAP_ROWS
#error "BD_BITMAP_ROWS must come from Rust (-D)"
#endif
static_assert(BD_LANE_PITCH % 4 == 0 && BD_LANES_CHUNK % 4 == 0 && BD_BITMAP_ROWS % 4 == 0,
              "a lane's column is read and written 4 rows (16 bytes) at a time");
#ifndef BD_INPUT_VALUES
#error "BD_INPUT_VALUES must come from Rust (-D)"
#endif
#ifndef BD_INPUT_COLUMNS
#error "BD_INPUT_COLUMNS must come from Rust (-D)"
#endif
#ifndef BD_INPUT_BITMAP
#error "BD_INPUT_BITMAP must come from Rust (-D)"
#endif
#ifndef BD_STATE_ZERO
#error "BD_STATE_ZERO must come from Rust (-D)"
#endif
#ifndef BD_STATE_LIVE
#error "BD_STATE_LIVE must come from Rust (-D)"
#endif
#ifndef BD_STATE_BOUND
#error "BD_STATE_BOUND must come from Rust (-D)"
#endif

// One layer's descriptor (BD_DESC_WORDS words: format, in, out, dense stride (layer 1: its
// entries per input neuron, 0 for CSR), offset low, offset high (ELL: in 8-byte units of ell;
// layer 1: its fold's table in ell, 0 for none: bd_lanes_fold),
// ELL group table (layer 1: the index bits of its scaled entries, 0 for pairs), and a last
// word: layer 1's scaled entries' base value bits (read from desc directly), a later layer's
// circulant table (its first unit in ell, 0 for none; bd_layer_circulant).
struct BdLayer {
    unsigned int format;
    unsigned int in_width;
    unsigned int out_width;
    unsigned int dense_stride;
    unsigned long long offset;
    unsigned int group_table;
    unsigned int circulant;
};

// Whether this module runs layers of format f after the first: BD_FORMATS has a bit per
// BD_FORMAT_* code, the formats of the chain's layers (Rust compiles a module per set), and
// one (BD_CIRCULANT_CODE) when it runs circulant items (bd_layer_circulant). A
// branch for a format the chain lacks costs registers even when it never runs: bd_chain_global
// took 78 with all three ELL forms compiled in, 64 with one (NVRTC 13.0, sm_90).
#define BD_RUNS(f) (((BD_FORMATS) >> (f)) & 1u)

// A descriptor's words as a BdLayer (from global memory, or a copy in shared memory).
__device__ __forceinline__ BdLayer bd_layer_from(const unsigned int* __restrict__ d) {
    BdLayer layer;
    layer.format = d[0];
    layer.in_width = d[1];
    layer.out_width = d[2];
    layer.dense_stride = d[3];
    layer.offset = (unsigned long long)d[4] | ((unsigned long long)d[5] << 32);
    layer.group_table = d[6];
    layer.circulant = d[7];
    return layer;
}

__device__ __forceinline__ BdLayer bd_layer_at(const unsigned int* __restrict__ desc, unsigned int l) {
    return bd_layer_from(desc + (unsigned long long)l * BD_DESC_WORDS);
}

// One ELL entry as the (input, weight) it multiplies with: a stored pair as it is; a scaled
// entry (16 or 32 bits) as its low `shift` bits and float(m)·base of the multiple m above
// them, one multiply rounded to nearest (__fmul_rn: never contracted), exactly the weight the
// host proved for it; padding has m = 0: +0 (base > 0), the pair form's padding weight. So
// every form gives the pair form's sums bit for bit.
__device__ __forceinline__ void bd_ell_decode(uint2 e, unsigned int, float, unsigned int& k, float& w) {
    k = e.x;
    w = __uint_as_float(e.y);
}
__device__ __forceinline__ void bd_ell_decode(unsigned int e, unsigned int shift, float base, unsigned int& k,
                                              float& w) {
    k = e & ((1u << shift) - 1u);
    w = __fmul_rn(__uint2float_rn(e >> shift), base);
}
__device__ __forceinline__ void bd_ell_decode(unsigned short e, unsigned int shift, float base, unsigned int& k,
                                              float& w) {
    bd_ell_decode((unsigned int)e, shift, base, k, w);
}

// This lane's first entry of an ELL layer as E (uint2 pairs, or 16- or 32-bit scaled entries
// as the layer's format says), at slot s0: a pair layer's units start at its offset, a scaled
// layer's one unit later (the first holds its base value's bits and its index bits).
template <typename E>
__device__ __forceinline__ const E* bd_ell_first(const BdLayer& layer, const uint2* __restrict__ ell, unsigned int s0,
                                                 unsigned int lane) {
    const unsigned long long header = sizeof(E) == sizeof(uint2) ? 0u : 1u;
    return reinterpret_cast<const E*>(ell + layer.offset + header) + (unsigned long long)s0 * 32u + lane;
}

// The tile's bookkeeping: the batch row of each slot, the live slots in order, the input
// rows' starts (layer 1), per live position whether the row stays, and three words.
struct BdTile {
    unsigned int ids[BD_MAX_TILE];
    unsigned int live[BD_MAX_TILE];
    unsigned int starts[BD_MAX_TILE + 1];
    unsigned char keep[BD_MAX_TILE];
    unsigned int live_count;
    unsigned int base;
    unsigned int append;
};

__device__ __forceinline__ unsigned int bd_round32(unsigned int n) {
    return (n + 31u) & ~31u;
}

// The input nonzeros layer 1 stages per pass of plain loads: per thread, this many loads in
// flight.
#define BD_STAGE_UNROLL 8

// Whether layer 1 stages with cp.async (sm_80 and later, into shared memory).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define BD_HAS_CP_ASYNC 1
#else
#define BD_HAS_CP_ASYNC 0
#endif

// Words of p past the last 16-byte boundary (0..3).
__device__ __forceinline__ unsigned int bd_words_past16(const void* p) {
    return (unsigned int)(reinterpret_cast<unsigned long long>(p) >> 2) & 3u;
}

#if BD_HAS_CP_ASYNC
// Starts a 16-byte copy from global memory to the shared-window address `to` (cp.async,
// bypassing L1); it completes at bd_stage_wait.
__device__ __forceinline__ void bd_copy16_async(unsigned int to, const void* from) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
}
#endif

// Copies words src[j] to dst[j] for j < m, this thread taking every THREADS-th: with
// cp.async (ASYNC: dst in shared memory, at the same offset past a 16-byte boundary as src;
// completes at bd_stage_wait), 16 bytes a copy between the words before src's first
// boundary and after its last; else with plain loads BD_STAGE_UNROLL at a time.
template <unsigned int THREADS, bool ASYNC>
__device__ __forceinline__ void bd_stage_words(unsigned int* dst, const unsigned int* __restrict__ src,
                                               unsigned int m) {
#if BD_HAS_CP_ASYNC
    if (ASYNC) {
        const unsigned int head = min(m, (4u - bd_words_past16(src)) & 3u);
        const unsigned int units = (m - head) / 4u;
        for (unsigned int i = threadIdx.x; i < units; i += THREADS) {
            const unsigned int j = head + 4u * i;
            bd_copy16_async((unsigned int)__cvta_generic_to_shared(dst + j), src + j);
        }
        // The head's words, then the tail's.
        const unsigned int body_end = head + 4u * units;
        for (unsigned int i = threadIdx.x; i < m - 4u * units; i += THREADS) {
            const unsigned int j = i < head ? i : body_end + (i - head);
            const unsigned int to = (unsigned int)__cvta_generic_to_shared(dst + j);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(to), "l"(src + j) : "memory");
        }
        return;
    }
#endif
    for (unsigned int j0 = threadIdx.x; j0 < m; j0 += BD_STAGE_UNROLL * THREADS) {
        unsigned int v[BD_STAGE_UNROLL];
#pragma unroll
        for (unsigned int u = 0; u < BD_STAGE_UNROLL; ++u) {
            const unsigned int j = j0 + u * THREADS;
            v[u] = j < m ? __ldg(src + j) : 0u;
        }
#pragma unroll
        for (unsigned int u = 0; u < BD_STAGE_UNROLL; ++u) {
            const unsigned int j = j0 + u * THREADS;
            if (j < m) {
                dst[j] = v[u];
            }
        }
    }
}

// Closes this thread's group of cp.async copies.
template <bool ASYNC>
__device__ __forceinline__ void bd_stage_commit() {
#if BD_HAS_CP_ASYNC
    if (ASYNC) {
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
#endif
}

// Waits until at most PENDING of this thread's groups of cp.async copies are in flight.
template <bool ASYNC, int PENDING>
__device__ __forceinline__ void bd_stage_wait() {
#if BD_HAS_CP_ASYNC
    if (ASYNC) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
    }
#endif
}

// Runs f(r, q) for q < width of rows r < n, in row-major order from element `first`, every
// STEP-th element, without a division per element: one division sets the step, then the row
// carries at most once a step (step_q < width). The tile copies and layer 1's zeroing and bias
// loops divided by the row's length at every element: about 25 instructions where these take
// 5, at 65536 as many elements a tile as input nonzeros; so did the layers' work items.
template <unsigned int STEP, typename F>
__device__ __forceinline__ void bd_for_grid(unsigned int first, unsigned int n, unsigned int width, F f) {
    const unsigned int step_r = STEP / width;
    const unsigned int step_q = STEP - step_r * width;
    unsigned int r = first / width;
    unsigned int q = first - r * width;
    while (r < n) {
        f(r, q);
        q += step_q;
        r += step_r;
        if (q >= width) {
            q -= width;
            ++r;
        }
    }
}

// Runs f(r, q) for float4 q of rows r < n, quads float4s a row, each thread taking every
// THREADS-th (row, quad) in order (bd_for_grid).
template <unsigned int THREADS, typename F>
__device__ __forceinline__ void bd_for_quads(unsigned int n, unsigned int quads, F f) {
    bd_for_grid<THREADS>(threadIdx.x, n, quads, f);
}

// Adds v to the 32-bit integer at a shared-window address, no result returned: one native
// instruction, where from a generic pointer into the dynamic shared array sm_90 rebuilt the
// window address (S2R SR_CgaCtaId, UMOV, UIADD3, ULEA) before every add. volatile keeps it
// on its side of the block's barriers.
__device__ __forceinline__ void bd_red_shared_add(unsigned int address, unsigned int v) {
    asm volatile("red.shared.add.u32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
}

// A float of shared memory at a 32-bit shared-window address (the exact items' gathers): from
// a generic pointer into the dynamic shared array sm_90 rebuilt the window address (S2R
// SR_CgaCtaId, MOV, VIADD, LEA) before every load, under the wide instances' 80-register cap 8
// instructions a gather instead of 3. volatile keeps it on its side of the block's barriers.
__device__ __forceinline__ float bd_lds(unsigned int address) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(address));
    return v;
}

// A float to shared memory at a 32-bit shared-window address (bd_lds's store).
__device__ __forceinline__ void bd_sts(unsigned int address, float v) {
    asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(address), "f"(v) : "memory");
}

// bd_lds for a 32-bit word (layer 1's staged columns). Not __float_as_uint(bd_lds(..)): that
// compiles the scatter of the shared instances differently (2026-11-28f, offline SASS), and
// only this form was measured and tested on the GPU.
__device__ __forceinline__ unsigned int bd_lds_word(unsigned int address) {
    unsigned int v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(address));
    return v;
}

// A thread's place in its rows during layer 1 (a tile's, or a lanes warp's): the row of its
// last nonzero and where the next row starts (starts[row + 1], kept in a register: most
// nonzeros stay in the row, and then the walk reads no shared memory; reading it at every
// nonzero was the most stalled instruction of the official 1024's launch 1).
struct BdRowWalk {
    unsigned int row;
    unsigned int end;
};

// The row holding nonzero `position` of rows whose nonzeros start at starts[0], starts[1],
// ..., walking forward from walk.row (a thread's nonzeros come in increasing order, so its
// row persists across batches and chunks). starts[n] = total > position: the walk stops at
// one of the n rows.
__device__ __forceinline__ unsigned int bd_walk_to(const unsigned int* starts, BdRowWalk& walk,
                                                   unsigned int position) {
    while (walk.end <= position) {
        ++walk.row;
        walk.end = starts[walk.row + 1];
    }
    return walk.row;
}

// Layer 1's output from its accumulator v (with integer_sums, the bits of an integer sum of
// whole multiples of w1_base, converted once; else the float sum) and its bias b: the tiles'
// and the lanes' layer 1 round the same way.
__device__ __forceinline__ float bd_first_output(float v, bool integer_sums, float w1_base, float b, float upper) {
    const float sum = integer_sums ? (float)__float_as_int(v) * w1_base : v;
    return spdnn_clamp_activation(sum + b, upper);
}

// The V (2 or 4) scaled entries of input neuron k of layer 1 into e, one V·4-byte load; for a
// spare nonzero (not real) `spare` each instead: index `spare`, multiple 0, an add of 0 to a
// word of the lane's own (distinct banks; zero entries would put every spare lane on one word,
// and an `if` compiles to a branch and a reconvergence barrier an add).
template <unsigned int V>
__device__ __forceinline__ void bd_load_entries(unsigned int (&e)[V], const uint2* __restrict__ w1_entries,
                                                unsigned int k, bool real, unsigned int spare) {
    if (V == 2) {
        const uint2 q = __ldg(w1_entries + k);
        e[0] = real ? q.x : spare;
        e[V - 1] = real ? q.y : spare;
    } else {
        const uint4 q = __ldg(reinterpret_cast<const uint4*>(w1_entries) + k);
        e[0] = real ? q.x : spare;
        e[1 % V] = real ? q.y : spare;
        e[2 % V] = real ? q.z : spare;
        e[V - 1] = real ? q.w : spare;
    }
}

// Layer 1's scatter of staged nonzeros c0 .. c0+m-1 (m > 0) for scaled entries: every W1
// weight is m·w1_base, stored as V 32-bit entries per input neuron (the output in the low
// w1_bits bits, m above; padding m = 0), read in one V·4-byte load. Each thread takes every
// THREADS-th nonzero, so a warp's lanes hold consecutive inputs, whose outputs in
// challenge-shaped layers lie on consecutive words (a thread's nonzeros side by side put its
// lanes' adds 4 words apart: 4-way bank conflicts, 2026-11-28g call 1). It loads the entries of
// its BD_SCATTER_BATCH nonzeros before adding any; a nonzero past m reads the last one again
// and takes spare entries (bd_load_entries), so a batch has no branch but the row walk's.
// Binary inputs (BINARY) add the whole multiples with integer shared-memory atomics, a native
// instruction where a float atomicAdd on shared memory is a compare-and-swap loop (sm_90), and
// bd_first_layer converts the sums once: Rust proved every column's sum of multiples exact in
// float (layout::FirstScaled), so the result is the float sum in any order, bit for bit. Other
// inputs add x·float(m)·w1_base, the pair form's weight bit for bit. SHARED_ACC: cur lies in
// shared memory, and the integer adds take its 32-bit window address (bd_red_shared_add);
// STAGE_SHARED: so do cols and vals (bd_lds_word).
template <unsigned int THREADS, unsigned int V, bool BINARY, bool SHARED_ACC, bool STAGE_SHARED>
__device__ __forceinline__ void bd_scatter_scaled(float* cur, unsigned int stride, const unsigned int* cols,
                                                  const unsigned int* vals, unsigned int c0, unsigned int m,
                                                  const uint2* __restrict__ w1_entries, unsigned int w1_bits,
                                                  float w1_base, BdRowWalk& walk, const BdTile& tile) {
    const unsigned int index_mask = (1u << w1_bits) - 1u;
    const unsigned int window = SHARED_ACC ? (unsigned int)__cvta_generic_to_shared(cur) : 0u;
    const unsigned int cols_window = STAGE_SHARED ? (unsigned int)__cvta_generic_to_shared(cols) : 0u;
    const unsigned int vals_window = STAGE_SHARED ? (unsigned int)__cvta_generic_to_shared(vals) : 0u;
    // A nonzero past m: output `lane` (< the row's stride, a multiple of 32), multiple 0.
    const unsigned int spare = (threadIdx.x % SPDNN_WARP_SIZE) & index_mask;
    for (unsigned int j0 = threadIdx.x; j0 < m; j0 += BD_SCATTER_BATCH * THREADS) {
        unsigned int e[BD_SCATTER_BATCH][V];
        unsigned int at[BD_SCATTER_BATCH];
        float x[BD_SCATTER_BATCH];
#pragma unroll
        for (unsigned int u = 0; u < BD_SCATTER_BATCH; ++u) {
            const bool real = j0 + u * THREADS < m;
            const unsigned int j = min(j0 + u * THREADS, m - 1u);
            const unsigned int k = STAGE_SHARED ? bd_lds_word(cols_window + 4u * j) : cols[j];
            x[u] = BINARY ? 1.0f : __uint_as_float(STAGE_SHARED ? bd_lds_word(vals_window + 4u * j) : vals[j]);
            // Shared accumulators: the row's 32-bit window address; else its first index.
            const unsigned int row = bd_walk_to(tile.starts, walk, c0 + j) * stride;
            at[u] = SHARED_ACC ? window + 4u * row : row;
            bd_load_entries<V>(e[u], w1_entries, k, real, spare);
        }
#pragma unroll
        for (unsigned int u = 0; u < BD_SCATTER_BATCH; ++u) {
#pragma unroll
            for (unsigned int v = 0; v < V; ++v) {
                const unsigned int multiple = e[u][v] >> w1_bits;
                const unsigned int c = e[u][v] & index_mask;
                // Integers: padding and spare entries add 0 to a word of the tile, no branch.
                // Floats skip them, as the pairs do.
                if (BINARY && SHARED_ACC) {
                    bd_red_shared_add(at[u] + 4u * c, multiple);
                } else if (BINARY) {
                    atomicAdd(reinterpret_cast<unsigned int*>(cur) + at[u] + c, multiple);
                } else if (multiple != 0u) {
                    float* acc = SHARED_ACC ? reinterpret_cast<float*>(__cvta_shared_to_generic(at[u] + 4u * c))
                                            : cur + at[u] + c;
                    atomicAdd(acc, x[u] * ((float)multiple * w1_base));
                }
            }
        }
    }
}

// Layer 1's scatter of staged nonzeros c0 .. c0+m-1 for (output, weight) pairs: CSR
// (w1_ell == 0) or w1_ell per input neuron (padding weighs +0 and is skipped); x·w added
// with float shared-memory atomics, any order.
template <unsigned int THREADS>
__device__ __forceinline__ void bd_scatter_pairs(float* cur, unsigned int stride, const unsigned int* cols,
                                                 const unsigned int* vals, unsigned int c0, unsigned int m,
                                                 unsigned int x_binary, const unsigned int* __restrict__ w1_offsets,
                                                 const uint2* __restrict__ w1_entries, unsigned int w1_ell,
                                                 BdRowWalk& walk, const BdTile& tile) {
    for (unsigned int j0 = threadIdx.x; j0 < m; j0 += BD_SCATTER_BATCH * THREADS) {
        unsigned int k[BD_SCATTER_BATCH];
        unsigned int r[BD_SCATTER_BATCH];
        float x[BD_SCATTER_BATCH];
#pragma unroll
        for (unsigned int u = 0; u < BD_SCATTER_BATCH; ++u) {
            const unsigned int j = j0 + u * THREADS;
            k[u] = 0;
            x[u] = 0.0f;
            r[u] = walk.row;
            if (j < m) {
                k[u] = cols[j];
                x[u] = x_binary ? 1.0f : __uint_as_float(vals[j]);
                r[u] = bd_walk_to(tile.starts, walk, c0 + j);
            }
        }
        if (w1_ell > 0) {
#pragma unroll
            for (unsigned int u = 0; u < BD_SCATTER_BATCH; ++u) {
                if (j0 + u * THREADS < m) {
                    float* acc = cur + r[u] * stride;
                    const uint2* e = w1_entries + (unsigned long long)k[u] * w1_ell;
                    for (unsigned int i = 0; i < w1_ell; ++i) {
                        const uint2 entry = __ldg(e + i);
                        if (entry.y != 0u) {
                            atomicAdd(acc + entry.x, x[u] * __uint_as_float(entry.y));
                        }
                    }
                }
            }
        } else {
#pragma unroll
            for (unsigned int u = 0; u < BD_SCATTER_BATCH; ++u) {
                if (j0 + u * THREADS < m) {
                    float* acc = cur + r[u] * stride;
                    const unsigned int stop = __ldg(w1_offsets + k[u] + 1);
                    for (unsigned int e = __ldg(w1_offsets + k[u]); e < stop; ++e) {
                        const uint2 entry = __ldg(w1_entries + e);
                        atomicAdd(acc + entry.x, x[u] * __uint_as_float(entry.y));
                    }
                }
            }
        }
    }
}

// Layer 1 over the input rows base .. base+n-1 into slots 0..n-1 of cur: zero the padded
// outputs; then the tile's input nonzeros (contiguous in the CSR) in chunks of 4 words
// fewer than `stage_words / 2` (binary: every value 1, only the columns are read) or
// `stage_words / 4` (columns and values), rounded down to a multiple of 4 (room for the
// chunk's lead, below), double-buffered in `stage` (the second tile buffer, free during
// layer 1): chunk c + 1 is copied in (cp.async when ASYNC) while chunk c is scattered,
// x·W[k, c] added with atomics, each thread taking every THREADS-th staged nonzero,
// BD_SCATTER_BATCH at a time, and finding its row by walking the tile's row starts forward
// (its row persists across chunks); then the bias (`biases[c]`, or the scalar when biases is
// nullptr) and the clip. W1 is CSR (w1_ell == 0), ELL of w1_ell (output, weight) pairs per
// input neuron (padding has weight +0 and is skipped), or, with w1_bits != 0, w1_ell (2 or 4)
// scaled entries per input neuron (bd_scatter_scaled; binary inputs sum whole multiples of
// w1_base in the accumulators' bits, converted here before the bias).
template <unsigned int THREADS, bool ASYNC, bool SHARED_ACC>
__device__ __forceinline__ void bd_first_layer(float* cur, unsigned int* stage, unsigned int stage_words,
                                               unsigned int stride, unsigned int base, unsigned int n,
                                               const unsigned int* __restrict__ x_offsets,
                                               const unsigned int* __restrict__ x_cols,
                                               const float* __restrict__ x_vals, unsigned int x_binary,
                                               const unsigned int* __restrict__ w1_offsets,
                                               const uint2* __restrict__ w1_entries, unsigned int w1_ell,
                                               unsigned int w1_bits, float w1_base, unsigned int width,
                                               float bias, const float* __restrict__ biases, float upper,
                                               BdTile& tile) {
    const unsigned int padded = bd_round32(width);
    bd_for_quads<THREADS>(n, padded / 4u, [&](unsigned int r, unsigned int q) {
        reinterpret_cast<float4*>(cur + r * stride)[q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    });
    const unsigned int origin = x_offsets[base];
    for (unsigned int i = threadIdx.x; i <= n; i += THREADS) {
        tile.starts[i] = x_offsets[base + i] - origin;
        if (i < n) {
            tile.ids[i] = base + i;
        }
    }
    __syncthreads();
    const unsigned int total = tile.starts[n];
    // Two buffers of `half` words for columns, then (unless binary) two for values; a
    // buffer's chunk starts `lead` words in, its source's offset past a 16-byte boundary, so
    // that the copy moves 16 bytes at a time. `half` is a multiple of 8 (stage_words of 32)
    // and `chunk` of 4, so every chunk of the tile has the same lead, and chunk + 3 fit.
    const unsigned int half = x_binary ? stage_words / 2 : stage_words / 4;
    const unsigned int chunk = (half - 4u) & ~3u;
    const unsigned int* x_bits = reinterpret_cast<const unsigned int*>(x_vals);
    unsigned int* const col_stage = stage + bd_words_past16(x_cols + origin);
    unsigned int* const val_stage = stage + 2 * half + bd_words_past16(x_bits + origin);
    const unsigned int chunks = (total + chunk - 1) / chunk;
    if (chunks > 0) {
        bd_stage_words<THREADS, ASYNC>(col_stage, x_cols + origin, min(chunk, total));
        if (!x_binary) {
            bd_stage_words<THREADS, ASYNC>(val_stage, x_bits + origin, min(chunk, total));
        }
        bd_stage_commit<ASYNC>();
    }
    BdRowWalk walk{0u, tile.starts[1]};
    for (unsigned int c = 0; c < chunks; ++c) {
        const unsigned int c0 = c * chunk;
        const unsigned int m = min(chunk, total - c0);
        const unsigned int b = c & 1u;
        if (c + 1 < chunks) {
            const unsigned int next0 = c0 + chunk;
            const unsigned int next_m = min(chunk, total - next0);
            bd_stage_words<THREADS, ASYNC>(col_stage + (b ^ 1u) * half, x_cols + origin + next0, next_m);
            if (!x_binary) {
                bd_stage_words<THREADS, ASYNC>(val_stage + (b ^ 1u) * half, x_bits + origin + next0, next_m);
            }
            bd_stage_commit<ASYNC>();
            bd_stage_wait<ASYNC, 1>();
        } else {
            bd_stage_wait<ASYNC, 0>();
        }
        __syncthreads();
        const unsigned int* cols = col_stage + b * half;
        const unsigned int* vals = val_stage + b * half;
        if (w1_bits != 0u) {
            if (w1_ell == 2u && x_binary) {
                bd_scatter_scaled<THREADS, 2, true, SHARED_ACC, ASYNC>(cur, stride, cols, vals, c0, m, w1_entries,
                                                                       w1_bits, w1_base, walk, tile);
            } else if (w1_ell == 2u) {
                bd_scatter_scaled<THREADS, 2, false, SHARED_ACC, ASYNC>(cur, stride, cols, vals, c0, m, w1_entries,
                                                                        w1_bits, w1_base, walk, tile);
            } else if (x_binary) {
                bd_scatter_scaled<THREADS, 4, true, SHARED_ACC, ASYNC>(cur, stride, cols, vals, c0, m, w1_entries,
                                                                       w1_bits, w1_base, walk, tile);
            } else {
                bd_scatter_scaled<THREADS, 4, false, SHARED_ACC, ASYNC>(cur, stride, cols, vals, c0, m, w1_entries,
                                                                        w1_bits, w1_base, walk, tile);
            }
        } else {
            bd_scatter_pairs<THREADS>(cur, stride, cols, vals, c0, m, x_binary, w1_offsets, w1_entries, w1_ell, walk,
                                      tile);
        }
        // The buffer just read is refilled by the next iteration's copies.
        __syncthreads();
    }
    const bool integer_sums = w1_bits != 0u && x_binary;
    bd_for_quads<THREADS>(n, padded / 4u, [&](unsigned int r, unsigned int q) {
        float4* at = reinterpret_cast<float4*>(cur + r * stride) + q;
        float v[4] = {at->x, at->y, at->z, at->w};
        // Per-neuron biases a float4 at a time (a layer's stride is a multiple of 32).
        const float4 b4 = biases != nullptr ? __ldg(reinterpret_cast<const float4*>(biases) + q)
                                            : make_float4(bias, bias, bias, bias);
        const float b[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
        for (unsigned int t = 0; t < 4; ++t) {
            v[t] = bd_first_output(v[t], integer_sums, w1_base, b[t], upper);
        }
        *at = make_float4(v[0], v[1], v[2], v[3]);
    });
    __syncthreads();
}

// Rows base .. base+n-1 of the previous launch's list into slots 0..n-1. ASYNC (cur in shared
// memory): with cp.async, every copy of a thread in flight at once; a load and a store took one
// round trip a float4 a thread (at 65536 a 7-row tile is 112 KB; ~12 % of launch 2's stall
// samples, 2026-11-28f call 2).
template <unsigned int THREADS, bool ASYNC>
__device__ __forceinline__ void bd_load_carried(float* cur, unsigned int stride, unsigned int base, unsigned int n,
                                                const unsigned int* __restrict__ carry_ids,
                                                const float* __restrict__ carry_vals, unsigned int carry_stride,
                                                BdTile& tile) {
    const unsigned int vectors = carry_stride / 4;
    const float4* from = reinterpret_cast<const float4*>(carry_vals + (unsigned long long)base * carry_stride);
    bd_for_quads<THREADS>(n, vectors, [&](unsigned int r, unsigned int q) {
        float4* to = reinterpret_cast<float4*>(cur + r * stride) + q;
        const float4* source = from + (unsigned long long)r * vectors + q;
#if BD_HAS_CP_ASYNC
        if (ASYNC) {
            bd_copy16_async((unsigned int)__cvta_generic_to_shared(to), source);
            return;
        }
#endif
        *to = __ldg(source);
    });
    bd_stage_commit<ASYNC>();
    bd_stage_wait<ASYNC, 0>();
    for (unsigned int i = threadIdx.x; i < n; i += THREADS) {
        tile.ids[i] = carry_ids[base + i];
    }
    __syncthreads();
}

// A layer's work items, one per warp at a time: (output group g of 32 columns, up to
// BD_ROWS live rows from first_row), item(g, first_row, rows) for each.
template <unsigned int THREADS, typename Item>
__device__ __forceinline__ void bd_for_items(const BdLayer& layer, unsigned int live, Item item) {
    const unsigned int groups = (layer.out_width + 31u) / 32u;
    bd_for_grid<THREADS / SPDNN_WARP_SIZE>(threadIdx.x / SPDNN_WARP_SIZE, (live + BD_ROWS - 1u) / BD_ROWS, groups,
                                           [&](unsigned int row_block, unsigned int g) {
                                               const unsigned int first_row = row_block * BD_ROWS;
                                               item(g, first_row, min((unsigned int)BD_ROWS, live - first_row));
                                           });
}

// Adds a dense layer's products to the sums of R rows (at[r]: row r's offset in cur), four
// inputs a step, w this lane's output column's first quad (layout::dense_index: a step's four
// weights side by side, steps 4 · layer.dense_stride floats apart). With PREDICATED, only rows
// r < rows are summed (the predicated items); without, all R are (the exact items, R known at
// compile time). Unrolled by 4: 16 weights in flight, so a 64-input layer waits on 4 L2 round
// trips instead of 8 (the official 1024's tail launches, tiles of 1-3 rows: launches 3 and 4
// 0.051 -> 0.037 and 0.033 -> 0.026 ms, one H100, 2026-11-27j call 1; the set's shared
// instance 66 -> 78 registers, still three blocks an SM).
template <unsigned int R, bool PREDICATED>
__device__ __forceinline__ void bd_dense_sums(float (&acc)[R], const unsigned int (&at)[R], unsigned int rows,
                                              const float* cur, const float* __restrict__ w, const BdLayer& layer) {
    const unsigned long long ws = layer.dense_stride;
    const unsigned int inputs = (layer.in_width + 3u) & ~3u;
#pragma unroll 4
    for (unsigned int k = 0; k < inputs; k += 4) {
        const float* q = w + k * ws;
        const float w0 = __ldg(q);
        const float w1 = __ldg(q + 1);
        const float w2 = __ldg(q + 2);
        const float w3 = __ldg(q + 3);
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            if (!PREDICATED || r < rows) {
                const float4 y = *reinterpret_cast<const float4*>(cur + at[r] + k);
                acc[r] = fmaf(y.x, w0, acc[r]);
                acc[r] = fmaf(y.y, w1, acc[r]);
                acc[r] = fmaf(y.z, w2, acc[r]);
                acc[r] = fmaf(y.w, w3, acc[r]);
            }
        }
    }
}

// bd_ell_slots' loop over slots s0 .. s1 - 1, unrolled by UNROLL.
template <int UNROLL, typename E, typename Step>
__device__ __forceinline__ void bd_ell_plain(const E* __restrict__ e, unsigned int s0, unsigned int s1,
                                             unsigned int shift, float base, Step step) {
#pragma unroll UNROLL
    for (unsigned int s = s0; s < s1; ++s, e += 32) {
        unsigned int k;
        float wv;
        bd_ell_decode(__ldg(e), shift, base, k, wv);
        step(k, wv);
    }
}

// Runs step(k, w) for each ELL entry of this lane's column, slots s0 .. s1 - 1 (entries E
// from e, 32 apart; shift, base: a scaled layer's index bits and base value), in slot order.
// Pairs: a loop unrolled by 4. Scaled entries: a loop unrolled by UNROLL (the predicated
// items, bd_layer, 1: unrolled, the three loops cost the shared instances spills; the exact
// ones, bd_item, 2), or, with AHEAD > 0 and at least AHEAD slots, a ring of AHEAD entries
// whose loads stay in flight, each refilled with the entry AHEAD slots on as it is used:
// whole turns of the ring without a branch, then the last partial turn. With few rows an
// item (4 at N = 4096 after layer 8) the sums hide little of a load's latency: unrolled by
// 2, the loop waited for an L2 round trip every 2 slots (ncu: 57 % of the stalls of 4096's
// launch 3). Columns of fewer slots (2 an output in the generated networks' layers 2-8)
// keep the loop: there the ring's loads and checks cost more than the wait they hide. A
// ring of pairs took the pairs set's wide split instance to 16 bytes of spills for no gain
// on random networks, so pairs have none. The ring holds 16-bit entries widened to 32 bits:
// kept as unsigned short, each refill was merged into its register (PRMT) as soon as it was
// issued, which waited for the load.
template <int UNROLL, int AHEAD, typename E, typename Step>
__device__ __forceinline__ void bd_ell_slots(const E* __restrict__ e, unsigned int s0, unsigned int s1,
                                             unsigned int shift, float base, Step step) {
    constexpr unsigned int depth = AHEAD;
    const unsigned int slots = s1 - s0;
    if constexpr (sizeof(E) == sizeof(uint2)) {
        bd_ell_plain<4>(e, s0, s1, shift, base, step);
    } else if constexpr (AHEAD == 0) {
        bd_ell_plain<UNROLL>(e, s0, s1, shift, base, step);
    } else if (slots < depth) {
        bd_ell_plain<UNROLL>(e, s0, s1, shift, base, step);
    } else {
        unsigned int ahead[depth];
#pragma unroll
        for (unsigned int u = 0; u < depth; ++u) {
            ahead[u] = __ldg(e + u * 32u);
        }
        const E* refill = e + depth * 32u;
        unsigned int s = 0;
        for (; s + depth <= slots; s += depth) {
#pragma unroll
            for (unsigned int u = 0; u < depth; ++u) {
                const unsigned int entry = ahead[u];
                ahead[u] = s + u + depth < slots ? (unsigned int)__ldg(refill + u * 32u) : 0u;
                unsigned int k;
                float wv;
                bd_ell_decode(entry, shift, base, k, wv);
                step(k, wv);
            }
            refill += depth * 32u;
        }
#pragma unroll
        for (unsigned int u = 0; u < depth; ++u) {
            if (s + u < slots) {
                unsigned int k;
                float wv;
                bd_ell_decode(ahead[u], shift, base, k, wv);
                step(k, wv);
            }
        }
    }
}

// Runs bd_ell_slots<UNROLL, AHEAD> over slots s0 .. s1 - 1 of an ELL layer in its format
// (the format is uniform over the layer: so is the branch): pairs as they are; a scaled
// layer's first unit holds (base value bits, index bits), read inside its branch only. Only
// the formats of BD_FORMATS are compiled; the last branch is the set's last format, without
// a test: the host compiled the set from the layers.
template <int UNROLL, int AHEAD, typename Step>
__device__ __forceinline__ void bd_ell_layer(const BdLayer& layer, const uint2* __restrict__ ell, unsigned int s0,
                                             unsigned int s1, unsigned int lane, Step step) {
    if (BD_RUNS(BD_FORMAT_ELL) && layer.format == BD_FORMAT_ELL) {
        bd_ell_slots<UNROLL, AHEAD>(bd_ell_first<uint2>(layer, ell, s0, lane), s0, s1, 0u, 0.0f, step);
    } else if (BD_RUNS(BD_FORMAT_ELL_SCALED16) && layer.format == BD_FORMAT_ELL_SCALED16) {
        const uint2 scale = __ldg(ell + layer.offset);
        bd_ell_slots<UNROLL, AHEAD>(bd_ell_first<unsigned short>(layer, ell, s0, lane), s0, s1, scale.y,
                            __uint_as_float(scale.x), step);
    } else if (BD_RUNS(BD_FORMAT_ELL_SCALED32)) {
        const uint2 scale = __ldg(ell + layer.offset);
        bd_ell_slots<UNROLL, AHEAD>(bd_ell_first<unsigned int>(layer, ell, s0, lane), s0, s1, scale.y,
                            __uint_as_float(scale.x), step);
    }
}

// Layer l (after the first) over the live slots: work items of (32 outputs, BD_ROWS live
// rows), one per warp at a time; lane c % 32 accumulates output c of each of the rows, then
// adds its bias (biases[l * bias_stride + c], one load an item, or the scalar when
// bias_stride is 0).
template <unsigned int THREADS>
__device__ __forceinline__ void bd_layer(const BdLayer& layer, unsigned int l, const float* cur, float* next,
                                         unsigned int stride, unsigned int live, const BdTile& tile,
                                         const float* __restrict__ dense, const uint2* __restrict__ ell,
                                         const unsigned int* __restrict__ group_starts, float bias,
                                         const float* __restrict__ biases, unsigned int bias_stride, float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    bd_for_items<THREADS>(layer, live, [&](unsigned int g, unsigned int first_row, unsigned int rows) {
        const unsigned int c = g * 32u + lane;
        unsigned int at[BD_ROWS];
        float acc[BD_ROWS];
#pragma unroll
        for (unsigned int r = 0; r < BD_ROWS; ++r) {
            // Rows past the item's count (the tile's last, short item) are neither read nor
            // written: with few rows a tile (wide rows) they would cost as much as real ones.
            at[r] = tile.live[first_row + min(r, rows - 1u)] * stride;
            acc[r] = 0.0f;
        }
        if (BD_RUNS(BD_FORMAT_DENSE) && layer.format == BD_FORMAT_DENSE) {
            bd_dense_sums<BD_ROWS, true>(acc, at, rows, cur, dense + layer.offset + 4u * c, layer);
        } else {
            // The item's first `rows` of BD_ROWS rows (at[r]: row r's offset in cur); these
            // items run the global tiles (BD_RUNS says what their registers cost), the exact
            // ones (bd_item) the shared and split tiles.
            const unsigned int s0 = group_starts[layer.group_table + g];
            const unsigned int s1 = group_starts[layer.group_table + g + 1];
            bd_ell_layer<1, 0>(layer, ell, s0, s1, lane, [&](unsigned int k, float wv) {
#pragma unroll
                for (unsigned int r = 0; r < BD_ROWS; ++r) {
                    if (r < rows) {
                        acc[r] = fmaf(cur[at[r] + k], wv, acc[r]);
                    }
                }
            });
        }
        // Loaded after the sums: a value (or a pointer) live across them spills the wide split
        // instance at its 80 registers.
        const float b = bias_stride != 0u ? __ldg(biases + (unsigned long long)l * bias_stride + c) : bias;
#pragma unroll
        for (unsigned int r = 0; r < BD_ROWS; ++r) {
            if (r < rows) {
                next[at[r] + c] = spdnn_clamp_activation(acc[r] + b, upper);
            }
        }
    });
}

// One work item of an exact layer: 32 outputs (group g, lane's column c) of exactly R live
// rows (live positions first_row .. first_row + R - 1), R known at compile time, so no
// instruction is issued for a row the item does not have (the predicated items issue all
// BD_ROWS rows' loads and multiply-adds, the missing ones switched off: at 3 rows a tile,
// 5/8 of them). Same sums in the same order as bd_layer: bit for bit the same outputs.
// cur lies in shared memory (shared and split placements): the ELL gathers use 32-bit
// shared addresses (bd_lds); NEXT_SHARED: so does next (shared placement), and the outputs
// are stored through them (bd_sts).
template <unsigned int R, bool NEXT_SHARED>
__device__ __forceinline__ void bd_item(const BdLayer& layer, unsigned int l, unsigned int g, unsigned int c,
                                        unsigned int first_row, const float* cur, float* next, unsigned int stride,
                                        const BdTile& tile, const float* __restrict__ dense,
                                        const uint2* __restrict__ ell, const unsigned int* __restrict__ group_starts,
                                        float bias, const float* __restrict__ biases, unsigned int bias_stride,
                                        float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    float acc[R];
#pragma unroll
    for (unsigned int r = 0; r < R; ++r) {
        acc[r] = 0.0f;
    }
    // Byte address of each row's first float in the shared window (the ELL gathers', and with
    // NEXT_SHARED the outputs' stores: next's rows lie as far from cur's).
    const unsigned int window = (unsigned int)__cvta_generic_to_shared(cur);
    unsigned int row_at[R];
    if (BD_RUNS(BD_FORMAT_DENSE) && layer.format == BD_FORMAT_DENSE) {
        unsigned int at[R];
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            at[r] = tile.live[first_row + r] * stride;
        }
        bd_dense_sums<R, false>(acc, at, R, cur, dense + layer.offset + 4u * c, layer);
    } else {
        const unsigned int s0 = group_starts[layer.group_table + g];
        const unsigned int s1 = group_starts[layer.group_table + g + 1];
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            row_at[r] = window + tile.live[first_row + r] * stride * 4u;
        }
        // A module that also runs dense layers (the official 1024: 114 dense, 5 scaled) has no
        // ring: it took that set's shared instance from 66 registers to 80 with 16 bytes of
        // spills, and the official 1024's launch 1 from 0.099 to 0.110 ms (2026-11-27i, call 4).
        constexpr int ahead = BD_RUNS(BD_FORMAT_DENSE) ? 0 : BD_ITEM_AHEAD;
        bd_ell_layer<2, ahead>(layer, ell, s0, s1, lane, [&](unsigned int k, float wv) {
            const unsigned int offset = k * 4u;
#pragma unroll
            for (unsigned int r = 0; r < R; ++r) {
                acc[r] = fmaf(bd_lds(row_at[r] + offset), wv, acc[r]);
            }
        });
    }
    // As in bd_layer: the bias after the sums. With NEXT_SHARED an ELL layer's outputs are
    // stored through the gathers' row addresses (a shared-memory tile's second buffer), an add
    // and a store a row; else the rows' offsets are read again (not live across the sums).
    const float b = bias_stride != 0u ? __ldg(biases + (unsigned long long)l * bias_stride + c) : bias;
    // Sets with dense layers keep the offsets read again: row_at live across a dense layer's
    // sums took their shared instance to 128 registers with spills.
    if (NEXT_SHARED && !BD_RUNS(BD_FORMAT_DENSE)) {
        const unsigned int to_next = (unsigned int)__cvta_generic_to_shared(next) - window + 4u * c;
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            bd_sts(row_at[r] + to_next, spdnn_clamp_activation(acc[r] + b, upper));
        }
    } else {
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            next[tile.live[first_row + r] * stride + c] = spdnn_clamp_activation(acc[r] + b, upper);
        }
    }
}

// bd_item for `rows` (1 .. R) known only at run time: one instance per count.
template <unsigned int R, bool NEXT_SHARED>
__device__ __forceinline__ void bd_item_rows(unsigned int rows, const BdLayer& layer, unsigned int l,
                                             unsigned int g, unsigned int c, unsigned int first_row,
                                             const float* cur, float* next, unsigned int stride,
                                             const BdTile& tile, const float* __restrict__ dense,
                                             const uint2* __restrict__ ell,
                                             const unsigned int* __restrict__ group_starts, float bias,
                                             const float* __restrict__ biases, unsigned int bias_stride,
                                             float upper) {
    if (rows == R) {
        bd_item<R, NEXT_SHARED>(layer, l, g, c, first_row, cur, next, stride, tile, dense, ell, group_starts, bias,
                                biases, bias_stride, upper);
    } else if constexpr (R > 1) {
        bd_item_rows<R - 1, NEXT_SHARED>(rows, layer, l, g, c, first_row, cur, next, stride, tile, dense, ell,
                                         group_starts, bias, biases, bias_stride, upper);
    }
}

// Layer l (after the first) in exact items: the work items of bd_layer (32 outputs, up to
// BD_ROWS live rows, one per warp at a time), each run by the instance of its row count
// (NEXT_SHARED: next lies in shared memory, bd_item).
template <unsigned int THREADS, bool NEXT_SHARED>
__device__ __forceinline__ void bd_layer_exact(const BdLayer& layer, unsigned int l, const float* cur, float* next,
                                               unsigned int stride, unsigned int live, const BdTile& tile,
                                               const float* __restrict__ dense, const uint2* __restrict__ ell,
                                               const unsigned int* __restrict__ group_starts, float bias,
                                               const float* __restrict__ biases, unsigned int bias_stride,
                                               float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    bd_for_items<THREADS>(layer, live, [&](unsigned int g, unsigned int first_row, unsigned int rows) {
        bd_item_rows<BD_ROWS, NEXT_SHARED>(rows, layer, l, g, g * 32u + lane, first_row, cur, next, stride, tile,
                                           dense, ell, group_starts, bias, biases, bias_stride, upper);
    });
}

// ---- Circulant layers (layout::Circulant) ----
//
// A circulant layer's output c sums w_s · x[(c + d_s) mod in] slot by slot, with the same d_s
// and w_s at slot s of every column, proved on the host from the stored entries. Its table
// (ell + desc word 7): [slots, aligned], then [d_s, w_s bits] a slot. A lane computes
// BD_CIRCULANT_OUTPUTS consecutive outputs of a row: a slot's inputs are as many consecutive
// floats, one 16-byte shared load (two 8-byte ones where d_s is 2 mod 4), where bd_item
// gathers them one at a time, and the outputs are one 16-byte store. The same fused
// multiply-adds in the same slot order as bd_item: bit for bit the same outputs.

// Four floats of shared memory at a 16-byte aligned shared-window address (bd_lds's form).
__device__ __forceinline__ float4 bd_lds4(unsigned int address) {
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(address));
    return v;
}

// Two floats of shared memory at an 8-byte aligned shared-window address.
__device__ __forceinline__ float2 bd_lds2(unsigned int address) {
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(address));
    return v;
}

// Four floats to shared memory at a 16-byte aligned shared-window address.
__device__ __forceinline__ void bd_sts4(unsigned int address, float4 v) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "f"(v.x), "f"(v.y), "f"(v.z),
                 "f"(v.w)
                 : "memory");
}

// A circulant layer of S slots over the live rows: the (group of 32 lanes' outputs, live
// position) pairs, group by group, a contiguous share a warp (shares differ by at most one
// pair, where items of BD_ROWS rows left warps idle in narrow rows); a lane loads its inputs'
// offsets, weights and biases once a group of its share. ALIGNED: every d_s a multiple of 4.
// cur lies in shared memory; NEXT_SHARED: so does next (else global scratch, split tiles).
template <unsigned int THREADS, unsigned int S, bool ALIGNED, bool NEXT_SHARED>
__device__ __forceinline__ void bd_circulant_share(const BdLayer& layer, unsigned int l,
                                                   const uint2* __restrict__ table, const float* cur, float* next,
                                                   unsigned int stride, unsigned int live, const BdTile& tile,
                                                   float bias, const float* __restrict__ biases,
                                                   unsigned int bias_stride, float upper) {
    constexpr unsigned int warps = THREADS / SPDNN_WARP_SIZE;
    constexpr unsigned int outputs = BD_CIRCULANT_OUTPUTS;
    static_assert(outputs == 4, "a circulant lane loads and stores a float4");
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int groups = (layer.out_width / outputs + SPDNN_WARP_SIZE - 1u) / SPDNN_WARP_SIZE;
    const unsigned int pairs = live * groups;
    const unsigned int end = (warp + 1u) * pairs / warps;
    const unsigned int window = (unsigned int)__cvta_generic_to_shared(cur);
    const unsigned int to_next = NEXT_SHARED ? (unsigned int)__cvta_generic_to_shared(next) - window : 0u;
    for (unsigned int p = warp * pairs / warps; p < end;) {
        const unsigned int g = p / live;
        const unsigned int r0 = p - g * live;
        const unsigned int r1 = min(live, end - g * live);
        p = g * live + r1;
        const unsigned int c = (g * SPDNN_WARP_SIZE + lane) * outputs;
        if (c >= layer.out_width) {
            continue;
        }
        // Byte offsets in a row of this lane's inputs at each slot (and, unaligned, of the
        // second pair), and the slots' weights.
        unsigned int at[S];
        unsigned int at_high[S];
        float w[S];
#pragma unroll
        for (unsigned int s = 0; s < S; ++s) {
            const uint2 e = __ldg(table + 1u + s);
            unsigned int k = c + e.x;
            k = k >= layer.in_width ? k - layer.in_width : k;
            at[s] = 4u * k;
            if (!ALIGNED) {
                unsigned int k_high = c + 2u + e.x;
                k_high = k_high >= layer.in_width ? k_high - layer.in_width : k_high;
                at_high[s] = 4u * k_high;
            }
            w[s] = __uint_as_float(e.y);
        }
        const float4 b = bias_stride != 0u
                             ? __ldg(reinterpret_cast<const float4*>(biases + (unsigned long long)l * bias_stride + c))
                             : make_float4(bias, bias, bias, bias);
        for (unsigned int r = r0; r < r1; ++r) {
            const unsigned int row = tile.live[r] * stride;
            const unsigned int row_at = window + 4u * row;
            float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (unsigned int s = 0; s < S; ++s) {
                float4 x;
                if (ALIGNED) {
                    x = bd_lds4(row_at + at[s]);
                } else {
                    const float2 low = bd_lds2(row_at + at[s]);
                    const float2 high = bd_lds2(row_at + at_high[s]);
                    x = make_float4(low.x, low.y, high.x, high.y);
                }
                acc.x = fmaf(x.x, w[s], acc.x);
                acc.y = fmaf(x.y, w[s], acc.y);
                acc.z = fmaf(x.z, w[s], acc.z);
                acc.w = fmaf(x.w, w[s], acc.w);
            }
            const float4 y = make_float4(
                spdnn_clamp_activation(acc.x + b.x, upper), spdnn_clamp_activation(acc.y + b.y, upper),
                spdnn_clamp_activation(acc.z + b.z, upper), spdnn_clamp_activation(acc.w + b.w, upper));
            if (NEXT_SHARED) {
                bd_sts4(row_at + to_next + 4u * c, y);
            } else {
                *reinterpret_cast<float4*>(next + row + c) = y;
            }
        }
    }
}

// bd_circulant_share for `slots` (1 .. S) known only at run time: one instance per count.
template <unsigned int THREADS, unsigned int S, bool NEXT_SHARED>
__device__ __forceinline__ void bd_circulant_slots(unsigned int slots, bool aligned, const BdLayer& layer,
                                                   unsigned int l, const uint2* __restrict__ table, const float* cur,
                                                   float* next, unsigned int stride, unsigned int live,
                                                   const BdTile& tile, float bias, const float* __restrict__ biases,
                                                   unsigned int bias_stride, float upper) {
    if (slots == S) {
        if (aligned) {
            bd_circulant_share<THREADS, S, true, NEXT_SHARED>(layer, l, table, cur, next, stride, live, tile, bias,
                                                              biases, bias_stride, upper);
        } else {
            bd_circulant_share<THREADS, S, false, NEXT_SHARED>(layer, l, table, cur, next, stride, live, tile, bias,
                                                               biases, bias_stride, upper);
        }
    } else if constexpr (S > 1) {
        bd_circulant_slots<THREADS, S - 1, NEXT_SHARED>(slots, aligned, layer, l, table, cur, next, stride, live,
                                                        tile, bias, biases, bias_stride, upper);
    }
}

// Layer l, circulant (table: its first unit), over the live rows of a tile in shared memory.
template <unsigned int THREADS, bool NEXT_SHARED>
__device__ __forceinline__ void bd_layer_circulant(const BdLayer& layer, unsigned int l,
                                                   const uint2* __restrict__ table, const float* cur, float* next,
                                                   unsigned int stride, unsigned int live, const BdTile& tile,
                                                   float bias, const float* __restrict__ biases,
                                                   unsigned int bias_stride, float upper) {
    const uint2 head = __ldg(table);
    bd_circulant_slots<THREADS, BD_CIRCULANT_SLOTS, NEXT_SHARED>(head.x, head.y != 0u, layer, l, table, cur, next,
                                                                 stride, live, tile, bias, biases, bias_stride,
                                                                 upper);
}

// This lane's row's outputs c < width of a layer, for its checks: their largest and least
// (clipped outputs lie in [0, upper]: some output is nonzero iff the largest is > 0, all are
// at the bound iff the least is; two instructions an output where the flags took five).
__device__ __forceinline__ void bd_lane_range(float v, unsigned int c, unsigned int width, float& largest,
                                              float& least) {
    if (c < width) {
        largest = fmaxf(largest, v);
        least = fminf(least, v);
    }
}

// The range of four real outputs (bd_lane_range), six instructions and two to merge.
__device__ __forceinline__ void bd_quad_range(float4 v, float& largest, float& least) {
    largest = fmaxf(largest, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    least = fminf(least, fminf(fminf(v.x, v.y), fminf(v.z, v.w)));
}

// The retirement rule, for tiles (bd_retire) and spread launches (bd_spread_live): after
// `done` layers a row stays live unless it is all zero, or all at the bound with
// done >= suffix_start.
__device__ __forceinline__ bool bd_keeps(bool nonzero, bool at_bound, unsigned int done, unsigned int suffix_start) {
    return nonzero && !(at_bound && done >= suffix_start);
}

// The state of a row that finished: a category all at the bound, or all zero.
__device__ __forceinline__ unsigned char bd_finished_state(bool nonzero) {
    return nonzero ? BD_STATE_BOUND : BD_STATE_ZERO;
}

// After `done` layers (outputs of `width` real columns in cur): rows all zero finish
// (BD_STATE_ZERO), rows all at the bound finish when done >= suffix_start (BD_STATE_BOUND);
// the live list keeps the others, in order.
template <unsigned int THREADS>
__device__ __forceinline__ void bd_retire(BdTile& tile, const float* cur, unsigned int stride, unsigned int width,
                                          unsigned int done, unsigned int suffix_start, float upper,
                                          unsigned char* __restrict__ state) {
    constexpr unsigned int warps = THREADS / SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int live = tile.live_count;
    // A float4 a lane: the row's padding (past width, up to a multiple of 32) holds zeros,
    // which count for "all zero" and are left out of "all at the bound". A row takes the
    // fewest lanes, a power of two, that hold its float4s (a warp at most), so a warp checks
    // 32 / group rows at once: the official 1024's 64-wide rows two, 32-wide ones four (the
    // check was a fifth of its launch 1's instructions with a warp a row).
    const unsigned int quads = (width + 3u) / 4u;
    // log2 of the lanes a row takes: ceil(log2(quads)), 0 to 5.
    const unsigned int group_bits = quads >= SPDNN_WARP_SIZE ? 5u : (quads <= 1u ? 0u : 32u - __clz(quads - 1u));
    const unsigned int group = 1u << group_bits;
    const unsigned int rows_a_warp = SPDNN_WARP_SIZE >> group_bits;
    const unsigned int part = lane & (group - 1u);
    const unsigned int warp_row = lane >> group_bits;
    const unsigned int group_mask =
        (group_bits == 5u ? SPDNN_FULL_MASK : (1u << group) - 1u) << (warp_row << group_bits);
    // Quads whose four outputs are all real; the one after them, if any, holds padding too.
    const unsigned int full = width / 4u;
    for (unsigned int p0 = warp * rows_a_warp; p0 < live; p0 += warps * rows_a_warp) {
        const unsigned int p = p0 + warp_row;
        const unsigned int slot = p < live ? tile.live[p] : 0u;
        // This lane's part of the row's range (bd_lane_range): clipped outputs lie in [0, upper],
        // so the row is nonzero iff its largest output is > 0, and all at the bound iff its
        // least real one is upper; 8 instructions a float4 where the flags took ~22.
        float largest = 0.0f;
        float least = upper;
        // This lane's float4s of the row: from `first`, every `step`-th (a power of two).
        const auto check = [&](unsigned int first, unsigned int step) {
            const float4* row = reinterpret_cast<const float4*>(cur + slot * stride);
            for (unsigned int q = first; q < full; q += step) {
                bd_quad_range(row[q], largest, least);
            }
            if (full < quads && (full & (step - 1u)) == first) {
                const float4 v = row[full];
                const unsigned int c = 4u * full;
                bd_lane_range(v.x, c, width, largest, least);
                bd_lane_range(v.y, c + 1u, width, largest, least);
                bd_lane_range(v.z, c + 2u, width, largest, least);
            }
        };
        // A row a warp keeps the stride a constant (4096-wide rows at N = 65536: 32 float4s
        // a lane).
        if (group_bits == 5u) {
            check(lane, SPDNN_WARP_SIZE);
        } else if (p < live) {
            check(part, group);
        }
        const bool nonzero = largest > 0.0f;
        const bool at_bound = least == upper;
        const unsigned int nonzero_lanes = __ballot_sync(SPDNN_FULL_MASK, nonzero);
        const unsigned int off_bound_lanes = __ballot_sync(SPDNN_FULL_MASK, !at_bound);
        if (part == 0 && p < live) {
            const bool row_nonzero = (nonzero_lanes & group_mask) != 0u;
            const bool keep = bd_keeps(row_nonzero, (off_bound_lanes & group_mask) == 0u, done, suffix_start);
            tile.keep[p] = keep;
            if (!keep) {
                state[tile.ids[slot]] = bd_finished_state(row_nonzero);
            }
        }
    }
    __syncthreads();
    if (warp == 0) {
        unsigned int kept = 0;
        for (unsigned int p0 = 0; p0 < live; p0 += SPDNN_WARP_SIZE) {
            const unsigned int p = p0 + lane;
            const bool keep = p < live && tile.keep[p] != 0;
            const unsigned int slot = p < live ? tile.live[p] : 0u;
            const unsigned int mask = __ballot_sync(SPDNN_FULL_MASK, keep);
            __syncwarp();
            // Destinations never pass the positions read: in place, in order.
            if (keep) {
                tile.live[kept + __popc(mask & ((1u << lane) - 1u))] = slot;
            }
            kept += __popc(mask);
        }
        if (lane == 0) {
            tile.live_count = kept;
        }
    }
    __syncthreads();
}

// The end of a tile: the live rows go to the next launch's list (carry_stride > 0) or
// get BD_STATE_LIVE and their final values (out_width floats a row of out).
template <unsigned int THREADS>
__device__ __forceinline__ void bd_finish_tile(BdTile& tile, const float* cur, unsigned int stride,
                                               unsigned int* __restrict__ carry_ids, float* __restrict__ carry_vals,
                                               unsigned int* __restrict__ carry_count, unsigned int carry_stride,
                                               unsigned char* __restrict__ state, float* __restrict__ out,
                                               unsigned int out_width) {
    constexpr unsigned int warps = THREADS / SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int live = tile.live_count;
    if (carry_stride == 0) {
        for (unsigned int p = warp; p < live; p += warps) {
            const unsigned int slot = tile.live[p];
            const unsigned int id = tile.ids[slot];
            const float* row = cur + slot * stride;
            float* to = out + (unsigned long long)id * out_width;
            for (unsigned int c = lane; c < out_width; c += SPDNN_WARP_SIZE) {
                to[c] = row[c];
            }
            if (lane == 0) {
                state[id] = BD_STATE_LIVE;
            }
        }
    } else {
        if (threadIdx.x == 0) {
            tile.append = live > 0 ? atomicAdd(carry_count, live) : 0u;
        }
        __syncthreads();
        const unsigned int at = tile.append;
        for (unsigned int p = threadIdx.x; p < live; p += THREADS) {
            carry_ids[at + p] = tile.ids[tile.live[p]];
        }
        const unsigned int vectors = carry_stride / 4;
        float4* to = reinterpret_cast<float4*>(carry_vals + (unsigned long long)at * carry_stride);
        bd_for_quads<THREADS>(live, vectors, [&](unsigned int p, unsigned int q) {
            to[(unsigned long long)p * vectors + q] = reinterpret_cast<const float4*>(cur + tile.live[p] * stride)[q];
        });
    }
    __syncthreads();
}

// Where a launch keeps its tile's two buffers.
#define BD_PLACE_SHARED 0
#define BD_PLACE_SPLIT 1
#define BD_PLACE_GLOBAL 2

// After a layer of a split tile: the live rows' outputs (`width` floats, a multiple of 32)
// come back from the scratch into the shared buffer.
template <unsigned int THREADS>
__device__ __forceinline__ void bd_copy_back(float* cur, const float* next, unsigned int stride,
                                             unsigned int width, const BdTile& tile) {
    const unsigned int vectors = width / 4;
    const unsigned int live = tile.live_count;
    bd_for_quads<THREADS>(live, vectors, [&](unsigned int p, unsigned int q) {
        const unsigned int at = tile.live[p] * stride;
        reinterpret_cast<float4*>(cur + at)[q] = reinterpret_cast<const float4*>(next + at)[q];
    });
}

// Rows a tile of a launch of `count` rows holds, the same in every block:
// ⌈count / (gridDim.x · BD_TILE_WAVES)⌉, at least 1, at most tile_max.
__device__ __forceinline__ unsigned int bd_rows_per_tile(unsigned int count, unsigned int tile_max) {
    const unsigned long long spread = (unsigned long long)gridDim.x * BD_TILE_WAVES;
    return (unsigned int)min((unsigned long long)tile_max, max(1ull, (count + spread - 1) / spread));
}

// The first row of the block's next tile: thread 0 takes rows_per_tile rows from the queue
// (base, in shared memory, hands it to the others). count or more when none is left.
__device__ __forceinline__ unsigned int bd_next_tile(unsigned int* queue, unsigned int& base,
                                                     unsigned int rows_per_tile) {
    if (threadIdx.x == 0) {
        base = atomicAdd(queue, rows_per_tile);
    }
    __syncthreads();
    return base;
}

// Whether a tile of placement PLACE runs a layer whose circulant table is at `circulant` (0:
// none; descriptor word 7) in circulant items (bd_layer_circulant).
template <unsigned int PLACE>
__device__ __forceinline__ bool bd_runs_circulant(unsigned int circulant, unsigned int exact_items) {
    return BD_RUNS(BD_CIRCULANT_CODE) && PLACE != BD_PLACE_GLOBAL && exact_items > 1u && circulant != 0u;
}

// Whether a tile skips its row check after `done` layers (of a launch ending at layer `end`):
// when the next layer of the launch runs circulant items, whose work a row (an LDS.128, four
// FFMA and a share of an STS.128 a slot and four outputs) is about what the check's is (an
// LDS.128 and eight FMNMX a float4, two votes and three barriers a tile), so computing the
// rows that died costs less than finding them. Exact either way: a zero row stays zero
// (biases are at most 0) and a row at the bound past suffix_start stays there (proved), so the
// next check finishes them with the same state; the launch's last layer is always checked.
// Only the next layer's word 7 is read: its whole descriptor (bd_layer_at) took the
// circulant set's shared instance from 64 registers to 48 with 32 bytes of spills.
template <unsigned int PLACE>
__device__ __forceinline__ bool bd_check_deferred(const unsigned int* __restrict__ desc, unsigned int done,
                                                  unsigned int end, unsigned int exact_items) {
    return done < end &&
           bd_runs_circulant<PLACE>(__ldg(desc + (unsigned long long)done * BD_DESC_WORDS + 7u), exact_items);
}

// The persistent loop of one launch. PLACE: BD_PLACE_SHARED, both tile buffers in dynamic
// shared memory; BD_PLACE_SPLIT, the first in dynamic shared memory and the second in
// scratch (block b at b · tile_max · stride floats); BD_PLACE_GLOBAL, both in scratch (block
// b at b · 2 · tile_max · stride floats).
template <unsigned int THREADS, unsigned int PLACE>
__device__ __forceinline__ void bd_chain(
    BdTile& tile, const unsigned int* __restrict__ desc, const float* __restrict__ dense, const uint2* __restrict__ ell,
    const unsigned int* __restrict__ group_starts, const unsigned int* __restrict__ w1_offsets,
    const uint2* __restrict__ w1_entries, const unsigned int* __restrict__ x_offsets,
    const unsigned int* __restrict__ x_cols, const float* __restrict__ x_vals, unsigned int x_rows,
    unsigned int x_form, unsigned int first, unsigned int end, const unsigned int* __restrict__ carry_in_ids,
    const float* __restrict__ carry_in_vals, const unsigned int* __restrict__ carry_in_count,
    unsigned int carry_in_stride, unsigned int* __restrict__ carry_out_ids, float* __restrict__ carry_out_vals,
    unsigned int* __restrict__ carry_out_count, unsigned int carry_out_stride, unsigned int* __restrict__ queue,
    unsigned char* __restrict__ state, float* __restrict__ out, float bias, const float* __restrict__ biases,
    unsigned int bias_stride, float upper, unsigned int suffix_start, unsigned int tile_max, unsigned int stride,
    float* scratch, unsigned int exact_items, unsigned int spread_rows) {
    extern __shared__ float4 bd_dynamic[];
    float* buffer0;
    float* buffer1;
    if (PLACE == BD_PLACE_GLOBAL) {
        buffer0 = scratch + (unsigned long long)blockIdx.x * 2ull * tile_max * stride;
        buffer1 = buffer0 + tile_max * stride;
    } else if (PLACE == BD_PLACE_SPLIT) {
        buffer0 = reinterpret_cast<float*>(bd_dynamic);
        buffer1 = scratch + (unsigned long long)blockIdx.x * tile_max * stride;
    } else {
        buffer0 = reinterpret_cast<float*>(bd_dynamic);
        buffer1 = buffer0 + tile_max * stride;
    }

    // Every block computes the same tile size from the rows of this launch.
    const unsigned int count = first == 0 ? x_rows : *carry_in_count;
    // A spread launch runs these rows (bd_spread, enqueued right after this one).
    if (count <= spread_rows) {
        return;
    }
    const unsigned int rows_per_tile = bd_rows_per_tile(count, tile_max);
    const BdLayer first_layer = bd_layer_at(desc, 0);
    const unsigned int out_width = bd_layer_at(desc, end - 1).out_width;

    for (;;) {
        const unsigned int base = bd_next_tile(queue, tile.base, rows_per_tile);
        if (base >= count) {
            break;
        }
        const unsigned int n = min(rows_per_tile, count - base);
        float* cur = buffer0;
        float* next = buffer1;
        unsigned int done;
        if (first == 0) {
            // A CSR (x_form BD_INPUT_VALUES or BD_INPUT_COLUMNS: whether every value is 1); the
            // host loads a bitmap only for a lanes launch 1 (device::counts_bins).
            bd_first_layer<THREADS, PLACE == BD_PLACE_SHARED, PLACE != BD_PLACE_GLOBAL>(
                cur, reinterpret_cast<unsigned int*>(next), tile_max * stride, stride, base, n, x_offsets, x_cols,
                x_vals, x_form, w1_offsets, w1_entries, first_layer.dense_stride,
                first_layer.group_table, __uint_as_float(desc[BD_DESC_WORDS - 1]), first_layer.out_width, bias,
                bias_stride != 0u ? biases : nullptr, upper, tile);
            done = 1;
        } else {
            bd_load_carried<THREADS, PLACE != BD_PLACE_GLOBAL>(cur, stride, base, n, carry_in_ids, carry_in_vals,
                                                               carry_in_stride, tile);
            done = first;
        }
        for (unsigned int i = threadIdx.x; i < n; i += THREADS) {
            tile.live[i] = i;
        }
        if (threadIdx.x == 0) {
            tile.live_count = n;
        }
        __syncthreads();
        if (first == 0 && !bd_check_deferred<PLACE>(desc, 1, end, exact_items)) {
            bd_retire<THREADS>(tile, cur, stride, first_layer.out_width, 1, suffix_start, upper, state);
        }
        for (unsigned int l = done; l < end; ++l) {
            const unsigned int live = tile.live_count;
            if (live == 0) {
                break;
            }
            const BdLayer layer = bd_layer_at(desc, l);
            // Tiles in global memory keep the predicated items: their tiles hold 32 rows (full
            // items), and the exact instances took bd_chain_global from 64 to 128 registers.
            if (bd_runs_circulant<PLACE>(layer.circulant, exact_items)) {
                bd_layer_circulant<THREADS, PLACE == BD_PLACE_SHARED>(layer, l, ell + layer.circulant, cur, next,
                                                                      stride, live, tile, bias, biases, bias_stride,
                                                                      upper);
            } else if (PLACE != BD_PLACE_GLOBAL && exact_items != 0u) {
                bd_layer_exact<THREADS, PLACE == BD_PLACE_SHARED>(layer, l, cur, next, stride, live, tile, dense, ell,
                                                                  group_starts, bias, biases, bias_stride, upper);
            } else {
                bd_layer<THREADS>(layer, l, cur, next, stride, live, tile, dense, ell, group_starts, bias, biases,
                                  bias_stride, upper);
            }
            __syncthreads();
            if (PLACE == BD_PLACE_SPLIT) {
                bd_copy_back<THREADS>(cur, next, stride, bd_round32(layer.out_width), tile);
                __syncthreads();
            } else {
                float* swap = cur;
                cur = next;
                next = swap;
            }
            if (!bd_check_deferred<PLACE>(desc, l + 1, end, exact_items)) {
                bd_retire<THREADS>(tile, cur, stride, layer.out_width, l + 1, suffix_start, upper, state);
            }
        }
        bd_finish_tile<THREADS>(tile, cur, stride, carry_out_ids, carry_out_vals, carry_out_count, carry_out_stride,
                                state, out, out_width);
    }
}

#define BD_CHAIN_PARAMS                                                                                             \
    const unsigned int *__restrict__ desc, const float *__restrict__ dense, const uint2 *__restrict__ ell,         \
        const unsigned int *__restrict__ group_starts, const unsigned int *__restrict__ w1_offsets,                \
        const uint2 *__restrict__ w1_entries, const unsigned int *__restrict__ x_offsets,                          \
        const unsigned int *__restrict__ x_cols, const float *__restrict__ x_vals, unsigned int x_rows,            \
        unsigned int x_form, unsigned int first, unsigned int end,                                                 \
        const unsigned int *__restrict__ carry_in_ids, const float *__restrict__ carry_in_vals,                    \
        const unsigned int *__restrict__ carry_in_count, unsigned int carry_in_stride,                             \
        unsigned int *__restrict__ carry_out_ids, float *__restrict__ carry_out_vals,                              \
        unsigned int *__restrict__ carry_out_count, unsigned int carry_out_stride, unsigned int *__restrict__ queue, \
        unsigned char *__restrict__ state, float *__restrict__ out, float bias,                                    \
        const float *__restrict__ biases, unsigned int bias_stride, float upper, unsigned int suffix_start,        \
        unsigned int tile_max, unsigned int stride, float *scratch, unsigned int exact_items,                       \
        unsigned int spread_rows

#define BD_CHAIN_ARGS                                                                                               \
    desc, dense, ell, group_starts, w1_offsets, w1_entries, x_offsets, x_cols, x_vals, x_rows, x_form, first,      \
        end, carry_in_ids, carry_in_vals, carry_in_count, carry_in_stride, carry_out_ids, carry_out_vals,          \
        carry_out_count, carry_out_stride, queue, state, out, bias, biases, bias_stride, upper, suffix_start,       \
        tile_max, stride, scratch, exact_items, spread_rows

// ---- Lane rows: a row a lane, for narrow launches without dense layers ----
//
// In a tile, a layer's work item puts 32 outputs on a warp's lanes and loops over up to 8
// rows: with 2 slots an output (the generated networks' layers 2-8) most of its instructions
// are the rows' addresses, the bias and the stores, and the row check and the live list
// cost a barrier each layer. Where every row of a launch is narrow (at most
// BD_LANES_GROUPS groups of 32 floats) and no layer after the first is dense,
// bd_chain_lanes gives each warp 32 rows of its own, a row a lane: no block barrier, no live
// list, the check in registers. A warp's buffer holds column c of its row r at
// c · BD_LANE_PITCH + r (a pitch of 36: the 32 lanes' reads of one column fall on 32 banks;
// a lane that reads a column of its own, as circulant layers and the fold do, reads 4 rows at
// once, 16 bytes, and 8 consecutive columns' 16 bytes fall on 8 different bank quads).
//
// Layer 1: the warp's rows' input nonzeros (contiguous in the CSR) are walked by the warp,
// a lane every 32nd, BD_LANES_BATCH at a time, each added into its row's accumulators with
// shared-memory atomics (as bd_scatter_*); then each lane converts, biases and clips its own
// row. A folded layer 1 (bd_lanes_fold) counts each row's bins instead, from its columns or,
// on a bitmap input, from its words (bd_lanes_bins_bitmap). Later layers: per group of 32
// outputs and slot, lane j holds output j's entry, which every lane takes in turn with two
// shuffles; each lane sums its own row in registers in
// slot order from 0, as bd_item does (the same outputs bit for bit), and writes the layer's
// outputs over its inputs once every group is summed: a lane reads and writes only its own
// row, so one buffer does. Circulant layers turn the roles (bd_lanes_circulant): lane j
// computes output column j + 32 g of all 32 rows, the same sums. The warp computes all its
// rows whatever their state, so it checks them once, after the launch's last layer (a row
// that finished earlier is found there in the same state); lanes that have no row run along
// and write nothing outside the warp.

// The bias of a padding column of a lanes warp's layer (past its outputs, up to the
// 32-multiple the buffer holds): -inf, so that the clip makes its output 0 with no select.
__device__ __forceinline__ float bd_padding_bias() { return __uint_as_float(0xff800000u); }

// Rows r .. r+3 of a lanes warp's column at `at` (r a multiple of 4: 16 bytes, aligned as
// BD_LANE_PITCH is), read or written at once.
__device__ __forceinline__ void bd_load_rows4(float (&v)[4], const float* at) {
    const float4 q = *reinterpret_cast<const float4*>(at);
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}

__device__ __forceinline__ void bd_store_rows4(float* at, const float (&v)[4]) {
    *reinterpret_cast<float4*>(at) = make_float4(v[0], v[1], v[2], v[3]);
}

// Layer 1's scatter of the warp's nonzeros 0..total-1 (columns cols, values vals) for scaled
// entries, V (2 or 4) a nonzero, into the warp's buffer at window address buffer: binary
// inputs add whole multiples as integers (bd_lanes_first_layer converts them, through
// bd_first_output as the tiles do), others x · float(m) · w1_base as floats. FOLD (binary
// only): each nonzero adds 1 to its row's bin k mod (fold_mask + 1) instead, with no entry
// loaded (bd_lanes_fold makes the outputs of the bins).
template <unsigned int V, bool BINARY, bool FOLD = false>
__device__ __forceinline__ void bd_lanes_scatter_scaled(unsigned int buffer, const unsigned int* starts,
                                                        unsigned int total, const unsigned int* __restrict__ cols,
                                                        const float* __restrict__ vals,
                                                        const uint2* __restrict__ w1_entries, unsigned int w1_bits,
                                                        float w1_base, unsigned int fold_mask = 0u) {
    static_assert(!FOLD || BINARY, "layer 1 folds binary inputs only");
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int index_mask = (1u << w1_bits) - 1u;
    constexpr unsigned int step = BD_LANES_BATCH * SPDNN_WARP_SIZE;
    // A nonzero past the end: output `lane` (< the buffer's 32-multiple columns), multiple 0.
    const unsigned int spare = lane & index_mask;
    BdRowWalk walk{0u, starts[1]};
    // A batch's columns (and values) are loaded a batch ahead: the input streams from DRAM,
    // and each warp's chain of batches waits on one round trip each (one H100, 2026-11-28,
    // call 2); launch 1 lasts about one warp's chain whatever the rows (2026-11-28e, call 6),
    // so its batches are BD_LANES_BATCH nonzeros a lane, more than the tiles' BD_SCATTER_BATCH
    // (plan::LANES_SCATTER_BATCH says why). A nonzero past the end reads the last one again and
    // takes spare entries (bd_load_entries; one word for all of them cost, 2026-11-28f call 2).
    unsigned int k_ahead[BD_LANES_BATCH];
    float x_ahead[BD_LANES_BATCH];
#pragma unroll
    for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
        const unsigned int j = min(lane + u * SPDNN_WARP_SIZE, total - 1u);
        k_ahead[u] = __ldg(cols + j);
        x_ahead[u] = BINARY ? 1.0f : __ldg(vals + j);
    }
    for (unsigned int j0 = lane; j0 < total; j0 += step) {
        unsigned int k[BD_LANES_BATCH];
        float x[BD_LANES_BATCH];
#pragma unroll
        for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
            const unsigned int j = min(j0 + step + u * SPDNN_WARP_SIZE, total - 1u);
            k[u] = k_ahead[u];
            x[u] = x_ahead[u];
            k_ahead[u] = __ldg(cols + j);
            x_ahead[u] = BINARY ? 1.0f : __ldg(vals + j);
        }
        unsigned int at[BD_LANES_BATCH];
#pragma unroll
        for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
            at[u] = buffer + 4u * bd_walk_to(starts, walk, min(j0 + u * SPDNN_WARP_SIZE, total - 1u));
        }
        if constexpr (FOLD) {
            // A spare nonzero adds 0 to a word of the lane's own, as spare entries do.
#pragma unroll
            for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
                const bool real = j0 + u * SPDNN_WARP_SIZE < total;
                bd_red_shared_add(at[u] + 4u * BD_LANE_PITCH * (real ? k[u] & fold_mask : spare), real ? 1u : 0u);
            }
            continue;
        }
        unsigned int e[BD_LANES_BATCH][V];
#pragma unroll
        for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
            bd_load_entries<V>(e[u], w1_entries, k[u], j0 + u * SPDNN_WARP_SIZE < total, spare);
        }
#pragma unroll
        for (unsigned int u = 0; u < BD_LANES_BATCH; ++u) {
#pragma unroll
            for (unsigned int v = 0; v < V; ++v) {
                const unsigned int multiple = e[u][v] >> w1_bits;
                const unsigned int address = at[u] + 4u * BD_LANE_PITCH * (e[u][v] & index_mask);
                if (BINARY) {
                    // Padding and spare entries add 0.
                    bd_red_shared_add(address, multiple);
                } else if (multiple != 0u) {
                    atomicAdd(reinterpret_cast<float*>(__cvta_shared_to_generic(address)),
                              x[u] * ((float)multiple * w1_base));
                }
            }
        }
    }
}

// Layer 1's scatter for (output, weight) pairs: CSR (w1_ell == 0) or w1_ell a nonzero
// (padding weighs +0 and is skipped); x · w added as floats.
__device__ __forceinline__ void bd_lanes_scatter_pairs(unsigned int buffer, const unsigned int* starts,
                                                       unsigned int total, const unsigned int* __restrict__ cols,
                                                       const float* __restrict__ vals, unsigned int x_binary,
                                                       const unsigned int* __restrict__ w1_offsets,
                                                       const uint2* __restrict__ w1_entries, unsigned int w1_ell) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    BdRowWalk walk{0u, starts[1]};
    for (unsigned int j = lane; j < total; j += SPDNN_WARP_SIZE) {
        const unsigned int k = __ldg(cols + j);
        const float x = x_binary ? 1.0f : __ldg(vals + j);
        const unsigned int at = buffer + 4u * bd_walk_to(starts, walk, j);
        const unsigned int first_entry = w1_ell > 0u ? k * w1_ell : __ldg(w1_offsets + k);
        const unsigned int stop = w1_ell > 0u ? first_entry + w1_ell : __ldg(w1_offsets + k + 1);
        for (unsigned int i = first_entry; i < stop; ++i) {
            const uint2 entry = __ldg(w1_entries + i);
            if (entry.y != 0u) {
                atomicAdd(reinterpret_cast<float*>(__cvta_shared_to_generic(at + 4u * BD_LANE_PITCH * entry.x)),
                          x * __uint_as_float(entry.y));
            }
        }
    }
}

// The outputs of a layer whose lane j computes output column c = j + 32 g of all the warp's
// rows (circulant layers, the fold): output(g, Σ_s w[s] · value(column at[g][s])), the fused
// multiply-adds in slot order from 0, for the groups g < groups of G (the others' columns are
// read, unused and not written). BD_LANES_CHUNK rows at a time, 4 a load (bd_load_rows4),
// each chunk's outputs written over its inputs (column c) once the warp has read them: a
// row's outputs read that row only.
template <unsigned int S, unsigned int G, typename Value, typename Output>
__device__ __forceinline__ void bd_lanes_columns(float* warp_rows, const unsigned int (&at)[G][S], const float (&w)[S],
                                                 unsigned int groups, Value value, Output output) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
#pragma unroll 1
    for (unsigned int r0 = 0; r0 < SPDNN_WARP_SIZE; r0 += BD_LANES_CHUNK) {
        float acc[G][BD_LANES_CHUNK];
#pragma unroll
        for (unsigned int g = 0; g < G; ++g) {
#pragma unroll
            for (unsigned int r = 0; r < BD_LANES_CHUNK; r += 4u) {
                // Unpredicated: predicated 16-byte loads spilled (NVRTC 13.0, 128 registers).
                float in[S][4];
#pragma unroll
                for (unsigned int s = 0; s < S; ++s) {
                    bd_load_rows4(in[s], warp_rows + at[g][s] + r0 + r);
                }
#pragma unroll
                for (unsigned int i = 0; i < 4u; ++i) {
                    acc[g][r + i] = 0.0f;
                    if (g < groups) {
#pragma unroll
                        for (unsigned int s = 0; s < S; ++s) {
                            acc[g][r + i] = fmaf(value(in[s][i]), w[s], acc[g][r + i]);
                        }
                    }
                }
            }
        }
        // Every lane has read the chunk's inputs: its outputs may overwrite them.
        __syncwarp();
#pragma unroll
        for (unsigned int g = 0; g < G; ++g) {
            if (g < groups) {
#pragma unroll
                for (unsigned int r = 0; r < BD_LANES_CHUNK; r += 4u) {
                    float v[4];
#pragma unroll
                    for (unsigned int i = 0; i < 4u; ++i) {
                        v[i] = output(g, acc[g][r + i]);
                    }
                    bd_store_rows4(warp_rows + BD_LANE_PITCH * (g * SPDNN_WARP_SIZE + lane) + r0 + r, v);
                }
            }
        }
    }
    // The next layer reads the rows every lane wrote.
    __syncwarp();
}

// Layer 1's outputs from a folded scatter (layout::FirstScaled::fold; S slots): column j of
// each row of the warp's buffer (warp_rows) holds bins[j], the count of the row's nonzeros at
// inputs k = j mod width (width a power of two, at most the buffer's 32-multiple columns);
// output c is m_0 · bins[(c + e_0) mod width] + ... (table: [S, width], then [e_s, m_s]), the
// same integer as the entries' sum, made a float and biased by bd_first_output as the
// scatter's sums are. Lane j computes outputs j + 32 g of every row (bd_lanes_columns, as
// bd_lanes_circulant); padding columns get 0.
template <unsigned int S>
__device__ __forceinline__ void bd_lanes_fold(const uint2* __restrict__ table, float* warp_rows, unsigned int width,
                                              float w1_base, float bias, const float* __restrict__ biases,
                                              float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    // Each group's bins at each slot: the floats from warp_rows to their column.
    unsigned int inputs[BD_LANES_GROUPS][S];
    float b[BD_LANES_GROUPS];
    float m[S];
#pragma unroll
    for (unsigned int s = 0; s < S; ++s) {
        const uint2 slot = __ldg(table + 1u + s);
        m[s] = (float)slot.y;
#pragma unroll
        for (unsigned int g = 0; g < BD_LANES_GROUPS; ++g) {
            inputs[g][s] = BD_LANE_PITCH * ((g * SPDNN_WARP_SIZE + lane + slot.x) & (width - 1u));
        }
    }
#pragma unroll
    for (unsigned int g = 0; g < BD_LANES_GROUPS; ++g) {
        const unsigned int c = g * SPDNN_WARP_SIZE + lane;
        b[g] = c >= width ? bd_padding_bias() : biases != nullptr ? __ldg(biases + c) : bias;
    }
    // Whole numbers below 2^24 (FirstScaled's proof): exact in any order.
    bd_lanes_columns<S, BD_LANES_GROUPS>(
        warp_rows, inputs, m, bd_round32(width) / SPDNN_WARP_SIZE,
        [](float bin) { return (float)__float_as_uint(bin); },
        [&](unsigned int g, float sum) {
            return bd_first_output(__int_as_float((int)sum), true, w1_base, b[g], upper);
        });
}

// bd_lanes_fold for the table's slot count (1 to 4: FirstScaled::fold's proof).
__device__ __forceinline__ void bd_lanes_fold_slots(const uint2* __restrict__ table, float* warp_rows,
                                                    unsigned int width, float w1_base, float bias,
                                                    const float* __restrict__ biases, float upper) {
    switch (__ldg(table).x) {
        case 1u:
            bd_lanes_fold<1>(table, warp_rows, width, w1_base, bias, biases, upper);
            return;
        case 2u:
            bd_lanes_fold<2>(table, warp_rows, width, w1_base, bias, biases, upper);
            return;
        case 3u:
            bd_lanes_fold<3>(table, warp_rows, width, w1_base, bias, biases, upper);
            return;
        default:
            bd_lanes_fold<4>(table, warp_rows, width, w1_base, bias, biases, upper);
            return;
    }
}

// One step of bd_transpose_bits below bytes: lane l's word keeps its bits where `keep` is set
// (those at positions with bit S clear in the lower lane of a pair, set in the upper) and
// takes the rest from lane l ^ S's word rotated by S (lower) or -S (upper): one shuffle, one
// funnel shift and one select of bits.
template <unsigned int S, unsigned int R>
__device__ __forceinline__ void bd_transpose_step(unsigned int (&x)[R], unsigned int lane, unsigned int low) {
    const bool upper = (lane & S) != 0u;
    const unsigned int keep = upper ? ~low : low;
    const unsigned int rotate = upper ? SPDNN_WARP_SIZE - S : S;
#pragma unroll
    for (unsigned int u = 0; u < R; ++u) {
        const unsigned int other = __shfl_xor_sync(SPDNN_FULL_MASK, x[u], S);
        const unsigned int moved = __funnelshift_l(other, other, rotate);
        unsigned int kept;
        // keep ? x : moved, bit by bit.
        asm("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(kept) : "r"(keep), "r"(x[u]), "r"(moved));
        x[u] = kept;
    }
}

// The 32 x 32 bits of x (lane l's word as row l) transposed across the warp, R words a lane
// at once: afterwards bit l of lane j's word is bit j of lane l's word before. Five steps of
// one shuffle each; at step s, lanes l and l ^ s swap the blocks of s bits whose row and
// column halves differ (the lower lane keeps its bits at positions with s clear, the upper
// those with s set). Steps of 16 and 8 bits move whole bytes (one byte permute, its selector
// the lane's); the others are bd_transpose_step.
template <unsigned int R>
__device__ __forceinline__ void bd_transpose_bits(unsigned int (&x)[R]) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int bytes16 = (lane & 16u) != 0u ? 0x3276u : 0x5410u;
    const unsigned int bytes8 = (lane & 8u) != 0u ? 0x3715u : 0x6240u;
#pragma unroll
    for (unsigned int u = 0; u < R; ++u) {
        x[u] = __byte_perm(x[u], __shfl_xor_sync(SPDNN_FULL_MASK, x[u], 16), bytes16);
    }
#pragma unroll
    for (unsigned int u = 0; u < R; ++u) {
        x[u] = __byte_perm(x[u], __shfl_xor_sync(SPDNN_FULL_MASK, x[u], 8), bytes8);
    }
    bd_transpose_step<4>(x, lane, 0x0F0F0F0Fu);
    bd_transpose_step<2>(x, lane, 0x33333333u);
    bd_transpose_step<1>(x, lane, 0x55555555u);
}

// BD_BITMAP_ROWS rows' words of a bitmap round (row r's at rows + r · words, for rows below n;
// 0 for the others and for lanes past the row's words).
__device__ __forceinline__ void bd_bitmap_words(unsigned int (&x)[BD_BITMAP_ROWS], const unsigned int* rows,
                                                unsigned int words, unsigned int r0, unsigned int n, bool word) {
#pragma unroll
    for (unsigned int u = 0; u < BD_BITMAP_ROWS; ++u) {
        x[u] = word && r0 + u < n ? __ldg(rows + (r0 + u) * words) : 0u;
    }
}

// A folded layer 1's bins from a bitmap input (bits: `words` words a row, input k of a row at
// bit k % 32 of its word k / 32; width a power of two from 32 to 1024): row r of the warp's
// rows base .. base+n-1 gets bins[j] (column j of warp_rows, as bd_lanes_fold reads them),
// the count of its set bits at k = j mod width, as the folded scatter counts its columns.
// 32 words of a row at a time on the warp's lanes, transposed (bd_transpose_bits): lane j
// then holds bit j of each word, inputs 32 l + j for l = 0..31, so bin 32 m + j counts the
// bits of words l = m mod width/32 (one mask and one popc; 1024 inputs a round are a whole
// number of periods). BD_BITMAP_ROWS rows at a time, the next rows' words loaded during
// these rows' transposition. Rows past n get 0.
__device__ __forceinline__ void bd_lanes_bins_bitmap(float* warp_rows, const unsigned int* __restrict__ bits,
                                                     unsigned int words, unsigned int base, unsigned int n,
                                                     unsigned int width) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int groups = width / SPDNN_WARP_SIZE;
    const unsigned int period = groups == SPDNN_WARP_SIZE ? 1u : 0xFFFFFFFFu / ((1u << groups) - 1u);
    for (unsigned int q = 0; q < words; q += SPDNN_WARP_SIZE) {
        const bool word = q + lane < words;
        const unsigned int* rows = bits + (unsigned long long)base * words + q + lane;
        unsigned int x[BD_BITMAP_ROWS];
        bd_bitmap_words(x, rows, words, 0u, n, word);
#pragma unroll 1
        for (unsigned int r0 = 0; r0 < SPDNN_WARP_SIZE; r0 += BD_BITMAP_ROWS) {
            unsigned int ahead[BD_BITMAP_ROWS];
            bd_bitmap_words(ahead, rows, words, r0 + BD_BITMAP_ROWS, n, word && r0 + BD_BITMAP_ROWS < SPDNN_WARP_SIZE);
            bd_transpose_bits<BD_BITMAP_ROWS>(x);
            // Four rows' bins at once (bd_store_rows4: 8 lanes' 16 bytes on 8 bank quads).
            for (unsigned int m = 0; m < groups; ++m) {
#pragma unroll
                for (unsigned int u = 0; u < BD_BITMAP_ROWS; u += 4u) {
                    float* at = warp_rows + BD_LANE_PITCH * (SPDNN_WARP_SIZE * m + lane) + r0 + u;
                    float counts[4];
                    if (q != 0u) {
                        bd_load_rows4(counts, at);
                    }
#pragma unroll
                    for (unsigned int i = 0; i < 4u; ++i) {
                        const unsigned int count = __popc(x[u + i] & (period << m));
                        counts[i] = __uint_as_float(q == 0u ? count : __float_as_uint(counts[i]) + count);
                    }
                    bd_store_rows4(at, counts);
                }
            }
#pragma unroll
            for (unsigned int u = 0; u < BD_BITMAP_ROWS; ++u) {
                x[u] = ahead[u];
            }
        }
    }
}

// Layer 1 for the warp's rows base .. base+n-1 (row r on lane r) into its buffer (window
// address buffer, warp_rows; starts: the warp's 33 words for its rows' starts): zeroed, every
// input nonzero's entries added into its row's column, then each lane's row converted
// (integer sums of a scaled layer on binary input), biased and clipped. A folded layer 1
// (fold: its table in ell, else null) on binary input counts each row's bins, from its
// columns (bd_lanes_scatter_scaled) or its bitmap (x_form BD_INPUT_BITMAP: x_cols holds it;
// bd_lanes_bins_bitmap), and makes the outputs of the bins (bd_lanes_fold).
__device__ __forceinline__ void bd_lanes_first_layer(
    unsigned int buffer, float* warp_rows, unsigned int* starts, unsigned int base, unsigned int n,
    const unsigned int* __restrict__ x_offsets, const unsigned int* __restrict__ x_cols,
    const float* __restrict__ x_vals, unsigned int x_form, const unsigned int* __restrict__ w1_offsets,
    const uint2* __restrict__ w1_entries, unsigned int w1_ell, unsigned int w1_bits, float w1_base,
    const uint2* __restrict__ fold, unsigned int in_width, unsigned int width, float bias,
    const float* __restrict__ biases, float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int padded = bd_round32(width);
    const bool x_binary = x_form != BD_INPUT_VALUES;
    const bool folds = fold != nullptr && w1_bits != 0u && x_binary;
    if (x_form == BD_INPUT_BITMAP) {
        // The host gives a bitmap only where layer 1 folds into 32 to 1024 bins.
        if (!folds) {
            __trap();
        }
        bd_lanes_bins_bitmap(warp_rows, x_cols, bd_round32(in_width) / SPDNN_WARP_SIZE, base, n, width);
        __syncwarp();
        bd_lanes_fold_slots(fold, warp_rows, width, w1_base, bias, biases, upper);
        return;
    }
    for (unsigned int i = lane; i < padded * BD_LANE_PITCH / 4u; i += SPDNN_WARP_SIZE) {
        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(buffer + 16u * i), "r"(0u) : "memory");
    }
    const unsigned int origin = __ldg(x_offsets + base);
    starts[lane] = __ldg(x_offsets + base + min(lane, n)) - origin;
    if (lane == 0) {
        starts[SPDNN_WARP_SIZE] = __ldg(x_offsets + base + n) - origin;
    }
    __syncwarp();
    const unsigned int total = starts[SPDNN_WARP_SIZE];
    // The warp's first nonzero's address, opaque to the compiler: with it known as x_cols +
    // origin, each load's address became origin + j in 64 bits, shifted and added to x_cols
    // (five instructions a load, ncu 2026-11-28j call 3); from a pointer it is one wide
    // multiply-add.
    unsigned long long cols_at = reinterpret_cast<unsigned long long>(x_cols + origin);
    unsigned long long vals_at = reinterpret_cast<unsigned long long>(x_vals + origin);
    asm("" : "+l"(cols_at), "+l"(vals_at));
    const unsigned int* cols = reinterpret_cast<const unsigned int*>(cols_at);
    const float* vals = reinterpret_cast<const float*>(vals_at);
    if (folds) {
        bd_lanes_scatter_scaled<2, true, true>(buffer, starts, total, cols, vals, w1_entries, w1_bits, w1_base,
                                               __ldg(fold).y - 1u);
        __syncwarp();
        bd_lanes_fold_slots(fold, warp_rows, width, w1_base, bias, biases, upper);
        return;
    }
    if (w1_bits != 0u) {
        if (w1_ell == 2u && x_binary) {
            bd_lanes_scatter_scaled<2, true>(buffer, starts, total, cols, vals, w1_entries, w1_bits, w1_base);
        } else if (w1_ell == 2u) {
            bd_lanes_scatter_scaled<2, false>(buffer, starts, total, cols, vals, w1_entries, w1_bits, w1_base);
        } else if (x_binary) {
            bd_lanes_scatter_scaled<4, true>(buffer, starts, total, cols, vals, w1_entries, w1_bits, w1_base);
        } else {
            bd_lanes_scatter_scaled<4, false>(buffer, starts, total, cols, vals, w1_entries, w1_bits, w1_base);
        }
    } else {
        bd_lanes_scatter_pairs(buffer, starts, total, cols, vals, x_binary, w1_offsets, w1_entries, w1_ell);
    }
    __syncwarp();
    const bool integer_sums = w1_bits != 0u && x_binary;
    const unsigned int mine = buffer + 4u * lane;
    for (unsigned int c = 0; c < padded; ++c) {
        const float v = bd_lds(mine + 4u * BD_LANE_PITCH * c);
        const float b = biases != nullptr ? __ldg(biases + c) : bias;
        bd_sts(mine + 4u * BD_LANE_PITCH * c, bd_first_output(v, integer_sums, w1_base, b, upper));
    }
}

// Layer l (ELL, any of its forms) over this lane's row (window address `mine`: its column 0
// in the warp's buffer), at most BD_LANES_GROUPS groups of 32 outputs: the sums of every
// group in registers (per slot, lane j's entry (input, weight) of output j goes to every lane
// by shuffles), then the bias, the clip and the outputs written over the inputs.
__device__ __forceinline__ void bd_lanes_layer(const BdLayer& layer, unsigned int l, unsigned int mine,
                                               const uint2* __restrict__ ell,
                                               const unsigned int* __restrict__ group_starts, float bias,
                                               const float* __restrict__ biases, unsigned int bias_stride,
                                               float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int groups = (layer.out_width + 31u) / 32u;
    // The groups' slot ranges, loaded before any group's entries.
    unsigned int slot_starts[BD_LANES_GROUPS + 1];
#pragma unroll
    for (unsigned int g = 0; g <= BD_LANES_GROUPS; ++g) {
        slot_starts[g] = g <= groups ? __ldg(group_starts + layer.group_table + g) : 0u;
    }
    float acc[BD_LANES_GROUPS][SPDNN_WARP_SIZE];
#pragma unroll
    for (unsigned int g = 0; g < BD_LANES_GROUPS; ++g) {
#pragma unroll
        for (unsigned int j = 0; j < SPDNN_WARP_SIZE; ++j) {
            acc[g][j] = 0.0f;
        }
        if (g < groups) {
            bd_ell_layer<2, 0>(layer, ell, slot_starts[g], slot_starts[g + 1], lane, [&](unsigned int k, float wv) {
                const unsigned int offset = 4u * BD_LANE_PITCH * k;
#pragma unroll
                for (unsigned int j = 0; j < SPDNN_WARP_SIZE; ++j) {
                    const unsigned int at = __shfl_sync(SPDNN_FULL_MASK, offset, j);
                    const float w = __shfl_sync(SPDNN_FULL_MASK, wv, j);
                    acc[g][j] = fmaf(bd_lds(mine + at), w, acc[g][j]);
                }
            });
        }
    }
#pragma unroll
    for (unsigned int g = 0; g < BD_LANES_GROUPS; ++g) {
        if (g < groups) {
            const unsigned int c0 = g * 32u;
            if (bias_stride != 0u) {
                // Per-neuron biases: loaded a lane an output and shuffled.
                const float lane_bias = __ldg(biases + (unsigned long long)l * bias_stride + c0 + lane);
#pragma unroll
                for (unsigned int j = 0; j < SPDNN_WARP_SIZE; ++j) {
                    const float b = __shfl_sync(SPDNN_FULL_MASK, lane_bias, j);
                    bd_sts(mine + 4u * BD_LANE_PITCH * (c0 + j), spdnn_clamp_activation(acc[g][j] + b, upper));
                }
            } else {
#pragma unroll
                for (unsigned int j = 0; j < SPDNN_WARP_SIZE; ++j) {
                    bd_sts(mine + 4u * BD_LANE_PITCH * (c0 + j), spdnn_clamp_activation(acc[g][j] + bias, upper));
                }
            }
        }
    }
}

// Layer l, circulant (table: [slots, aligned], then [d_s, w_s bits] a slot; S slots), over
// the warp's 32 rows (warp_rows: its buffer) with the roles of bd_lanes_layer turned: lane j
// computes outputs 32 g + j (G groups) of every row, whose slot-s input (32 g + j + d_s) mod
// in is the same column for all 32 rows, so each multiply-add is one shared load at a
// constant offset and one fused multiply-add, where bd_lanes_layer spends two shuffles more.
// The rows go BD_LANES_CHUNK at a time (bd_lanes_columns; all 32 rows' sums at once spilled
// at 128 registers). The same fused multiply-adds in the same slot order from 0: bit for bit
// bd_lanes_layer's outputs. Padding columns (only the last group has any) get 0. G is known
// at compile time: with the groups a run-time bound, every chunk issued the absent group's
// loads predicated off and zeroed its sums again (ncu, 2026-11-28j call 3).
template <unsigned int S, unsigned int G>
__device__ __forceinline__ void bd_lanes_circulant(const BdLayer& layer, unsigned int l,
                                                   const uint2* __restrict__ table, float* warp_rows, float bias,
                                                   const float* __restrict__ biases, unsigned int bias_stride,
                                                   float upper) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    // Per group: its inputs' columns at each slot (floats from warp_rows), its bias.
    unsigned int inputs[G][S];
    float b[G];
    unsigned int offset[S];
    float w[S];
#pragma unroll
    for (unsigned int s = 0; s < S; ++s) {
        const uint2 entry = __ldg(table + 1u + s);
        offset[s] = entry.x;
        w[s] = __uint_as_float(entry.y);
    }
    const bool last_real = (G - 1u) * 32u + lane < layer.out_width;
#pragma unroll
    for (unsigned int g = 0; g < G; ++g) {
        const unsigned int c = g * 32u + lane;
#pragma unroll
        for (unsigned int s = 0; s < S; ++s) {
            inputs[g][s] = BD_LANE_PITCH * ((c + offset[s]) % layer.in_width);
        }
        const bool real = g + 1u < G || last_real;
        b[g] = !real               ? bd_padding_bias()
               : bias_stride != 0u ? __ldg(biases + (unsigned long long)l * bias_stride + c)
                                   : bias;
    }
    bd_lanes_columns<S, G>(
        warp_rows, inputs, w, G, [](float x) { return x; },
        [&](unsigned int g, float sum) { return spdnn_clamp_activation(sum + b[g], upper); });
}

// bd_lanes_circulant<S, G> for `groups` (1 .. G) known only at run time.
template <unsigned int S, unsigned int G = BD_LANES_GROUPS>
__device__ __forceinline__ void bd_lanes_circulant_groups(unsigned int groups, const BdLayer& layer, unsigned int l,
                                                          const uint2* __restrict__ table, float* warp_rows,
                                                          float bias, const float* __restrict__ biases,
                                                          unsigned int bias_stride, float upper) {
    if (groups == G) {
        bd_lanes_circulant<S, G>(layer, l, table, warp_rows, bias, biases, bias_stride, upper);
    } else if constexpr (G > 1) {
        bd_lanes_circulant_groups<S, G - 1>(groups, layer, l, table, warp_rows, bias, biases, bias_stride, upper);
    }
}

// bd_lanes_circulant for `slots` (1 .. S) known only at run time: one instance per count.
template <unsigned int S = BD_CIRCULANT_SLOTS>
__device__ __forceinline__ void bd_lanes_circulant_slots(unsigned int slots, const BdLayer& layer, unsigned int l,
                                                         const uint2* __restrict__ table, float* warp_rows,
                                                         float bias, const float* __restrict__ biases,
                                                         unsigned int bias_stride, float upper) {
    if (slots == S) {
        bd_lanes_circulant_groups<S>((layer.out_width + 31u) / 32u, layer, l, table, warp_rows, bias, biases,
                                     bias_stride, upper);
    } else if constexpr (S > 1) {
        bd_lanes_circulant_slots<S - 1>(slots, layer, l, table, warp_rows, bias, biases, bias_stride, upper);
    }
}

// This lane's row's range over the first `width` columns (bd_lane_range), read back from the
// warp's buffer (window address `mine`: its column 0).
__device__ __forceinline__ void bd_lanes_row_range(unsigned int mine, unsigned int width, float& largest,
                                                   float& least) {
    for (unsigned int c = 0; c < width; ++c) {
        bd_lane_range(bd_lds(mine + 4u * BD_LANE_PITCH * c), c, width, largest, least);
    }
}

// The persistent loop of a lanes launch: each warp takes 32 rows from the queue at a time
// and carries them through layers first..end-1 in its own buffer (stride · BD_LANE_PITCH
// floats of dynamic shared memory a warp; starts: 33 words a warp); rows that finish write
// their state; the rest go to the next launch's list (one atomicAdd a warp) or get
// BD_STATE_LIVE and their values.
__device__ __forceinline__ void bd_chain_lanes_loop(unsigned int (*lane_starts)[SPDNN_WARP_SIZE + 1],
                                                    BD_CHAIN_PARAMS) {
    extern __shared__ float4 bd_dynamic[];
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int buffer =
        (unsigned int)__cvta_generic_to_shared(bd_dynamic) + 4u * warp * stride * BD_LANE_PITCH;
    float* warp_rows = reinterpret_cast<float*>(bd_dynamic) + warp * stride * BD_LANE_PITCH;
    const unsigned int mine = buffer + 4u * lane;
    const unsigned int count = first == 0 ? x_rows : *carry_in_count;
    const BdLayer first_layer = bd_layer_at(desc, 0);
    const unsigned int out_width = bd_layer_at(desc, end - 1).out_width;
    for (;;) {
        unsigned int base = 0;
        if (lane == 0) {
            base = atomicAdd(queue, (unsigned int)SPDNN_WARP_SIZE);
        }
        base = __shfl_sync(SPDNN_FULL_MASK, base, 0);
        if (base >= count) {
            break;
        }
        const unsigned int n = min((unsigned int)SPDNN_WARP_SIZE, count - base);
        unsigned int id = 0;
        bool live = lane < n;
        unsigned int done = first;
        if (first == 0) {
            id = base + lane;
            bd_lanes_first_layer(buffer, warp_rows, lane_starts[warp], base, n, x_offsets, x_cols, x_vals, x_form,
                                 w1_offsets, w1_entries, first_layer.dense_stride, first_layer.group_table,
                                 __uint_as_float(desc[BD_DESC_WORDS - 1]),
                                 first_layer.offset != 0u ? ell + first_layer.offset : nullptr,
                                 first_layer.in_width, first_layer.out_width, bias,
                                 bias_stride != 0u ? biases : nullptr, upper);
            done = 1;
        } else if (live) {
            id = carry_in_ids[base + lane];
            const float4* from =
                reinterpret_cast<const float4*>(carry_in_vals + (unsigned long long)(base + lane) * carry_in_stride);
            for (unsigned int q = 0; q < carry_in_stride / 4u; ++q) {
                const float4 v = __ldg(from + q);
                const unsigned int at = mine + 16u * BD_LANE_PITCH * q;
                bd_sts(at, v.x);
                bd_sts(at + 4u * BD_LANE_PITCH, v.y);
                bd_sts(at + 8u * BD_LANE_PITCH, v.z);
                bd_sts(at + 12u * BD_LANE_PITCH, v.w);
            }
        }
        // A warp computes its 32 rows whether or not they finished, so it checks them after the
        // launch's last layer only: rows that finished earlier are found there in the same
        // state (zero rows stay zero, biases being <= 0; rows at the bound past the proved
        // suffix stay there), as where tiles defer their checks (bd_check_deferred).
        for (unsigned int l = done; l < end; ++l) {
            const BdLayer layer = bd_layer_at(desc, l);
            if (bd_runs_circulant<BD_PLACE_SHARED>(layer.circulant, exact_items)) {
                __syncwarp();
                const uint2* table = ell + layer.circulant;
                bd_lanes_circulant_slots(__ldg(table).x, layer, l, table, warp_rows, bias, biases, bias_stride,
                                         upper);
            } else {
                bd_lanes_layer(layer, l, mine, ell, group_starts, bias, biases, bias_stride, upper);
            }
        }
        __syncwarp();
        {
            float largest = 0.0f;
            float least = upper;
            bd_lanes_row_range(mine, out_width, largest, least);
            if (live && !bd_keeps(largest > 0.0f, least == upper, end, suffix_start)) {
                state[id] = bd_finished_state(largest > 0.0f);
                live = false;
            }
        }
        if (carry_out_stride == 0) {
            if (live) {
                float* to = out + (unsigned long long)id * out_width;
                for (unsigned int c = 0; c < out_width; ++c) {
                    to[c] = bd_lds(mine + 4u * BD_LANE_PITCH * c);
                }
                state[id] = BD_STATE_LIVE;
            }
        } else {
            const unsigned int kept = __ballot_sync(SPDNN_FULL_MASK, live);
            unsigned int at = 0;
            if (lane == 0 && kept != 0u) {
                at = atomicAdd(carry_out_count, (unsigned int)__popc(kept));
            }
            at = __shfl_sync(SPDNN_FULL_MASK, at, 0) + __popc(kept & ((1u << lane) - 1u));
            if (live) {
                carry_out_ids[at] = id;
                float4* to = reinterpret_cast<float4*>(carry_out_vals + (unsigned long long)at * carry_out_stride);
                for (unsigned int q = 0; q < carry_out_stride / 4u; ++q) {
                    const unsigned int from = mine + 16u * BD_LANE_PITCH * q;
                    to[q] = make_float4(bd_lds(from), bd_lds(from + 4u * BD_LANE_PITCH),
                                        bd_lds(from + 8u * BD_LANE_PITCH), bd_lds(from + 12u * BD_LANE_PITCH));
                }
            }
        }
        // The next rows' layer 1 zeroes the whole buffer.
        __syncwarp();
    }
}

// ---- Warp rows: a row a warp, for carried launches of narrow dense layers ----
//
// After layer 8 the official 1024's rows are 64 floats and its layers 64 x 64 dense: a tile
// of 1-6 rows kept two of its eight warps busy, and each layer waited on its descriptor, its
// weights (four L2 round trips) and its biases one after another, then on the row check's
// two barriers: ~6000 cycles a layer however few the rows (docs/blockdepend.md, "The tail
// layers' round trips"). bd_chain_warps gives each warp rows of its own (BD_WARPS_ROWS at
// most, consecutive tile positions), a lane computing the outputs lane + 32 g of each,
// and stages the layers' weights in shared memory two layers ahead with one thread's bulk
// copies: slot m % BD_WARPS_SLOTS holds layer m's dense weights (⌈in/4⌉·4 rows of
// dense_stride floats) after the descriptor of layer m + 1, counted by the slot's mbarrier.
// A layer costs one block barrier (which also says whether any row is left) and the sums; a
// warp checks its own rows with two ballots and writes their outputs over their inputs once
// its lanes have read them. The sums are bd_dense_sums' (inputs from 0 in steps of four, one
// fused multiply-add each, then the bias and the clip): the tiles' outputs bit for bit.

// Whether bulk copies (cp.async.bulk, counted by an mbarrier) exist: sm_90 and later. The host
// places no launch on bd_chain_warps elsewhere (plan::Limits::bulk_copies).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define BD_HAS_BULK 1
#else
#define BD_HAS_BULK 0
#endif

// Words of a stage slot before its weights: the descriptor of the layer after its own.
#define BD_WARPS_HEADER BD_DESC_WORDS

// Shared bookkeeping of bd_chain_warps: the slots' mbarriers, the batch row of each of the
// tile's rows (in shared memory: a warp's rows picked by an index known only at run time
// would put a register array in local memory), and the tile's first row.
struct BdWarpTile {
    unsigned long long bars[BD_WARPS_SLOTS];
    unsigned int ids[BD_WARPS_THREADS / SPDNN_WARP_SIZE * BD_WARPS_ROWS];
    unsigned int base;
};

// The stager (one thread, bd_chain_warps_loop) issues layer m's stage (its descriptor d)
// into slot (slot_words words at shared address to) with bar counting the bytes: the
// descriptor of layer m + 1 when m + 1 < end, then the weights. The host places a launch
// here only when every layer is dense and fits a slot with rows of ⌈out/32⌉·32 floats
// (plan::warps_fit; the sums take that stride as 32 · G); anything else traps rather than
// computing from a partial stage.
__device__ __forceinline__ void bd_warps_stage(unsigned int to, unsigned int slot_words, unsigned int bar,
                                               const BdLayer& d, unsigned int m, unsigned int end,
                                               const unsigned int* __restrict__ desc,
                                               const float* __restrict__ dense) {
#if BD_HAS_BULK
    const unsigned int weight_words = ((d.in_width + 3u) & ~3u) * d.dense_stride;
    const float* weights = dense + d.offset;
    if (d.format != BD_FORMAT_DENSE || d.dense_stride != bd_round32(d.out_width) ||
        BD_WARPS_HEADER + weight_words > slot_words ||
        (reinterpret_cast<unsigned long long>(weights) & 15ull) != 0ull) {
        __trap();
    }
    const bool has_next = m + 1u < end;
    const unsigned int bytes = 4u * weight_words + (has_next ? 4u * BD_WARPS_HEADER : 0u);
    // The slot's last reads (generic proxy, before the caller's barrier) come before these
    // writes (async proxy).
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
    if (has_next) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(to),
            "l"(desc + (unsigned long long)(m + 1u) * BD_DESC_WORDS), "r"(4u * BD_WARPS_HEADER), "r"(bar)
            : "memory");
    }
    if (weight_words != 0u) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                to + 4u * BD_WARPS_HEADER),
            "l"(weights), "r"(4u * weight_words), "r"(bar)
            : "memory");
    }
#else
    __trap();
#endif
}

// Waits until the phase of parity `parity` of the mbarrier at shared address bar completed.
__device__ __forceinline__ void bd_warps_wait(unsigned int bar, unsigned int parity) {
#if BD_HAS_BULK
    unsigned int complete;
    do {
        asm volatile(
            "{\n"
            ".reg .pred complete;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
            "selp.u32 %0, 1, 0, complete;\n"
            "}\n"
            : "=r"(complete)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (complete == 0u);
#endif
}

// The sums of G groups of 32 outputs (lane: outputs lane + 32 g) for the R rows at
// row_at[r] (floats into rows), inputs from 0 in steps of four, one fused multiply-add each:
// bd_dense_sums' order. The weights lie in quads of inputs (layout::dense_index) with a row
// stride of 32 G, known at compile time: a step's four weights of a group are one 16-byte
// load at a constant offset from one stepping pointer (with the stride a run-time value, 2-3
// address instructions a load doubled a layer's instructions: ~2100 cycles for one row of
// 64 x 64, 2026-11-28c call 4; with the weights row-major, a lane's four of a step were four
// loads, ~25 % of a one-row layer's sums, 2026-11-28j call 8). One row's steps are unrolled
// eight at a time, more rows' four: a body issues its loads first, and a row's multiply-adds
// of four steps (two chains of 16 at 64 inputs) did not cover the next body's loads
// (~8.7 cycles an input against 4 for the chains, 2026-11-29d call 3). Eight for 2-4 rows
// or sixteen for all took the warps launch from ~26 to ~28 and ~32 us (call 5); sixteen for
// one row ran the 32-input layers, fewer steps than a body, a step at a time (call 7).
template <unsigned int G, unsigned int R>
__device__ __forceinline__ void bd_warps_sums(unsigned int inputs, const float* w, const float* rows,
                                              const unsigned int (&row_at)[R], float (&acc)[R][G]) {
    constexpr unsigned int ws = 32u * G;
    const float* wk = w + 4u * (threadIdx.x % SPDNN_WARP_SIZE);
    const float* y[R];
#pragma unroll
    for (unsigned int r = 0; r < R; ++r) {
        y[r] = rows + row_at[r];
    }
    constexpr unsigned int unroll = R == 1u ? 8u : 4u;
#pragma unroll unroll
    for (unsigned int k = 0; k < inputs; k += 4) {
        float4 q[G];
#pragma unroll
        for (unsigned int g = 0; g < G; ++g) {
            q[g] = *reinterpret_cast<const float4*>(wk + g * 128u);
        }
        wk += 4u * ws;
#pragma unroll
        for (unsigned int r = 0; r < R; ++r) {
            const float4 v = *reinterpret_cast<const float4*>(y[r]);
            y[r] += 4;
#pragma unroll
            for (unsigned int g = 0; g < G; ++g) {
                acc[r][g] = fmaf(v.x, q[g].x, acc[r][g]);
                acc[r][g] = fmaf(v.y, q[g].y, acc[r][g]);
                acc[r][g] = fmaf(v.z, q[g].z, acc[r][g]);
                acc[r][g] = fmaf(v.w, q[g].w, acc[r][g]);
            }
        }
    }
}

// Layer l (descriptor d, weights w in shared memory: G groups of 32 outputs) for the warp's R
// live rows (bit j of live: tile position first_row + j, its row at rows + (first_row + j) ·
// stride), then the retirement rule; rows that finish write their state and leave `live`.
// The whole layer is compiled for the groups and rows the warp has, its setup and epilogue
// with the sums: with only the sums so (2026-11-28c call 2), the rest of a one-row layer
// walked every group and row slot with run-time bounds, a branch and a reconvergence barrier
// each (~300 cycles before the sums and ~550 after them, 2026-11-28j calls 3-4). With both a
// run-time bound, the sums issued every row and group predicated off (~1300 instructions a
// warp and layer at 64 x 64 where one row needs ~270; 2026-11-28c call 1).
template <unsigned int G, unsigned int R>
__device__ __forceinline__ void bd_warps_layer(const BdLayer& d, unsigned int l, const float* w, float* rows,
                                               unsigned int stride, unsigned int first_row, unsigned int& live,
                                               const unsigned int* ids, float bias, const float* __restrict__ biases,
                                               unsigned int bias_stride, float upper, unsigned int suffix_start,
                                               unsigned char* __restrict__ state) {
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    // The live rows first: row r of the sums is the warp's row which[r].
    unsigned int which[R];
    unsigned int row_at[R];
    unsigned int rest = live;
#pragma unroll
    for (unsigned int r = 0; r < R; ++r) {
        which[r] = (unsigned int)__ffs(rest) - 1u;
        rest &= rest - 1u;
        row_at[r] = (first_row + which[r]) * stride;
    }
    float b[G];
#pragma unroll
    for (unsigned int g = 0; g < G; ++g) {
        b[g] = bias_stride != 0u ? __ldg(biases + (unsigned long long)l * bias_stride + g * 32u + lane) : bias;
    }
    float acc[R][G];
#pragma unroll
    for (unsigned int r = 0; r < R; ++r) {
#pragma unroll
        for (unsigned int g = 0; g < G; ++g) {
            acc[r][g] = 0.0f;
        }
    }
    bd_warps_sums<G, R>((d.in_width + 3u) & ~3u, w, rows, row_at, acc);
    // Every lane has read the rows' inputs: the outputs may overwrite them.
    __syncwarp();
    // Only the last group has columns past out_width.
    const bool last_real = (G - 1u) * 32u + lane < d.out_width;
#pragma unroll
    for (unsigned int r = 0; r < R; ++r) {
        float* row = rows + row_at[r];
        bool nonzero = false;
        bool at_bound = true;
#pragma unroll
        for (unsigned int g = 0; g < G; ++g) {
            const float v = spdnn_clamp_activation(acc[r][g] + b[g], upper);
            row[g * 32u + lane] = v;
            if (g + 1u < G || last_real) {
                nonzero |= v != 0.0f;
                at_bound &= v == upper;
            }
        }
        const bool row_nonzero = __any_sync(SPDNN_FULL_MASK, nonzero);
        const bool row_at_bound = __all_sync(SPDNN_FULL_MASK, at_bound);
        if (!bd_keeps(row_nonzero, row_at_bound, l + 1u, suffix_start)) {
            if (lane == 0) {
                state[ids[first_row + which[r]]] = bd_finished_state(row_nonzero);
            }
            live &= ~(1u << which[r]);
        }
    }
}

// bd_warps_layer<G, R> for `rows` (1 .. BD_WARPS_ROWS) known only at run time, tried from
// one up: the deepest tiles' last layers have one row.
template <unsigned int G, unsigned int R = 1>
__device__ __forceinline__ void bd_warps_layer_rows(unsigned int rows_live, const BdLayer& d, unsigned int l,
                                                    const float* w, float* rows, unsigned int stride,
                                                    unsigned int first_row, unsigned int& live, const unsigned int* ids,
                                                    float bias, const float* __restrict__ biases,
                                                    unsigned int bias_stride, float upper, unsigned int suffix_start,
                                                    unsigned char* __restrict__ state) {
    if (rows_live == R) {
        bd_warps_layer<G, R>(d, l, w, rows, stride, first_row, live, ids, bias, biases, bias_stride, upper,
                             suffix_start, state);
    } else if constexpr (R < BD_WARPS_ROWS) {
        bd_warps_layer_rows<G, R + 1>(rows_live, d, l, w, rows, stride, first_row, live, ids, bias, biases,
                                      bias_stride, upper, suffix_start, state);
    }
}

// bd_warps_layer_rows for `groups` (1 .. BD_WARPS_GROUPS) known only at run time.
template <unsigned int G = BD_WARPS_GROUPS>
__device__ __forceinline__ void bd_warps_layer_groups(unsigned int groups, unsigned int rows_live, const BdLayer& d,
                                                      unsigned int l, const float* w, float* rows,
                                                      unsigned int stride, unsigned int first_row, unsigned int& live,
                                                      const unsigned int* ids, float bias,
                                                      const float* __restrict__ biases, unsigned int bias_stride,
                                                      float upper, unsigned int suffix_start,
                                                      unsigned char* __restrict__ state) {
    if (groups == G) {
        bd_warps_layer_rows<G>(rows_live, d, l, w, rows, stride, first_row, live, ids, bias, biases, bias_stride,
                               upper, suffix_start, state);
    } else if constexpr (G > 1) {
        bd_warps_layer_groups<G - 1>(groups, rows_live, d, l, w, rows, stride, first_row, live, ids, bias, biases,
                                     bias_stride, upper, suffix_start, state);
    }
}

// The persistent loop of bd_chain_warps (a launch after the first; every layer dense, rows of
// stride floats, tile_max <= BD_WARPS_THREADS / 32 · BD_WARPS_ROWS): tiles of rows from the
// queue, each carried in from the previous launch; after the last layer the rows still live
// go to the next launch's list or get BD_STATE_LIVE and their values.
__device__ __forceinline__ void bd_chain_warps_loop(BdWarpTile& tile, BD_CHAIN_PARAMS) {
    extern __shared__ float4 bd_dynamic[];
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int slot_words = BD_WARPS_HEADER + stride * stride;
    unsigned int* slots = reinterpret_cast<unsigned int*>(bd_dynamic);
    float* rows = reinterpret_cast<float*>(slots + BD_WARPS_SLOTS * slot_words);
    const unsigned int slots_at = (unsigned int)__cvta_generic_to_shared(slots);
    const unsigned int bars_at = (unsigned int)__cvta_generic_to_shared(tile.bars);
    if (threadIdx.x < BD_WARPS_SLOTS) {
#if BD_HAS_BULK
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bars_at + 8u * threadIdx.x) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
    }
    const unsigned int count = *carry_in_count;
    const unsigned int rows_per_tile = bd_rows_per_tile(count, tile_max);
    // The phase parity each slot's next stage completes: the same in every thread, which all
    // wait on every stage issued.
    unsigned int parity = 0;
    const auto slot_of = [&](unsigned int m) { return m % BD_WARPS_SLOTS; };
    const auto wait = [&](unsigned int m) {
        const unsigned int s = slot_of(m);
        bd_warps_wait(bars_at + 8u * s, (parity >> s) & 1u);
        parity ^= 1u << s;
    };
    const auto stage = [&](const BdLayer& d, unsigned int m) {
        const unsigned int s = slot_of(m);
        bd_warps_stage(slots_at + 4u * s * slot_words, slot_words, bars_at + 8u * s, d, m, end, desc, dense);
    };
    // The thread that issues the stages: lane 0 of the last warp, which holds rows only in
    // tiles of more than 60. Thread 0's warp holds every tile's first rows, and a stage's
    // bulk copy compiles to a MEMBAR.ALL.CTA before its arrive: a one-row layer's wait took
    // ~730 cycles in warp 0 against ~350 in the others (2026-11-29d calls 3, 6 and 7).
    const bool stager = threadIdx.x == BD_WARPS_THREADS - SPDNN_WARP_SIZE;
    for (;;) {
        const unsigned int base = bd_next_tile(queue, tile.base, rows_per_tile);
        if (base >= count) {
            break;
        }
        const unsigned int n = min(rows_per_tile, count - base);
        // The first two layers' stages. The stager keeps the descriptor of the next layer to
        // stage in registers, loaded a layer before it is needed: the stages' copies never
        // wait on one another (a stage that read its descriptor from the slot before it
        // waited for that slot's copy to land).
        BdLayer layer = bd_layer_at(desc, first);
        BdLayer ahead = layer;
        if (stager) {
            stage(layer, first);
            if (first + 1u < end) {
                stage(bd_layer_at(desc, first + 1u), first + 1u);
            }
            if (first + 2u < end) {
                ahead = bd_layer_at(desc, first + 2u);
            }
        }
        // The warp's rows, carried in: the tile's rows over as few warps as keep the SM's
        // four schedulers busy, so that each warp's reads of a layer's whole matrix from
        // shared memory (128 wavefronts at 64 x 64) serve several rows. (Counted as the limit
        // of a layer with a row a warp, ~2200 wavefronts at 17 rows; measured, it was not:
        // the launch took the same time, 2026-11-28c call 3.) Warp w takes positions
        // w · rows_per_warp + j.
        const unsigned int rows_per_warp = min((unsigned int)BD_WARPS_ROWS, (n + BD_WARPS_SPREAD - 1u) / BD_WARPS_SPREAD);
        const unsigned int first_row = warp * rows_per_warp;
        unsigned int live = 0;
#pragma unroll
        for (unsigned int j = 0; j < BD_WARPS_ROWS; ++j) {
            const unsigned int p = first_row + j;
            if (j < rows_per_warp && p < n) {
                live |= 1u << j;
                if (lane == 0) {
                    tile.ids[p] = carry_in_ids[base + p];
                }
                const float4* from =
                    reinterpret_cast<const float4*>(carry_in_vals + (unsigned long long)(base + p) * carry_in_stride);
                float4* to = reinterpret_cast<float4*>(rows + p * stride);
                for (unsigned int q = lane; q < carry_in_stride / 4u; q += SPDNN_WARP_SIZE) {
                    to[q] = __ldg(from + q);
                }
            }
        }
        __syncwarp();
        unsigned int l = first;
        for (; l < end; ++l) {
            // Every warp is past layer l - 1 (its slot may be refilled), and some row is left.
            if (__syncthreads_or(live != 0u) == 0) {
                break;
            }
            if (stager && l + 2u < end) {
                stage(ahead, l + 2u);
                if (l + 3u < end) {
                    ahead = bd_layer_at(desc, l + 3u);
                }
            }
            if (live == 0u) {
                // A warp without rows neither waits for the slot nor reads it (with all 16
                // polling one mbarrier after the barrier, a one-row warp's wait took ~285
                // cycles; 2026-11-28j calls 3-4): it keeps the slot's phase parity in step, and
                // rows never come back to it within a tile. The barrier's warps with rows
                // waited for every stage that the next ones refill.
                parity ^= 1u << slot_of(l);
                continue;
            }
            wait(l);
            const unsigned int* slot = slots + slot_of(l) * slot_words;
            const BdLayer next = l + 1u < end ? bd_layer_from(slot) : layer;
            bd_warps_layer_groups((layer.out_width + 31u) / 32u, (unsigned int)__popc(live), layer, l,
                                  reinterpret_cast<const float*>(slot + BD_WARPS_HEADER), rows, stride, first_row,
                                  live, tile.ids, bias, biases, bias_stride, upper, suffix_start, state);
            layer = next;
        }
        // The lanes' last outputs are in place before other lanes copy them out (float4s).
        __syncwarp();
        // Stages issued past where the tile stopped land before the next tile's: those of
        // layers l and l + 1 (each layer m issues layer m + 2's; the tile's first two are
        // issued before its loop).
        for (unsigned int m = l; m < min(end, l + 2u); ++m) {
            wait(m);
        }
        const unsigned int out_width = layer.out_width;
#pragma unroll
        for (unsigned int j = 0; j < BD_WARPS_ROWS; ++j) {
            if (((live >> j) & 1u) == 0u) {
                continue;
            }
            const float* row = rows + (first_row + j) * stride;
            if (carry_out_stride == 0) {
                float* to = out + (unsigned long long)tile.ids[first_row + j] * out_width;
                for (unsigned int c = lane; c < out_width; c += SPDNN_WARP_SIZE) {
                    to[c] = row[c];
                }
                if (lane == 0) {
                    state[tile.ids[first_row + j]] = BD_STATE_LIVE;
                }
            } else {
                unsigned int at = 0;
                if (lane == 0) {
                    at = atomicAdd(carry_out_count, 1u);
                    carry_out_ids[at] = tile.ids[first_row + j];
                }
                at = __shfl_sync(SPDNN_FULL_MASK, at, 0);
                float4* to = reinterpret_cast<float4*>(carry_out_vals + (unsigned long long)at * carry_out_stride);
                for (unsigned int q = lane; q < carry_out_stride / 4u; q += SPDNN_WARP_SIZE) {
                    to[q] = reinterpret_cast<const float4*>(row)[q];
                }
            }
        }
        // The next tile's rows and tile.base wait for every warp.
        __syncthreads();
    }
}

// ---- The spread tail: a launch whose few rows are spread over the whole grid ----
//
// With few rows a launch's blocks each carry a tile of 1–2 rows through every layer, and each
// layer's weights stream through one SM: the launch lasts one block's chain (about 15 µs a
// layer at N = 65536) however few the rows. The spread instances instead run the launch's
// layers one at a time over the whole grid (a cooperative launch; a grid-wide barrier after
// each layer). Per layer the live rows are cut into `chunks` of at most chunk_max rows
// (bd_spread) and each chunk's output groups into `slices`, one (chunk, slice) unit a block:
// the block
// copies its chunk's rows into shared memory, runs the exact items of its slice's output
// groups (the same sums in the same order as bd_chain: bit for bit the same values), and
// writes its slice of each output row to global memory (two buffers of gridDim.x chunks of
// rows, alternating by layer), with one flag word a row per layer saying whether any output
// was nonzero or off the bound. After the barrier every block ranks the rows still live from
// those flags (the same order everywhere), block 0 writes the states of the rows that
// finished. A launch that starts with more rows than gridDim.x chunks runs bd_chain's tiles
// (the host enqueues both; each returns at once when the other is the one to run).

// Loads in flight a thread while a spread unit copies its chunk's rows into shared memory.
#define BD_SPREAD_LOADS 4

// Most rows of a spread unit's work item (bd_item_rows): with 8 (or 7) the wide instances
// spilled 56–164 bytes at their 80 registers, with 4 none (NVRTC 13.0, sm_90). The tail
// launch at N = 65536 took the same time either way (0.162 ms against 0.155 with 8, on one
// H200). Each output's sum is the same whatever the item's rows.
#define BD_SPREAD_ITEM_ROWS 4u

// Flag bits of a row after a layer (atomicOr by every slice of the row).
#define BD_SPREAD_COMPUTED 4u
#define BD_SPREAD_NONZERO 1u
#define BD_SPREAD_OFF_BOUND 2u

// Grid-wide barrier of a cooperative launch (every block resident): each block adds one to
// *arrived per call (zeroed before the launch) and waits until all have, `round` counting
// this block's calls. The fences publish the block's global writes before it arrives and
// order its later reads after the others' writes.
__device__ __forceinline__ void bd_grid_sync(unsigned int* arrived, unsigned int& round) {
    __syncthreads();
    round += 1u;
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(arrived, 1u);
        const unsigned int target = round * gridDim.x;
        while (*reinterpret_cast<volatile unsigned int*>(arrived) < target) {
        }
        __threadfence();
    }
    __syncthreads();
}

// Whether a row is live after `done` layers from its flag word (bd_keeps).
__device__ __forceinline__ bool bd_spread_live(unsigned int word, unsigned int done, unsigned int suffix_start) {
    const bool nonzero = (word & BD_SPREAD_NONZERO) != 0u;
    const bool at_bound = (word & BD_SPREAD_OFF_BOUND) == 0u;
    return (word & BD_SPREAD_COMPUTED) != 0u && bd_keeps(nonzero, at_bound, done, suffix_start);
}

// Ranks the rows live after `done` layers (positions 0..count-1 of the launch's list, in
// order): visit(position, rank) for each; block 0 also writes the state of each row that the
// last layer finished (unless state is nullptr). Every thread of the block calls it; returns
// the live count.
template <unsigned int THREADS, typename Visit>
__device__ __forceinline__ unsigned int bd_spread_rank(const unsigned int* flags, unsigned int count,
                                                       unsigned int done, unsigned int suffix_start,
                                                       const unsigned int* __restrict__ ids,
                                                       unsigned char* __restrict__ state, BdTile& tile,
                                                       Visit visit) {
    constexpr unsigned int warps = THREADS / SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    unsigned int before = 0;
    for (unsigned int p0 = 0; p0 < count; p0 += THREADS) {
        const unsigned int p = p0 + threadIdx.x;
        const unsigned int word = p < count ? __ldcg(flags + p) : 0u;
        const bool live = bd_spread_live(word, done, suffix_start);
        if (state != nullptr && blockIdx.x == 0 && !live && (word & BD_SPREAD_COMPUTED) != 0u) {
            state[ids[p]] = bd_finished_state((word & BD_SPREAD_NONZERO) != 0u);
        }
        const unsigned int mask = __ballot_sync(SPDNN_FULL_MASK, live);
        if (lane == 0) {
            tile.starts[warp] = __popc(mask);
        }
        __syncthreads();
        unsigned int offset = before;
        unsigned int total = 0;
        for (unsigned int w = 0; w < warps; ++w) {
            const unsigned int n = tile.starts[w];
            offset += w < warp ? n : 0u;
            total += n;
        }
        if (live) {
            visit(p, offset + __popc(mask & ((1u << lane) - 1u)));
        }
        before += total;
        __syncthreads();
    }
    return before;
}

// No slot of the block's for a rank (bd_spread_take).
#define BD_NO_SLOT 0xFFFFFFFFu

// The block's rows: the position of each live rank r whose slot(r) is not BD_NO_SLOT into
// tile.ids[slot(r)], from the flags after `done` layers, or (flags == nullptr, the launch's
// first layer, every row live) the ranks themselves; tile.live the identity.
template <unsigned int THREADS, typename Slot>
__device__ __forceinline__ void bd_spread_take(const unsigned int* flags, unsigned int count, unsigned int done,
                                               unsigned int suffix_start, BdTile& tile, Slot slot) {
    for (unsigned int r = threadIdx.x; r < BD_MAX_TILE; r += THREADS) {
        tile.live[r] = r;
    }
    if (flags == nullptr) {
        for (unsigned int rank = threadIdx.x; rank < count; rank += THREADS) {
            const unsigned int at = slot(rank);
            if (at != BD_NO_SLOT) {
                tile.ids[at] = rank;
            }
        }
    } else {
        // States were written by the counting pass; none here.
        bd_spread_rank<THREADS>(flags, count, done, suffix_start, nullptr, nullptr, tile,
                                [&](unsigned int p, unsigned int rank) {
                                    const unsigned int at = slot(rank);
                                    if (at != BD_NO_SLOT) {
                                        tile.ids[at] = p;
                                    }
                                });
    }
    __syncthreads();
}

// A spread launch of a segment placed at PLACE (shared: its dynamic shared memory holds two
// buffers of tile_max rows, a chunk is tile_max rows; split: one buffer of tile_max rows, a
// chunk is tile_max / 2 rows and its outputs take the other half). It runs when the launch
// has at most spread_rows rows (at most a chunk a block; the host passes the same number to
// the segment's bd_chain launch, enqueued just before, which runs the tiles otherwise).
template <unsigned int THREADS, unsigned int PLACE>
__device__ __forceinline__ void bd_spread(BdTile& tile, BD_CHAIN_PARAMS, float* __restrict__ spread_vals,
                                          unsigned int* __restrict__ spread_flags, unsigned int* arrived) {
    constexpr unsigned int warps = THREADS / SPDNN_WARP_SIZE;
    const unsigned int warp = threadIdx.x / SPDNN_WARP_SIZE;
    const unsigned int lane = threadIdx.x % SPDNN_WARP_SIZE;
    const unsigned int chunk_max = PLACE == BD_PLACE_SPLIT ? tile_max / 2u : tile_max;
    const unsigned int capacity = spread_rows;
    const unsigned int count = *carry_in_count;
    // No rows (the deep launches of a retired chain): nothing to clear or wait for.
    if (first == 0 || chunk_max == 0u || count == 0u || count > capacity || capacity > gridDim.x * chunk_max) {
        return;
    }
    extern __shared__ float4 bd_dynamic[];
    float* cur = reinterpret_cast<float*>(bd_dynamic);
    float* next = cur + chunk_max * stride;
    unsigned int round = 0;
    for (unsigned int i = blockIdx.x * THREADS + threadIdx.x; i < 3u * capacity; i += gridDim.x * THREADS) {
        spread_flags[i] = 0u;
    }
    bd_grid_sync(arrived, round);

    unsigned int live = count;
    unsigned int l = first;
    for (;;) {
        // Flags of layer l live in array l % 3: block 0 clears array (l + 1) % 3, last read by
        // the ranking at the start of layer l - 1, before the barrier that ended it.
        const unsigned int* done_flags = l > first ? spread_flags + ((l - 1u) % 3u) * capacity : nullptr;
        if (l > first) {
            live = bd_spread_rank<THREADS>(done_flags, count, l, suffix_start, carry_in_ids, state, tile,
                                           [](unsigned int, unsigned int) {});
        }
        if (l == end || live == 0u) {
            break;
        }
        if (blockIdx.x == 0) {
            unsigned int* stale = spread_flags + ((l + 1u) % 3u) * capacity;
            for (unsigned int i = threadIdx.x; i < count; i += THREADS) {
                stale[i] = 0u;
            }
        }
        const BdLayer layer = bd_layer_at(desc, l);
        const unsigned int k = l - first;
        const float* src = k == 0 ? carry_in_vals : spread_vals + (unsigned long long)((k - 1u) % 2u) * capacity * stride;
        const unsigned int src_stride = k == 0 ? carry_in_stride : stride;
        float* dst = spread_vals + (unsigned long long)(k % 2u) * capacity * stride;
        unsigned int* flags = spread_flags + (l % 3u) * capacity;

        const unsigned int chunks = (live + chunk_max - 1u) / chunk_max;
        const unsigned int chunk_rows = (live + chunks - 1u) / chunks;
        const unsigned int groups = (layer.out_width + 31u) / 32u;
        const unsigned int slices = min(groups, max(1u, gridDim.x / chunks));
        if (blockIdx.x < chunks * slices) {
            const unsigned int chunk = blockIdx.x / slices;
            const unsigned int slice = blockIdx.x % slices;
            const unsigned int lo = min(live, chunk * chunk_rows);
            const unsigned int n = min(live, lo + chunk_rows) - lo;
            bd_spread_take<THREADS>(done_flags, count, l, suffix_start, tile, [&](unsigned int rank) {
                return rank >= lo && rank < lo + n ? rank - lo : BD_NO_SLOT;
            });
            // The chunk's input rows into shared memory (their padded width: dense steps read
            // up to it, and it is zero past the real inputs), BD_SPREAD_LOADS loads in flight a
            // thread: one at a time, the ~10 a thread of 7 rows of 4096 floats would wait on L2
            // one after the other.
            const unsigned int vectors = bd_round32(layer.in_width) / 4u;
            const unsigned int total = n * vectors;
            for (unsigned int i0 = threadIdx.x; i0 < total; i0 += BD_SPREAD_LOADS * THREADS) {
                float4 v[BD_SPREAD_LOADS];
#pragma unroll
                for (unsigned int u = 0; u < BD_SPREAD_LOADS; ++u) {
                    const unsigned int i = i0 + u * THREADS;
                    if (i < total) {
                        const unsigned int r = i / vectors;
                        const float4* from =
                            reinterpret_cast<const float4*>(src + (unsigned long long)tile.ids[r] * src_stride);
                        v[u] = __ldcg(from + (i - r * vectors));
                    }
                }
#pragma unroll
                for (unsigned int u = 0; u < BD_SPREAD_LOADS; ++u) {
                    const unsigned int i = i0 + u * THREADS;
                    if (i < total) {
                        const unsigned int r = i / vectors;
                        reinterpret_cast<float4*>(cur + r * stride)[i - r * vectors] = v[u];
                    }
                }
            }
            __syncthreads();
            const unsigned int g0 = slice * groups / slices;
            const unsigned int g1 = (slice + 1u) * groups / slices;
            const unsigned int width = g1 - g0;
            const unsigned int items = width * ((n + BD_SPREAD_ITEM_ROWS - 1u) / BD_SPREAD_ITEM_ROWS);
            for (unsigned int i = warp; i < items; i += warps) {
                const unsigned int g = g0 + i % width;
                const unsigned int first_row = (i / width) * BD_SPREAD_ITEM_ROWS;
                bd_item_rows<BD_SPREAD_ITEM_ROWS, false>(min(BD_SPREAD_ITEM_ROWS, n - first_row), layer, l, g,
                                                         g * 32u + lane, first_row, cur, next, stride, tile, dense,
                                                         ell, group_starts, bias, biases, bias_stride, upper);
            }
            __syncthreads();
            // The slice of each output row to global memory, and its flags.
            for (unsigned int r = warp; r < n; r += warps) {
                const unsigned int p = tile.ids[r];
                bool nonzero = false;
                bool off_bound = false;
                for (unsigned int c = g0 * 32u + lane; c < g1 * 32u; c += SPDNN_WARP_SIZE) {
                    const float v = next[r * stride + c];
                    __stcg(dst + (unsigned long long)p * stride + c, v);
                    if (c < layer.out_width) {
                        nonzero |= v != 0.0f;
                        off_bound |= v != upper;
                    }
                }
                nonzero = __any_sync(SPDNN_FULL_MASK, nonzero);
                off_bound = __any_sync(SPDNN_FULL_MASK, off_bound);
                if (lane == 0) {
                    atomicOr(flags + p, BD_SPREAD_COMPUTED | (nonzero ? BD_SPREAD_NONZERO : 0u) |
                                            (off_bound ? BD_SPREAD_OFF_BOUND : 0u));
                }
            }
        }
        bd_grid_sync(arrived, round);
        ++l;
    }

    // The rows live after layer l - 1 (the last computed): block b takes ranks b·q .. b·q+q-1
    // and appends them to the next launch's list at their ranks, or writes their final values.
    if (live == 0u) {
        return;
    }
    const float* vals = spread_vals + (unsigned long long)((l - first - 1u) % 2u) * capacity * stride;
    const unsigned int share = (live + gridDim.x - 1u) / gridDim.x;
    const unsigned int lo = min(live, blockIdx.x * share);
    const unsigned int n = min(live, lo + share) - lo;
    if (carry_out_stride != 0u && blockIdx.x == 0 && threadIdx.x == 0) {
        *carry_out_count = live;
    }
    if (n == 0u) {
        return;
    }
    bd_spread_take<THREADS>(spread_flags + ((l - 1u) % 3u) * capacity, count, l, suffix_start, tile,
                            [&](unsigned int rank) { return rank >= lo && rank < lo + n ? rank - lo : BD_NO_SLOT; });
    if (carry_out_stride != 0u) {
        for (unsigned int r = threadIdx.x; r < n; r += THREADS) {
            carry_out_ids[lo + r] = carry_in_ids[tile.ids[r]];
        }
        const unsigned int vectors = carry_out_stride / 4u;
        bd_for_quads<THREADS>(n, vectors, [&](unsigned int r, unsigned int q) {
            const float4* from = reinterpret_cast<const float4*>(vals + (unsigned long long)tile.ids[r] * stride);
            reinterpret_cast<float4*>(carry_out_vals + (unsigned long long)(lo + r) * carry_out_stride)[q] =
                __ldcg(from + q);
        });
    } else {
        const unsigned int out_width = bd_layer_at(desc, end - 1u).out_width;
        for (unsigned int r = warp; r < n; r += warps) {
            const unsigned int id = carry_in_ids[tile.ids[r]];
            const float* row = vals + (unsigned long long)tile.ids[r] * stride;
            float* to = out + (unsigned long long)id * out_width;
            for (unsigned int c = lane; c < out_width; c += SPDNN_WARP_SIZE) {
                to[c] = __ldcg(row + c);
            }
            if (lane == 0) {
                state[id] = BD_STATE_LIVE;
            }
        }
    }
}

#define BD_SPREAD_PARAMS                                                                                            \
    BD_CHAIN_PARAMS, float *__restrict__ spread_vals, unsigned int *__restrict__ spread_flags, unsigned int *arrived

#if SPDNN_KEEP(bd_chain_shared)
// Launch: grid = the blocks resident on the device (SMs × occupancy; persistent, tiles from the queue), block BD_THREADS,
// dynamic shared 2 · tile_max · stride floats (the tile's two buffers).
extern "C" __global__ void __launch_bounds__(BD_THREADS) bd_chain_shared(BD_CHAIN_PARAMS) {
    __shared__ BdTile tile;
    bd_chain<BD_THREADS, BD_PLACE_SHARED>(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_shared)

#if SPDNN_KEEP(bd_chain_shared_wide)
// Launch: grid = the blocks resident on the device (one an SM; persistent, tiles from the queue), block BD_THREADS_WIDE,
// dynamic shared 2 · tile_max · stride floats (the tile's two buffers).
extern "C" __global__ void __launch_bounds__(BD_THREADS_WIDE) bd_chain_shared_wide(BD_CHAIN_PARAMS) {
    __shared__ BdTile tile;
    bd_chain<BD_THREADS_WIDE, BD_PLACE_SHARED>(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_shared_wide)

#if SPDNN_KEEP(bd_chain_split)
// Launch: grid = the blocks resident on the device (SMs × occupancy; persistent, tiles from the queue), block BD_THREADS,
// dynamic shared tile_max · stride floats (the layer's input rows); its outputs in scratch (grid · tile_max · stride floats).
extern "C" __global__ void __launch_bounds__(BD_THREADS) bd_chain_split(BD_CHAIN_PARAMS) {
    __shared__ BdTile tile;
    bd_chain<BD_THREADS, BD_PLACE_SPLIT>(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_split)

#if SPDNN_KEEP(bd_chain_split_wide)
// Launch: grid = the blocks resident on the device (one an SM; persistent, tiles from the queue), block BD_THREADS_WIDE,
// dynamic shared tile_max · stride floats (the layer's input rows); its outputs in scratch (grid · tile_max · stride floats).
extern "C" __global__ void __launch_bounds__(BD_THREADS_WIDE) bd_chain_split_wide(BD_CHAIN_PARAMS) {
    __shared__ BdTile tile;
    bd_chain<BD_THREADS_WIDE, BD_PLACE_SPLIT>(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_split_wide)

#if SPDNN_KEEP(bd_chain_global)
// Launch: grid = the blocks resident on the device (SMs × occupancy; persistent, tiles from the queue), block BD_THREADS,
// static shared bookkeeping only: the tile's two buffers lie in scratch (grid · 2 · tile_max · stride floats).
extern "C" __global__ void __launch_bounds__(BD_THREADS) bd_chain_global(BD_CHAIN_PARAMS) {
    __shared__ BdTile tile;
    bd_chain<BD_THREADS, BD_PLACE_GLOBAL>(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_global)

#if SPDNN_KEEP(bd_chain_lanes)
// Launch: grid = the blocks resident on the device (BD_LANES_BLOCKS an SM; persistent, each warp takes 32 rows from
// the queue at a time), block BD_LANES_THREADS, dynamic shared (BD_LANES_THREADS / 32) · stride · BD_LANE_PITCH floats
// (each warp's buffer).
extern "C" __global__ void __launch_bounds__(BD_LANES_THREADS, BD_LANES_BLOCKS) bd_chain_lanes(BD_CHAIN_PARAMS) {
    __shared__ unsigned int lane_starts[BD_LANES_THREADS / SPDNN_WARP_SIZE][SPDNN_WARP_SIZE + 1];
    bd_chain_lanes_loop(lane_starts, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_lanes)

#if SPDNN_KEEP(bd_chain_warps)
// Launch: grid = BD_WARPS_BLOCKS blocks an SM (persistent, tiles from the queue), block BD_WARPS_THREADS, dynamic shared
// BD_WARPS_SLOTS · (BD_WARPS_HEADER + stride · stride) words (the stage slots) + tile_max · stride floats (a row a
// buffer).
extern "C" __global__ void __launch_bounds__(BD_WARPS_THREADS, BD_WARPS_BLOCKS) bd_chain_warps(BD_CHAIN_PARAMS) {
    __shared__ BdWarpTile tile;
    bd_chain_warps_loop(tile, BD_CHAIN_ARGS);
}
#endif  // SPDNN_KEEP(bd_chain_warps)

#if SPDNN_KEEP(bd_spread_chain)
// Launch: cooperative, grid = the blocks resident on the device (SMs × occupancy), block BD_THREADS, dynamic shared
// 2 · tile_max · stride floats (a chunk's rows and their outputs); spread_vals 2 · spread_rows · stride floats,
// spread_flags 3 · spread_rows words (spread_rows <= grid · tile_max).
extern "C" __global__ void __launch_bounds__(BD_THREADS) bd_spread_chain(BD_SPREAD_PARAMS) {
    __shared__ BdTile tile;
    bd_spread<BD_THREADS, BD_PLACE_SHARED>(tile, BD_CHAIN_ARGS, spread_vals, spread_flags, arrived);
}
#endif  // SPDNN_KEEP(bd_spread_chain)

#if SPDNN_KEEP(bd_spread_chain_wide)
// Launch: cooperative, grid = the blocks resident on the device (one an SM), block BD_THREADS_WIDE,
// dynamic shared 2 · tile_max · stride floats; global buffers as bd_spread_chain's.
extern "C" __global__ void __launch_bounds__(BD_THREADS_WIDE) bd_spread_chain_wide(BD_SPREAD_PARAMS) {
    __shared__ BdTile tile;
    bd_spread<BD_THREADS_WIDE, BD_PLACE_SHARED>(tile, BD_CHAIN_ARGS, spread_vals, spread_flags, arrived);
}
#endif  // SPDNN_KEEP(bd_spread_chain_wide)

#if SPDNN_KEEP(bd_spread_split)
// Launch: cooperative, grid = the blocks resident on the device (SMs × occupancy), block BD_THREADS, dynamic shared
// tile_max · stride floats (a chunk of tile_max / 2 rows and their outputs); spread_vals 2 · spread_rows · stride
// floats, spread_flags 3 · spread_rows words (spread_rows <= grid · (tile_max / 2)).
extern "C" __global__ void __launch_bounds__(BD_THREADS) bd_spread_split(BD_SPREAD_PARAMS) {
    __shared__ BdTile tile;
    bd_spread<BD_THREADS, BD_PLACE_SPLIT>(tile, BD_CHAIN_ARGS, spread_vals, spread_flags, arrived);
}
#endif  // SPDNN_KEEP(bd_spread_split)

#if SPDNN_KEEP(bd_spread_split_wide)
// Launch: cooperative, grid = the blocks resident on the device (one an SM), block BD_THREADS_WIDE,
// dynamic shared tile_max · stride floats; global buffers as bd_spread_split's.
extern "C" __global__ void __launch_bounds__(BD_THREADS_WIDE) bd_spread_split_wide(BD_SPREAD_PARAMS) {
    __shared__ BdTile tile;
    bd_spread<BD_THREADS_WIDE, BD_PLACE_SPLIT>(tile, BD_CHAIN_ARGS, spread_vals, spread_flags, arrived);
}
#endif  // SPDNN_KEEP(bd_spread_split_wide)
