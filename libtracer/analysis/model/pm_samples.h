// The attribute stage of PM sampling (docs/design.md section 4): which
// samples overlap a GPU span, and by how much. A PM sample holds one metric's
// value over [start, end) on one device, for the whole device; it is
// attributed to a range instance through the instance's projected GPU span
// on that device, and to a kernel execution through its [start, end) on its
// device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "libtracer/analysis/model/projection.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

// An instance's projected GPU span on one device: [first op start, last op
// end] over its ops on that device's streams (all of them, however they
// overlap).
struct DeviceSpan {
  uint32_t device = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t ns() const { return end_ns - start_ns; }
};

// The device a stream belongs to (its StreamDef); 0 for an undefined stream.
uint32_t DeviceOfStream(const ProcessTrace& p, uint32_t stream);

// The instance's span per device, by device id. Its span over all devices
// (projection.h) is the hull of these.
std::vector<DeviceSpan> DeviceSpansOf(const ProcessTrace& p, const InstanceProjection& projection);

// One process's samples by device and metric, each series in start order.
// Samples with a non-finite value or end <= start carry nothing and are
// left out (counted in skipped()).
class PmSampleIndex {
 public:
  explicit PmSampleIndex(const ProcessTrace& p);

  bool empty() const { return metrics_.empty(); }
  // The metrics sampled (global string ids), in ascending id; a metric's
  // position here is its slot below.
  const std::vector<uint32_t>& metrics() const { return metrics_; }
  size_t skipped() const { return skipped_; }

  // fn(slot, value, overlap_ns) for every sample on `device` that overlaps
  // [start, end) by at least 1 ns, series by series.
  template <typename Fn>
  void ForEachOverlap(uint32_t device, uint64_t start, uint64_t end, Fn&& fn) const {
    if (end <= start) return;
    for (const Series& s : series_) {
      if (s.device != device) continue;
      // Samples start in order; none longer than max_len, so none starting
      // before start - max_len reaches start.
      const uint64_t from = start > s.max_len ? start - s.max_len : 0;
      auto it = std::lower_bound(s.samples.begin(), s.samples.end(), from,
                                 [](const Sample& x, uint64_t t) { return x.start < t; });
      for (; it != s.samples.end() && it->start < end; ++it) {
        const uint64_t lo = std::max(it->start, start), hi = std::min(it->end, end);
        if (hi > lo) fn(s.slot, it->value, hi - lo);
      }
    }
  }

 private:
  struct Sample {
    uint64_t start = 0, end = 0;
    double value = 0;
  };
  struct Series {
    uint32_t device = 0;
    uint32_t slot = 0;
    uint64_t max_len = 0;
    std::vector<Sample> samples;
  };
  std::vector<uint32_t> metrics_;
  std::vector<Series> series_;  // by (device, slot)
  size_t skipped_ = 0;
};

}  // namespace tracer::analysis
