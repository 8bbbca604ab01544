// snig.cu: SNIG-2020, output sections with per-(row, section) nonzero flags.
// Definitions from Rust: glare.cuh's (spdnn_glare::DEFINES). Launch shapes: the kernel
// declarations of spdnn-snig (crates/snig/src/lib.rs).
#include "common.cuh"
#include "glare.cuh"
#include "slabs.cuh"

// Section flag values: no nonzero, some nonzero, every value at the upper bound (GLARE).
#define SNIG_SECTION_ZERO 0
#define SNIG_SECTION_NONZERO 1
#define SNIG_SECTION_AT_BOUND 2

// One (row, output section) per block. Input sections whose flag is clear are skipped;
// a row with no nonzero input only clears its output section, and only when that section
// was nonzero before (incremental resetting: the buffer still holds the row's values of
// two layers ago). Sections are the weight slabs.
// The layer is n_in x n_out: input rows hold n_in values in in_sections sections, output
// rows n_out in out_sections (the grid's y), all sections slab_width wide but the last.
// Every output flag is exact after the layer, whatever the buffers held: a row with input
// writes each section and its flag, a row without input leaves each flag zero or clears
// it. Values under a zero flag are never read (readers look at the flags first, and a row
// without input stays so and is never a category), so when the widths change between
// layers (a rectangular chain) and y_out held rows of another width, the stale values a
// row without input leaves behind are harmless.
// With GLARE the section is the recorder's unit and its flag byte carries the state: an
// input section at the bound is read as the bound without loads, and an output section
// whose values are all at the bound is flagged instead of written.
// With `biases` (not GLARE), output c gets biases[c] instead of `bias` (trained networks,
// biases <= 0: a row without input still gives zeros).
template <bool GLARE, bool CENSUS>
__device__ __forceinline__ void snig_layer_body(const float* __restrict__ y_in, float* __restrict__ y_out,
                                                const unsigned char* __restrict__ in_flags,
                                                unsigned char* __restrict__ out_flags,
                                                const unsigned int* __restrict__ slab_offsets,
                                                const unsigned int* __restrict__ slab_cols,
                                                const float* __restrict__ vals, unsigned int n_in,
                                                unsigned int n_out, unsigned int slab_width,
                                                unsigned int in_sections, unsigned int out_sections, float bias,
                                                float upper, const float* __restrict__ biases,
                                                unsigned long long* __restrict__ census) {
    extern __shared__ float acc[];
    const unsigned int row = blockIdx.x;
    const unsigned int section = blockIdx.y;
    const unsigned char* row_flags = in_flags + (unsigned long long)row * in_sections;
    GlareTally<CENSUS> tally;
    int any_input = 0;
    for (unsigned int s = 0; s < in_sections; ++s) {
        any_input |= row_flags[s];
    }
    const unsigned int first_col = section * slab_width;
    const unsigned int width = min(slab_width, n_out - first_col);
    unsigned char* flag_out = out_flags + (unsigned long long)row * out_sections + section;
    float* out = y_out + (unsigned long long)row * n_out + first_col;
    if (!any_input) {
        const bool was_nonzero = *flag_out != SNIG_SECTION_ZERO;
        if (was_nonzero) {
            for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
                out[c] = 0.0f;
                tally.add(GLARE_WRITES, 1);
            }
        }
        __syncthreads();
        if (threadIdx.x == 0 && was_nonzero) {
            *flag_out = SNIG_SECTION_ZERO;
        }
        if (CENSUS) {
            tally.flush(census);
        }
        return;
    }
    spdnn_zero_shared(acc, width);
    __syncthreads();
    const float* y = y_in + (unsigned long long)row * n_in;
    const unsigned int* offsets = slab_offsets + (unsigned long long)section * (n_in + 1);
    for (unsigned int s = 0; s < in_sections; ++s) {
        const unsigned char state = row_flags[s];
        if (state == SNIG_SECTION_ZERO) {
            continue;
        }
        const unsigned int first_input = s * slab_width;
        const unsigned int end_input = min(first_input + slab_width, n_in);
        if (GLARE && state == SNIG_SECTION_AT_BOUND) {
            tally.add(GLARE_READS_SKIPPED, (end_input - first_input + blockDim.x - 1 - threadIdx.x) / blockDim.x);
            tally.add(GLARE_WEIGHT_READS,
                      spdnn_slab_scatter_with(acc, [upper](unsigned int) { return upper; }, offsets, slab_cols, vals,
                                              first_input, end_input));
        } else {
            tally.add(GLARE_READS, (end_input - first_input + blockDim.x - 1 - threadIdx.x) / blockDim.x);
            tally.add(GLARE_WEIGHT_READS,
                      spdnn_slab_scatter_with(acc, [y](unsigned int j) { return y[j]; }, offsets, slab_cols, vals,
                                              first_input, end_input));
        }
    }
    __syncthreads();
    if (!GLARE) {
        int nonzero = biases != nullptr ? spdnn_slab_activate_each(acc, out, width, biases + first_col, upper)
                                        : spdnn_slab_activate(acc, out, width, bias, upper);
        nonzero = __syncthreads_or(nonzero);
        if (threadIdx.x == 0) {
            *flag_out = nonzero ? SNIG_SECTION_NONZERO : SNIG_SECTION_ZERO;
        }
        return;
    }
    int nonzero = 0;
    int off_bound = 0;
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        const float v = spdnn_clamp_activation(__fadd_rn(acc[c], bias), upper);
        acc[c] = v;
        nonzero |= v != 0.0f;
        off_bound |= v != upper;
    }
    nonzero = __syncthreads_or(nonzero);
    off_bound = __syncthreads_or(off_bound);
    if (off_bound) {
        for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
            out[c] = acc[c];
            tally.add(GLARE_WRITES, 1);
        }
    } else {
        tally.add(GLARE_WRITES_SKIPPED, (width + blockDim.x - 1 - threadIdx.x) / blockDim.x);
    }
    if (threadIdx.x == 0) {
        *flag_out = !off_bound ? SNIG_SECTION_AT_BOUND : (nonzero ? SNIG_SECTION_NONZERO : SNIG_SECTION_ZERO);
    }
    if (CENSUS) {
        tally.flush(census);
    }
}

#define SNIG_LAYER_ARGS                                                                                       \
    const float *__restrict__ y_in, float *__restrict__ y_out, const unsigned char *__restrict__ in_flags,     \
        unsigned char *__restrict__ out_flags, const unsigned int *__restrict__ slab_offsets,                  \
        const unsigned int *__restrict__ slab_cols, const float *__restrict__ vals, unsigned int n_in,         \
        unsigned int n_out, unsigned int slab_width, unsigned int in_sections, unsigned int out_sections,      \
        float bias, float upper
#define SNIG_LAYER_PASS                                                                                      \
    y_in, y_out, in_flags, out_flags, slab_offsets, slab_cols, vals, n_in, n_out, slab_width, in_sections,     \
        out_sections, bias, upper

#if SPDNN_KEEP(snig_layer)
// Launch: grid (rows, out_sections), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void snig_layer(SNIG_LAYER_ARGS) {
    snig_layer_body<false, false>(SNIG_LAYER_PASS, nullptr, nullptr);
}
#endif  // SPDNN_KEEP(snig_layer)

#if SPDNN_KEEP(snig_layer_neurons)
// snig_layer with a bias per output neuron (biases: n_out values; `bias` unused).
// Launch: grid (rows, out_sections), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void snig_layer_neurons(SNIG_LAYER_ARGS, const float* __restrict__ biases) {
    snig_layer_body<false, false>(SNIG_LAYER_PASS, biases, nullptr);
}
#endif  // SPDNN_KEEP(snig_layer_neurons)

#if SPDNN_KEEP(snig_layer_glare)
// snig_layer with sections at the bound recorded in the flags (GLARE); census unused.
// Launch: grid (rows, out_sections), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void snig_layer_glare(SNIG_LAYER_ARGS, unsigned long long* __restrict__ census) {
    snig_layer_body<true, false>(SNIG_LAYER_PASS, nullptr, census);
}
#endif  // SPDNN_KEEP(snig_layer_glare)

#if SPDNN_KEEP(snig_layer_glare_census)
// snig_layer_glare counting its accesses into census[0 .. GLARE_CENSUS_WORDS).
// Launch: grid (rows, out_sections), block 256, dynamic shared min(slab_width, n_out) floats.
extern "C" __global__ void snig_layer_glare_census(SNIG_LAYER_ARGS, unsigned long long* __restrict__ census) {
    snig_layer_body<true, true>(SNIG_LAYER_PASS, nullptr, census);
}
#endif  // SPDNN_KEEP(snig_layer_glare_census)

#if SPDNN_KEEP(snig_glare_fill)
// Writes the bound into every section flagged at the bound (before reading Y back); rows
// of n values (the last layer's output width) in num_slabs sections.
// Launch: grid (rows, num_slabs), block 256, no shared memory.
extern "C" __global__ void snig_glare_fill(float* __restrict__ y, const unsigned char* __restrict__ flags,
                                           unsigned int n, unsigned int slab_width, unsigned int num_slabs,
                                           float upper) {
    const unsigned int row = blockIdx.x;
    if (flags[(unsigned long long)row * num_slabs + blockIdx.y] != SNIG_SECTION_AT_BOUND) {
        return;
    }
    const unsigned int first_col = blockIdx.y * slab_width;
    const unsigned int width = min(slab_width, n - first_col);
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        y[(unsigned long long)row * n + first_col + c] = upper;
    }
}
#endif  // SPDNN_KEEP(snig_glare_fill)

#if SPDNN_KEEP(snig_section_flags)
// flags[row * num_slabs + s] = whether section s of row `row` of Y (rows of n values: the
// input's width) has a nonzero.
// Launch: grid (rows, num_slabs), block 256, no shared memory.
extern "C" __global__ void snig_section_flags(const float* __restrict__ y, unsigned char* __restrict__ flags,
                                              unsigned int n, unsigned int slab_width, unsigned int num_slabs) {
    const unsigned int row = blockIdx.x;
    const unsigned int first_col = blockIdx.y * slab_width;
    const unsigned int width = min(slab_width, n - first_col);
    const float* in = y + (unsigned long long)row * n + first_col;
    int any = 0;
    for (unsigned int c = threadIdx.x; c < width; c += blockDim.x) {
        any |= in[c] != 0.0f;
    }
    any = __syncthreads_or(any);
    if (threadIdx.x == 0) {
        flags[(unsigned long long)row * num_slabs + blockIdx.y] = any ? 1 : 0;
    }
}
#endif  // SPDNN_KEEP(snig_section_flags)

#if SPDNN_KEEP(snig_row_categories)
// row_flags[row] = whether any section flag of the row is set (the categories).
// Launch: grid ceil(rows / 256), block 256, no shared memory.
extern "C" __global__ void snig_row_categories(const unsigned char* __restrict__ flags, unsigned int rows,
                                               unsigned int num_slabs, unsigned char* __restrict__ row_flags) {
    const unsigned long long row = spdnn_global_thread_x();
    if (row < rows) {
        unsigned char any = 0;
        for (unsigned int s = 0; s < num_slabs; ++s) {
            any |= flags[row * num_slabs + s];
        }
        row_flags[row] = any ? 1 : 0;
    }
}
#endif  // SPDNN_KEEP(snig_row_categories)
