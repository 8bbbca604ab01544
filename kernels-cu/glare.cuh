// glare.cuh: the device side of GLARE (Jiang, Huang and Ho, HPEC 2023), shared by the
// GLARE variants of the BF, SNIG, XY and SNICIT kernels.
//
// A recorder holds one byte per unit (m consecutive neurons of a row, or of a tile of
// sample columns): 1 when every value of the unit equals the upper bound. Reads of a
// flagged unit use the bound without touching memory (Algorithm 1). A block whose part of
// an output unit is all at the bound skips writing it (Algorithm 2). When a unit spans
// several blocks, each block arrives at the unit's 64-bit word (low half: parts arrived,
// high half: parts not at the bound); the last to arrive sets the flag, zeroes the word
// and, when some part vetoed the unit, writes the bound back into the parts that skipped
// their writes, so an unflagged unit always holds its true values in memory.
//
// Census variants count accesses per layer into GLARE_CENSUS_WORDS words, word GLARE_READS
// for the activations read, and so on (spdnn_cuda::census::AccessCounts).
//
// Definitions from Rust (spdnn_glare::DEFINES): the census record's length and word
// indices (spdnn_cuda::census), and GLARE_MAX_ROW_UNITS, the most units per row a block
// keeps in shared memory (spdnn_glare::model::MAX_ROW_UNITS).
#ifndef SPDNN_GLARE_CUH
#define SPDNN_GLARE_CUH

#include "common.cuh"

#ifndef GLARE_CENSUS_WORDS
#error "GLARE_CENSUS_WORDS must come from Rust (-D)"
#endif
#ifndef GLARE_READS
#error "GLARE_READS must come from Rust (-D)"
#endif
#ifndef GLARE_READS_SKIPPED
#error "GLARE_READS_SKIPPED must come from Rust (-D)"
#endif
#ifndef GLARE_WRITES
#error "GLARE_WRITES must come from Rust (-D)"
#endif
#ifndef GLARE_WRITES_SKIPPED
#error "GLARE_WRITES_SKIPPED must come from Rust (-D)"
#endif
#ifndef GLARE_WEIGHT_READS
#error "GLARE_WEIGHT_READS must come from Rust (-D)"
#endif
#ifndef GLARE_RECORDER_READS
#error "GLARE_RECORDER_READS must come from Rust (-D)"
#endif
#ifndef GLARE_RECORDER_WRITES
#error "GLARE_RECORDER_WRITES must come from Rust (-D)"
#endif
#ifndef GLARE_WRITE_BACKS
#error "GLARE_WRITE_BACKS must come from Rust (-D)"
#endif
#ifndef GLARE_MAX_ROW_UNITS
#error "GLARE_MAX_ROW_UNITS must come from Rust (-D)"
#endif

// Per-thread access counters; with ON = false every call compiles to nothing.
template <bool ON>
struct GlareTally {
    unsigned long long words[ON ? GLARE_CENSUS_WORDS : 1];

    __device__ __forceinline__ GlareTally() {
        if (ON) {
#pragma unroll
            for (int w = 0; w < GLARE_CENSUS_WORDS; ++w) {
                words[w] = 0;
            }
        }
    }

    __device__ __forceinline__ void add(int word, unsigned long long count) {
        if (ON) {
            words[word] += count;
        }
    }

    // Adds the block's counts to census[0 .. GLARE_CENSUS_WORDS): a warp sum, then one atomic per warp and
    // word. Every thread of the block must call it (full warps).
    __device__ __forceinline__ void flush(unsigned long long* __restrict__ census) {
        if (ON) {
#pragma unroll
            for (int w = 0; w < GLARE_CENSUS_WORDS; ++w) {
                unsigned long long v = words[w];
                for (int offset = SPDNN_WARP_SIZE / 2; offset > 0; offset /= 2) {
                    v += __shfl_down_sync(SPDNN_FULL_MASK, v, offset);
                }
                if (threadIdx.x % SPDNN_WARP_SIZE == 0 && v != 0) {
                    atomicAdd(&census[w], v);
                }
            }
        }
    }
};

// Algorithm 1: the value at `address`, or the bound when its unit is flagged.
__device__ __forceinline__ float glare_read(bool unit_at_bound, const float* __restrict__ address, float upper) {
    return unit_at_bound ? upper : *address;
}

// Arrival of one block part at a unit spanning `parts` parts (call from one thread, after
// the whole block's writes and a __threadfence by every writing thread, then a barrier).
// The last part to arrive writes the unit's flag and zeroes the word; it returns true when
// the unit was vetoed, i.e. the caller must write the bound back into skipped parts.
__device__ __forceinline__ bool glare_arrive(unsigned long long* __restrict__ word, unsigned int parts,
                                             bool part_at_bound, unsigned char* __restrict__ unit_flag) {
    const unsigned long long add = 1ull + (part_at_bound ? 0ull : (1ull << 32));
    const unsigned long long before = atomicAdd(word, add);
    const unsigned int arrived = (unsigned int)(before & 0xffffffffull) + 1u;
    if (arrived != parts) {
        return false;
    }
    const unsigned int not_at_bound = (unsigned int)(before >> 32) + (part_at_bound ? 0u : 1u);
    *unit_flag = not_at_bound == 0 ? 1 : 0;
    *word = 0ull;
    // The skipped flags of the other parts were fenced before their arrivals.
    __threadfence();
    return not_at_bound != 0;
}

// Whether part `part` skipped its writes, read past the L1 cache (another block wrote it).
__device__ __forceinline__ bool glare_part_skipped(const unsigned char* skipped, unsigned long long part) {
    return *((volatile const unsigned char*)skipped + part) != 0;
}

#endif  // SPDNN_GLARE_CUH
