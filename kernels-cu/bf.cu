// bf.cu: BF-2019 (Bisson & Fatica), CSR weights in column slabs, dense row-major Y,
// work only on the list of non-empty rows; with GLARE variants (glare.cuh).
// Definitions from Rust: glare.cuh's (spdnn_glare::DEFINES). Launch shapes: the kernel
// declarations of spdnn-bf (crates/bf/src/lib.rs).
#include "common.cuh"
#include "glare.cuh"
#include "slabs.cuh"

// The GLARE recorder of one BF layer: units of 2^shift neurons of a row, in_units per input
// row and out_units per output row (2^shift >= the slab width or >= n_out, so a slab
// overlaps at most two units).
struct BfRecorder {
    const unsigned char* in_flags;
    unsigned char* out_flags;
    unsigned int shift;
    unsigned int in_units;
    unsigned int out_units;
    unsigned long long* census;
};

// One layer (W: n_in x n_out, in num_slabs slabs of the n_out outputs) for the rows in
// active_rows[0 .. *active_count): block (position, y) takes slabs y, y + gridDim.y, ...:
// for each, zero a shared accumulator, add y_j * W[j, slab] over the nonzero y_j (shared
// atomics), add the bias, clip and write. A row's slabs spread over gridDim.y blocks keep
// a small batch of rows from leaving the chip idle behind one long block per row.
// y_in holds rows of n_in values, y_out rows of n_out (n_in == n_out in the challenge's
// networks). A block that wrote a nonzero sets row_alive[position] to 1 (it is 0 before:
// zeroed at allocation and cleared by bf_compact_rows after reading it). With `biases`
// (not GLARE), output c gets biases[c] instead of `bias` (trained networks, biases <= 0).
// With GLARE, inputs of flagged units are the bound without a load, and an output unit
// whose values are all at the bound is flagged instead of written. A unit spanning
// slabs stays open: its parts at the bound are held back and, if a later part is not at
// the bound, the bound is written into them then, so GLARE launches with gridDim.y = 1.
template <bool GLARE, bool CENSUS>
__device__ __forceinline__ void bf_layer_body(const float* __restrict__ y_in, float* __restrict__ y_out,
                                              const unsigned int* __restrict__ active_rows,
                                              const unsigned int* __restrict__ active_count,
                                              unsigned char* __restrict__ row_alive,
                                              const unsigned int* __restrict__ slab_offsets,
                                              const unsigned int* __restrict__ slab_cols,
                                              const float* __restrict__ vals, unsigned int n_in,
                                              unsigned int n_out, unsigned int slab_width,
                                              unsigned int num_slabs, float bias, float upper,
                                              const float* __restrict__ biases, BfRecorder recorder) {
    extern __shared__ float acc[];
    __shared__ unsigned char unit_at_bound[GLARE ? GLARE_MAX_ROW_UNITS : 1];
    const unsigned int position = blockIdx.x;
    if (position >= *active_count) {
        return;
    }
    const unsigned int row = active_rows[position];
    const float* y = y_in + (unsigned long long)row * n_in;
    float* out = y_out + (unsigned long long)row * n_out;
    GlareTally<CENSUS> tally;
    const unsigned long long in_flag_base = (unsigned long long)row * recorder.in_units;
    const unsigned long long flag_base = (unsigned long long)row * recorder.out_units;
    if (GLARE) {
        for (unsigned int u = threadIdx.x; u < recorder.in_units; u += blockDim.x) {
            unit_at_bound[u] = recorder.in_flags[in_flag_base + u];
            tally.add(GLARE_RECORDER_READS, 1);
        }
        __syncthreads();
    }
    // Whether every part so far of the unit left open by the previous slab is at the bound.
    bool open_at_bound = true;
    int alive = 0;
    for (unsigned int slab = blockIdx.y; slab < num_slabs; slab += gridDim.y) {
        const unsigned int first_col = slab * slab_width;
        const unsigned int width = min(slab_width, n_out - first_col);
        spdnn_zero_shared(acc, width);
        __syncthreads();
        const unsigned int* offsets = slab_offsets + (unsigned long long)slab * (n_in + 1);
        if (!GLARE) {
            spdnn_slab_scatter(acc, y, offsets, slab_cols, vals, 0, n_in);
            __syncthreads();
            alive |= biases != nullptr
                         ? spdnn_slab_activate_each(acc, out + first_col, width, biases + first_col, upper)
                         : spdnn_slab_activate(acc, out + first_col, width, bias, upper);
            __syncthreads();
            continue;
        }
        const unsigned int shift = recorder.shift;
        const unsigned int weight_reads = spdnn_slab_scatter_with(
            acc,
            [&](unsigned int j) {
                const bool at_bound = unit_at_bound[j >> shift] != 0;
                tally.add(at_bound ? GLARE_READS_SKIPPED : GLARE_READS, 1);
                return glare_read(at_bound, y + j, upper);
            },
            offsets, slab_cols, vals, 0, n_in);
        tally.add(GLARE_WEIGHT_READS, weight_reads);
        __syncthreads();
        // Units a (where the slab starts) and b (where it ends; maybe a itself).
        const unsigned int unit_a = first_col >> shift;
        const unsigned int unit_b = (first_col + width - 1) >> shift;
        int a_off_bound = 0;
        int b_off_bound = 0;
        for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
            const float v = spdnn_clamp_activation(__fadd_rn(acc[c], bias), upper);
            acc[c] = v;
            alive |= v != 0.0f;
            if (v != upper) {
                if (((first_col + c) >> shift) == unit_a) {
                    a_off_bound = 1;
                } else {
                    b_off_bound = 1;
                }
            }
        }
        a_off_bound = __syncthreads_or(a_off_bound);
        b_off_bound = __syncthreads_or(b_off_bound);
        const unsigned long long start_a = (unsigned long long)unit_a << shift;
        const bool a_starts_here = start_a == first_col;
        const bool a_at_bound = (a_starts_here || open_at_bound) && !a_off_bound;
        const bool b_at_bound = !b_off_bound;
        // Parts held back in earlier slabs of unit a get the bound when a is vetoed here.
        if (!a_starts_here && open_at_bound && a_off_bound) {
            for (unsigned long long c = start_a + threadIdx.x; c < first_col; c += blockDim.x) {
                out[c] = upper;
                tally.add(GLARE_WRITE_BACKS, 1);
            }
        }
        for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
            const bool in_a = ((first_col + c) >> shift) == unit_a;
            if (in_a ? a_at_bound : b_at_bound) {
                tally.add(GLARE_WRITES_SKIPPED, 1);
            } else {
                out[first_col + c] = acc[c];
                tally.add(GLARE_WRITES, 1);
            }
        }
        // Close the units that end in this slab; the last one may stay open.
        const unsigned long long slab_end = first_col + width;
        const unsigned long long end_a = min(start_a + (1ull << shift), (unsigned long long)n_out);
        if (end_a <= slab_end) {
            if (threadIdx.x == 0) {
                recorder.out_flags[flag_base + unit_a] = a_at_bound ? 1 : 0;
                tally.add(GLARE_RECORDER_WRITES, 1);
            }
            if (unit_b != unit_a) {
                const unsigned long long end_b =
                    min(((unsigned long long)unit_b + 1) << shift, (unsigned long long)n_out);
                if (end_b <= slab_end) {
                    if (threadIdx.x == 0) {
                        recorder.out_flags[flag_base + unit_b] = b_at_bound ? 1 : 0;
                        tally.add(GLARE_RECORDER_WRITES, 1);
                    }
                } else {
                    open_at_bound = b_at_bound;
                }
            }
        } else {
            open_at_bound = a_at_bound;
        }
        __syncthreads();
    }
    alive = __syncthreads_or(alive);
    if (threadIdx.x == 0 && alive) {
        row_alive[position] = 1;
    }
    if (CENSUS) {
        tally.flush(recorder.census);
    }
}

#define BF_LAYER_ARGS                                                                                         \
    const float *__restrict__ y_in, float *__restrict__ y_out, const unsigned int *__restrict__ active_rows,   \
        const unsigned int *__restrict__ active_count, unsigned char *__restrict__ row_alive,                  \
        const unsigned int *__restrict__ slab_offsets, const unsigned int *__restrict__ slab_cols,             \
        const float *__restrict__ vals, unsigned int n_in, unsigned int n_out, unsigned int slab_width,         \
        unsigned int num_slabs, float bias, float upper
#define BF_LAYER_PASS                                                                                        \
    y_in, y_out, active_rows, active_count, row_alive, slab_offsets, slab_cols, vals, n_in, n_out, slab_width, \
        num_slabs, bias, upper
#define BF_RECORDER_ARGS                                                                                      \
    const unsigned char *__restrict__ in_flags, unsigned char *__restrict__ out_flags, unsigned int shift,     \
        unsigned int in_units, unsigned int out_units, unsigned long long *__restrict__ census

#if SPDNN_KEEP(bf_layer)
// Launch: grid (list capacity; blocks past *active_count exit) x (slabs), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void bf_layer(BF_LAYER_ARGS) {
    bf_layer_body<false, false>(BF_LAYER_PASS, nullptr, BfRecorder{nullptr, nullptr, 0u, 0u, 0u, nullptr});
}
#endif  // SPDNN_KEEP(bf_layer)

#if SPDNN_KEEP(bf_layer_neurons)
// bf_layer with a bias per output neuron (biases: n_out values; `bias` unused).
// Launch: grid (list capacity; blocks past *active_count exit) x (slabs), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void bf_layer_neurons(BF_LAYER_ARGS, const float* __restrict__ biases) {
    bf_layer_body<false, false>(BF_LAYER_PASS, biases, BfRecorder{nullptr, nullptr, 0u, 0u, 0u, nullptr});
}
#endif  // SPDNN_KEEP(bf_layer_neurons)

#if SPDNN_KEEP(bf_layer_glare)
// bf_layer with the GLARE recorder (in_flags: rows x in_units bytes, out_flags: rows x out_units).
// Launch: grid (list capacity; blocks past *active_count exit) x 1, block 256, dynamic shared min(slab_width, n_out) floats
// (+ GLARE_MAX_ROW_UNITS bytes static).
extern "C" __global__ void bf_layer_glare(BF_LAYER_ARGS, BF_RECORDER_ARGS) {
    bf_layer_body<true, false>(BF_LAYER_PASS, nullptr, BfRecorder{in_flags, out_flags, shift, in_units, out_units, census});
}
#endif  // SPDNN_KEEP(bf_layer_glare)

#if SPDNN_KEEP(bf_layer_glare_census)
// bf_layer_glare counting its accesses into census[0 .. GLARE_CENSUS_WORDS).
// Launch: grid (list capacity; blocks past *active_count exit) x 1, block 256, dynamic shared min(slab_width, n_out) floats
// (+ GLARE_MAX_ROW_UNITS bytes static).
extern "C" __global__ void bf_layer_glare_census(BF_LAYER_ARGS, BF_RECORDER_ARGS) {
    bf_layer_body<true, true>(BF_LAYER_PASS, nullptr, BfRecorder{in_flags, out_flags, shift, in_units, out_units, census});
}
#endif  // SPDNN_KEEP(bf_layer_glare_census)

#if SPDNN_KEEP(bf_compact_rows)
// Lists the rows that stayed non-empty: next_rows gets active_rows[i] for every
// i < *active_count with row_alive[i] (order not kept), and row_alive[i] is cleared for the
// next layer; *next_count (zeroed before) counts them. One atomic per warp (ballot + popc).
// Launch: grid ceil(capacity / 256), block 256, no shared memory.
extern "C" __global__ void bf_compact_rows(const unsigned int* __restrict__ active_rows,
                                           const unsigned int* __restrict__ active_count,
                                           unsigned char* __restrict__ row_alive,
                                           unsigned int* __restrict__ next_rows,
                                           unsigned int* __restrict__ next_count) {
    const unsigned long long i = spdnn_global_thread_x();
    const bool keep = i < *active_count && row_alive[i] != 0;
    if (keep) {
        row_alive[i] = 0;
    }
    spdnn_warp_append(keep, keep ? active_rows[i] : 0u, next_rows, next_count);
}
#endif  // SPDNN_KEEP(bf_compact_rows)
