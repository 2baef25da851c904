// The capture window as seen by the CUPTI activity decoder: the intervals of
// the trace clock during which capture was active (cuProfilerStart/Stop and
// the NVTX-range window both end up here). GPU records whose start falls
// outside every interval are dropped and counted. Transitions are rare, so a
// small mutex-protected interval list is enough; the decoder takes one
// snapshot per buffer.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace tracer {

class CuptiCaptureWindow {
 public:
  // gated = false: everything is inside (no window configured).
  explicit CuptiCaptureWindow(bool gated = false, bool initially_open = true, uint64_t now = 0);

  void Open(uint64_t time_ns);
  void Close(uint64_t time_ns);
  bool gated() const { return gated_; }

  struct Snapshot {
    bool gated = false;
    // Sorted, non-overlapping [begin, end); end = UINT64_MAX while open.
    std::vector<std::pair<uint64_t, uint64_t>> intervals;
    bool Contains(uint64_t time_ns) const;
  };
  void Read(Snapshot* out) const;

 private:
  const bool gated_;
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, uint64_t>> intervals_;
  bool open_ = false;
};

}  // namespace tracer
