// Ticks of the trace clock's hot-path read (NowTicks, clock.h) to trace
// nanoseconds, off the hot path: application threads store raw ticks in their
// ring events and the writer thread converts them as it decodes, with the
// calibration that was in force when each tick was read.
//
// The calibration is a continuous piecewise-linear map (clock.cc): piece k
// covers ticks from start_k on, ns = base_k + (ticks - start_k) * mult_k /
// 2^32, each re-calibration starting a new piece where the last ends. A
// TickMap holds the latest kMaxPieces of them (at one re-calibration per
// 100 ms, 6.4 s of history: a writer that lags further converts its oldest
// ticks with the oldest piece extended backwards, a few ppm off at most), so
// a tick converts to exactly the ns NowNs would have returned when it was
// read, whatever re-calibrations happened since: same timeline as the GPU
// records (CUPTI's timestamp callback returns NowNs), monotonic per thread.
// Empty = the identity (ticks are ns already: clock_gettime fallback).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracer {

struct ClockPiece {
  uint64_t start = 0;  // first tick of the piece
  uint64_t base = 0;   // ns at `start`
  uint64_t mult = 0;   // ns per tick, << 32
};

// The one conversion formula, shared by NowNs and TickMap so both give the
// same ns for the same tick.
inline uint64_t ApplyPiece(uint64_t start, uint64_t base, uint64_t mult, uint64_t t) noexcept {
  if (__builtin_expect(t >= start, 1)) {
    return base + static_cast<uint64_t>((static_cast<unsigned __int128>(t - start) * mult) >> 32);
  }
  return base - static_cast<uint64_t>((static_cast<unsigned __int128>(start - t) * mult) >> 32);
}

class TickMap {
 public:
  static constexpr size_t kMaxPieces = 64;

  // Back to the identity.
  void Clear() noexcept { count_ = 0; }

  // Appends the piece that starts after every other (re-calibration); the
  // oldest is forgotten beyond kMaxPieces.
  void Add(const ClockPiece& p) noexcept {
    pieces_[count_ % kMaxPieces] = p;
    ++count_;
  }

  bool identity() const noexcept { return count_ == 0; }
  size_t size() const noexcept { return count_ < kMaxPieces ? count_ : kMaxPieces; }

  uint64_t ToNs(uint64_t ticks) const noexcept {
    if (__builtin_expect(count_ == 0, 0)) return ticks;
    const ClockPiece& p = pieces_[(count_ - 1) % kMaxPieces];
    if (__builtin_expect(ticks >= p.start, 1)) return ApplyPiece(p.start, p.base, p.mult, ticks);
    return ToNsOlder(ticks);
  }

 private:
  // A tick read before the newest piece began: the newest piece that
  // covers it, else the oldest kept, extended backwards.
  __attribute__((noinline)) uint64_t ToNsOlder(uint64_t ticks) const noexcept {
    const size_t n = size();
    const ClockPiece* p = nullptr;
    for (size_t i = 1; i <= n; ++i) {
      p = &pieces_[(count_ - i) % kMaxPieces];
      if (ticks >= p->start) break;
    }
    return ApplyPiece(p->start, p->base, p->mult, ticks);
  }

  ClockPiece pieces_[kMaxPieces];
  size_t count_ = 0;  // pieces ever added since Clear
};

}  // namespace tracer
