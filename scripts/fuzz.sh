#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in
# build-fuzz/ and runs each for SECONDS (default 5), printing libFuzzer's
# figures (runs, coverage) and any crash it writes. Usage:
#   scripts/fuzz.sh [SECONDS] [TARGET...]   (FUZZ_RUNS=N: N inputs, fixed seed)
# Crashes land in build-fuzz/tests/fuzz/<target>-crash-*; copy one into
# tests/fuzz/corpus/<target>/ once fixed, so the regular test run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_stream_reader fuzz_kineto fuzz_nsys fuzz_groups fuzz_nvtx)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRACER_FUZZ=ON -DTRACER_FUZZ_SECONDS="$seconds" "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"${JOBS:-2}" --target "${targets[@]}"
status=0
# FUZZ_RUNS=N: at most N inputs from a fixed seed (FUZZ_SEED, default 1)
# and a fresh work corpus, so a run can be repeated input for input (CI).
fixed=()
[ -n "${FUZZ_RUNS:-}" ] && fixed=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}")
for t in "${targets[@]}"; do
  echo "== $t ($seconds s${FUZZ_RUNS:+, $FUZZ_RUNS runs})"
  work=build-fuzz/tests/fuzz/corpus_$t
  [ -n "${FUZZ_RUNS:-}" ] && rm -rf "$work"
  mkdir -p "$work"
  if ! build-fuzz/tests/fuzz/"$t" -max_total_time="$seconds" "${fixed[@]}" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix=build-fuzz/tests/fuzz/"$t"- \
      "$work" tests/fuzz/corpus/"$t" 2>build-fuzz/tests/fuzz/"$t".log; then
    status=1
    grep -E "ERROR|SUMMARY|Test unit written" build-fuzz/tests/fuzz/"$t".log | head -5
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|Done [0-9]+ runs" \
    build-fuzz/tests/fuzz/"$t".log || true
done
exit $status
