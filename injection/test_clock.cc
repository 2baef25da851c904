// TEST ONLY: the replay clock's setter (libtracer/core/clock.h
// SetTestClockNs), for tests/cupti/replay, which replays a recorded nsys
// export through the real capture path and needs the recorded timestamps.
// It does nothing unless TRACER_TEST_CLOCK=replay was set when the library
// was loaded.
#include <stdint.h>

#include "libtracer/capture/entry_guard.h"
#include "libtracer/core/clock.h"

extern "C" __attribute__((visibility("default"))) void tracerTestSetClockNs(uint64_t ns) noexcept {
  tracer::Guarded("tracerTestSetClockNs", [ns] { tracer::SetTestClockNs(ns); });
}
