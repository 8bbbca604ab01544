#!/usr/bin/env bash
# Device call 6 of the session 2026-11-28d (one H200), pack of bfd7f46: the kernels are
# a758d8f's again (c869a81's last-wave tiles reverted), and captures and whole-device
# synchronisations now exclude each other across threads. In call 5 blockdepend's GPU suite
# on two threads reported a_graph_replays_the_launches_enqueued_one_by_one FAILED and then
# the process died (SIGSEGV) before printing why; in call 4 (a758d8f, same kernels and
# graph) the same suite passed. Suspected: Gpu::new's cuCtxSynchronize in one test thread
# while the other thread captured (they share the primary context). Here: the cuda crate's
# GPU tests (the new captures_survive_other_threads_synchronising_the_device: 50 captures
# while another thread opens handles and synchronises), blockdepend's suite three times on
# two threads, the CLI's, and the official 1024-120 with and without the graph.
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
cat $OUT/gpu.txt
ls $W/tests
timeout 120 $W/tests/spdnn-cuda--gpu --include-ignored --test-threads=2 > $R/tests-cuda.txt 2>&1
el "cuda GPU tests rc=$? $(grep -E '^test result' $R/tests-cuda.txt)"
grep -E "FAILED|panicked" -A5 $R/tests-cuda.txt | cut -c1-600 | head -20
for i in 1 2 3; do
  PROPTEST_CASES=8 timeout 240 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 > $R/tests-blockdepend$i.txt 2>&1
  el "blockdepend GPU tests ($i) rc=$? $(grep -E '^test result' $R/tests-blockdepend$i.txt)"
  grep -E "FAILED|panicked" -A5 $R/tests-blockdepend$i.txt | cut -c1-600 | head -20
done
PROPTEST_CASES=8 timeout 120 $W/tests/spdnn-cli--gpu --include-ignored --test-threads=2 > $R/tests-cli.txt 2>&1
el "cli GPU tests rc=$? $(grep -E '^test result' $R/tests-cli.txt)"
OFF="--weights $W/data/sdgc/neuron1024.tar.gz --neurons 1024 --layers 120 --mnist --truth $W/data/sdgc/neuron1024-l120-categories.tsv"
for i in 1 2; do
  bd 1024-120-graph$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30
  bd 1024-120-calls$i $W/bin/spdnn $OFF --warmup 3 --repetitions 30 --bd-no-graph
done
python3 .device/launches.py $R 'bd-*.json' | tee $R/launches.md
tar -C $OUT -czf $OUT/runs.tar.gz r; rm -rf $R
