// The record-count pre-scan walks Chunk payloads by field number (from the
// generated libtracer/core/trace_fields.h, not copied by hand): its counts
// must equal what the generated protobuf classes parse from the same bytes.
#include "libtracer/analysis/read/record_count_hint.h"

#include <gtest/gtest.h>

#include <string>

#include "libtracer/core/chunk_builder.h"
#include "proto/trace.pb.h"

namespace tracer::analysis {
namespace {

TEST(RecordCountHint, CountsWhatTheGeneratedClassesParse) {
  ChunkBuilder b;
  b.AddString(1, "k");
  b.AddThread({1, 100, 0, 7});
  for (uint64_t i = 1; i <= 3; ++i) {
    RangeRecord r;
    r.id = i;
    r.start_ns = 10 * i;
    r.end_ns = 10 * i + 5;
    b.AddRange(r);
  }
  MarkRecord mark;
  mark.time_ns = 1;
  b.AddMark(mark);
  for (uint64_t i = 1; i <= 5; ++i) {
    KernelRecord k;
    k.start_ns = 100 * i;
    k.end_ns = 100 * i + 7;
    k.correlation_id = i;
    b.AddKernel(k);
  }
  for (uint64_t i = 1; i <= 2; ++i) {
    MemcpyRecord m;
    m.start_ns = i;
    m.end_ns = i + 1;
    m.bytes = 64;
    b.AddMemcpy(m);
  }
  MemsetRecord ms;
  ms.start_ns = 3;
  ms.end_ns = 4;
  b.AddMemset(ms);
  for (uint64_t i = 1; i <= 4; ++i) {
    ApiRecord a;
    a.start_ns = i;
    a.end_ns = i + 2;
    a.correlation_id = i;
    b.AddApi(a);
  }
  for (uint64_t i = 1; i <= 6; ++i) {
    LaunchRecord l;
    l.correlation_id = i;
    l.time_ns = 50 + i;
    b.AddLaunch(l);
  }
  SyncRecord s;
  s.start_ns = 1;
  b.AddSync(s);
  std::string frame;
  b.FinishFrame(&frame);
  ASSERT_GT(frame.size(), 8u);
  const std::string payload = frame.substr(8);  // after length and CRC

  proto::Chunk c;
  ASSERT_TRUE(c.ParseFromString(payload));
  RecordCountHint hint;
  AddRecordCountHint(payload, &hint);
  EXPECT_EQ(hint.ranges, static_cast<size_t>(c.range_batch().thread_size()));
  EXPECT_EQ(hint.kernels, static_cast<size_t>(c.kernels().start_delta_size()));
  EXPECT_EQ(hint.memcpys, static_cast<size_t>(c.memcpys().start_delta_size()));
  EXPECT_EQ(hint.memsets, static_cast<size_t>(c.memsets().start_delta_size()));
  EXPECT_EQ(hint.api_calls, static_cast<size_t>(c.api_calls().start_delta_size()));
  EXPECT_EQ(hint.launches, static_cast<size_t>(c.launches().correlation_delta_size()));
  // And the numbers themselves, so that a hint and a parse wrong alike fail.
  EXPECT_EQ(hint.ranges, 3u);
  EXPECT_EQ(hint.kernels, 5u);
  EXPECT_EQ(hint.memcpys, 2u);
  EXPECT_EQ(hint.memsets, 1u);
  EXPECT_EQ(hint.api_calls, 4u);
  EXPECT_EQ(hint.launches, 6u);
}

}  // namespace
}  // namespace tracer::analysis
