// The trace clock: one base for NVTX and GPU activity timestamps (docs/design.md
// section 3). It is registered with CUPTI (cuptiActivityRegisterTimestampCallback)
// so activity records use it too.
//
// Its timeline is CLOCK_MONOTONIC in nanoseconds, whatever it reads: on
// x86-64 with an invariant TSC it reads the TSC (rdtsc, about a third of a
// vDSO clock_gettime here) and turns ticks into ns with one multiply and
// shift against a calibration to CLOCK_MONOTONIC; otherwise, or when asked
// (TRACER_CLOCK=monotonic), it calls clock_gettime. Every caller (NVTX
// events, CUPTI's timestamp callback, launch records, the header) gets ns on
// that one timeline, so GPU records and NVTX ranges line up as before and
// traces of different processes on one host stay comparable.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "libtracer/core/tick_map.h"

namespace tracer {

// TRACER_CLOCK: auto = the TSC when cpuid says it is invariant and the kernel
// itself keeps time with it (clocksource "tsc": it checked the TSC is in step
// across CPUs), else clock_gettime; tsc = the TSC whenever it is invariant;
// monotonic = always clock_gettime.
enum class ClockMode : uint8_t { kAuto, kTsc, kMonotonic };

// Nanoseconds on the trace clock. Monotonic per thread, cheap (no syscall,
// no lock), safe to call from any thread and from signal-free C callbacks.
uint64_t NowNs() noexcept;

namespace internal {
// True while NowTicks reads the TSC (InitTraceClock); else it calls
// NowTicksSlow (clock_gettime, or the test build's replay clock).
extern std::atomic<bool> g_ticks_are_tsc;
uint64_t NowTicksSlow() noexcept;
}  // namespace internal

// The hot path's read (NVTX push/pop, launch callbacks): the trace clock in
// raw ticks, TSC ticks where NowNs reads the TSC, else ns. Ring events store
// these; the writer converts them to ns off the hot path (RefreshTickMap,
// tick_map.h), to exactly what NowNs would have returned at the read. One
// rdtsc inline: no seqlock, multiply or shift per event.
inline uint64_t NowTicks() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(internal::g_ticks_are_tsc.load(std::memory_order_relaxed), 1)) {
    return __builtin_ia32_rdtsc();
  }
#endif
  return internal::NowTicksSlow();
}

// NowTicks split in two for the hot paths (NVTX push/pop, the launch
// callback): FastTicksReady() says whether FastTicks() is the TSC read, so
// that a path which reads it makes no call (its registers need no saving);
// where ticks are not the TSC those paths take their full path instead.
inline __attribute__((always_inline)) bool FastTicksReady() noexcept {
#if defined(__x86_64__)
  return internal::g_ticks_are_tsc.load(std::memory_order_relaxed);
#else
  return true;
#endif
}
inline __attribute__((always_inline)) uint64_t FastTicks() noexcept {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return NowTicks();
#endif
}

// Brings *map up to the published ticks -> ns conversion when it changed
// since *generation (0: never copied); true when it copied. Cheap when
// nothing changed (one relaxed load): the writer calls it before each ring
// it drains. Ticks must be converted with a map refreshed after the
// InitTraceClock that chose the clock they were read with.
bool RefreshTickMap(TickMap* map, uint64_t* generation) noexcept;

// One tick converted with the conversion published now (tests, one-offs).
uint64_t TicksToNs(uint64_t ticks) noexcept;

// Chooses what NowNs reads and, for the TSC, calibrates it (about 2 ms of
// spinning, once). Called by the session before it records anything; until
// then NowNs reads clock_gettime. Returns true when the TSC is used; *note
// says why it is not when the TSC was asked for or expected (auto on an
// invariant TSC) but cannot be used. Calling it again re-chooses (tests).
bool InitTraceClock(ClockMode mode, std::string* note) noexcept;

// Re-calibrates the TSC against CLOCK_MONOTONIC when at least
// kRecalibrateIntervalNs passed since the last time (else does nothing):
// rates drift (temperature, NTP slewing CLOCK_MONOTONIC), and this steers the
// conversion back without a step, so NowNs stays monotonic. Called by the
// writer thread on each wake; never by an application thread.
void RecalibrateTraceClock() noexcept;
inline constexpr uint64_t kRecalibrateIntervalNs = 100'000'000;

// Tests: bends the TSC conversion's rate by `fraction` (3e-4 = 300 ppm fast)
// from now on, as a drifting oscillator would, for re-calibration to steer
// out. Not exported from the injected library (exports.map).
void SkewTraceClockRateForTest(double fraction) noexcept;

// Whether NowNs reads the TSC.
bool TraceClockUsesTsc() noexcept;

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
