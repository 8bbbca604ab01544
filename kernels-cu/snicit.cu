// snicit.cu: SNICIT (Jiang et al., ICPP 2023), the conversion at the threshold layer and the
// post-convergence bookkeeping. The activations after the threshold layer are a compact
// row-major block Y (count x n). A row is a centroid, or it is represented by its centroid
// plus a residue: the positions where it differs from that centroid. A residue that is empty
// (the row equals its centroid bit for bit) stays empty for every later layer, because equal
// inputs give equal outputs; such rows are never computed again.
// Layers may be rectangular: n is always the width of the rows the kernel reads (N_t at the
// conversion, N_l after post-convergence layer l), the rows' stride in Y.
// Definitions from Rust: glare.cuh's (spdnn_glare::DEFINES) and SNICIT_THREADS. Launch
// shapes: the kernel declarations of spdnn-snicit (crates/snicit/src/run.rs).
#include "common.cuh"
#include "glare.cuh"

// Threads per block of every SNICIT kernel (the block sums' scratch holds one value each).
#ifndef SNICIT_THREADS
#error "SNICIT_THREADS must come from Rust (-D)"
#endif

// Block-wide sum of one value per thread (fixed tree order: deterministic); every thread
// gets the total. blockDim.x must be a power of two.
template <typename T>
__device__ __forceinline__ T snicit_block_sum(T v, T* scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            scratch[threadIdx.x] += scratch[threadIdx.x + half];
        }
        __syncthreads();
    }
    const T total = scratch[0];
    __syncthreads();
    return total;
}

#if SPDNN_KEEP(snicit_sum_bins)
// Sum downsampling of the sampled rows: bins[s][b] = sum of y[s][p] over the positions
// p in [b*n/bin_count, (b+1)*n/bin_count) (64-bit products: right for every n and bin count).
// Launch: grid (samples, bin_count), block SNICIT_THREADS, static shared SNICIT_THREADS floats.
extern "C" __global__ void snicit_sum_bins(const float* __restrict__ y, unsigned int n, unsigned int bin_count,
                                           float* __restrict__ bins) {
    __shared__ float scratch[SNICIT_THREADS];
    const unsigned int sample = blockIdx.x;
    const unsigned int bin = blockIdx.y;
    const unsigned int begin = (unsigned int)((unsigned long long)bin * n / bin_count);
    const unsigned int end = (unsigned int)((unsigned long long)(bin + 1) * n / bin_count);
    const float* row = y + (unsigned long long)sample * n;
    float partial = 0.0f;
    for (unsigned int p = begin + threadIdx.x; p < end; p += blockDim.x) {
        partial += row[p];
    }
    const float total = snicit_block_sum<float>(partial, scratch);
    if (threadIdx.x == 0) {
        bins[(unsigned long long)sample * bin_count + bin] = total;
    }
}
#endif  // SPDNN_KEEP(snicit_sum_bins)

#if SPDNN_KEEP(snicit_assign)
// Nearest centroid by L0 distance (the number of positions whose values differ). For row
// j < count: centroid_of[j] = the centroid row (itself for a centroid; the first of equally
// near ones otherwise), live[j] = 1 for a centroid or a row with a nonempty residue, 0 for a
// row equal to its centroid; dead[j] = 0. Distances are counted chunk by chunk and a
// candidate is dropped as soon as it cannot beat the best one.
// Launch: grid (count), block SNICIT_THREADS, static shared SNICIT_THREADS words.
extern "C" __global__ void snicit_assign(const float* __restrict__ y, unsigned int count, unsigned int n,
                                         const unsigned int* __restrict__ centroids,
                                         unsigned int centroid_count, const unsigned char* __restrict__ is_centroid,
                                         unsigned int* __restrict__ centroid_of, unsigned char* __restrict__ live,
                                         unsigned char* __restrict__ dead) {
    const unsigned int j = blockIdx.x;
    if (j >= count) {
        return;
    }
    if (is_centroid[j]) {
        if (threadIdx.x == 0) {
            centroid_of[j] = j;
            live[j] = 1;
            dead[j] = 0;
        }
        return;
    }
    __shared__ unsigned int counts[SNICIT_THREADS];
    const float* row = y + (unsigned long long)j * n;
    unsigned int best = 0xffffffffu;
    unsigned int best_centroid = centroids[0];
    for (unsigned int c = 0; c < centroid_count; ++c) {
        const float* centre = y + (unsigned long long)centroids[c] * n;
        unsigned int distance = 0;
        for (unsigned int base = 0; base < n && distance < best; base += blockDim.x * 8) {
            int differing = 0;
            for (unsigned int k = 0; k < 8; ++k) {
                const unsigned int p = base + k * blockDim.x + threadIdx.x;
                if (p < n) {
                    differing += row[p] != centre[p];
                }
            }
            // Block-uniform: every thread gets the same sum.
            distance += snicit_block_sum<unsigned int>(differing, counts);
        }
        if (distance < best) {
            best = distance;
            best_centroid = centroids[c];
        }
    }
    if (threadIdx.x == 0) {
        centroid_of[j] = best_centroid;
        live[j] = best == 0 ? 0 : 1;
        dead[j] = 0;
    }
}
#endif  // SPDNN_KEEP(snicit_assign)

// After a post-convergence layer, for each listed row r (list[0 .. *count)): a centroid
// stays live; a row whose outputs are all zero is dead (live 0, dead 1); any other row is
// live while it differs from its centroid's output anywhere (a nonempty residue) and
// becomes empty (live 0) when it equals it. Rows leave the list only when it is refreshed.
// With prune > 0 (lossy, the paper's pruning of residue elements close to zero), every
// element of a non-centroid row within prune of its centroid's (|y - c| <= prune) is first
// set to the centroid's value, in place; a row then equal to its centroid is empty, one then
// all zero is dead. With prune = 0 nothing is written and the test is the exact one.
// With clear_flags, each listed row's row_alive flag is cleared once read, ready for the
// next layer (no memset between layers); the last layer keeps them for the recovery, which
// also reads the centroids' flags.
// With GLARE (flags: rows x units, units of 2^shift positions), values in flagged units are
// the bound without a load; GLARE never prunes (a pruned element would change a unit held
// at the bound), and Rust refuses prune > 0 with it.
template <bool GLARE>
__device__ __forceinline__ void snicit_update_body(float* __restrict__ y, unsigned int n,
                                                   const unsigned int* __restrict__ list,
                                                   const unsigned int* __restrict__ count,
                                                   const unsigned int* __restrict__ centroid_of,
                                                   unsigned char* __restrict__ row_alive,
                                                   unsigned char* __restrict__ live,
                                                   unsigned char* __restrict__ dead, int clear_flags,
                                                   float prune, const unsigned char* __restrict__ flags,
                                                   unsigned int shift, unsigned int units, float upper) {
    if (blockIdx.x >= *count) {
        return;
    }
    const unsigned int r = list[blockIdx.x];
    const unsigned int centre = centroid_of[r];
    const bool alive = row_alive[r] != 0;
    __syncthreads();
    if (clear_flags && threadIdx.x == 0) {
        row_alive[r] = 0;
    }
    if (centre == r) {
        if (threadIdx.x == 0) {
            live[r] = 1;
        }
        return;
    }
    if (!alive) {
        if (threadIdx.x == 0) {
            live[r] = 0;
            dead[r] = 1;
        }
        return;
    }
    // Only this block writes row r; the centroid's row is only read (centroids never prune).
    float* row = y + (unsigned long long)r * n;
    const float* centre_row = y + (unsigned long long)centre * n;
    int differs = 0;
    int nonzero = 0;
    for (unsigned int p = threadIdx.x; p < n; p += blockDim.x) {
        if (GLARE) {
            const bool row_bound = flags[(unsigned long long)r * units + (p >> shift)] != 0;
            const bool centre_bound = flags[(unsigned long long)centre * units + (p >> shift)] != 0;
            differs |= glare_read(row_bound, row + p, upper) != glare_read(centre_bound, centre_row + p, upper);
        } else {
            float v = row[p];
            const float c = centre_row[p];
            if (prune > 0.0f && v != c && fabsf(v - c) <= prune) {
                row[p] = c;
                v = c;
            }
            differs |= v != c;
            nonzero |= v != 0.0f;
        }
    }
    differs = __syncthreads_or(differs);
    // Block-uniform (prune is an argument): only a pruning run can leave a live row all zero.
    const bool zeroed = !GLARE && prune > 0.0f && !__syncthreads_or(nonzero);
    if (threadIdx.x == 0) {
        if (differs && zeroed) {
            live[r] = 0;
            dead[r] = 1;
        } else {
            live[r] = differs ? 1 : 0;
        }
    }
}

#if SPDNN_KEEP(snicit_update)
// Launch: grid (list capacity; blocks past *count exit), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_update(float* __restrict__ y, unsigned int n,
                                         const unsigned int* __restrict__ list,
                                         const unsigned int* __restrict__ count,
                                         const unsigned int* __restrict__ centroid_of,
                                         unsigned char* __restrict__ row_alive,
                                         unsigned char* __restrict__ live, unsigned char* __restrict__ dead,
                                         int clear_flags, float prune) {
    snicit_update_body<false>(y, n, list, count, centroid_of, row_alive, live, dead, clear_flags, prune, nullptr, 0u,
                              0u, 0.0f);
}
#endif  // SPDNN_KEEP(snicit_update)

#if SPDNN_KEEP(snicit_update_glare)
// snicit_update reading the activations through the GLARE recorder.
// Launch: grid (list capacity; blocks past *count exit), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_update_glare(float* __restrict__ y, unsigned int n,
                                               const unsigned int* __restrict__ list,
                                               const unsigned int* __restrict__ count,
                                               const unsigned int* __restrict__ centroid_of,
                                               unsigned char* __restrict__ row_alive,
                                               unsigned char* __restrict__ live, unsigned char* __restrict__ dead,
                                               int clear_flags, const unsigned char* __restrict__ flags,
                                               unsigned int shift, unsigned int units, float upper) {
    snicit_update_body<true>(y, n, list, count, centroid_of, row_alive, live, dead, clear_flags, 0.0f, flags, shift,
                             units, upper);
}
#endif  // SPDNN_KEEP(snicit_update_glare)

#if SPDNN_KEEP(snicit_hold_rows)
// Holds back listed rows of a converted batch for a later post-convergence pass over
// several batches: exported row rows[i] (of y, count x n) goes to slot base + i of held
// (slots x n), whose centroid is slot centres[i]; the slot is live, not dead, and its
// row_alive flag clear.
// Launch: grid (listed rows), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_hold_rows(const float* __restrict__ y, unsigned int n,
                                            const unsigned int* __restrict__ rows,
                                            const unsigned int* __restrict__ centres, unsigned int base,
                                            float* __restrict__ held, unsigned int* __restrict__ centroid_of,
                                            unsigned char* __restrict__ live, unsigned char* __restrict__ dead,
                                            unsigned char* __restrict__ row_alive) {
    const unsigned int i = blockIdx.x;
    const unsigned int slot = base + i;
    const float* src = y + (unsigned long long)rows[i] * n;
    float* dst = held + (unsigned long long)slot * n;
    for (unsigned int p = threadIdx.x; p < n; p += blockDim.x) {
        dst[p] = src[p];
    }
    if (threadIdx.x == 0) {
        centroid_of[slot] = centres[i];
        live[slot] = 1;
        dead[slot] = 0;
        row_alive[slot] = 0;
    }
}
#endif  // SPDNN_KEEP(snicit_hold_rows)

#if SPDNN_KEEP(snicit_match_held)
// For each candidate row candidates[i] of y (count x n), the first held centroid slot
// (centres[0 .. centre_count), rows of held, slots x n) whose row equals it at every
// position, or 0xffffffff: matches[i].
// Launch: grid (candidates), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_match_held(const float* __restrict__ y, unsigned int n,
                                             const unsigned int* __restrict__ candidates,
                                             const float* __restrict__ held,
                                             const unsigned int* __restrict__ centres, unsigned int centre_count,
                                             unsigned int* __restrict__ matches) {
    const unsigned int i = blockIdx.x;
    const float* row = y + (unsigned long long)candidates[i] * n;
    unsigned int found = 0xffffffffu;
    for (unsigned int c = 0; c < centre_count; ++c) {
        const float* centre = held + (unsigned long long)centres[c] * n;
        int differs = 0;
        for (unsigned int p = threadIdx.x; p < n; p += blockDim.x) {
            differs |= row[p] != centre[p];
        }
        // Block-uniform: every thread gets the same answer.
        if (!__syncthreads_or(differs)) {
            found = centres[c];
            break;
        }
    }
    if (threadIdx.x == 0) {
        matches[i] = found;
    }
}
#endif  // SPDNN_KEEP(snicit_match_held)

#if SPDNN_KEEP(snicit_recover)
// Final recovery: row j of the block is non-empty when it is live (its own flag from the
// last layer), an empty residue of a centroid (the centroid's flag), or dead (never).
// row_flags[ids[j]] = 1 for the non-empty ones (row_flags zeroed before).
// Launch: grid ceil(count / SNICIT_THREADS), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_recover(const unsigned char* __restrict__ row_alive,
                                          const unsigned char* __restrict__ live,
                                          const unsigned char* __restrict__ dead,
                                          const unsigned int* __restrict__ centroid_of,
                                          const unsigned int* __restrict__ ids, unsigned int count,
                                          unsigned char* __restrict__ row_flags) {
    const unsigned long long j = spdnn_global_thread_x();
    if (j >= count) {
        return;
    }
    const bool alive = live[j] ? row_alive[j] != 0 : (!dead[j] && row_alive[centroid_of[j]] != 0);
    if (alive) {
        row_flags[ids[j]] = 1;
    }
}
#endif  // SPDNN_KEEP(snicit_recover)

#if SPDNN_KEEP(snicit_recover_values)
// Final values of the block for the output: out[j] = the row's own values when live, its
// centroid's when its residue is empty, zeros when dead.
// Launch: grid (count), block SNICIT_THREADS, no shared memory.
extern "C" __global__ void snicit_recover_values(const float* __restrict__ y, unsigned int n,
                                                 const unsigned char* __restrict__ live,
                                                 const unsigned char* __restrict__ dead,
                                                 const unsigned int* __restrict__ centroid_of, unsigned int count,
                                                 float* __restrict__ out) {
    const unsigned int j = blockIdx.x;
    if (j >= count) {
        return;
    }
    const bool is_dead = !live[j] && dead[j];
    const float* src = y + (unsigned long long)(live[j] ? j : centroid_of[j]) * n;
    float* dst = out + (unsigned long long)j * n;
    for (unsigned int p = threadIdx.x; p < n; p += blockDim.x) {
        dst[p] = is_dead ? 0.0f : src[p];
    }
}
#endif  // SPDNN_KEEP(snicit_recover_values)
