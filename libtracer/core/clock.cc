#include "libtracer/core/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>

namespace tracer {

#ifdef TRACER_TEST_HOOKS
namespace {
// TEST ONLY: the replay clock (clock.h SetTestClockNs). Read once at load.
const bool g_test_clock = [] {
  const char* v = getenv("TRACER_TEST_CLOCK");
  return v != nullptr && strcmp(v, "replay") == 0;
}();
std::atomic<uint64_t> g_test_clock_ns{0};
}  // namespace

void SetTestClockNs(uint64_t ns) noexcept {
  if (g_test_clock) g_test_clock_ns.store(ns, std::memory_order_relaxed);
}
#endif

// CLOCK_MONOTONIC through the vDSO: no syscall, shared by every thread, and
// unaffected by wall-clock steps during a run.
uint64_t NowNs() noexcept {
#ifdef TRACER_TEST_HOOKS
  if (__builtin_expect(g_test_clock, false)) {
    return g_test_clock_ns.load(std::memory_order_relaxed);
  }
#endif
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* ClockDescription() noexcept { return "CLOCK_MONOTONIC, ns"; }

uint64_t WallNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace tracer
