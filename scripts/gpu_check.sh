#!/usr/bin/env bash
# The check for the day a GPU is at hand: no test here has run on real CUPTI.
# Builds samples/cuda (and uses samples/torch when torch sees a GPU), runs
# each under `tracer run` (plain, with a capture window, with a CUDA graph)
# and compares the report with the expectations in scripts/gpu_check/
# (expect_*.txt, read by check_report.py): kernels attributed to the ranges
# that launched them, counts per range, the window's kernels and no others,
# graph kernels to their node's range, no drops, host exit code unchanged.
# Prints each difference and the facts to record against the fake libcupti
# (attribution sources, drops, launch callbacks seen), next to the same facts
# from the fake's nearest scenario (tests/cupti/scenarios) when the fake is
# built.
#
#   scripts/gpu_check.sh [BUILD_DIR]        (default: build)
#   GPU_CHECK_NO_BUILD=1 scripts/gpu_check.sh DIR   (binaries copied into DIR
#                                                    in the build tree's layout)
#
# Without a CUDA driver it prints one line and exits 0, having checked
# nothing. Exit status otherwise: 0 when every case matched, 1 if not.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd || echo "${1:-$ROOT/build}")"
HERE="$ROOT/scripts/gpu_check"

no_driver() {
  echo "gpu_check: no CUDA driver ($1); nothing checked"
  exit 0
}
[ -e /dev/nvidia0 ] || no_driver "no /dev/nvidia0"
python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' >/dev/null 2>&1 ||
  no_driver "libcuda.so.1 cannot be loaded"
nvidia-smi -L >/dev/null 2>&1 || no_driver "nvidia-smi fails"

echo "gpu_check: $(nvidia-smi -L | head -n 1)"
if [ -n "${GPU_CHECK_NO_BUILD:-}" ]; then
  # Binaries built elsewhere and copied in the build tree's layout (a GPU
  # machine without the build's dependencies).
  echo "gpu_check: using the binaries already in $BUILD (GPU_CHECK_NO_BUILD)"
else
  echo "gpu_check: building tracer, libtracer.so and samples/cuda in $BUILD"
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
  fi
  cmake --build "$BUILD" --target tracer tracer_injection nvtx_kernels graph_replay || exit 1
  # The fake libcupti and its driver, for the side-by-side facts (optional).
  cmake --build "$BUILD" --target fake_cupti fake_driver >/dev/null 2>&1
fi
FAKE_DRIVER="$BUILD/tests/cupti/fake_driver"
FAKE_CUPTI="$BUILD/tests/cupti/libfake_cupti.so"
TRACER="$BUILD/tools/tracer"
SAMPLES="$BUILD/samples/cuda"
OUT="$(mktemp -d /tmp/gpu_check.XXXXXX)"
echo "gpu_check: traces in $OUT"

cases=0
failed=0
# fake_facts NAME SCENARIO "TRACER RUN FLAGS": the same facts from the fake.
fake_facts() {
  local name="$1" scenario="$2" flags="$3"
  [ -x "$FAKE_DRIVER" ] && [ -f "$FAKE_CUPTI" ] || return 0
  # shellcheck disable=SC2086
  TRACER_CUPTI_LIBRARY="$FAKE_CUPTI" "$TRACER" run -o "$OUT/$name.fake.trace" $flags -- \
    "$FAKE_DRIVER" "$ROOT/tests/cupti/scenarios/$scenario" >"$OUT/$name.fake.log" 2>&1
  [ -s "$OUT/$name.fake.trace" ] &&
    python3 "$HERE/check_report.py" --tracer "$TRACER" --trace "$OUT/$name.fake.trace" \
      --label "fake ($scenario)"
}

# run_case NAME EXPECT_FILE "TRACER RUN FLAGS" COMMAND...
run_case() {
  local name="$1" expect="$2" flags="$3"
  shift 3
  cases=$((cases + 1))
  echo
  echo "== $name: $*"
  "$@" >"$OUT/$name.plain.log" 2>&1
  local plain_rc=$?
  # shellcheck disable=SC2086  # flags are words on purpose
  "$TRACER" run -o "$OUT/$name.trace" $flags -- "$@" >"$OUT/$name.traced.log" 2>&1
  local traced_rc=$?
  local ok=1
  if [ "$plain_rc" -ne "$traced_rc" ]; then
    echo "  DIFFERS host exit code: $plain_rc without the tracer, $traced_rc with it"
    ok=0
  fi
  grep -iE 'tracer|cupti' "$OUT/$name.traced.log" | head -n 5 | sed 's/^/  log: /'
  if [ ! -s "$OUT/$name.trace" ]; then
    echo "  DIFFERS no trace written ($OUT/$name.trace)"
    ok=0
  else
    local groups=()
    [ "${GROUPS_FILE:-}" != "" ] && groups=(--groups "$GROUPS_FILE")
    python3 "$HERE/check_report.py" --tracer "$TRACER" --trace "$OUT/$name.trace" \
      --expect "$HERE/$expect" "${groups[@]}" || ok=0
  fi
  [ $ok -eq 1 ] || failed=$((failed + 1))
}

window="--capture-range step --capture-start 2 --capture-stop 2"
run_case nvtx_kernels expect_nvtx_kernels.txt "" "$SAMPLES/nvtx_kernels"
fake_facts nvtx_kernels nested_ranges.scn ""
run_case nvtx_kernels_window expect_nvtx_kernels_window.txt "$window" "$SAMPLES/nvtx_kernels"
fake_facts nvtx_kernels_window capture_range.scn "--capture-range step --capture-start 2"
run_case graph_replay expect_graph_replay.txt "" "$SAMPLES/graph_replay" 10
fake_facts graph_replay graph_replay.scn ""

if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
  >/dev/null 2>&1; then
  lora=(python3 "$ROOT/samples/torch/lora_finetune.py" --steps 3 --device cuda)
  GROUPS_FILE="$ROOT/samples/torch/lora.groups" run_case lora expect_lora.txt "" "${lora[@]}"
  run_case lora_window expect_lora_window.txt "$window" "${lora[@]}"
else
  echo
  echo "== lora: skipped (torch is not importable or sees no GPU)"
fi

echo
if [ $failed -eq 0 ]; then
  echo "gpu_check: $cases cases, all as expected"
  exit 0
fi
echo "gpu_check: $cases cases, $failed differ from expectations (details above, traces in $OUT)"
exit 1
