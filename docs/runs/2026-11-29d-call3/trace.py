import sys,collections
lines=open(sys.argv[1]).read().split('\n')
passes=[];cur=None;prev=None
for ln in lines:
    if ln.startswith('TILE'):
        if prev!='TILE': cur={'tiles':{},'tr':collections.defaultdict(list)}; passes.append(cur)
        d=dict(kv.split('=') for kv in ln.split()[1:]); cur['tiles'][int(d['b'])]=d; prev='TILE'
    elif ln.startswith('TR'):
        d={k:int(v) for k,v in (kv.split('=') for kv in ln.split()[1:])}; cur['tr'][d['b']].append(d); prev='TR'
p=passes[-1]
for b in sorted(p['tiles'], key=lambda b:-int(p['tiles'][b]['end_cycles']))[:2]:
    print('TILE',p['tiles'][b])
    byw=collections.defaultdict(dict)
    for d in p['tr'][b]: byw[d['w']][d['l']]=d
    layers=sorted({d['l'] for d in p['tr'][b]})
    for l in layers:
        rs=[]
        for w,m in byw.items():
            if l in m:
                d=m[l]; nxt=m.get(l+1)
                rs.append((d['rows'], d['in'], d['bar']-d['pre'], d['wait']-d['bar'], d['s0']-d['wait'], d['s1']-d['s0'], d['done']-d['s1'], (nxt['pre']-d['done']) if nxt else -1, (nxt['bar']-d['bar']) if nxt else -1))
        rs.sort(key=lambda r:-r[8])
        r=rs[0]
        print(f"l={l:3d} warps={len(rs)} rows={sum(x[0] for x in rs):3d} in={r[1]} | slowest warp: rows={r[0]} barrier={r[2]} wait={r[3]} setup={r[4]} sums={r[5]} epi={r[6]} loop={r[7]} period={r[8]} | sums range {min(x[5] for x in rs)}-{max(x[5] for x in rs)}")
