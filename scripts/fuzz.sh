#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in
# build-fuzz/ and runs each for SECONDS (default 5), printing libFuzzer's
# figures (runs, coverage) and any crash it writes. Usage:
#   scripts/fuzz.sh [SECONDS] [TARGET...]
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
for t in "${targets[@]}"; do
  echo "== $t ($seconds s)"
  work=build-fuzz/tests/fuzz/corpus_$t
  mkdir -p "$work"
  if ! build-fuzz/tests/fuzz/"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix=build-fuzz/tests/fuzz/"$t"- \
      "$work" tests/fuzz/corpus/"$t" 2>build-fuzz/tests/fuzz/"$t".log; then
    status=1
    grep -E "ERROR|SUMMARY|Test unit written" build-fuzz/tests/fuzz/"$t".log | head -5
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|Done [0-9]+ runs" \
    build-fuzz/tests/fuzz/"$t".log || true
done
exit $status
