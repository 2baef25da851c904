#include "libtracer/core/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <mutex>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

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

namespace {

// CLOCK_MONOTONIC through the vDSO: no syscall, shared by every thread, and
// unaffected by wall-clock steps during a run. The timeline of every trace.
uint64_t MonotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ---- TSC -> ns ----
// The conversion is a continuous piecewise-linear map: piece k covers ticks
// from start_k on, ns = base_k + (ticks - start_k) * mult_k / 2^32, and each
// re-calibration starts a new piece where the last one ends (base_{k+1} is
// the old piece's value at start_{k+1}, same integer arithmetic), only its
// slope changes. Continuous with positive slopes, so it never runs backwards:
// drift is steered out, never stepped. A new piece starts kLeadNs after it is
// published and the previous piece is kept beside it, so a thread that read
// its ticks just before a publication converts them the same way with the
// old or the new parameters.
//
// The parameters sit in one cache line under a seqlock: a reader (any
// thread, lock-free) retries only when it raced the writer thread's
// re-calibration, a few times a second at most.
struct alignas(64) Published {
  std::atomic<uint64_t> seq{0};  // odd while being written
  std::atomic<uint64_t> start{0}, base{0}, mult{0};
  std::atomic<uint64_t> prev_start{0}, prev_base{0}, prev_mult{0};
};
Published g_pub;
std::atomic<bool> g_use_tsc{false};

inline uint64_t Apply(uint64_t start, uint64_t base, uint64_t mult, uint64_t t) noexcept {
  return ApplyPiece(start, base, mult, t);
}

// Every piece published since InitTraceClock (the latest TickMap::kMaxPieces),
// for the writer's conversion of ring ticks (RefreshTickMap); written under
// g_pub.seq with the current piece. `generation` moves with every change, so
// a reader that is up to date reads one word.
struct History {
  std::atomic<uint64_t> generation{0};
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> pieces[TickMap::kMaxPieces][3];
};
History g_hist;

#if defined(__x86_64__)
inline uint64_t ReadTsc() noexcept { return __rdtsc(); }

uint64_t TscNowNs() noexcept {
  const uint64_t t = ReadTsc();
  while (true) {
    const uint64_t s = g_pub.seq.load(std::memory_order_acquire);
    uint64_t start = g_pub.start.load(std::memory_order_relaxed);
    uint64_t base = g_pub.base.load(std::memory_order_relaxed);
    uint64_t mult = g_pub.mult.load(std::memory_order_relaxed);
    if (__builtin_expect(t < start, 0)) {
      start = g_pub.prev_start.load(std::memory_order_relaxed);
      base = g_pub.prev_base.load(std::memory_order_relaxed);
      mult = g_pub.prev_mult.load(std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__builtin_expect((s & 1) == 0 && g_pub.seq.load(std::memory_order_relaxed) == s, 1)) {
      return Apply(start, base, mult, t);
    }
  }
}

// cpuid leaf 0x80000007, EDX bit 8: the TSC runs at a constant rate in every
// P-, C- and T-state. A hypervisor that cannot promise it (migration between
// hosts) clears the bit.
bool TscInvariant() noexcept {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  __cpuid(0x80000007, a, b, c, d);
  return (d >> 8) & 1;
}

// Whether the kernel keeps CLOCK_MONOTONIC with the TSC: it does so only
// after checking that the TSCs of all CPUs agree (and switches away when its
// watchdog sees them drift apart), which cpuid alone does not say.
bool KernelClockIsTsc() noexcept {
  FILE* f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
  if (!f) return false;
  char buf[32] = {0};
  const bool ok = fgets(buf, sizeof(buf), f) != nullptr && strncmp(buf, "tsc", 3) == 0 &&
                  (buf[3] == '\n' || buf[3] == '\0');
  fclose(f);
  return ok;
}
#else
inline uint64_t ReadTsc() noexcept { return 0; }
uint64_t TscNowNs() noexcept { return MonotonicNs(); }
bool TscInvariant() noexcept { return false; }
bool KernelClockIsTsc() noexcept { return false; }
#endif

// ---- Calibration (the session's thread once, then the writer thread) ----

struct Sample {
  uint64_t tsc = 0;      // midpoint of the two TSC reads around...
  uint64_t ns = 0;       // ...this CLOCK_MONOTONIC read
  uint64_t gap = ~0ull;  // ticks between the two TSC reads
};

// The tightest of a few TSC / clock_gettime / TSC brackets: a bracket
// widened by an interrupt or preemption is discarded, so a sample pins the
// TSC to CLOCK_MONOTONIC within half a clock_gettime (about 15 ns here).
Sample TakeSample() noexcept {
  Sample best;
#if defined(__x86_64__)
  for (int i = 0; i < 7; ++i) {
    _mm_lfence();
    const uint64_t t1 = ReadTsc();
    _mm_lfence();
    const uint64_t ns = MonotonicNs();
    _mm_lfence();
    const uint64_t t2 = ReadTsc();
    if (t2 > t1 && t2 - t1 < best.gap) best = Sample{t1 + (t2 - t1) / 2, ns, t2 - t1};
  }
#endif
  return best;
}

uint64_t MultOf(double ns_per_tick) noexcept {
  return static_cast<uint64_t>(std::llround(ns_per_tick * 4294967296.0));
}

// A new piece starts this long after it is published (see Published).
constexpr double kLeadNs = 1e6;
// The initial rate is measured over this long (spinning): 2 ms against a
// sample's ~15 ns puts it within ~15 ppm until the first re-calibration.
constexpr uint64_t kInitialSpanNs = 2'000'000;
// Each re-calibration removes the offset it finds over this span...
constexpr double kSteerSpanNs = 2.0 * kRecalibrateIntervalNs;
// ...changing the rate by at most this fraction, so an outlier cannot bend
// the clock much (a 1 ms offset takes 2 s to steer out).
constexpr double kMaxSteer = 5e-4;
// A sample whose bracket is wider than this is too coarse to use.
constexpr double kMaxSampleGapNs = 20'000;

struct Calibration {
  Sample last;
  double rate = 0;                         // ns per tick, measured
  uint64_t start = 0, base = 0, mult = 0;  // the current piece, as published
};
std::mutex g_cal_mu;  // guards g_cal and every write to g_pub
Calibration g_cal;

void Publish(uint64_t start, uint64_t base, uint64_t mult) noexcept {
  const uint64_t s = g_pub.seq.load(std::memory_order_relaxed);
  g_pub.seq.store(s + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  g_pub.prev_start.store(g_cal.start, std::memory_order_relaxed);
  g_pub.prev_base.store(g_cal.base, std::memory_order_relaxed);
  g_pub.prev_mult.store(g_cal.mult, std::memory_order_relaxed);
  g_pub.start.store(start, std::memory_order_relaxed);
  g_pub.base.store(base, std::memory_order_relaxed);
  g_pub.mult.store(mult, std::memory_order_relaxed);
  const uint64_t k = g_hist.count.load(std::memory_order_relaxed);
  g_hist.pieces[k % TickMap::kMaxPieces][0].store(start, std::memory_order_relaxed);
  g_hist.pieces[k % TickMap::kMaxPieces][1].store(base, std::memory_order_relaxed);
  g_hist.pieces[k % TickMap::kMaxPieces][2].store(mult, std::memory_order_relaxed);
  g_hist.count.store(k + 1, std::memory_order_relaxed);
  g_pub.seq.store(s + 2, std::memory_order_release);
  g_hist.generation.fetch_add(1, std::memory_order_release);
  g_cal.start = start;
  g_cal.base = base;
  g_cal.mult = mult;
}

// Measures the TSC rate and publishes the first piece; false when the TSC
// does not behave like a clock (stopped, or an absurd rate).
bool CalibrateInitial(std::string* note) {
  const Sample a = TakeSample();
  while (MonotonicNs() - a.ns < kInitialSpanNs) {
  }
  const Sample b = TakeSample();
  if (b.tsc <= a.tsc || b.ns <= a.ns) {
    *note = "the TSC did not advance";
    return false;
  }
  const double rate = static_cast<double>(b.ns - a.ns) / static_cast<double>(b.tsc - a.tsc);
  // 0.1 to 20 GHz.
  if (!(rate > 0.05 && rate < 10.0)) {
    *note = "the TSC runs at an implausible rate";
    return false;
  }
  g_cal = Calibration{};
  g_cal.last = b;
  g_cal.rate = rate;
  // Anchored a bracket's width ahead of CLOCK_MONOTONIC, so a thread that
  // read clock_gettime just before the switch never sees the TSC clock
  // behind it; the first re-calibration steers the offset out.
  const uint64_t base = b.ns + static_cast<uint64_t>(static_cast<double>(b.gap) * rate) + 1;
  g_cal.start = b.tsc;
  g_cal.base = base;
  g_cal.mult = MultOf(rate);
  Publish(b.tsc, base, MultOf(rate));
  return true;
}

void InstallForkHandlersOnce() {
  static std::once_flag once;
  // A fork while the writer thread publishes would leave the child's seqlock
  // odd forever (every NowNs spinning): fork waits for the re-calibration.
  std::call_once(once, [] {
    pthread_atfork([] { g_cal_mu.lock(); }, [] { g_cal_mu.unlock(); }, [] { g_cal_mu.unlock(); });
  });
}

}  // namespace

namespace internal {
constinit std::atomic<bool> g_ticks_are_tsc{false};

uint64_t NowTicksSlow() noexcept {
#ifdef TRACER_TEST_HOOKS
  if (g_test_clock) return g_test_clock_ns.load(std::memory_order_relaxed);
#endif
  if (g_use_tsc.load(std::memory_order_relaxed)) return ReadTsc();
  return MonotonicNs();
}
}  // namespace internal

bool RefreshTickMap(TickMap* map, uint64_t* generation) noexcept {
  const uint64_t g = g_hist.generation.load(std::memory_order_acquire);
  if (g == *generation) return false;
  // NowTicks reads ns (clock_gettime, the test replay clock): nothing to do.
  if (!internal::g_ticks_are_tsc.load(std::memory_order_acquire)) {
    map->Clear();
    *generation = g;
    return true;
  }
  while (true) {
    const uint64_t s = g_pub.seq.load(std::memory_order_acquire);
    if (s & 1) continue;
    map->Clear();
    const uint64_t count = g_hist.count.load(std::memory_order_relaxed);
    const uint64_t first = count > TickMap::kMaxPieces ? count - TickMap::kMaxPieces : 0;
    for (uint64_t k = first; k < count; ++k) {
      const auto& p = g_hist.pieces[k % TickMap::kMaxPieces];
      map->Add(ClockPiece{p[0].load(std::memory_order_relaxed),
                          p[1].load(std::memory_order_relaxed),
                          p[2].load(std::memory_order_relaxed)});
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_pub.seq.load(std::memory_order_relaxed) == s) break;
  }
  *generation = g;
  return true;
}

uint64_t TicksToNs(uint64_t ticks) noexcept {
  TickMap map;
  uint64_t generation = 0;
  RefreshTickMap(&map, &generation);
  return map.ToNs(ticks);
}

uint64_t NowNs() noexcept {
#ifdef TRACER_TEST_HOOKS
  if (__builtin_expect(g_test_clock, false)) {
    return g_test_clock_ns.load(std::memory_order_relaxed);
  }
#endif
  if (__builtin_expect(g_use_tsc.load(std::memory_order_relaxed), 1)) return TscNowNs();
  return MonotonicNs();
}

bool InitTraceClock(ClockMode mode, std::string* note) noexcept {
  note->clear();
  try {
    InstallForkHandlersOnce();
    std::lock_guard<std::mutex> lock(g_cal_mu);
    g_use_tsc.store(false, std::memory_order_release);
    internal::g_ticks_are_tsc.store(false, std::memory_order_release);
    // A new clock, a new history: ticks read before this call are not
    // converted any more (the session chooses before it records).
    const uint64_t seq = g_pub.seq.load(std::memory_order_relaxed);
    g_pub.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    g_hist.count.store(0, std::memory_order_relaxed);
    g_pub.seq.store(seq + 2, std::memory_order_release);
    g_hist.generation.fetch_add(1, std::memory_order_release);
    if (mode == ClockMode::kMonotonic) return false;
    if (!TscInvariant()) {
      *note = "the CPU does not report an invariant TSC";
    } else if (mode == ClockMode::kAuto && !KernelClockIsTsc()) {
      *note = "the kernel does not keep time with the TSC (clocksource is not tsc)";
    } else if (CalibrateInitial(note)) {
      g_use_tsc.store(true, std::memory_order_release);
#ifdef TRACER_TEST_HOOKS
      // The replay clock's values are ns: NowTicks returns them as they are.
      internal::g_ticks_are_tsc.store(!g_test_clock, std::memory_order_release);
#else
      internal::g_ticks_are_tsc.store(true, std::memory_order_release);
#endif
      g_hist.generation.fetch_add(1, std::memory_order_release);
      return true;
    }
    *note += "; the trace clock reads clock_gettime";
  } catch (...) {
    // std::call_once / mutex failures (resources): clock_gettime it is.
    *note = "cannot set up the TSC clock; the trace clock reads clock_gettime";
  }
  return false;
}

void RecalibrateTraceClock() noexcept {
  if (!g_use_tsc.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lock(g_cal_mu, std::try_to_lock);
  if (!lock.owns_lock() || !g_use_tsc.load(std::memory_order_relaxed)) return;
  if (MonotonicNs() - g_cal.last.ns < kRecalibrateIntervalNs) return;
  const Sample s = TakeSample();
  if (s.tsc <= g_cal.last.tsc || s.ns <= g_cal.last.ns ||
      static_cast<double>(s.gap) * g_cal.rate > kMaxSampleGapNs) {
    return;  // a coarse sample (preempted): next time
  }
  // The rate over the last interval (~100 ms against ~15 ns: 0.3 ppm) follows
  // NTP's slewing of CLOCK_MONOTONIC as well as the TSC's own drift.
  const double rate =
      static_cast<double>(s.ns - g_cal.last.ns) / static_cast<double>(s.tsc - g_cal.last.tsc);
  if (!(rate > 0.5 * g_cal.rate && rate < 2 * g_cal.rate)) return;  // not a clock reading
  const uint64_t start = s.tsc + static_cast<uint64_t>(kLeadNs / rate);
  const uint64_t base = Apply(g_cal.start, g_cal.base, g_cal.mult, start);
  // Where CLOCK_MONOTONIC will be at `start`, and how far the map is off.
  const double offset = static_cast<double>(base) - (static_cast<double>(s.ns) + kLeadNs);
  double steer = -offset / kSteerSpanNs;
  if (steer > kMaxSteer) steer = kMaxSteer;
  if (steer < -kMaxSteer) steer = -kMaxSteer;
  g_cal.rate = rate;
  g_cal.last = s;
  Publish(start, base, MultOf(rate * (1.0 + steer)));
}

void SkewTraceClockRateForTest(double fraction) noexcept {
  std::lock_guard<std::mutex> lock(g_cal_mu);
  if (!g_use_tsc.load(std::memory_order_relaxed)) return;
  const Sample s = TakeSample();
  const uint64_t start = s.tsc + static_cast<uint64_t>(kLeadNs / g_cal.rate);
  Publish(start, Apply(g_cal.start, g_cal.base, g_cal.mult, start),
          MultOf(g_cal.rate * (1.0 + fraction)));
}

bool TraceClockUsesTsc() noexcept { return g_use_tsc.load(std::memory_order_acquire); }

const char* ClockDescription() noexcept {
  return TraceClockUsesTsc() ? "CLOCK_MONOTONIC, ns (read as the TSC, calibrated)"
                             : "CLOCK_MONOTONIC, ns";
}

uint64_t WallNowNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace tracer
