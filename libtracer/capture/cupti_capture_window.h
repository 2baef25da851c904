// The capture window as seen by the CUPTI activity decoder (docs/design.md
// section 3: an op belongs to the window when its launch call happened while
// the window was open, however late the GPU runs it). Two records of it:
//  - by correlation id, for GPU ops (kernels, copies, sets, graph launches)
//    and the API records of launch calls: the id ranges of the launch calls
//    whose ENTER callback saw the window open. CUPTI hands out correlation ids
//    from one process-wide increasing counter (docs/cupti.md section 2), so the launches
//    made while open are a few id ranges, bounded by the first launch that saw
//    each transition. A launch racing a transition on another thread lands on
//    either side, as it would with any ordering.
//  - by trace-clock time, for CPU-side records that no launch callback sees
//    (other API calls, synchronizations, overheads): the intervals during
//    which the window was open, by their start.
// Transitions are rare, so small mutex-protected lists are enough; the
// decoder takes one snapshot per buffer. Both lists are bounded: past
// kMaxIntervals the two oldest entries are merged (their gap counts as open),
// which only matters for records more than that many transitions late.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace tracer {

class CuptiCaptureWindow {
 public:
  static constexpr size_t kMaxIntervals = 1024;

  // gated = false: everything is inside (no window configured).
  explicit CuptiCaptureWindow(bool gated = false, bool initially_open = true, uint64_t now = 0);

  // Time transitions (trace clock).
  void Open(uint64_t time_ns);
  void Close(uint64_t time_ns);
  // Launch-side transitions: the correlation id of a launch call that saw
  // the window open (it and later ids are inside) or closed (it and later
  // ids are outside).
  void OpenAtLaunch(uint32_t correlation_id);
  void CloseAtLaunch(uint32_t correlation_id);
  bool gated() const { return gated_; }

  // The decoder's highest (unwrapped) correlation id so far: the reference
  // for unwrapping the 32-bit ids of later transitions.
  void NoteDecodedId(uint64_t id) { decoded_id_.store(id, std::memory_order_relaxed); }

  // CUPTI correlation ids are 32 bits and wrap after 2^32 API calls; this
  // maps one to the 64-bit value nearest to `reference` (an id seen recently).
  static uint64_t Unwrap(uint32_t id, uint64_t reference);

  struct Snapshot {
    bool gated = false;
    // Sorted, non-overlapping [begin, end); end = UINT64_MAX while open.
    std::vector<std::pair<uint64_t, uint64_t>> intervals;     // trace-clock ns
    std::vector<std::pair<uint64_t, uint64_t>> id_intervals;  // unwrapped ids
    bool Contains(uint64_t time_ns) const;
    bool ContainsId(uint64_t unwrapped_id) const;
  };
  void Read(Snapshot* out) const;

 private:
  using Intervals = std::vector<std::pair<uint64_t, uint64_t>>;
  static void Bound(Intervals* list);
  uint64_t UnwrapLocked(uint32_t id) const;

  const bool gated_;
  mutable std::mutex mu_;
  Intervals intervals_;
  Intervals id_intervals_;
  bool open_ = false;
  bool ids_open_ = false;
  std::atomic<uint64_t> decoded_id_{0};
};

}  // namespace tracer
