// Time-weighted statistics of one PM metric over a set of GPU spans
// (docs/design.md section 4). A sample is a value held over [start, end) on
// one device; it is weighed by how long it overlaps the span it is folded
// into, so a sample straddling a span boundary counts by its overlap only.
//
//   mean      sum(value * overlap) / sum(overlap): the metric's average over
//             the part of the spans that samples covered
//   coverage  sum(overlap) / sum(span length): the share of the spans that
//             samples covered (100 % with back-to-back samples throughout)
//   min, max  over the samples that overlapped any span by at least 1 ns
//   samples   overlapping (sample, span) pairs: a sample is counted once per
//             span it overlaps
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tracer::analysis {

class MetricAccumulator {
 public:
  // One span the metric is averaged over (counted whether or not any
  // sample overlaps it: an unsampled span lowers the coverage).
  void AddSpan(uint64_t ns) { span_ns_ += ns; }
  // A sample of this metric overlapping a span added above by overlap_ns > 0.
  void AddSample(double value, uint64_t overlap_ns) {
    weighted_ += value * static_cast<double>(overlap_ns);
    covered_ns_ += overlap_ns;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    ++samples_;
  }

  void Merge(const MetricAccumulator& o) {
    weighted_ += o.weighted_;
    covered_ns_ += o.covered_ns_;
    span_ns_ += o.span_ns_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
    samples_ += o.samples_;
  }

  int64_t samples() const { return samples_; }
  uint64_t span_ns() const { return span_ns_; }
  uint64_t covered_ns() const { return covered_ns_; }
  // Meaningful only when samples() > 0.
  double mean() const { return covered_ns_ > 0 ? weighted_ / static_cast<double>(covered_ns_) : 0; }
  double min() const { return min_; }
  double max() const { return max_; }
  // Percent, 0..100 unless samples of one metric and device overlap each
  // other (PM sampling's never do); 0 when there is no span.
  double coverage_pct() const {
    return span_ns_ > 0 ? 100.0 * static_cast<double>(covered_ns_) / static_cast<double>(span_ns_)
                        : 0;
  }

 private:
  double weighted_ = 0;
  uint64_t covered_ns_ = 0, span_ns_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  int64_t samples_ = 0;
};

}  // namespace tracer::analysis
