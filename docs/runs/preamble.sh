# Sourced by the device-call scripts of docs/runs (copy it into .device/ beside them): the
# elapsed-time logger, the unpacked pack's paths and the environment its binaries need.
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
W=/tmp/spdnn-device
R=$OUT/r; mkdir -p "$R"
el "commit $(cat .device/COMMIT)"
bash .device/run.sh spdnn methods > "$R/methods.txt" 2>&1; el "unpacked rc=$?"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/local/cuda/targets/x86_64-linux/lib
export SPDNN_DATA=$W/data SPDNN_PTX_CACHE=$W/ptx SPDNN_KERNELS_CU=$PWD/kernels-cu
