import sys
s=open(sys.argv[1]).read()
helper='''
__device__ __forceinline__ long long bd_clk() { long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
__device__ __forceinline__ long long bd_gt() { long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void bd_touch(unsigned int v) { asm volatile("" :: "r"(v)); }
'''
def rep(old,new):
    global s
    assert old in s, old[:80]
    s=s.replace(old,new,1)
rep('#include "common.cuh"\n','#include "common.cuh"\n'+helper)
rep('''        for (unsigned int l = done; l < end; ++l) {
            const unsigned int live = tile.live_count;
            if (live == 0) {
                break;
            }
            const BdLayer layer = bd_layer_at(desc, l);''','''        long long tr[24][5];
        unsigned int tr_rows[24];
        unsigned int tr_n = 0;
        const long long tile_t0 = bd_clk();
        const long long tile_g0 = bd_gt();
        for (unsigned int l = done; l < end; ++l) {
            const long long t_top = bd_clk();
            const unsigned int live = tile.live_count;
            if (live == 0) {
                break;
            }
            const BdLayer layer = bd_layer_at(desc, l);
            bd_touch(layer.format); bd_touch((unsigned int)layer.offset);
            const long long t_desc = bd_clk();''')
rep('''                bd_layer<THREADS>(layer, l, cur, next, stride, live, tile, dense, ell, group_starts, bias, biases,
                                  bias_stride, upper);
            }
            __syncthreads();''','''                bd_layer<THREADS>(layer, l, cur, next, stride, live, tile, dense, ell, group_starts, bias, biases,
                                  bias_stride, upper);
            }
            const long long t_items = bd_clk();
            __syncthreads();
            const long long t_sync = bd_clk();''')
rep('''            bd_retire<THREADS>(tile, cur, stride, layer.out_width, l + 1, suffix_start, upper, state);
        }
        bd_finish_tile<THREADS>(tile, cur, stride, carry_out_ids, carry_out_vals, carry_out_count, carry_out_stride,
                                state, out, out_width);''','''            bd_retire<THREADS>(tile, cur, stride, layer.out_width, l + 1, suffix_start, upper, state);
            const long long t_ret = bd_clk();
            if (tr_n < 24) { tr[tr_n][0]=t_top; tr[tr_n][1]=t_desc; tr[tr_n][2]=t_items; tr[tr_n][3]=t_sync; tr[tr_n][4]=t_ret; tr_rows[tr_n]=live; ++tr_n; }
        }
        const long long t_fin0 = bd_clk();
        bd_finish_tile<THREADS>(tile, cur, stride, carry_out_ids, carry_out_vals, carry_out_count, carry_out_stride,
                                state, out, out_width);
        const long long t_fin1 = bd_clk();
        const long long tile_g1 = bd_gt();
        if (threadIdx.x == 0 && first != 0 && (first >= 16 || (blockIdx.x % 4) == 0)) {
            unsigned int smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
            printf("TILE first=%u blk=%u sm=%u n=%u layers=%u g0=%lld g1=%lld load=%lld fin=%lld\\n", first, blockIdx.x, smid, n, tr_n, tile_g0, tile_g1, tr_n ? tr[0][0]-tile_t0 : 0ll, t_fin1 - t_fin0);
            for (unsigned int i = 0; i < tr_n; ++i) {
                printf("LAYER first=%u blk=%u i=%u rows=%u desc=%lld items=%lld sync=%lld retire=%lld gap=%lld\\n", first, blockIdx.x, i, tr_rows[i],
                       tr[i][1]-tr[i][0], tr[i][2]-tr[i][1], tr[i][3]-tr[i][2], tr[i][4]-tr[i][3], i + 1 < tr_n ? tr[i+1][0]-tr[i][4] : 0ll);
            }
        }''')
open(sys.argv[2],'w').write(s)
