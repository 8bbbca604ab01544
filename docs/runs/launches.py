#!/usr/bin/env python3
"""One line per `spdnn infer --json` file of blockdepend: time, categories, whether it matched
its truth, the graph's span (the GPU's pass without the host's enqueue, since 2026-11-29e), the
registers and launch shapes, and each launch's time (the details' stages_ms).

    python3 launches.py DIR [PATTERN]     # default pattern bd-*.json
"""
import glob
import json
import os
import sys

folder = sys.argv[1]
pattern = sys.argv[2] if len(sys.argv) > 2 else "bd-*.json"
for path in sorted(glob.glob(os.path.join(folder, pattern))):
    name = os.path.basename(path)
    try:
        run = json.load(open(path))
    except Exception as error:  # a run that failed leaves an empty or partial file
        print(f"{name}: unreadable ({error})")
        continue
    details = run.get("details", {})
    launches = " ".join(f"{s['ms']:.3f}" for s in details.get("stages_ms", []))
    span = details.get("graph_span_ms", "")
    span = f"span {span.split(':')[0]}; " if span else ""
    print(
        f"{name}: {run['infer_ms']:.4f} ms, {run['categories']} categories, "
        f"matched {run.get('matched')}; {span}{details.get('registers')}; "
        f"{details.get('launches')}; launches {launches}"
    )
