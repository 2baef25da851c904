#include "libtracer/analysis/aggregate/duration_accumulator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

namespace tracer::analysis {

namespace {
constexpr int kMantissaBits = 7;  // 128 buckets per power of two
constexpr int64_t kExactBelow = 1024;
}  // namespace

uint32_t DurationBucket(int64_t v) {
  if (v < kExactBelow) return static_cast<uint32_t>(std::max<int64_t>(v, 0));
  const int e = 63 - __builtin_clzll(static_cast<uint64_t>(v));  // >= 10
  const uint32_t m = static_cast<uint32_t>((v >> (e - kMantissaBits)) & ((1 << kMantissaBits) - 1));
  return static_cast<uint32_t>(kExactBelow) +
         static_cast<uint32_t>(e - 10) * (1u << kMantissaBits) + m;
}

int64_t DurationBucketMid(uint32_t bucket) {
  if (bucket < kExactBelow) return bucket;
  const uint32_t rel = bucket - static_cast<uint32_t>(kExactBelow);
  const int e = 10 + static_cast<int>(rel >> kMantissaBits);
  const int64_t m = rel & ((1u << kMantissaBits) - 1);
  const int64_t width = int64_t{1} << (e - kMantissaBits);
  const int64_t lo = ((int64_t{1} << kMantissaBits) + m) * width;
  return lo + width / 2;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

void DurationAccumulator::AddSlow(int64_t v) {
  if (v < 0) v = 0;
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  ++count_;
  sum_ = SaturatingAdd(sum_, v);
  if (!binned_) {
    // Most accumulators (one per range instance and kernel name while
    // streaming) hold a few dozen values: one allocation instead of five.
    if (values_.capacity() == 0) values_.reserve(32);
    values_.push_back(v);
    if (values_.size() > kExactLimit) ToHistogram();
  } else {
    AddToHistogram(v, 1);
  }
}

void DurationAccumulator::Clear(size_t keep_capacity) {
  count_ = 0;
  sum_ = 0;
  sum_sq_ = 0;
  min_ = max_ = 0;
  binned_ = false;
  if (values_.capacity() > keep_capacity) {
    std::vector<int64_t>().swap(values_);
  } else {
    values_.clear();
  }
  std::vector<uint64_t>().swap(histogram_);
}

void DurationAccumulator::Merge(const DurationAccumulator& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ = SaturatingAdd(sum_, other.sum_);
  sum_sq_ += other.sum_sq_;
  if (!binned_ && !other.binned_ && values_.size() + other.values_.size() <= kExactLimit) {
    values_.insert(values_.end(), other.values_.begin(), other.values_.end());
    return;
  }
  ToHistogram();
  if (!other.values_.empty()) {
    // Sized once for the largest value (values are >= 0 and grow the
    // buckets with them), then one pass without checks.
    if (DurationBucket(other.max_) >= histogram_.size()) {
      histogram_.resize(DurationBucket(other.max_) + 1);
    }
    uint64_t* buckets = histogram_.data();
    unsigned __int128 sq = 0;
    for (int64_t v : other.values_) {
      sq += static_cast<unsigned __int128>(v) * static_cast<uint64_t>(v);
      ++buckets[DurationBucket(v)];
    }
    sum_sq_ += sq;
  }
  if (histogram_.size() < other.histogram_.size()) histogram_.resize(other.histogram_.size());
  for (size_t b = 0; b < other.histogram_.size(); ++b) histogram_[b] += other.histogram_[b];
}

void DurationAccumulator::ToHistogram() {
  if (binned_) return;
  binned_ = true;
  for (int64_t v : values_) AddToHistogram(v, 1);
  values_.clear();
  values_.shrink_to_fit();
}

void DurationAccumulator::AddToHistogram(int64_t v, uint64_t n) {
  // sum_sq_ covers the binned values only: kept values are squared when
  // they are binned (ToHistogram), not on every Add.
  sum_sq_ += static_cast<unsigned __int128>(v) * static_cast<uint64_t>(v) * n;
  const uint32_t b = DurationBucket(v);
  if (b >= histogram_.size()) histogram_.resize(b + 1);
  histogram_[b] += n;
}

DurationStats DurationAccumulator::Totals() const {
  DurationStats s;
  if (count_ == 0) return s;
  s.count = count_;
  s.min = min_;
  s.max = max_;
  // Values are >= 0 (Add), so while sum_ has not saturated the kept values'
  // sum in long double (ComputeStats) is exact and equals it.
  long double sum = sum_;
  if (!binned_ && sum_ == INT64_MAX) {
    sum = 0;
    for (int64_t v : values_) sum += v;
    s.total = sum >= 0x1p63L ? INT64_MAX : static_cast<int64_t>(sum);
  } else {
    s.total = sum_;
  }
  s.avg = static_cast<int64_t>(std::llround(sum / count_));
  return s;
}

DurationStats DurationAccumulator::Stats() {
  if (!binned_) return ComputeStats(&values_);
  DurationStats s;
  s.count = count_;
  s.total = sum_;
  s.min = min_;
  s.max = max_;
  const long double sum = sum_;
  s.avg = static_cast<int64_t>(std::llround(sum / count_));
  if (count_ > 1) {
    const long double var = (static_cast<long double>(sum_sq_) - sum * sum / count_) / (count_ - 1);
    s.stddev = static_cast<int64_t>(std::llround(std::sqrt(std::max<long double>(var, 0))));
  }
  // Values of rank (n-1)/2 and n/2 (0-based); equal for an odd count.
  const uint64_t lo_rank = static_cast<uint64_t>(count_ - 1) / 2;
  const uint64_t hi_rank = static_cast<uint64_t>(count_) / 2;
  int64_t lo = 0, hi = 0;
  uint64_t seen = 0;
  for (uint32_t bucket = 0; bucket < histogram_.size(); ++bucket) {
    const uint64_t n = histogram_[bucket];
    if (seen <= lo_rank && lo_rank < seen + n) lo = DurationBucketMid(bucket);
    if (seen <= hi_rank && hi_rank < seen + n) {
      hi = DurationBucketMid(bucket);
      break;
    }
    seen += n;
  }
  // The bucket middle may fall outside the values actually seen.
  s.median = std::clamp<int64_t>(HalfwayUp(lo, hi), min_, max_);
  return s;
}

}  // namespace tracer::analysis
