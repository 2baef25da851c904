#!/usr/bin/env bash
# PM sampling on a real GPU, for the day one is at hand (no test here has run
# the device half of CUPTI PM sampling: tests use the fake libcupti's).
# Runs samples/cuda/nvtx_kernels under `tracer run --pm-metrics basic` and
# checks what scripts/gpu_check/check_pm.py writes down:
#   - no "PM sampling off" line (else it prints the line: permissions need
#     NVreg_RestrictProfilingToAdminUsers=0 or root; Turing/GA100 lack
#     time-interval sampling);
#   - samples of all three basic metrics, on device 0;
#   - values plausible: percentages in [0, 100.5]; SM active above 1% in at
#     least one sample (the kernels ran);
#   - every sample 0 < end - start <= 10 intervals, and its time inside the
#     run (between the first and last record of the trace, 50 ms slack):
#     the GPU-clock to trace-clock mapping is right;
#   - at least one sample overlaps a kernel;
#   - the host's exit code is unchanged; no pm_hw_buffer_overflow drops.
#
#   scripts/gpu_pm_check.sh [BUILD_DIR]        (default: build)
#   GPU_CHECK_NO_BUILD=1 uses the binaries already in BUILD_DIR, as gpu_check.sh.
#
# Without a CUDA driver it prints one line and exits 0, having checked
# nothing. Otherwise: 0 when every expectation held, 1 if not.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd || echo "${1:-$ROOT/build}")"

no_driver() {
  echo "gpu_pm_check: no CUDA driver ($1); nothing checked"
  exit 0
}
[ -e /dev/nvidia0 ] || no_driver "no /dev/nvidia0"
python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' >/dev/null 2>&1 ||
  no_driver "libcuda.so.1 cannot be loaded"
nvidia-smi -L >/dev/null 2>&1 || no_driver "nvidia-smi fails"

echo "gpu_pm_check: $(nvidia-smi -L | head -n 1)"
if [ -z "${GPU_CHECK_NO_BUILD:-}" ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
  fi
  cmake --build "$BUILD" --target tracer tracer_injection nvtx_kernels || exit 1
fi
TRACER="$BUILD/tools/tracer"
SAMPLE="$BUILD/samples/cuda/nvtx_kernels"
OUT="$(mktemp -d /tmp/gpu_pm_check.XXXXXX)"
INTERVAL=100000 # 100 us: the sample is short

echo "gpu_pm_check: chip metrics: $("$TRACER" list-metrics 2>&1 | head -n 1)"
"$SAMPLE" >"$OUT/plain.log" 2>&1
plain_rc=$?
TRACER_PM_EXPERIMENTAL=1 "$TRACER" run -o "$OUT/pm.trace" --pm-metrics basic --pm-interval "$INTERVAL" \
  --log-level info -- "$SAMPLE" >"$OUT/pm.log" 2>&1
traced_rc=$?
status=0
if [ "$plain_rc" -ne "$traced_rc" ]; then
  echo "  DIFFERS host exit code: $plain_rc without the tracer, $traced_rc with it"
  status=1
fi
if grep -q "PM sampling" "$OUT/pm.log"; then
  grep "PM sampling" "$OUT/pm.log" | sed 's/^/  log: /'
fi
if grep -q "PM sampling off\|PM sampling stopped" "$OUT/pm.log"; then
  echo "  DIFFERS PM sampling did not run (line above)"
  status=1
fi
if [ ! -s "$OUT/pm.trace" ]; then
  echo "  DIFFERS no trace written"
  exit 1
fi
"$TRACER" export "$OUT/pm.trace" --format chrome -o "$OUT/pm.json" >/dev/null 2>&1 || {
  echo "  DIFFERS tracer export failed"
  exit 1
}
"$TRACER" report "$OUT/pm.trace" --table summary --format json >"$OUT/summary.json" 2>/dev/null
python3 "$ROOT/scripts/gpu_check/check_pm.py" --chrome "$OUT/pm.json" --interval-ns "$INTERVAL" \
  --log "$OUT/pm.log" || status=1
echo "gpu_pm_check: traces and logs in $OUT"
[ "$status" -eq 0 ] && echo "gpu_pm_check: ok" || echo "gpu_pm_check: FAILED"
exit "$status"
