// The bound on the memory of all threads' event rings together
// (TRACER_BUFFER_LIMIT): each thread asks for TRACER_BUFFER_SIZE when it
// registers and gets it while the live rings leave room; past the limit a new
// thread gets a minimal ring (kMinRingBytes: it still records what the writer
// drains in time, and counts the rest as dropped), so the total stays within
// the limit plus kMinRingBytes per thread beyond it. A ring's bytes return to
// the budget when its state is freed. Ring pages are touched only when
// written, so the resident memory is at most this, usually much less.
#pragma once

#include <atomic>
#include <cstdint>

#include "libtracer/capture/event.h"

namespace tracer {

class RingBudget {
 public:
  static constexpr uint64_t kMinRingBytes = 4096;

  explicit RingBudget(uint64_t limit) : limit_(limit) {}

  // The bytes a ring of (at most) `want` bytes gets: a power of two of
  // Events (ThreadRing's capacity rule), never more than what is left of
  // the limit, never less than kMinRingBytes.
  uint64_t Acquire(uint64_t want) noexcept {
    uint64_t used = used_.load(std::memory_order_relaxed);
    while (true) {
      const uint64_t left = used < limit_ ? limit_ - used : 0;
      const uint64_t grant = RingBytes(want < left ? want : left);
      if (used_.compare_exchange_weak(used, used + grant, std::memory_order_relaxed)) {
        return grant;
      }
    }
  }
  void Release(uint64_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  uint64_t limit() const noexcept { return limit_; }

  // bytes rounded down to a power of two of Events, at least kMinRingBytes.
  static uint64_t RingBytes(uint64_t bytes) noexcept {
    uint64_t events = kMinRingBytes / sizeof(Event);
    while (events * 2 * sizeof(Event) <= bytes && events < (uint64_t{1} << 30)) events *= 2;
    return events * sizeof(Event);
  }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace tracer
