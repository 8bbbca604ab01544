# Trace build of 4476900's kernels-cu/blockdepend.cu (2026-11-28b call 3): clock64 at each
# tail layer's top, after the stage wait, after the descriptor, after the items, after the
# barrier, after the next stage's issue, after the retirement; printf at the tile's end.
import sys
s=open(sys.argv[1]).read()
helper='''
__device__ __forceinline__ long long bd_clk() { long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
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
            if (staged) {
                // Layer l's stage (and layer l + 1's descriptor) in.
                bd_stage_wait<true, 0>();
                __syncthreads();
            }''','''        long long tr[24][7];
        unsigned int tr_rows[24], tr_w[24];
        unsigned int tr_n = 0;
        for (unsigned int l = done; l < end; ++l) {
            const long long t_top = bd_clk();
            const unsigned int live = tile.live_count;
            if (live == 0) {
                break;
            }
            if (staged) {
                // Layer l's stage (and layer l + 1's descriptor) in.
                bd_stage_wait<true, 0>();
                __syncthreads();
            }
            const long long t_wait = bd_clk();''')
rep('''                staged && l != done ? bd_layer_from(bd_staged_desc(slot(l - 1u), desc)) : bd_layer_at(desc, l);''','''                staged && l != done ? bd_layer_from(bd_staged_desc(slot(l - 1u), desc)) : bd_layer_at(desc, l);
            bd_touch(layer.format); bd_touch((unsigned int)layer.offset);
            const long long t_desc = bd_clk();''')
rep('''                                  bias_stride, upper);
            }
            __syncthreads();
            if (staged && l + 1u < end) {''','''                                  bias_stride, upper);
            }
            const long long t_items = bd_clk();
            __syncthreads();
            const long long t_sync = bd_clk();
            if (staged && l + 1u < end) {''')
rep('''            if (PLACE == BD_PLACE_SPLIT) {
                bd_copy_back<THREADS>(cur, next, stride, bd_round32(layer.out_width), tile);
                __syncthreads();
            } else {
                float* swap = cur;
                cur = next;
                next = swap;
            }
            bd_retire<THREADS>(tile, cur, stride, layer.out_width, l + 1, suffix_start, upper, state);
        }''','''            const long long t_issue = bd_clk();
            if (PLACE == BD_PLACE_SPLIT) {
                bd_copy_back<THREADS>(cur, next, stride, bd_round32(layer.out_width), tile);
                __syncthreads();
            } else {
                float* swap = cur;
                cur = next;
                next = swap;
            }
            bd_retire<THREADS>(tile, cur, stride, layer.out_width, l + 1, suffix_start, upper, state);
            const long long t_ret = bd_clk();
            if (tr_n < 24) { tr[tr_n][0]=t_top; tr[tr_n][1]=t_wait; tr[tr_n][2]=t_desc; tr[tr_n][3]=t_items; tr[tr_n][4]=t_sync; tr[tr_n][5]=t_issue; tr[tr_n][6]=t_ret; tr_rows[tr_n]=live; tr_w[tr_n]=staged ? tile.stages[l % 2u].weights : 0u; ++tr_n; }
        }
        if (threadIdx.x == 0 && first != 0 && (first >= 16 || (blockIdx.x % 4) == 0)) {
            for (unsigned int i = 0; i < tr_n; ++i) {
                printf("LAYER first=%u blk=%u i=%u rows=%u staged=%u wait=%lld desc=%lld items=%lld sync=%lld issue=%lld retire=%lld gap=%lld\\n", first, blockIdx.x, i, tr_rows[i], tr_w[i],
                       tr[i][1]-tr[i][0], tr[i][2]-tr[i][1], tr[i][3]-tr[i][2], tr[i][4]-tr[i][3], tr[i][5]-tr[i][4], tr[i][6]-tr[i][5], i + 1 < tr_n ? tr[i+1][0]-tr[i][6] : 0ll);
            }
        }''')
open(sys.argv[2],'w').write(s)
