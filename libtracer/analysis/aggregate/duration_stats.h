// Statistics of a set of durations (ns), as every table shows them.
#pragma once

#include <cstdint>
#include <vector>

namespace tracer::analysis {

// Median of an even count is the mean of the two middle values; stddev is the
// sample standard deviation (n - 1), 0 for a single value (as sqlite's stdev
// in nsys reports).
struct DurationStats {
  int64_t count = 0;
  int64_t total = 0;
  int64_t min = 0;
  int64_t max = 0;
  int64_t avg = 0;
  int64_t median = 0;
  int64_t stddev = 0;
};
// Reorders values.
DurationStats ComputeStats(std::vector<int64_t>* values);

}  // namespace tracer::analysis
