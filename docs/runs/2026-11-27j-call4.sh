#!/usr/bin/env bash
# Device call 4 of the session 2026-11-27j (one H100): the pack of commit .device/COMMIT (the
# kernels and plan of call 3). The four shapes of the 12-shape table no call had measured:
# generated 16384 and 65536 at 480 and 1920 layers (seed 0, MNIST-recipe rows), each beside
# its 120-layer network in this call. Every row finishes before layer ~30 in these networks
# (docs/blockdepend.md, "floors"), so their floors are their 120-layer ones and, as at 1024
# and 4096, the times should be too: predicted 16384 ~1.10 ms and 65536 ~4.25 ms at every
# depth (the last launch runs layers 17 to the end; each tile stops when its rows are done).
# Each network is generated to a binary cache file here (65536-1920: 8.6 GB), run, deleted.
#
# First an A/B at 65536-120, which call 3 measured at 4.428 ms against 4.252 in 2026-11-27i
# (launch 1 3.129 against 2.995 ms): three binaries, interleaved, twice each:
#   B: call 1's B (46ab0bc's plan and the dense loop; the row check a warp a row);
#   H: the pack (365b992: the grouped row check, whose loop strides by a run-time `group`,
#      32 at 65536's 4096-wide rows);
#   F: H with the row check's stride a constant where a row takes the warp (the old loop).
# Predicted: if the run-time stride is the cause, B and F ~4.25 ms and H ~4.43; if not, all
# three alike (the difference between calls). The official 1024-120 with H and F too (F's
# 1024 set has 74 registers, H's 72).
. .device/preamble.sh
for v in B F; do xz -dc .device/spdnn-$v.xz > $W/spdnn-$v; chmod +x $W/spdnn-$v; done
ln -sf $W/bin/spdnn $W/spdnn-H
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
el "disk $(df -h /tmp | awk 'NR==2 {print $4}') free, $(free -g | awk '/Mem:/ {print $2}') GiB"
infer() { # name args...
  local name=$1; shift
  timeout 200 $W/bin/spdnn infer --method blockdepend "$@" --json > $R/bd-$name.json 2> $R/bd-$name.err
  el "bd-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$name.json | tr -d ' \n')"
}
for l in 120 480 1920; do
  net=$W/g16384-$l.bin
  timeout 90 $W/bin/spdnn generate --neurons 16384 --layers $l --seed 0 --cache $net > $R/gen16384-$l.log 2>&1
  el "gen 16384-$l rc=$? $(du -h $net | cut -f1)"
  infer 16384-$l --weights $net --neurons 16384 --layers $l --mnist --warmup 2 --repetitions 10
  rm -f $net
done
images=$W/i65536.bin
timeout 100 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $images > $R/images65536.log 2>&1
el "65536 inputs rc=$?"
net=$W/g65536-120.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536-120.log 2>&1
for round in 1 2; do
  for v in B H F; do
    timeout 100 $W/spdnn-$v infer --method blockdepend --weights $net --neurons 65536 --layers 120 --images $images \
      --warmup 2 --repetitions 5 --json > $R/bd-$v-65536-120-r$round.json 2> $R/bd-$v-65536-120-r$round.err
    el "bd-$v-65536-120-r$round rc=$? $(grep -E '^  "(infer_ms|categories)"' $R/bd-$v-65536-120-r$round.json | tr -d ' \n')"
  done
done
rm -f $net
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for round in 1 2; do
  for v in H F; do
    timeout 60 $W/spdnn-$v infer --method blockdepend $OFF --warmup 3 --repetitions 30 --json > $R/bd-$v-1024-120-r$round.json 2> $R/bd-$v-1024-120-r$round.err
    el "bd-$v-1024-120-r$round rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-$v-1024-120-r$round.json | tr -d ' \n')"
  done
done
for l in 480 1920; do
  net=$W/g65536-$l.bin
  left=$(( 590 - ($(date +%s) - T0) ))
  [ $left -gt 60 ] || { el "no time for 65536-$l"; break; }
  timeout $(( left - 30 )) $W/bin/spdnn generate --neurons 65536 --layers $l --seed 0 --cache $net > $R/gen65536-$l.log 2>&1
  el "gen 65536-$l rc=$? $(du -h $net | cut -f1)"
  left=$(( 590 - ($(date +%s) - T0) ))
  timeout $(( left - 15 )) $W/bin/spdnn infer --method blockdepend --weights $net --neurons 65536 --layers $l \
    --images $images --warmup 2 --repetitions 5 --json > $R/bd-65536-$l.json 2> $R/bd-65536-$l.err
  el "bd-65536-$l rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' $R/bd-65536-$l.json | tr -d ' \n')"
  rm -f $net
done
rm -f $images
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
