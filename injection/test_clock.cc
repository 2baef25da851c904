// TEST ONLY, built into libtracer_test.so alone (injection/CMakeLists.txt):
// the replay clock's setter (libtracer/core/clock.h SetTestClockNs), for
// tests/cupti/replay, which replays a recorded nsys export through the real
// capture path and needs the recorded timestamps. It does nothing unless
// TRACER_TEST_CLOCK=replay was set when the library was loaded.
#include <stdint.h>

#include "libtracer/capture/entry_guard.h"
#include "libtracer/core/clock.h"

#ifndef TRACER_TEST_HOOKS
#error "test_clock.cc belongs to the test variant of the library only"
#endif

extern "C" __attribute__((visibility("default"))) void tracerTestSetClockNs(uint64_t ns) noexcept {
  tracer::Guarded("tracerTestSetClockNs", [ns] { tracer::SetTestClockNs(ns); });
}
