#!/usr/bin/env bash
# The unit tests under sanitizers, in their own build trees (no GPU needed):
#   build-asan: reader, tables, importers, reports, CLI (run by the tests)
#               and the capture library's unit tests under ASan + UBSan
#               (any report fails the run; leaks included);
#   build-tsan: the capture library's unit tests (rings, thread registry,
#               writer, string table) under ThreadSanitizer.
# Run by scripts/test.sh after the main suite; alone after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
common=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DTRACER_BUILD_BENCH=OFF
        -DTRACER_BUILD_CUDA_SAMPLES=OFF)
asan="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1"
cmake -S . -B build-asan "${common[@]}" "-DCMAKE_CXX_FLAGS=$asan" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" > /dev/null
cmake --build build-asan -j2 --target analysis_tests tables_tests importers_tests \
  capture_unit_tests
tsan="-fsanitize=thread -O1 -g"
cmake -S . -B build-tsan "${common[@]}" "-DCMAKE_CXX_FLAGS=$tsan" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" > /dev/null
cmake --build build-tsan -j2 --target capture_unit_tests

run() {  # tree, test binary path inside it, sanitizer options
  local dir="$1/$(dirname "$2")" bin
  bin=$(basename "$2")
  echo "sanitizers: $1 $bin"
  (cd "$dir" && env "$3" "./$bin" --gtest_brief=1)
}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in tests/analysis/analysis_tests tests/tables/tables_tests \
         tests/importers/importers_tests tests/capture/capture_unit_tests; do
  run build-asan "$t" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
done
run build-tsan tests/capture/capture_unit_tests TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
echo "sanitizers: no report"
