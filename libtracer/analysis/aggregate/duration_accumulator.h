// Duration statistics that stay bounded in memory (docs/design.md section 5:
// reading is bounded by distinct names, not by record count).
//
// Up to kExactLimit values are kept and the statistics are exactly those of
// ComputeStats (table_util.h). Past that the values are folded into a
// log-bucketed histogram: count, total, min, max and avg stay exact, stddev is
// computed from running moments, and the median is the middle of its bucket,
// within 0.4 % of the true value (buckets are 1/128 of a power of two wide;
// below 1024 ns they are 1 ns wide, i.e. exact).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "libtracer/analysis/aggregate/duration_stats.h"

namespace tracer::analysis {

class DurationAccumulator {
 public:
  static constexpr size_t kExactLimit = 1u << 16;

  void Add(int64_t v) {
    // The common case inline: a value kept, room for it without growing.
    int64_t sum;
    if (v >= 0 && count_ != 0 && !binned_ && values_.size() < values_.capacity() &&
        values_.size() < kExactLimit && !__builtin_add_overflow(sum_, v, &sum)) {
      sum_ = sum;
      min_ = v < min_ ? v : min_;
      max_ = v > max_ ? v : max_;
      ++count_;
      values_.push_back(v);
      return;
    }
    AddSlow(v);
  }
  void Merge(const DurationAccumulator& other);
  // Back to empty; the kept values' storage stays allocated when it holds
  // at most keep_capacity values (an accumulator reused for the next range
  // instance allocates nothing).
  void Clear(size_t keep_capacity);

  int64_t count() const { return count_; }
  int64_t total() const { return sum_; }
  // True while every value is kept (the median is exact).
  bool exact() const { return !binned_; }

  // Reorders the kept values.
  DurationStats Stats();
  // Count, total, min, max and avg exactly as Stats() gives them; median and
  // stddev left 0 (for tables that show only these: no selection over the
  // kept values, no reordering).
  DurationStats Totals() const;

 private:
  void AddSlow(int64_t v);
  void ToHistogram();
  void AddToHistogram(int64_t v, uint64_t n);

  int64_t count_ = 0;
  int64_t sum_ = 0;               // 292 years of nanoseconds
  unsigned __int128 sum_sq_ = 0;  // of the binned values (stddev once not kept)
  int64_t min_ = 0, max_ = 0;
  std::vector<int64_t> values_;
  bool binned_ = false;
  std::vector<uint64_t> histogram_;  // count per bucket, grown to the largest
};

// a + b, saturated at INT64_MAX / INT64_MIN instead of wrapping: totals of
// 292 years come only from crafted traces, and a negative total would hide
// that.
int64_t SaturatingAdd(int64_t a, int64_t b);

// Bucket of v (v >= 0) and the value that stands for a bucket; exposed for
// tests.
uint32_t DurationBucket(int64_t v);
int64_t DurationBucketMid(uint32_t bucket);

}  // namespace tracer::analysis
