#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28e (one H200), pack of bdfe4c8. Call 5: every thread
# copying its share of a stage with cp.async (no bulk copy, no mbarrier) made the warps launch
# slower (42.2-43.0 us against 31.6-33.8): the slot's lateness is not one thread's bulk-copy
# throughput. Two checks here:
# (1) l2pre: at the warps launch's start, block b's thread 0 prefetches layer first+b's weights
#     (and every gridDim-th after) into L2 (cp.async.bulk.prefetch.L2). If each stage waits for
#     DRAM (the weights of layers 7-120 are touched once a pass, after launch 1's 25 MB input has
#     streamed through L2), the ~700-cycle wait shrinks: warps launch ~33 -> ~27 us. Else nothing.
# (2) Is launch 1 (a row a lane, ~56 us) bound by each warp's chain or by the SM's issue? The
#     official network on the first 30000 and 15000 rows (7 and 3.5 warps of rows an SM instead
#     of 14): if launch 1 takes about the same time, a warp's chain of dependent work sets it and
#     splitting a warp's rows' work over two warps would cut it; if it halves, issue does.
. .device/preamble.sh
variants l2pre
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
OFFN="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist"
timeout 100 $W/spdnn-l2pre infer --method blockdepend $OFF --warmup 0 --repetitions 1 > /dev/null 2>&1
for i in 1 2 3; do
  bd 1024-120-base$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-l2pre$i $W/spdnn-l2pre $OFF --warmup 3 --repetitions 30
done
for rows in 30000 15000; do bd 1024-120-rows$rows $W/bin/spdnn $OFFN --rows $rows --warmup 3 --repetitions 30; done
python3 .device/launches.py $R 'bd-1024-*.json' 2>&1 | tee $R/launches.md
for v in base l2pre; do
  bin=$W/bin/spdnn; [ $v != base ] && bin=$W/spdnn-$v
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 8 \
    --metrics gpu__time_duration.sum --csv $bin infer --method blockdepend $OFF --warmup 1 --repetitions 3 > $R/ncu-$v.csv 2> $R/ncu-$v.err
  el "ncu $v rc=$? $(grep gpu__time_duration $R/ncu-$v.csv | awk -F'","' '{printf "%s:%s ", $5, $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
for rows in 30000 15000; do
  timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 4 \
    --metrics gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active --csv $W/bin/spdnn infer --method blockdepend $OFFN --rows $rows --warmup 1 --repetitions 2 > $R/ncu-rows$rows.csv 2> $R/ncu-rows$rows.err
  el "ncu rows $rows rc=$? $(grep -E 'gpu__time|issue_active|warps_active' $R/ncu-rows$rows.csv | awk -F'","' '{printf "%s:%s:%s ", $5, $(NF-2), $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
done
timeout 100 ncu --clock-control none --cache-control none --kernel-name regex:bd_chain --launch-skip 4 --launch-count 2 \
  --metrics gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active --csv $W/bin/spdnn infer --method blockdepend $OFF --warmup 1 --repetitions 2 > $R/ncu-rows60000.csv 2> $R/ncu-rows60000.err
el "ncu rows 60000 rc=$? $(grep -E 'gpu__time|issue_active|warps_active' $R/ncu-rows60000.csv | awk -F'","' '{printf "%s:%s:%s ", $5, $(NF-2), $NF}' | tr -d '"' | sed 's/bd_chain_//g')"
tar -C $OUT -czf $OUT/runs.tar.gz r; cp $R/launches.md $OUT/ 2>/dev/null; rm -rf $R
