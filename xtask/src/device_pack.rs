//! `cargo xtask device-pack`: everything the GPU machine needs, in one ignored folder.
//!
//! The GPU machine has no Rust toolchain, so the CLI and every test executable are built
//! here in release, packed with the data they read (the official N = 1024 files and the
//! MNIST training images) into `.device/pack.tar.xz`, and `.device/run.sh` unpacks and runs
//! them there:
//!
//! ```text
//! bash .device/run.sh tests          # every test executable with --include-ignored
//! bash .device/run.sh sanitize       # each test under racecheck, memcheck, initcheck, synccheck
//! bash .device/run.sh verify         # both: side by side on several GPUs, in turn on one
//! bash .device/run.sh examples       # each kernel crate's reuse example on a generated net
//! bash .device/run.sh bench ARGS...  # spdnn bench ARGS (results under $OUT/$BENCH_TAG)
//! bash .device/run.sh spdnn ARGS...  # any spdnn command
//! NP=2 bash .device/run.sh mpi ARGS... # mpirun -np 2 spdnn ARGS --mpi (the MPI build)
//! ```
//!
//! The device call carries at most 64 MiB, hence the compression.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, run as run_command};

/// Official files copied into the pack (found beside the checkout or in data/).
const SHARED_FILES: [&str; 4] = [
    "neuron1024.tar.gz",
    "neuron1024-l120-categories.tsv",
    "sparse-images-1024_subset.mtx",
    "neuron1024-l120-categories_subset.mtx",
];

/// MNIST's labels and test set, packed when fetched (the trained networks' tests read them).
const MNIST_LABELLED_FILES: [&str; 3] = [
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
];

/// Builds the pack: everything, or with `only` the CLI and the GPU test executables of
/// those packages (`tcchain` or `spdnn-tcchain`), without the reuse examples and the MPI
/// build (a quicker pack while working on a few crates).
pub fn run(root: &Path, only: &[String]) -> Result<()> {
    let only: Vec<String> = only
        .iter()
        .map(|name| {
            if name.starts_with("spdnn-") {
                name.clone()
            } else {
                format!("spdnn-{name}")
            }
        })
        .collect();
    let device = root.join(".device");
    let staging = device.join("stage");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).context("clearing .device/stage")?;
    }
    for dir in ["bin", "tests", "examples", "data/sdgc", "data/mnist"] {
        std::fs::create_dir_all(staging.join(dir))?;
    }

    run_command(cargo().args(["build", "--release", "-p", "spdnn-cli"]))?;
    std::fs::copy(root.join("target/release/spdnn"), staging.join("bin/spdnn"))
        .context("copying spdnn")?;

    let mpi = only.is_empty() && mpi_build(root, &staging)?;

    let tests = test_executables(&only)?;
    for (name, path) in &tests {
        std::fs::copy(path, staging.join("tests").join(name))
            .with_context(|| format!("copying {}", path.display()))?;
    }
    let examples = if only.is_empty() {
        reuse_examples(root, &staging)?
    } else {
        0
    };
    strip_debug_info(&staging)?;

    let shared = root.join("..").join("shared").join("data").join("sdgc");
    for file in SHARED_FILES {
        let source = [shared.join(file), root.join("data/sdgc").join(file)]
            .into_iter()
            .find(|p| p.exists());
        match source {
            Some(source) => {
                std::fs::copy(&source, staging.join("data/sdgc").join(file))?;
            }
            None => eprintln!(
                "warning: {file} not found; tests needing it will skip on the GPU machine"
            ),
        }
    }
    let mnist = root.join("data/mnist/train-images-idx3-ubyte");
    if mnist.exists() {
        std::fs::copy(&mnist, staging.join("data/mnist/train-images-idx3-ubyte"))?;
    } else {
        eprintln!(
            "warning: MNIST not fetched (cargo xtask setup); benchmarks there will use synthetic input"
        );
    }
    // The trained networks (`cargo xtask train-nets`) and the labelled sets they are scored on.
    for file in MNIST_LABELLED_FILES {
        let source = root.join("data/mnist").join(file);
        if source.exists() {
            std::fs::copy(&source, staging.join("data/mnist").join(file))?;
        }
    }
    let nets = root.join("data/nets");
    if let Ok(entries) = std::fs::read_dir(&nets) {
        std::fs::create_dir_all(staging.join("data/nets"))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "safetensors") {
                std::fs::copy(&path, staging.join("data/nets").join(entry.file_name()))?;
            }
        }
    }

    let pack = device.join("pack.tar.xz");
    let status = Command::new("tar")
        .args(["-C"])
        .arg(&staging)
        .args(["-cJf"])
        .arg(&pack)
        .arg(".")
        .env("XZ_OPT", "-6 -T0")
        .status()
        .context("running tar (with xz)")?;
    if !status.success() {
        bail!("tar failed with {status}");
    }
    std::fs::remove_dir_all(&staging)?;
    std::fs::write(device.join("run.sh"), RUN_SCRIPT)?;
    std::fs::write(device.join("sanitize-expected.txt"), SANITIZE_EXPECTED)?;
    let size = std::fs::metadata(&pack)?.len();
    println!(
        "packed the CLI{}, {} test executables and {} reuse examples into {} ({:.1} MiB)",
        if mpi { " (and its MPI build)" } else { "" },
        tests.len(),
        examples,
        pack.display(),
        size as f64 / (1 << 20) as f64
    );
    if size > 60 << 20 {
        bail!("the pack is over 60 MiB: the device call carries at most 64 MiB");
    }
    println!("send it with carry [\".device\"] and run: bash .device/run.sh tests");
    Ok(())
}

/// Builds `spdnn` with the `mpi` feature into `bin/spdnn-mpi` when this machine has Open
/// MPI's compiler wrapper (the build reads its headers; the GPU machine brings its own
/// `libmpi.so.40`, found by `run.sh mpi`). Returns whether it was packed.
fn mpi_build(root: &Path, staging: &Path) -> Result<bool> {
    let has_mpi = Command::new("mpicc")
        .arg("--showme:version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_mpi {
        eprintln!("warning: no mpicc here (bash .ci/mpi installs it); the pack has no spdnn-mpi");
        return Ok(false);
    }
    run_command(cargo().args(["build", "--release", "-p", "spdnn-cli", "--features", "mpi"]))?;
    std::fs::copy(
        root.join("target/release/spdnn"),
        staging.join("bin/spdnn-mpi"),
    )
    .context("copying spdnn (mpi)")?;
    // The plain build last, so target/release/spdnn is the default build again.
    run_command(cargo().args(["build", "--release", "-p", "spdnn-cli"]))?;
    Ok(true)
}

/// The kernel crates whose `tsv` example (the crate used on its own) the pack carries.
const REUSE_EXAMPLES: &[(&str, &str)] = &[
    ("spdnn-bf", "tsv"),
    ("spdnn-snig", "tsv"),
    ("spdnn-cusparse", "tsv"),
    ("spdnn-dense", "tsv"),
    ("spdnn-xy", "tsv"),
    ("spdnn-snicit", "tsv"),
    ("spdnn-hp", "tsv"),
    ("spdnn-blockdepend", "tsv"),
    ("spdnn-sz", "tsv"),
    ("spdnn-tcchain", "tsv"),
    ("spdnn-glare", "recorder"),
];

/// Builds each kernel crate's reuse example in release and copies it to
/// `examples/<crate>-<example>` (one crate at a time: the examples share a name). Returns
/// how many were packed.
fn reuse_examples(root: &Path, staging: &Path) -> Result<usize> {
    for (package, example) in REUSE_EXAMPLES {
        run_command(cargo().args(["build", "--release", "-p", package, "--example", example]))?;
        let built = root.join("target/release/examples").join(example);
        let packed = staging.join("examples").join(format!(
            "{}-{example}",
            package.trim_start_matches("spdnn-")
        ));
        std::fs::copy(&built, &packed)
            .with_context(|| format!("copying the example {}", built.display()))?;
    }
    Ok(REUSE_EXAMPLES.len())
}

/// Strips debug info from every packed executable (the pack must stay under 60 MiB).
fn strip_debug_info(staging: &Path) -> Result<()> {
    for dir in ["bin", "tests", "examples"] {
        for entry in std::fs::read_dir(staging.join(dir))? {
            let path = entry?.path();
            let status = Command::new("strip")
                .arg("--strip-debug")
                .arg(&path)
                .status();
            if !matches!(status, Ok(s) if s.success()) {
                bail!(
                    "could not strip {} (is binutils' strip installed?)",
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// The GPU test executables of the workspace (integration tests named `gpu`), or of the
/// packages `only` names, built in release, by a unique name. CPU-only tests run in CI and
/// are not packed.
fn test_executables(only: &[String]) -> Result<BTreeMap<String, PathBuf>> {
    let mut command = cargo();
    command.args([
        "test",
        "--release",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    if only.is_empty() {
        command.arg("--workspace");
    } else {
        for package in only {
            command.args(["-p", package]);
        }
        command.args(["--test", "gpu"]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("starting cargo test --no-run")?;
    let stdout = child.stdout.take().context("capturing cargo's output")?;
    let mut found = BTreeMap::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let Some(executable) = message["executable"].as_str() else {
            continue;
        };
        if message["target"]["name"] != "gpu" {
            continue;
        }
        let package = package_name(message["package_id"].as_str().unwrap_or(""));
        found.insert(format!("{package}--gpu"), PathBuf::from(executable));
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("cargo test --no-run failed with {status}");
    }
    Ok(found)
}

/// The package name out of a cargo package id: `path+file:///…/crates/x#spdnn-x@0.1.0`,
/// or `path+file:///…/xtask#0.1.0` when the folder is the package's name.
fn package_name(id: &str) -> String {
    let (path, tail) = id.rsplit_once('#').unwrap_or(("", id));
    match tail.split_once('@') {
        Some((name, _)) => name.to_string(),
        None => path.rsplit('/').next().unwrap_or(tail).to_string(),
    }
}

/// The sanitize run's expected seconds a run (measured; its header says the format), written
/// beside run.sh.
const SANITIZE_EXPECTED: &str = include_str!("sanitize-expected.txt");

/// Unpacks and runs on the GPU machine; logs go to $OUT.
const RUN_SCRIPT: &str = r#"#!/usr/bin/env bash
# Made by `cargo xtask device-pack`. Run from the repository root on the GPU machine.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${SPDNN_DEVICE_WORK:-/tmp/spdnn-device}
out=${OUT:-$work/out}
mkdir -p "$work" "$out"
if [ ! -f "$work/.unpacked" ] || [ "$here/pack.tar.xz" -nt "$work/.unpacked" ]; then
  tar -C "$work" -xJf "$here/pack.tar.xz" && touch "$work/.unpacked" || exit 2
fi
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SPDNN_DATA="$work/data" SPDNN_PTX_CACHE="$work/ptx" SPDNN_KERNELS_CU="$PWD/kernels-cu"
export PROPTEST_CASES=${PROPTEST_CASES:-32}
mode=${1:-tests}; shift || true
case "$mode" in
  tests)
    # Every test executable with --include-ignored. TESTS_JOBS at a time (default 1) on the
    # one GPU, each within TESTS_TIMEOUT_S (default 600); executables whose names match
    # TESTS_SOLO (default: cuda, adaptive, engine: they fill or probe the GPU's memory) run
    # afterwards, one at a time. Extra ARGS go to every executable (e.g. a name filter).
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
    logs="$out/tests"; rm -rf "$logs"; mkdir -p "$logs"
    solo=${TESTS_SOLO:-spdnn-(cuda|adaptive|engine)-}
    test_one() {
      local t=$1 name; name=$(basename "$t"); shift
      local start; start=$(date +%s)
      timeout -k 10 "${TESTS_TIMEOUT_S:-600}" "$t" --include-ignored --test-threads=1 "$@" >"$logs/$name.log" 2>&1
      local rc=$?
      echo "$name $rc $(( $(date +%s) - start )) $(grep -E '^test result' "$logs/$name.log" | tail -1)" >"$logs/$name.result"
      if [ "$rc" -eq 0 ]; then echo "PASS $name"; else echo "FAIL $name (exit $rc)"; tail -40 "$logs/$name.log"; fi
    }
    for t in "$work"/tests/*${SPDNN_TESTS:-}*; do
      [[ $(basename "$t") =~ $solo ]] && continue
      while [ "$(jobs -rp | wc -l)" -ge "${TESTS_JOBS:-1}" ]; do wait -n; done
      test_one "$t" "$@" &
    done
    wait
    for t in "$work"/tests/*${SPDNN_TESTS:-}*; do
      [[ $(basename "$t") =~ $solo ]] && test_one "$t" "$@"
    done
    cat "$logs"/*.log > "$out/tests.log" 2>/dev/null
    cat "$logs"/*.result 2>/dev/null | sort > "$out/tests-summary.txt"; rm -rf "$logs"
    cat "$out/tests-summary.txt"
    failed=$(awk '$2 != 0' "$out/tests-summary.txt" | wc -l); passed=$(awk '$2 == 0' "$out/tests-summary.txt" | wc -l)
    echo "test executables: $passed passed, $failed failed"
    [ "$failed" -eq 0 ];;
  sanitize)
    # Every GPU test under compute-sanitizer's racecheck, memcheck, initcheck and synccheck
    # (SANITIZE_TOOLS), one process per tool and test or per tool and executable
    # (SANITIZE_UNIT, below), at the sanitize scale (SPDNN_TEST_SCALE=
    # sanitize, crates/gputest/src/scale.rs), SANITIZE_JOBS runs at a time (default: six a
    # GPU, at most the cores: on 2026-11-26 sixteen racecheck runs on one H100 ran no faster
    # than fewer would, the GPU being time-shared, and five were killed, most likely for host
    # memory), spread over the machine's GPUs (SANITIZE_GPUS, default all: each run on the
    # GPU with the fewest runs, by CUDA_VISIBLE_DEVICES), the longest expected first
    # (SANITIZE_EXPECTED, below), each within SANITIZE_TIMEOUT_S (default: the budget) and all
    # within SANITIZE_BUDGET_S (runs that would start later are "skipped"). Tests matching SANITIZE_SKIP are not run, each listed with the reason. A run
    # is "clean", has "findings" (the tool's error count), "failed" (a test failed or the
    # process died: the tool found nothing but the run is not a pass; its panic lines are
    # shown), "timeout" or "skipped"; an executable none of whose tests extra ARGS select
    # (libtest filters, `--skip NAME`, given to `--list`) is "no-tests", not a failure. Per
    # tool one line over the executables (each counted by its worst run), one over the tests;
    # $out/sanitize-table.md has a row per executable. Logs: $out/sanitize/.
    # SANITIZE_UNIT says what one process runs: `mixed` (the default) a racecheck run per test
    # and, for the other tools, each executable's selected tests in one process (its modules
    # instrumented once; the test column says "all"); `test` a run
    # per tool and test; `executable` a run per tool and executable. On 2026-11-26 (four
    # H200s, six runs a GPU) a test that launches almost nothing took 4-5 s under the lighter
    # tools, the cost of a process under the tool: 591 such processes are about a quarter of
    # the whole run, while racecheck's long tests need a process each to start first.
    san=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
    [ -x "$san" ] || { echo "compute-sanitizer not found at $san"; exit 2; }
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
    "$san" --version | tail -1
    export SPDNN_TEST_SCALE=sanitize PROPTEST_CASES=${SANITIZE_CASES:-2}
    tools=${SANITIZE_TOOLS:-racecheck memcheck initcheck synccheck}
    gpus=${SANITIZE_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}; [ "${gpus:-0}" -ge 1 ] || gpus=1
    cores=$(nproc); par=${SANITIZE_JOBS:-$(( 6 * gpus < cores ? 6 * gpus : cores ))}
    budget=${SANITIZE_BUDGET_S:-510}; per=${SANITIZE_TIMEOUT_S:-$budget}; unit=${SANITIZE_UNIT:-mixed}
    case "$unit" in test|executable|mixed) ;;
      *) echo "SANITIZE_UNIT=$unit: expected mixed, test or executable"; exit 2;; esac
    flags=${SANITIZE_FLAGS:---launch-timeout 120}
    # memory_exhausted (engine's two fault tests): they hold every free byte of the GPU, which
    # the runs beside them need, and each of their refused allocations is a driver error on
    # purpose (CUDA_ERROR_OUT_OF_MEMORY), which memcheck counts as a finding.
    skip=${SANITIZE_SKIP:-memory_exhausted}
    if [ -n "${SANITIZE_SKIP:-}" ]; then why="SANITIZE_SKIP"; else
      why="holds the whole GPU memory; its refused allocations are driver errors on purpose"; fi
    started=$(date +%s); deadline=$(( started + budget ))
    logs="$out/sanitize"; rm -rf "$logs"; mkdir -p "$logs"
    # Expected seconds of each run, to start the longest first: SANITIZE_EXPECTED, a file
    # whose format its default says (sanitize-expected.txt beside this script, measured).
    expected=${SANITIZE_EXPECTED:-$here/sanitize-expected.txt}
    [ -r "$expected" ] || { echo "SANITIZE_EXPECTED: $expected is not readable"; exit 2; }
    queue="$logs/queue"; : > "$queue"
    for t in "$work"/tests/*${SPDNN_TESTS:-}*; do
      name=$(basename "$t")
      listed=$("$t" --list --include-ignored "$@" 2>/dev/null | sed -n 's/: test$//p')
      for test in $(grep -E "$skip" <<<"$listed"); do echo "excluded: $name $test ($why)"; done
      selected=$(grep -Ev "$skip" <<<"$listed")
      if [ -z "$selected" ]; then
        for tool in $tools; do echo "$tool $name - no-tests - 0 0" >"$logs/$tool-$name.result"; done
        continue
      fi
      for test in $selected; do for tool in $tools; do echo "$tool $t $test"; done; done >>"$queue"
    done
    awk -v unit="$unit" '
      BEGIN { share["memcheck"] = 0.4; share["initcheck"] = 0.45; share["synccheck"] = 0.3 }
      # The table: TOOL EXECUTABLE TEST SECONDS (TEST a name, a prefix ending in *, or all).
      FNR == NR { if ($0 !~ /^#/ && NF >= 4) { n++; tl[n] = $1; ex[n] = $2; te[n] = $3; sec[n] = $4 }
                  next }
      # The first entry of tool, executable and test (a name, or a prefix ending in *): its
      # seconds, or -1.
      function entry(tool, exe, test,   i) {
        for (i = 1; i <= n; i++)
          if (tl[i] == tool && ex[i] == exe && (te[i] == test ||
              (te[i] ~ /\*$/ && index(test, substr(te[i], 1, length(te[i]) - 1)) == 1)))
            return sec[i]
        return -1 }
      # A run of one test: its entry, else the share of the tool times the racecheck entry,
      # else 6 s.
      function expect(tool, exe, test,   s) {
        if ((s = entry(tool, exe, test)) >= 0) return s
        if ((s = entry("racecheck", exe, test)) >= 0) return s * share[tool]
        return 6 }
      # A whole-executable run: its `all` entry, else the expected times of the tests summed.
      { exe = $2; sub(/.*\//, "", exe); sub(/^spdnn-/, "", exe); sub(/--gpu$/, "", exe)
        if (unit == "executable" || (unit == "mixed" && $1 != "racecheck")) {
          key = $1 " " $2; s[key] += expect($1, exe, $3)
          if (!(key in whole)) whole[key] = entry($1, exe, "all")
          next }
        printf "%d %s\n", expect($1, exe, $3) + 1, $0 }
      END { for (k in s) printf "%d %s all\n", (whole[k] >= 0 ? whole[k] : s[k]) + 1, k }' \
      "$expected" "$queue" | sort -k1,1nr >"$queue.sorted"
    echo "$(wc -l <"$queue.sorted") runs ($tools; one process per $unit), $par at a time on $gpus GPU(s), each within ${per} s, all within ${budget} s"
    # The tests the skip pattern names, as libtest --skip filters (an executable run whole).
    skip_args=(); IFS='|' read -r -a skip_parts <<<"$skip"
    for part in "${skip_parts[@]}"; do [ -n "$part" ] && skip_args+=(--skip "$part"); done
    sanitize_one() {
      local tool=$1 exe=$2 test=$3 gpu=$4 name; name=$(basename "$exe"); shift 4
      local id="$tool-$name-$test" left=$(( deadline - $(date +%s) ))
      if [ "$left" -lt 20 ]; then echo "$tool $name $test skipped - 0 -" >"$logs/$id.result"; return; fi
      local limit=$(( left < per ? left : per )) start; start=$(date +%s)
      local select=(--exact "$test")
      [ "$test" = all ] && select=("$@" "${skip_args[@]}")
      # racecheck, the slowest tool by far, runs one proptest case a suite (its random cases
      # are the same kernels as the other tools' two) and one method run each, no warm-up
      # (SPDNN_TEST_ONE_RUN, crates/gputest/src/scale.rs).
      local run_env=(env PROPTEST_CASES="$PROPTEST_CASES")
      [ "$tool" = racecheck ] && run_env=(env PROPTEST_CASES="${SANITIZE_RACECHECK_CASES:-1}"
        SPDNN_TEST_ONE_RUN="${SANITIZE_RACECHECK_ONE_RUN:-1}")
      [ "$gpus" -gt 1 ] && run_env+=(CUDA_VISIBLE_DEVICES="$gpu")
      # shellcheck disable=SC2086
      timeout -k 10 "$limit" "${run_env[@]}" "$san" $flags --tool "$tool" --error-exitcode 86 "$exe" \
        --include-ignored "${select[@]}" --test-threads=1 >"$logs/$id.log" 2>&1
      local rc=$? secs=$(( $(date +%s) - start )) found status
      found=$(grep -Eo '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard)' "$logs/$id.log" \
        | grep -Eo '[0-9]+' | awk '{s += $1} END {print (NR ? s : "-")}')
      case "$rc" in
        0) status=clean;; 86) status=findings;; 124|137) status=timeout;; *) status=failed;;
      esac
      [ "$status" = clean ] && [ "$found" != 0 ] && [ "$found" != - ] && status=findings
      echo "$tool $name $test $status $found $secs $rc" >"$logs/$id.result"
    }
    # Each run goes to the GPU with the fewest runs on it (a marker file per run, made here
    # before it starts and removed when it ends), so a GPU whose long runs hold it gets none
    # of the next.
    busy="$logs/busy"; mkdir -p "$busy"
    run_index=0
    while read -r _ tool exe test; do
      while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
      gpu=0 fewest=-1
      for ((g = 0; g < gpus; g++)); do
        n=$(find "$busy" -name "gpu$g.*" | wc -l)
        if [ "$fewest" -lt 0 ] || [ "$n" -lt "$fewest" ]; then gpu=$g fewest=$n; fi
      done
      : >"$busy/gpu$gpu.$run_index"
      { sanitize_one "$tool" "$exe" "$test" "$gpu" "$@"; rm -f "$busy/gpu$gpu.$run_index"; } &
      run_index=$(( run_index + 1 ))
    done <"$queue.sorted"
    wait; rm -rf "$busy"
    echo "wall time $(( $(date +%s) - started )) s"
    bad=0
    for tool in $tools; do
      cat "$logs/$tool"-*.result 2>/dev/null | awk -v tool="$tool" '
        BEGIN { rank["no-tests"] = 0; rank["clean"] = 1; rank["skipped"] = 2; rank["timeout"] = 3
                rank["failed"] = 4; rank["findings"] = 5 }
        { if ($5 != "-") f += $5; s += $6
          if (!($2 in worst) || rank[$4] > rank[worst[$2]]) worst[$2] = $4
          if ($4 != "no-tests") { n++; t[$4]++ } }
        END { for (e in worst) { ne++; c[worst[e]]++ }
              printf "%-10s %d findings  (%d executables: %d clean, %d with findings, %d failed, %d timed out, %d skipped, %d without a matching test; %d s)\n",
                tool, f, ne, c["clean"], c["findings"], c["failed"], c["timeout"], c["skipped"], c["no-tests"], s
              printf "%-10s %d tests: %d clean, %d with findings, %d failed, %d timed out, %d skipped\n",
                "", n, t["clean"], t["findings"], t["failed"], t["timeout"], t["skipped"] }'
      while read -r _ name test status found secs rc; do
        [ "$status" = clean ] || [ "$status" = no-tests ] && continue
        bad=1
        echo "  $tool $name $test: $status (exit $rc, $secs s, findings $found)"
        log="$logs/$tool-$name-$test.log"
        if [ "$status" = findings ]; then
          grep -E '^========= +(Invalid|Race|Uninitialized|Barrier|Error|Warning|Program hit)' "$log" | sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
        elif [ "$status" = failed ]; then
          grep -E "panicked at|^test .* FAILED|CUDA_ERROR|Error:" "$log" | head -6 | cut -c1-300 | sed 's/^/    /'
        fi
      done < <(cat "$logs/$tool"-*.result 2>/dev/null)
    done
    # A row per executable: per tool its worst status, its tests, their seconds and the longest.
    cat "$logs"/*.result 2>/dev/null | awk -v tools="$tools" '
      BEGIN { nt = split(tools, tl, " "); rank["no-tests"] = 0; rank["clean"] = 1; rank["skipped"] = 2
              rank["timeout"] = 3; rank["failed"] = 4; rank["findings"] = 5 }
      { k = $2 SUBSEP $1; exes[$2] = 1
        if (!(k in worst) || rank[$4] > rank[worst[k]]) worst[k] = $4
        if ($4 != "no-tests") { n[k]++; s[k] += $6; if (!(k in m) || $6 > m[k]) { m[k] = $6; mt[k] = $3 } } }
      END { printf "| executable |"; for (i = 1; i <= nt; i++) printf " %s |", tl[i]; printf "\n|---|"
            for (i = 1; i <= nt; i++) printf "---|"; printf "\n"
            for (e in exes) { printf "| %s |", e
              for (i = 1; i <= nt; i++) { k = e SUBSEP tl[i]
                if (!(k in worst)) printf " – |"
                else if (worst[k] == "no-tests") printf " no test run (excluded or unmatched) |"
                else printf " %s, %d tests, %d s (longest %d s, %s) |", worst[k], n[k], s[k], m[k], mt[k] }
              printf "\n" } }' | { read -r h; read -r d; echo "$h"; echo "$d"; sort; } >"$out/sanitize-table.md"
    cat "$out/sanitize-table.md"
    [ "$bad" -eq 0 ];;
  verify)
    # A GPU change's two checks in one call: every GPU test (`tests`, TESTS_JOBS default 4)
    # and the whole sanitizer run (`sanitize`). On G >= 2 GPUs side by side: the tests on
    # the last GPU, the sanitizers on the others (seven runs a GPU unless SANITIZE_JOBS
    # says). On one GPU one after the other: the tests fill the GPU's memory, which runs
    # beside them need. Their outputs: verify-tests.txt and verify-sanitize.txt, and each
    # mode's own files. Fails when either fails.
    self="$here/$(basename "$0")"
    all=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); [ "${all:-0}" -ge 1 ] || all=1
    export TESTS_JOBS=${TESTS_JOBS:-4}
    if [ "$all" -ge 2 ]; then
      others=$(seq -s, 0 $((all - 2)))
      echo "verify: the tests on GPU $((all - 1)), the sanitizers on GPU(s) $others"
      CUDA_VISIBLE_DEVICES=$((all - 1)) bash "$self" tests "$@" >"$out/verify-tests.txt" 2>&1 &
      tests_pid=$!
      CUDA_VISIBLE_DEVICES=$others SANITIZE_GPUS=$((all - 1)) \
        SANITIZE_JOBS=${SANITIZE_JOBS:-$((7 * (all - 1)))} \
        bash "$self" sanitize "$@" >"$out/verify-sanitize.txt" 2>&1
      sanitize_rc=$?
      wait "$tests_pid"; tests_rc=$?
    else
      echo "verify: one GPU, the tests and then the sanitizers"
      bash "$self" tests "$@" >"$out/verify-tests.txt" 2>&1; tests_rc=$?
      bash "$self" sanitize "$@" >"$out/verify-sanitize.txt" 2>&1; sanitize_rc=$?
    fi
    grep -E '^(FAIL|test executables)' "$out/verify-tests.txt"
    grep -vE '^(excluded|\||NVIDIA|Version)' "$out/verify-sanitize.txt" | head -40
    echo "verify: tests exit $tests_rc, sanitize exit $sanitize_rc"
    [ "$tests_rc" -eq 0 ] && [ "$sanitize_rc" -eq 0 ];;
  examples)
    # Each kernel crate's reuse example on a generated network (N = 1024, ${EXAMPLE_LAYERS:-120}
    # layers) over 2000 MNIST-recipe rows; each checks its categories against a plain CPU loop.
    nets="$out/example-net"; mkdir -p "$nets"
    "$work/bin/spdnn" generate --neurons 1024 --layers "${EXAMPLE_LAYERS:-120}" --seed 0 --out "$nets/1024" >/dev/null \
      && "$work/bin/spdnn" images --neurons 1024 --rows 2000 --out "$nets/images-1024.tsv" >/dev/null \
      || { echo "could not write the example network"; exit 2; }
    failed=0
    for e in "$work"/examples/*; do
      name=$(basename "$e")
      if "$e" "$nets/1024" "${EXAMPLE_LAYERS:-120}" "$nets/images-1024.tsv" >"$out/example-$name.log" 2>&1; then
        echo "PASS $name: $(tail -1 "$out/example-$name.log")"
      else
        failed=$((failed+1)); echo "FAIL $name"; tail -5 "$out/example-$name.log"
      fi
    done
    rm -rf "$nets"
    [ "$failed" -eq 0 ];;
  bench) cd "$work" && "$work/bin/spdnn" bench --out "$out/${BENCH_TAG:-bench}" "$@";;
  spdnn) "$work/bin/spdnn" "$@";;
  mpi)
    # mpirun -np $NP spdnn-mpi ARGS --mpi, over the machine's own Open MPI (its lib folder
    # beside mpirun's bin gives libmpi.so.40). With no --gpus each rank takes GPU
    # (host-local rank mod visible GPUs).
    [ -x "$work/bin/spdnn-mpi" ] || { echo "the pack has no spdnn-mpi (no mpicc where it was made)"; exit 2; }
    mpirun=$(command -v mpirun) || { echo "no mpirun on this machine"; exit 2; }
    export LD_LIBRARY_PATH="$(dirname "$(dirname "$(readlink -f "$mpirun")")")/lib:$LD_LIBRARY_PATH"
    if ldd "$work/bin/spdnn-mpi" | grep -q 'not found'; then
      ldd "$work/bin/spdnn-mpi" | grep 'not found'; exit 2
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    "$mpirun" --oversubscribe -np "${NP:-2}" -x LD_LIBRARY_PATH -x SPDNN_DATA -x SPDNN_PTX_CACHE \
      -x SPDNN_KERNELS_CU "$work/bin/spdnn-mpi" "$@" --mpi;;
  *) echo "usage: run.sh tests|sanitize|verify|examples|bench|spdnn|mpi [ARGS]"; exit 2;;
esac
"#;

#[cfg(test)]
mod tests {
    use super::{RUN_SCRIPT, SANITIZE_EXPECTED, package_name};

    #[test]
    fn the_run_script_parses_and_sanitizes_at_the_sanitize_scale() {
        use std::io::Write;
        let mut bash = std::process::Command::new("bash")
            .arg("-n")
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("bash");
        bash.stdin
            .take()
            .expect("stdin")
            .write_all(RUN_SCRIPT.as_bytes())
            .expect("writing the script");
        let out = bash.wait_with_output().expect("bash -n");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The knob spdnn-gputest reads (crates/gputest/src/scale.rs).
        assert!(RUN_SCRIPT.contains("export SPDNN_TEST_SCALE=sanitize"));
    }

    /// Writes `text` to `path` as an executable.
    fn write_executable(path: &std::path::Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The sanitize run's logs under `out`, sorted.
    fn sanitize_logs(out: &std::path::Path) -> Vec<String> {
        let mut logs: Vec<String> = std::fs::read_dir(out.join("sanitize"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        logs.sort();
        logs
    }

    /// A stand-in device folder: `run.sh`, an unpacked work folder with one stand-in test
    /// executable (lists three tests, prints its arguments and GPU; exits 1 when
    /// `DEMO_FAIL` is set), a stand-in compute-sanitizer (runs the test executable) and
    /// `expected` as the sanitize queue's expected times.
    fn stand_in_device(expected: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("work/tests")).unwrap();
        std::fs::write(root.join("work/.unpacked"), "").unwrap();
        write_executable(&root.join("run.sh"), RUN_SCRIPT);
        std::fs::write(root.join("sanitize-expected.txt"), expected).unwrap();
        write_executable(
            &root.join("work/tests/spdnn-demo--gpu"),
            "#!/usr/bin/env bash\n\
             if [[ \" $* \" == *\" --list \"* ]]; then\n\
             printf 'alpha: test\\nbeta_memory_exhausted: test\\ngamma: test\\n'; exit 0; fi\n\
             echo \"args: $* gpu=${CUDA_VISIBLE_DEVICES:-none} scale=${SPDNN_TEST_SCALE:-full} \
             cases=$PROPTEST_CASES one=${SPDNN_TEST_ONE_RUN:-0}\"\n\
             [ -z \"${DEMO_FAIL:-}\" ] || exit 1\n\
             echo 'test result: ok. 3 passed'\n",
        );
        write_executable(
            &root.join("sanitizer"),
            "#!/usr/bin/env bash\n\
             [ \"$1\" = --version ] && { echo stand-in; exit 0; }\n\
             while [ \"$1\" != --error-exitcode ]; do shift; done; shift 2\n\
             \"$@\"; echo '========= ERROR SUMMARY: 0 errors'\n",
        );
        dir
    }

    /// `run.sh sanitize` on the stand-in device: the arguments each run gets, per unit, and
    /// the runs spread over two GPUs.
    #[test]
    fn the_sanitize_run_spreads_over_gpus_and_runs_executables_whole() {
        // Expected times: gamma under racecheck first, then memcheck's whole executable,
        // then alpha (a prefix entry); memcheck per test takes its share of racecheck's.
        let dir = stand_in_device(
            "# a comment\nracecheck demo gamma 50\nmemcheck demo all 30\nracecheck demo al* 20\n",
        );
        let root = dir.path();
        let run = |unit: &str, gpus: &str| {
            let out = root.join(format!("out-{unit}-{gpus}"));
            let status = std::process::Command::new("bash")
                .arg(root.join("run.sh"))
                .arg("sanitize")
                .env("SPDNN_DEVICE_WORK", root.join("work"))
                .env("OUT", &out)
                .env("COMPUTE_SANITIZER", root.join("sanitizer"))
                .env("SANITIZE_TOOLS", "memcheck racecheck")
                .env("SANITIZE_UNIT", unit)
                .env("SANITIZE_GPUS", gpus)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&status.stdout).into_owned();
            assert!(status.status.success(), "{stdout}");
            let logs = sanitize_logs(&out);
            (stdout, logs)
        };
        // A run per tool and test on one GPU: no device chosen, the excluded test named.
        let (stdout, logs) = run("test", "1");
        assert!(
            stdout.contains("excluded: spdnn-demo--gpu beta_memory_exhausted"),
            "{stdout}"
        );
        assert!(
            stdout.contains("4 runs (memcheck racecheck; one process per test)"),
            "{stdout}"
        );
        assert!(stdout.contains(" on 1 GPU(s)"), "{stdout}");
        assert_eq!(logs.len(), 4, "{logs:?}");
        assert!(
            logs.iter().all(|l| l.contains("gpu=none scale=sanitize")),
            "{logs:?}"
        );
        assert_eq!(
            logs.iter().filter(|l| l.contains("--exact alpha ")).count(),
            2
        );
        // racecheck one proptest case and one run a method run, the other tools two.
        assert_eq!(
            logs.iter().filter(|l| l.contains("cases=1 one=1")).count(),
            2
        );
        assert_eq!(logs.iter().filter(|l| l.contains("cases=2")).count(), 2);
        let queue = |unit: &str| {
            std::fs::read_to_string(root.join(format!("out-{unit}-1/sanitize/queue.sorted")))
                .unwrap()
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    format!("{} {} {}", f[0], f[1], f[3])
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            queue("test"),
            [
                "51 racecheck gamma",
                "21 memcheck gamma",
                "21 racecheck alpha",
                "9 memcheck alpha"
            ]
        );
        // By default racecheck a run per test, memcheck one for the executable.
        let (stdout, logs) = run("", "1");
        assert_eq!(
            queue(""),
            [
                "51 racecheck gamma",
                "31 memcheck all",
                "21 racecheck alpha"
            ]
        );
        assert!(
            stdout.contains("3 runs (memcheck racecheck; one process per mixed)"),
            "{stdout}"
        );
        assert_eq!(logs.len(), 3, "{logs:?}");
        assert_eq!(
            logs.iter()
                .filter(|l| l.contains("--exact") && l.contains("cases=1"))
                .count(),
            2,
            "{logs:?}"
        );
        assert_eq!(
            logs.iter()
                .filter(|l| l.contains("--skip memory_exhausted") && l.contains("cases=2"))
                .count(),
            1,
            "{logs:?}"
        );
        // A run per tool and executable on two GPUs: the whole executable less the
        // excluded test, one run on each GPU.
        let (stdout, logs) = run("executable", "2");
        assert!(
            stdout.contains("2 runs (memcheck racecheck; one process per executable)"),
            "{stdout}"
        );
        assert!(stdout.contains(" on 2 GPU(s)"), "{stdout}");
        assert_eq!(logs.len(), 2, "{logs:?}");
        for log in &logs {
            assert!(
                log.contains("--skip memory_exhausted --test-threads=1"),
                "{log}"
            );
            assert!(!log.contains("--exact"), "{log}");
        }
        assert!(
            logs.iter().any(|l| l.contains("gpu=0")) && logs.iter().any(|l| l.contains("gpu=1")),
            "{logs:?}"
        );
        assert!(stdout.contains("memcheck   0 findings"), "{stdout}");
    }

    /// `run.sh verify` on the stand-in device with a stand-in `nvidia-smi` listing
    /// `DEMO_GPUS` GPUs: the tests on the last GPU and the sanitizers on the others, both in
    /// turn on one GPU, and a failing test executable failing the whole.
    #[test]
    fn the_verify_run_puts_the_tests_on_the_last_gpu_and_the_sanitizers_on_the_others() {
        let dir = stand_in_device("racecheck demo gamma 5\n");
        let root = dir.path();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        write_executable(
            &root.join("bin/nvidia-smi"),
            "#!/usr/bin/env bash\n\
             if [ \"$1\" = -L ]; then\n\
             for ((g = 0; g < DEMO_GPUS; g++)); do echo \"GPU $g: Stand-in (UUID: GPU-$g)\"; done\n\
             else echo 'Stand-in, 0, 1 MiB'; fi\n",
        );
        let path = format!(
            "{}:{}",
            root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let verify = |gpus: usize, fail: bool| {
            let out = root.join(format!("verify-{gpus}-{fail}"));
            let mut command = std::process::Command::new("bash");
            command
                .arg(root.join("run.sh"))
                .arg("verify")
                .env("PATH", &path)
                .env("DEMO_GPUS", gpus.to_string())
                .env("SPDNN_DEVICE_WORK", root.join("work"))
                .env("OUT", &out)
                .env("COMPUTE_SANITIZER", root.join("sanitizer"))
                .env("SANITIZE_TOOLS", "memcheck racecheck");
            if fail {
                command.env("DEMO_FAIL", "1");
            }
            let output = command.output().unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let tests = std::fs::read_to_string(out.join("tests.log")).unwrap_or_default();
            let sanitized = sanitize_logs(&out);
            (output.status.success(), stdout, tests, sanitized)
        };
        // Three GPUs: the tests on GPU 2, the sanitizer runs spread over GPUs 0 and 1.
        let (ok, stdout, tests, sanitized) = verify(3, false);
        assert!(ok, "{stdout}");
        assert!(
            stdout.contains("verify: the tests on GPU 2, the sanitizers on GPU(s) 0,1"),
            "{stdout}"
        );
        assert!(
            stdout.contains("verify: tests exit 0, sanitize exit 0"),
            "{stdout}"
        );
        assert!(tests.contains("gpu=2 scale=full"), "{tests}");
        assert!(
            !tests.contains("gpu=0") && !tests.contains("gpu=1"),
            "{tests}"
        );
        assert!(
            sanitized
                .iter()
                .all(|l| l.contains("scale=sanitize") && !l.contains("gpu=2")),
            "{sanitized:?}"
        );
        assert!(
            sanitized.iter().any(|l| l.contains("gpu=0"))
                && sanitized.iter().any(|l| l.contains("gpu=1")),
            "{sanitized:?}"
        );
        // Two GPUs: the one sanitizer GPU is named for every run.
        let (ok, stdout, tests, sanitized) = verify(2, false);
        assert!(ok, "{stdout}");
        assert!(tests.contains("gpu=1 scale=full"), "{tests}");
        assert!(
            !sanitized.is_empty() && sanitized.iter().all(|l| l.contains("gpu=0")),
            "{sanitized:?}"
        );
        // One GPU: in turn, neither restricted.
        let (ok, stdout, tests, sanitized) = verify(1, false);
        assert!(ok, "{stdout}");
        assert!(
            stdout.contains("verify: one GPU, the tests and then the sanitizers"),
            "{stdout}"
        );
        assert!(tests.contains("gpu=none scale=full"), "{tests}");
        assert!(
            !sanitized.is_empty() && sanitized.iter().all(|l| l.contains("gpu=none")),
            "{sanitized:?}"
        );
        // A failing test executable fails the whole.
        let (ok, stdout, _, _) = verify(2, true);
        assert!(!ok, "{stdout}");
        assert!(stdout.contains("verify: tests exit 1"), "{stdout}");
    }

    #[test]
    fn the_expected_sanitize_times_parse() {
        let tools = ["racecheck", "memcheck", "initcheck", "synccheck"];
        let mut entries = 0;
        for line in SANITIZE_EXPECTED.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 4, "{line}");
            assert!(tools.contains(&fields[0]), "{line}");
            assert!(!fields[1].starts_with("spdnn-"), "{line}");
            assert!(fields[3].parse::<u32>().is_ok_and(|s| s > 0), "{line}");
            entries += 1;
        }
        assert!(entries > 100, "{entries}");
    }

    #[test]
    fn package_names_come_out_of_ids() {
        assert_eq!(
            package_name("path+file:///w/crates/bf#spdnn-bf@0.1.0"),
            "spdnn-bf"
        );
        assert_eq!(package_name("path+file:///w/xtask#0.1.0"), "xtask");
    }
}
