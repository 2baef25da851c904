// The start/end instances of the capture range (TRACER_CAPTURE_RANGE) that
// are open: their ids carry kRangeIdCaptureInstance, and only an id found
// here may count as the end of one. Any 64-bit value can reach nvtxRangeEnd,
// so the flag bit alone must never move the capture window (one bogus
// nvtxRangeEnd(~0ull) used to close it for the rest of the run). Lock-free
// (fork-safe, no allocation): a fixed table probed over a short window;
// capture instances are rare, so it is nearly empty.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tracer {

class CaptureInstanceIds {
 public:
  static constexpr size_t kSlots = 4096;
  static constexpr size_t kProbe = 64;

  // False when the table is full around id's home slot (thousands of
  // instances open at once): that instance's end then cannot be told from a
  // bogus one and does not count.
  bool Add(uint64_t id) noexcept {
    if (id == 0) return false;
    const size_t home = Home(id);
    for (size_t i = 0; i < kProbe; ++i) {
      std::atomic<uint64_t>& slot = slots_[(home + i) & (kSlots - 1)];
      uint64_t expected = 0;
      if (slot.load(std::memory_order_relaxed) == 0 &&
          slot.compare_exchange_strong(expected, id, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }

  // True (and forgets id) when id was added and not taken since.
  bool Take(uint64_t id) noexcept {
    if (id == 0) return false;
    const size_t home = Home(id);
    for (size_t i = 0; i < kProbe; ++i) {
      std::atomic<uint64_t>& slot = slots_[(home + i) & (kSlots - 1)];
      uint64_t expected = id;
      if (slot.load(std::memory_order_relaxed) == id &&
          slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }

 private:
  static size_t Home(uint64_t id) noexcept {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 52);  // 12 bits: kSlots
  }

  std::atomic<uint64_t> slots_[kSlots]{};
};

}  // namespace tracer
