#!/usr/bin/env bash
# Device call 6 of the session 2026-11-27k (four GPUs): the pack of 8a4ce37 (the banks'
# layouts; the kernel is e39be6a's). 65536-120 on 1, 2 and 4 GPUs (2 warm-ups, 5 runs), the
# categories of each count compared with one GPU's, row by row. Predicted as e39be6a's
# 3.24x (call 6 of 2026-11-27j): the challenge layers' slot orders changed, not their time.
# Then the launch of layers 9-16 on four GPUs: GPU 0 carries 1012 rows into it, over the 924
# (132 blocks x 7 rows) a spread launch takes, so it runs two waves of 7-row tiles (0.187 ms
# against 0.486 on one GPU). Cutting after layer 9 or 10 instead of 8 (--bd-cuts 4,9,16 /
# 4,10,16) leaves fewer rows to that launch (the challenge nets lose ~10 % of rows a layer
# there) and one more layer to launch 2. Predicted: 4 GPUs 1.31 -> ~1.27 ms if the rows fall
# under 924 (launch 3 ~0.12 ms, launch 2 +0.02); on one GPU the same cuts within 1 %.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
net=$W/g65536.bin
timeout 120 $W/bin/spdnn generate --neurons 65536 --layers 120 --seed 0 --cache $net > $R/gen65536.log 2>&1
timeout 120 $W/bin/spdnn images --neurons 65536 --out /dev/null --cache $W/i65536.bin > $R/images65536.log 2>&1
IN="--images $W/i65536.bin"
for gpus in 0 0,1 0,1,2,3; do
  tag=65536-120-gpus${gpus//,/}
  bd $tag $W/bin/spdnn --weights $net --neurons 65536 --layers 120 $IN --gpus $gpus --warmup 2 --repetitions 5 \
    --categories-out $R/$tag.tsv
done
for gpus in 01 0123; do
  cmp -s $R/65536-120-gpus0.tsv $R/65536-120-gpus$gpus.tsv && el "categories on GPUs $gpus identical to one GPU's" || el "categories on GPUs $gpus DIFFER"
done
for cuts in 4,9,16 4,10,16; do
  for gpus in 0 0,1,2,3; do
    tag=65536-120-cuts${cuts//,/-}-gpus${gpus//,/}
    bd $tag $W/bin/spdnn --weights $net --neurons 65536 --layers 120 $IN --gpus $gpus --warmup 2 --repetitions 5 --bd-cuts $cuts
  done
done
rm -f $net $W/i65536.bin
python3 .device/launches.py $R > $OUT/launches.md; cat $OUT/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
