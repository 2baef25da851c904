// Test helper: field-by-field comparison of range and mark records
// (libtracer/core/records.h) as gtest expectations. Names are left to the
// caller: a reader interns them into its own string table, so tests compare
// either the ids (same table) or the texts.
#pragma once

#include <gtest/gtest.h>

#include "libtracer/core/records.h"

namespace tracer::testing {

inline void ExpectSameRangeButName(const RangeRecord& a, const RangeRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.parent_id, b.parent_id);
  EXPECT_EQ(a.thread, b.thread);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.category, b.category);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.depth, b.depth);
  EXPECT_EQ(a.end_thread, b.end_thread);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.color, b.color);
  EXPECT_EQ(a.payload.type, b.payload.type);
  EXPECT_EQ(a.payload.u64, b.payload.u64);  // the 64 bits, whatever the kind
}

inline void ExpectSameMarkButName(const MarkRecord& a, const MarkRecord& b) {
  EXPECT_EQ(a.time_ns, b.time_ns);
  EXPECT_EQ(a.thread, b.thread);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.category, b.category);
  EXPECT_EQ(a.color, b.color);
  EXPECT_EQ(a.payload.type, b.payload.type);
  EXPECT_EQ(a.payload.u64, b.payload.u64);
}

}  // namespace tracer::testing
