# Trace build of bd_chain_warps: thread 0 stamps clock64 after each layer's barrier, after its
# slot's wait and after its own warp's layer, into shared memory; after the tile it prints the
# block's start and end (globaltimer, ns) and, for tiles that ran at least 8 layers, the stamps.
import sys
p = sys.argv[1]
s = open(p).read()
def rep(a, b):
    global s
    assert a in s, a
    s = s.replace(a, b, 1)
rep('''__device__ __forceinline__ void bd_chain_warps_loop(BdWarpTile& tile, BD_CHAIN_PARAMS) {''',
'''__device__ __forceinline__ unsigned long long bd_trace_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void bd_chain_warps_loop(BdWarpTile& tile, BD_CHAIN_PARAMS) {
    __shared__ long long trace_stamps[40][3];
    const unsigned long long trace_g0 = bd_trace_ns();''')
rep('''        unsigned int l = first;
        for (; l < end; ++l) {
            // Every warp is past layer l - 1 (its slot may be refilled), and some row is left.
            if (__syncthreads_or(live != 0u) == 0) {
                break;
            }''', '''        unsigned int l = first;
        const long long trace_c0 = clock64();
        for (; l < end; ++l) {
            // Every warp is past layer l - 1 (its slot may be refilled), and some row is left.
            const int trace_busy = __syncthreads_count(live != 0u);
            if (threadIdx.x == 0 && l - first < 40u) {
                trace_stamps[l - first][0] = clock64() - trace_c0 + ((long long)(trace_busy / 32) << 48);
            }
            if (trace_busy == 0) {
                break;
            }''')
rep('''            issued_end = max(issued_end, min(end, l + 3u));
            wait(l);''', '''            issued_end = max(issued_end, min(end, l + 3u));
            wait(l);
            if (threadIdx.x == 0 && l - first < 40u) {
                trace_stamps[l - first][1] = clock64() - trace_c0;
            }''')
rep('''            layer = next;
        }
        // The lanes' last outputs''', '''            layer = next;
            if (threadIdx.x == 0 && l - first < 40u) {
                trace_stamps[l - first][2] = clock64() - trace_c0;
            }
        }
        if (threadIdx.x == 0) {
            printf("B %u %u %u %llu %llu %u\\n", blockIdx.x, base, n, trace_g0, bd_trace_ns(), l);
            if (l - first >= 8u) {
                for (unsigned int m = 0; m < l - first && m < 40u; ++m) {
                    printf("L %u %u %lld %lld %lld %lld\\n", blockIdx.x, first + m + 1u, trace_stamps[m][0] >> 48,
                           trace_stamps[m][0] & 0xFFFFFFFFFFFFll, trace_stamps[m][1], trace_stamps[m][2]);
                }
            }
        }
        // The lanes' last outputs''')
open(p, 'w').write(s)
