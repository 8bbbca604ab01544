import sys
p=sys.argv[1]
s=open(p).read()
def rep(a,b):
    global s
    assert a in s, a
    s=s.replace(a,b,1)
rep('''        unsigned int l = first;
        for (; l < end; ++l) {
            // Every warp is past layer l - 1 (its slot may be refilled), and some row is left.
            if (__syncthreads_or(live != 0u) == 0) {
                break;
            }''','''        unsigned int l = first;
        long long tb = clock64(), ti = 0, tw = 0, td = 0;
        const long long t_start = tb;
        int pb = 0;
        for (; l < end; ++l) {
            const int busy = __syncthreads_count(live != 0u);
            const long long t_bar = clock64();
            if (threadIdx.x == 0) {
                if (l > first) {
                    printf("W %u %u %d %lld %lld %lld %lld\\n", blockIdx.x, l - 1u, pb / 32, ti - tb, tw - ti, td - tw, t_bar - td);
                } else {
                    printf("S %u %u %lld %u\\n", blockIdx.x, n, t_bar - t_start, rows_per_warp);
                }
            }
            tb = t_bar;
            pb = busy;
            if (busy == 0) {
                break;
            }''')
rep('''            issued_end = max(issued_end, min(end, l + 3u));
            wait(l);''','''            issued_end = max(issued_end, min(end, l + 3u));
            ti = clock64();
            wait(l);
            tw = clock64();''')
rep('''                               tile.ids, bias, biases, bias_stride, upper, suffix_start, state);
            }''','''                               tile.ids, bias, biases, bias_stride, upper, suffix_start, state);
            }
            td = clock64();''')
open(p,'w').write(s)
