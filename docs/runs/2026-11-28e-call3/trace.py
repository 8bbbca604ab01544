#!/usr/bin/env python3
"""Per-layer cycle stamps of thread 0 in bd_chain_warps (trace2 build; the first 22 layers of a
tile): s0 after the layer's barrier; d_wait to the end of the slot's wait (the stage issue
included); d_sums the sums of thread 0's warp (0 when it had no row); d_layer to the end of the
layer; the next layer's s0 gives the barrier. Prints medians by thread 0's live rows and the
tile that ran longest."""
import statistics, sys, collections
tiles = collections.defaultdict(list)
heads = {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f: continue
    if f[0] == 'T':
        heads[(int(f[1]), int(f[2]))] = [int(x) for x in f[1:]]
    elif f[0] == 'L':
        b, base, m, rows, s0, dw, ds, dl = [int(x) for x in f[1:]]
        tiles[(b, base)].append((m, rows, s0, dw, ds, dl))
groups = collections.defaultdict(lambda: collections.defaultdict(list))
for key, ls in tiles.items():
    ls.sort()
    for i, (m, rows, s0, dw, ds, dl) in enumerate(ls):
        g = groups[rows]
        g['wait'].append(dw)
        if ds: g['sums'].append(ds); g['tail'].append(dl - dw - ds)
        g['layer'].append(dl - dw)
        if i + 1 < len(ls):
            g['barrier'].append((ls[i + 1][2] - s0 - dl) % (1 << 32)); g['whole'].append((ls[i + 1][2] - s0) % (1 << 32))
cols = ['wait', 'sums', 'tail', 'layer', 'barrier', 'whole']
print('thread 0 rows | layers | ' + ' | '.join(cols) + '  (median cycles)')
for rows in sorted(groups):
    g = groups[rows]
    print(f"{rows} | {len(g['wait'])} | " + ' | '.join(f"{statistics.median(g[k]):.0f}" if g[k] else '-' for k in cols))
longest = max(tiles, key=lambda k: len(tiles[k]))
print('longest tile (block, base)', longest, 'head', heads.get(longest))
ls = tiles[longest]
for i, (m, rows, s0, dw, ds, dl) in enumerate(ls):
    nxt = (ls[i + 1][2] - s0 - dl) % (1 << 32) if i + 1 < len(ls) else -1
    print(f"layer {m + 1} rows0 {rows} wait {dw} sums {ds or '-'} layer {dl - dw} barrier {nxt}")
