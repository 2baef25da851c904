#include "libtracer/core/clock.h"

#include <time.h>

namespace tracer {

// CLOCK_MONOTONIC through the vDSO: no syscall, shared by every thread, and
// unaffected by wall-clock steps during a run.
uint64_t NowNs() noexcept {
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
