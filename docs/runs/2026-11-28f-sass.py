#!/usr/bin/env python3
"""Stall samples and executed instructions of an ncu source page (SASS, `--page source --csv
--print-source sass`) summed over address ranges, offsets from the kernel's first instruction.

    python3 2026-11-28f-sass.py CSV                      # every 0x400 bytes holding >= 0.5 %
    python3 2026-11-28f-sass.py CSV 9400-a000 ec00-f000  # those ranges, with their top stalls

2026-11-28f: call 1's ncu-l1-16384-base-sass.csv (ranges 9400-a000 the scatter, 11000-12c00
and 1f400-22800 the items of layers 2-4, 22800-25000 the row checks), call 2's
ncu-l1-16384-leanp-sass.csv and ncu-l2-65536-sass.csv (the csv files are in runs.tar.gz).
"""
import csv
import sys
from collections import Counter, defaultdict

rows = list(csv.reader(open(sys.argv[1])))
head, data = rows[1], rows[2:]
at = {name: i for i, name in enumerate(head)}
stalls = [i for i, name in enumerate(head) if name.startswith("stall_") and "Not Issued" not in name]
records = []
for row in data:
    try:
        records.append((int(row[at["Address"]], 16), row[at["Source"]].strip(), row))
    except ValueError:
        continue
base = records[0][0]
samples = lambda row: int(row[at["Warp Stall Sampling (All Samples)"]] or 0)
executed = lambda row: int(row[at["Instructions Executed"]] or 0)
total_samples = sum(samples(r) for _, _, r in records)
total_executed = sum(executed(r) for _, _, r in records)
print(f"samples {total_samples}, warp instructions {total_executed}")
if len(sys.argv) == 2:
    blocks = defaultdict(lambda: [0, 0, Counter()])
    for address, source, row in records:
        block = blocks[(address - base) // 0x400 * 0x400]
        block[0] += samples(row)
        block[1] += executed(row)
        words = source.split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else (words[0] if words else "")
        if any(k in op for k in ("ATOMS", "LDG", "BAR", "LDS", "STS", "FFMA", "STG", "DEPBAR")):
            block[2][op] += 1
    for offset in sorted(blocks):
        s, e, ops = blocks[offset]
        if s * 200 < total_samples and e * 200 < total_executed:
            continue
        kinds = " ".join(f"{k}x{v}" for k, v in ops.most_common(5))
        print(f"{offset:6x} samples {100 * s / total_samples:5.1f}% instructions {100 * e / total_executed:5.1f}%  {kinds}")
for span in sys.argv[2:]:
    lo, hi = (int(v, 16) for v in span.split("-"))
    inside = [r for address, _, r in records if lo <= address - base < hi]
    s = sum(samples(r) for r in inside)
    reasons = sorted(((sum(int(r[i] or 0) for r in inside), head[i][6:]) for i in stalls), reverse=True)[:6]
    print(
        f"{span}: {100 * s / total_samples:.1f}% samples, {sum(executed(r) for r in inside) / 1e6:.1f} M instructions; "
        + ", ".join(f"{name} {100 * v / max(s, 1):.0f}%" for v, name in reasons)
    )
