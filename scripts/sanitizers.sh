#!/usr/bin/env bash
# The tests under sanitizers, in their own build trees (no GPU needed):
#   build-asan: reader, tables, importers, reports, CLI (run by the tests)
#               and the capture library's unit tests under ASan + UBSan;
#               then the end-to-end tests (tests/capture/e2e, tests/cupti
#               cupti_e2e_test.cc): libtracer.so, the NVTX clients, the fake
#               driver and the fake libcupti are all built with ASan + UBSan
#               in that tree, so each traced host is sanitized itself (its
#               runtime loads first) and runs the sanitized library;
#   build-tsan: the capture library's unit tests (rings, thread registry,
#               writer, string table), and the reader's threads (a tracer
#               stream read ahead on a thread, the nsys tables scanned and
#               decoded on threads: ReaderTest, StreamingReport and the
#               importers' tests) under ThreadSanitizer;
#   build-fuzz: each libFuzzer target (tests/fuzz, clang) for a fixed number
#               of inputs from a fixed seed, at most FUZZ_SECONDS each
#               (default 60; 0 skips), through scripts/fuzz.sh.
# Any report fails the run, leaks included: every process writes its reports
# to a log file (log_path), and a file there, from a test binary or from any
# program a test started, is a failure even when the test passed.
# Run by scripts/test.sh after the main suite; alone after scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
common=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DTRACER_BUILD_BENCH=OFF
        -DTRACER_BUILD_CUDA_SAMPLES=OFF)
command -v ccache >/dev/null &&
  common+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
asan="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1"
cmake -S . -B build-asan "${common[@]}" "-DCMAKE_CXX_FLAGS=$asan" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" > /dev/null
cmake --build build-asan -j2 --target analysis_tests tables_tests importers_tests \
  capture_unit_tests capture_e2e_tests cupti_e2e_tests
tsan="-fsanitize=thread -O1 -g"
cmake -S . -B build-tsan "${common[@]}" "-DCMAKE_CXX_FLAGS=$tsan" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread" > /dev/null
cmake --build build-tsan -j2 --target capture_unit_tests analysis_tests importers_tests

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run() {  # tree, test binary path inside it, sanitizer options, gtest filter
  local dir="$1/$(dirname "$2")" bin
  bin=$(basename "$2")
  echo "sanitizers: $1 $bin"
  if ! (cd "$dir" && env "$3" "./$bin" --gtest_brief=1 --gtest_filter="${4:-*}"); then
    # A sanitizer report makes the program exit non-zero with its text in
    # the log folder (log_path): show it before the trap removes the folder.
    echo "sanitizers: $1 $bin failed" >&2
    show_reports || head -c 20000 "$logs"/* >&2 2>/dev/null || true
    exit 1
  fi
}
# Files in the log folder holding a sanitizer report. LeakSanitizer also
# writes notes that are not reports there ("Running thread N was not
# suspended. False leaks are possible." when a thread is exiting as the
# check runs); a real leak is an ERROR line of its own.
show_reports() {
  local bad
  bad=$(grep -lE "ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:|WARNING: ThreadSanitizer" \
        "$logs"/* 2>/dev/null || true)
  [ -n "$bad" ] || return 1
  echo "sanitizers: reports from programs the tests ran:" >&2
  # shellcheck disable=SC2086
  head -c 20000 $bad >&2
  return 0
}
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
asan_opts="detect_leaks=1:abort_on_error=0:log_path=$logs/asan"
for t in tests/analysis/analysis_tests tests/tables/tables_tests \
         tests/importers/importers_tests tests/capture/capture_unit_tests; do
  run build-asan "$t" "ASAN_OPTIONS=$asan_opts"
done
# End to end. The tests set LD_PRELOAD=libtracer.so in some runs, which puts
# the library before the host's own ASan runtime in the load order; the host
# links that runtime itself (so it interposes malloc first all the same),
# hence verify_asan_link_order=0. Left out, with why:
#   PythonNvtxPackageIsTraced: the host is python3, not built with ASan;
#   RingPagesBecomeResidentOnlyWhenWritten, AllThreadsBuffersStayWithinTheLimit,
#   MemoryFollowsLiveThreadsNotThreadsStarted, MadeUpRegisteredStringHandles...:
#     they bound the host's RSS (the last, 64 MB, measures 96 MB under ASan),
#     which ASan's shadow memory and quarantine inflate;
#   ExitWhileThreadsAreStartedIsPromptAndLosesNothingBefore: a wall-time bound;
#   ThreadsFlatOutPastTheirBuffersLoseNothingAtDefaults: a throughput bound
#     (the writer keeps up with four threads pushing flat out), which ASan
#     breaks by slowing the writer's decode and encode far more than the
#     threads' rdtsc-and-store pushes; the main suite runs it.
e2e_skip="*PythonNvtxPackageIsTraced:*RingPagesBecomeResidentOnlyWhenWritten"
e2e_skip+=":*AllThreadsBuffersStayWithinTheLimit:*MemoryFollowsLiveThreadsNotThreadsStarted"
e2e_skip+=":*ExitWhileThreadsAreStartedIsPromptAndLosesNothingBefore"
e2e_skip+=":*MadeUpRegisteredStringHandlesAreNamedEmptyAndCounted"
e2e_skip+=":*ThreadsFlatOutPastTheirBuffersLoseNothingAtDefaults"
for t in tests/capture/capture_e2e_tests tests/cupti/cupti_e2e_tests; do
  run build-asan "$t" "ASAN_OPTIONS=$asan_opts:verify_asan_link_order=0" "-$e2e_skip"
done
tsan_opts="TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan"
run build-tsan tests/capture/capture_unit_tests "$tsan_opts"
# Only the suites that start threads of the reader's own; the CLI tests there
# run the tracer binary, which the ASan stage and the main suite cover.
run build-tsan tests/analysis/analysis_tests "$tsan_opts" "ReaderTest.*:StreamingReport.*"
run build-tsan tests/importers/importers_tests "$tsan_opts"
if show_reports; then exit 1; fi
# A fixed number of inputs from a fixed seed per target (about 20 s each
# here), not a time: the same inputs on every machine, so the verdict does
# not depend on how far a random search got; FUZZ_SECONDS caps each run.
# `scripts/fuzz.sh SECONDS` searches further.
if [ "${FUZZ_SECONDS:-60}" != 0 ]; then
  for spec in fuzz_stream_reader:30000 fuzz_kineto:20000 fuzz_nsys:30000 fuzz_groups:15000 \
              fuzz_nvtx:300000; do
    FUZZ_RUNS=${spec#*:} ./scripts/fuzz.sh "${FUZZ_SECONDS:-60}" "${spec%%:*}"
  done
fi
echo "sanitizers: no report"
