// Field-by-field comparisons of DurationStats, so that a failure names the
// field that differs.
#ifndef TRACER_TESTS_ANALYSIS_DURATION_STATS_EXPECT_H_
#define TRACER_TESTS_ANALYSIS_DURATION_STATS_EXPECT_H_

#include <gtest/gtest.h>

#include "libtracer/analysis/aggregate/duration_stats.h"

namespace tracer::analysis {

// The fields DurationAccumulator::Totals() fills: count, total, min, max, avg.
inline void ExpectSameTotals(const DurationStats& got, const DurationStats& want) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.total, want.total);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.avg, want.avg);
}

// Every field, the order statistics too.
inline void ExpectSameStats(const DurationStats& got, const DurationStats& want) {
  ExpectSameTotals(got, want);
  EXPECT_EQ(got.median, want.median);
  EXPECT_EQ(got.stddev, want.stddev);
}

}  // namespace tracer::analysis

#endif  // TRACER_TESTS_ANALYSIS_DURATION_STATS_EXPECT_H_
