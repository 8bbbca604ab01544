#!/usr/bin/env bash
# Pending device call (written at the end of the session 2026-11-27g, whose device time ran
# out before it; about 75 s): the blockdepend GPU tests that run the default kernel-format
# choice (KernelFormats::Auto, 2bb2071: the layers' formats for the scaled challenge chains,
# every format for random ones) and the scaled test (Layers and Every explicitly). Both kernel
# sets Auto picks passed the whole executable before (ded10be, and ecdb6f0 byte for byte);
# this runs the choice itself. Copy beside preamble.sh into .device/ after
# `cargo xtask device-pack --only blockdepend` and `git rev-parse --short HEAD > .device/COMMIT`;
# carry [".device"].
. .device/preamble.sh
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > $OUT/gpu.txt
timeout 75 $W/tests/spdnn-blockdepend--gpu --include-ignored --test-threads=2 \
  official_1024_network generated_challenge_networks exact_random_networks compressed_networks \
  scaled_ell_layers_agree_with_pairs_and_the_reference > $OUT/tests.txt 2>&1
echo "rc=$?" >> $OUT/tests.txt
grep -E '^test |test result|panicked|rc=' $OUT/tests.txt
