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
# bd NAME BINARY ARGS...: one `infer --method blockdepend` of BINARY, its JSON and stderr as
# $R/bd-NAME.{json,err}, one line to the log (time, categories, match).
bd() {
  local name=$1 bin=$2; shift 2
  timeout "${BD_TIMEOUT:-200}" "$bin" infer --method blockdepend "$@" --json > "$R/bd-$name.json" 2> "$R/bd-$name.err"
  el "bd-$name rc=$? $(grep -E '^  "(infer_ms|categories|matched)"' "$R/bd-$name.json" | tr -d ' \n')"
}
# variants V...: the stripped binaries .device/spdnn-V.xz unpacked to $W/spdnn-V.
variants() { for v in "$@"; do xz -dc ".device/spdnn-$v.xz" > "$W/spdnn-$v"; chmod +x "$W/spdnn-$v"; done; }
