// The hand-written wire encoder must produce bytes that the generated
// protobuf classes parse field for field (docs/design.md section 3).
#include "libtracer/core/chunk_builder.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "proto/trace.pb.h"

namespace tracer {
namespace {

// Splits one frame into its payload after checking length and CRC.
proto::Chunk ParseSingleFrame(const std::string& frame) {
  EXPECT_GE(frame.size(), 8u);
  uint32_t len = 0, crc = 0;
  std::memcpy(&len, frame.data(), 4);
  std::memcpy(&crc, frame.data() + 4, 4);
  EXPECT_EQ(len, frame.size() - 8);
  const uLong actual = crc32(0L, reinterpret_cast<const Bytef*>(frame.data() + 8), len);
  EXPECT_EQ(crc, static_cast<uint32_t>(actual));
  proto::Chunk chunk;
  EXPECT_TRUE(chunk.ParseFromArray(frame.data() + 8, static_cast<int>(len)));
  return chunk;
}

TEST(ChunkBuilderTest, HeaderAndDefinitionsRoundTrip) {
  ChunkBuilder b;
  HeaderInfo h;
  h.tracer_version = "0.1.0";
  h.host = "box";
  h.pid = 4242;
  h.rank = -1;
  h.clock_description = "test clock";
  h.session_start_wall_ns = 1700000000000000000ull;
  h.session_start_trace_ns = 123;
  h.config = {{"TRACER_OUTPUT", "/tmp/x.trace"}};
  h.command_line = {"python", "train.py"};
  b.SetHeader(h);
  b.AddString(1, "f_lora_a_0");
  b.AddThread({3, 777, 1, 99});
  b.AddStream({2, 0, 1, 7});
  LaunchConfigRecord lc;
  lc.id = 5;
  lc.grid[0] = 128;
  lc.block[0] = 256;
  lc.registers_per_thread = 32;
  b.AddLaunchConfig(lc);
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  EXPECT_EQ(c.header().format_version(), 1u);
  EXPECT_EQ(c.header().pid(), 4242u);
  EXPECT_EQ(c.header().rank(), -1);
  EXPECT_EQ(c.header().host(), "box");
  EXPECT_EQ(c.header().clock().description(), "test clock");
  EXPECT_EQ(c.header().session_start_wall_ns(), 1700000000000000000ull);
  ASSERT_EQ(c.header().config_size(), 1);
  EXPECT_EQ(c.header().config(0).key(), "TRACER_OUTPUT");
  ASSERT_EQ(c.header().command_line_size(), 2);
  EXPECT_EQ(c.header().command_line(1), "train.py");
  EXPECT_EQ(c.header().source(), "tracer");
  ASSERT_EQ(c.strings_size(), 1);
  EXPECT_EQ(c.strings(0).id(), 1u);
  EXPECT_EQ(c.strings(0).value(), "f_lora_a_0");
  EXPECT_EQ(c.threads(0).os_tid(), 777u);
  EXPECT_EQ(c.threads(0).pthread_id(), 99u);
  EXPECT_EQ(c.streams(0).stream(), 7u);
  EXPECT_EQ(c.launch_configs(0).grid_x(), 128u);
  EXPECT_EQ(c.launch_configs(0).registers_per_thread(), 32u);
}

TEST(ChunkBuilderTest, KernelColumnsDecodeToTheOriginalRows) {
  ChunkBuilder b;
  std::vector<KernelRecord> ks;
  for (int i = 0; i < 5; ++i) {
    KernelRecord k;
    k.start_ns = 1000000 + 100 * i;
    k.end_ns = k.start_ns + 50 + i;
    k.name = 1 + (i % 2);
    k.stream = i == 3 ? 0 : 4;  // a zero inside a column
    k.correlation_id = 10 + 2 * i;
    k.launch_config = 1;
    if (i == 2) {
      k.graph_id = 9;
      k.graph_node_id = 77;
    }
    ks.push_back(k);
    b.AddKernel(k);
  }
  // Start times going backwards must survive the zigzag deltas.
  KernelRecord back = ks[0];
  back.start_ns = 10;
  back.end_ns = 20;
  ks.push_back(back);
  b.AddKernel(back);
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  const auto& kb = c.kernels();
  ASSERT_EQ(kb.start_delta_size(), 6);
  int64_t start = 0, corr = 0;
  for (int i = 0; i < 6; ++i) {
    start += kb.start_delta(i);
    corr += kb.correlation_delta(i);
    EXPECT_EQ(static_cast<uint64_t>(start), ks[i].start_ns) << i;
    EXPECT_EQ(static_cast<uint64_t>(start) + kb.duration(i), ks[i].end_ns) << i;
    EXPECT_EQ(kb.name(i), ks[i].name);
    EXPECT_EQ(kb.stream(i), ks[i].stream);
    EXPECT_EQ(static_cast<uint64_t>(corr), ks[i].correlation_id);
  }
  ASSERT_EQ(kb.graph_size(), 1);
  EXPECT_EQ(kb.graph(0).row(), 2u);
  EXPECT_EQ(kb.graph(0).graph_node_id(), 77u);
  EXPECT_LT(out.size() - 8, 6u * 16u) << "kernel rows should stay compact";
}

TEST(ChunkBuilderTest, RangesMarksCountersAndFooter) {
  ChunkBuilder b;
  RangeRecord r;
  r.id = 5;
  r.parent_id = 4;
  r.thread = 1;
  r.name = 3;
  r.start_ns = 100;
  r.end_ns = 250;
  r.depth = 1;
  r.flags = kRangeFlagUnclosed;
  r.payload.type = PayloadValue::Type::kF64;
  r.payload.f64 = 2.5;
  b.AddRange(r);
  MarkRecord m;
  m.time_ns = 7;
  m.name = 2;
  m.color = 0xFF00FF00u;
  b.AddMark(m);
  b.AddCounterDelta("nvtx_ring_full", 3);
  b.AddCounterDelta("never_zero", 0);
  FooterInfo f;
  f.session_end_trace_ns = 999;
  f.dropped_by_cause = {{"nvtx_ring_full", 3}};
  b.SetFooter(f);
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  ASSERT_EQ(c.ranges_size(), 1);
  EXPECT_EQ(c.ranges(0).id(), 5u);
  EXPECT_EQ(c.ranges(0).parent_id(), 4u);
  EXPECT_EQ(c.ranges(0).end_ns(), 250u);
  EXPECT_EQ(c.ranges(0).flags(), 1u);
  EXPECT_DOUBLE_EQ(c.ranges(0).payload().f64(), 2.5);
  EXPECT_EQ(c.marks(0).color(), 0xFF00FF00u);
  ASSERT_EQ(c.counter_deltas_size(), 1);
  EXPECT_EQ(c.counter_deltas(0).value(), 3u);
  EXPECT_TRUE(c.has_footer());
  EXPECT_EQ(c.footer().session_end_trace_ns(), 999u);
  EXPECT_EQ(c.footer().dropped_by_cause(0).name(), "nvtx_ring_full");
}

// Every range and mark field at its largest (10-byte varints: the encoder's
// stack buffer must hold them) and each payload kind, read back by
// libprotobuf.
TEST(ChunkBuilderTest, RangeAndMarkFieldsAtExtremesRoundTrip) {
  ChunkBuilder b;
  const uint64_t big = UINT64_MAX;
  const uint32_t big32 = UINT32_MAX;
  for (int kind = 0; kind < 4; ++kind) {
    RangeRecord r;
    r.id = big;
    r.parent_id = big - 1;
    r.thread = big32;
    r.name = big32 - 1;
    r.domain = big32 - 2;
    r.category = big32 - 3;
    r.start_ns = big - 2;
    r.end_ns = big - 3;
    r.kind = RangeKind::kStartEnd;
    r.depth = big32 - 4;
    r.end_thread = big32 - 5;
    r.flags = big32 - 6;
    r.color = big32 - 7;
    MarkRecord m;
    m.time_ns = big;
    m.thread = big32;
    m.name = big32 - 1;
    m.domain = big32 - 2;
    m.category = big32 - 3;
    m.color = big32 - 4;
    PayloadValue p;
    if (kind == 1) {
      p.type = PayloadValue::Type::kU64;
      p.u64 = big;
    } else if (kind == 2) {
      p.type = PayloadValue::Type::kI64;
      p.i64 = INT64_MIN;
    } else if (kind == 3) {
      p.type = PayloadValue::Type::kF64;
      p.f64 = -1.25;
    }
    r.payload = p;
    m.payload = p;
    b.AddRange(r);
    b.AddMark(m);
  }
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  ASSERT_EQ(c.ranges_size(), 4);
  ASSERT_EQ(c.marks_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const auto& r = c.ranges(i);
    EXPECT_EQ(r.id(), big);
    EXPECT_EQ(r.parent_id(), big - 1);
    EXPECT_EQ(r.thread(), big32);
    EXPECT_EQ(r.name(), big32 - 1);
    EXPECT_EQ(r.domain(), big32 - 2);
    EXPECT_EQ(r.category(), big32 - 3);
    EXPECT_EQ(r.start_ns(), big - 2);
    EXPECT_EQ(r.end_ns(), big - 3);
    EXPECT_EQ(r.kind(), proto::RANGE_START_END);
    EXPECT_EQ(r.depth(), big32 - 4);
    EXPECT_EQ(r.end_thread(), big32 - 5);
    EXPECT_EQ(r.flags(), big32 - 6);
    EXPECT_EQ(r.color(), big32 - 7);
    const auto& m = c.marks(i);
    EXPECT_EQ(m.time_ns(), big);
    EXPECT_EQ(m.thread(), big32);
    EXPECT_EQ(m.name(), big32 - 1);
    EXPECT_EQ(m.domain(), big32 - 2);
    EXPECT_EQ(m.category(), big32 - 3);
    EXPECT_EQ(m.color(), big32 - 4);
    EXPECT_EQ(r.has_payload(), i != 0);
    EXPECT_EQ(m.has_payload(), i != 0);
    for (const proto::Payload* p : {&r.payload(), &m.payload()}) {
      if (i == 1) EXPECT_EQ(p->u64(), big);
      if (i == 2) EXPECT_EQ(p->i64(), INT64_MIN);
      if (i == 3) EXPECT_DOUBLE_EQ(p->f64(), -1.25);
    }
  }
}

TEST(ChunkBuilderTest, EmptyBuilderWritesNothingAndBuilderIsReusable) {
  ChunkBuilder b;
  std::string out;
  b.FinishFrame(&out);
  EXPECT_TRUE(out.empty());
  ApiRecord a;
  a.start_ns = 5;
  a.end_ns = 9;
  a.domain = ApiDomain::kDriver;
  a.cbid = 307;
  a.correlation_id = 1;
  b.AddApi(a);
  b.FinishFrame(&out);
  const size_t first = out.size();
  b.AddApi(a);
  std::string second;
  b.FinishFrame(&second);
  EXPECT_EQ(second.size(), first) << "deltas restart from zero in every chunk";
  proto::Chunk c = ParseSingleFrame(second);
  EXPECT_EQ(c.api_calls().cbid(0), 307u);
  EXPECT_EQ(c.api_calls().domain(0), 1u);
}

}  // namespace
}  // namespace tracer
