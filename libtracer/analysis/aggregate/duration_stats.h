// Statistics of a set of durations (ns), as every table shows them.
#pragma once

#include <cstdint>
#include <vector>

namespace tracer::analysis {

// As nsys's stats reports (SQLite's median and stdev functions): the median
// of an even count is the mean of the two middle values, stddev the sample
// standard deviation (n - 1), 0 for a single value. nsys rounds avg, median
// and stddev to 0.1 ns; these are whole ns, rounded to nearest with halves
// away from zero (SQLite's round), so they equal nsys's numbers rounded to
// the ns.
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
// (lo + hi) / 2 rounded half up, for 0 <= lo <= hi (no overflow).
int64_t HalfwayUp(int64_t lo, int64_t hi);

}  // namespace tracer::analysis
