// The trace clock: one base for NVTX and GPU activity timestamps (docs/design.md
// section 3). It is registered with CUPTI (cuptiActivityRegisterTimestampCallback)
// so activity records use it too.
#pragma once

#include <cstdint>

namespace tracer {

// Nanoseconds on the trace clock. Monotonic, cheap (no syscall on the common
// path), safe to call from any thread and from signal-free C callbacks.
uint64_t NowNs() noexcept;

// Human-readable description written into the stream header.
const char* ClockDescription() noexcept;

// Wall-clock time (Unix epoch, ns) for the header's session start.
uint64_t WallNowNs() noexcept;

// TEST ONLY (tests/cupti/replay), defined only in the test variant of the
// injected library (built with TRACER_TEST_HOOKS, injection/CMakeLists.txt):
// with TRACER_TEST_CLOCK=replay in the environment at load, NowNs() returns
// the last value set here instead of reading a clock, so a replay of a
// recorded trace reproduces its timestamps. The product's NowNs has no such
// branch and this function does not exist there.
void SetTestClockNs(uint64_t ns) noexcept;

}  // namespace tracer
