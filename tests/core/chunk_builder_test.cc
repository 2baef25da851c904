// The hand-written wire encoder must produce bytes that the generated
// protobuf classes parse field for field (docs/design.md section 3).
#include "libtracer/core/chunk_builder.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "proto/trace.pb.h"
#include "tests/record_compare.h"

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
  EXPECT_EQ(c.header().format_version(), 2u);
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

// trace.proto's RangeBatch / MarkBatch rules, written out independently of
// the reader: per-thread deltas, a missing column reads as zeros.
template <typename Col>
uint64_t Cell(const Col& col, int i) {
  return i < col.size() ? static_cast<uint64_t>(col.Get(i)) : 0;
}

PayloadValue DecodedPayload(uint64_t kind, uint64_t bits) {
  PayloadValue p;
  p.type = static_cast<PayloadValue::Type>(kind);
  p.u64 = bits;
  return p;
}

std::vector<RangeRecord> DecodeRanges(const proto::RangeBatch& b) {
  std::vector<RangeRecord> out;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> previous;  // thread -> start, id
  const int n = b.thread_size();
  for (int i = 0; i < n; ++i) {
    RangeRecord r;
    r.thread = static_cast<uint32_t>(Cell(b.thread(), i));
    auto& [start, id] = previous[r.thread];
    start += Cell(b.start_delta(), i);
    id += Cell(b.id_delta(), i);
    r.start_ns = start;
    r.end_ns = start + Cell(b.duration(), i);
    r.id = id;
    const uint64_t offset = Cell(b.parent_offset(), i);
    r.parent_id = offset == 0 ? 0 : id - offset;
    for (uint32_t row : b.self_parent_rows()) {
      if (row == static_cast<uint32_t>(i)) r.parent_id = id;
    }
    r.name = static_cast<uint32_t>(Cell(b.name(), i));
    r.domain = static_cast<uint32_t>(Cell(b.domain(), i));
    r.category = static_cast<uint32_t>(Cell(b.category(), i));
    r.kind = Cell(b.kind(), i) == 1 ? RangeKind::kStartEnd : RangeKind::kPushPop;
    r.depth = static_cast<uint32_t>(Cell(b.depth(), i));
    r.end_thread = static_cast<uint32_t>(r.thread + Cell(b.end_thread_delta(), i));
    r.flags = static_cast<uint32_t>(Cell(b.flags(), i));
    r.color = static_cast<uint32_t>(Cell(b.color(), i));
    r.payload = DecodedPayload(Cell(b.payload_kind(), i), Cell(b.payload(), i));
    out.push_back(r);
  }
  return out;
}

std::vector<MarkRecord> DecodeMarks(const proto::MarkBatch& b) {
  std::vector<MarkRecord> out;
  std::map<uint64_t, uint64_t> previous;
  for (int i = 0; i < b.thread_size(); ++i) {
    MarkRecord m;
    m.thread = static_cast<uint32_t>(Cell(b.thread(), i));
    m.time_ns = previous[m.thread] += Cell(b.time_delta(), i);
    m.name = static_cast<uint32_t>(Cell(b.name(), i));
    m.domain = static_cast<uint32_t>(Cell(b.domain(), i));
    m.category = static_cast<uint32_t>(Cell(b.category(), i));
    m.color = static_cast<uint32_t>(Cell(b.color(), i));
    m.payload = DecodedPayload(Cell(b.payload_kind(), i), Cell(b.payload(), i));
    out.push_back(m);
  }
  return out;
}

// A push/pop range without an end thread is written as ending on its own
// thread (trace.proto RangeBatch.end_thread_delta); every other field as
// added.
RangeRecord AsWritten(RangeRecord r) {
  if (r.kind == RangeKind::kPushPop && r.end_thread == 0) r.end_thread = r.thread;
  return r;
}

// a: read back; b: as added.
void ExpectSameRange(const RangeRecord& a, const RangeRecord& b) {
  EXPECT_EQ(a.name, b.name);
  testing::ExpectSameRangeButName(a, AsWritten(b));
}

void ExpectSameMark(const MarkRecord& a, const MarkRecord& b) {
  EXPECT_EQ(a.name, b.name);
  testing::ExpectSameMarkButName(a, b);
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
  // Version 2: batches, no per-record messages.
  EXPECT_EQ(c.ranges_size(), 0);
  EXPECT_EQ(c.marks_size(), 0);
  const std::vector<RangeRecord> ranges = DecodeRanges(c.range_batch());
  ASSERT_EQ(ranges.size(), 1u);
  ExpectSameRange(ranges[0], r);
  EXPECT_DOUBLE_EQ(ranges[0].payload.f64, 2.5);
  const std::vector<MarkRecord> marks = DecodeMarks(c.mark_batch());
  ASSERT_EQ(marks.size(), 1u);
  ExpectSameMark(marks[0], m);
  ASSERT_EQ(c.counter_deltas_size(), 1);
  EXPECT_EQ(c.counter_deltas(0).value(), 3u);
  EXPECT_TRUE(c.has_footer());
  EXPECT_EQ(c.footer().session_end_trace_ns(), 999u);
  EXPECT_EQ(c.footer().dropped_by_cause(0).name(), "nvtx_ring_full");
}

// Every range and mark field at its largest and smallest (10-byte varints,
// deltas of +-2^64 that wrap, an end before the start), each payload kind,
// a parent equal to the id, threads interleaved and all-zero rows, read
// back by libprotobuf.
TEST(ChunkBuilderTest, RangeAndMarkFieldsAtExtremesRoundTrip) {
  ChunkBuilder b;
  const uint64_t big = UINT64_MAX;
  const uint32_t big32 = UINT32_MAX;
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
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
    ranges.push_back(r);
    marks.push_back(m);
    // The same thread's next row at the other extreme: deltas of -2^64 + 1.
    RangeRecord low;
    low.thread = big32;
    low.end_thread = 0;
    low.id = 1;
    low.parent_id = big;
    low.end_ns = big;
    ranges.push_back(low);
    MarkRecord low_mark;
    low_mark.thread = big32;
    marks.push_back(low_mark);
  }
  // Another thread in between, an all-zero row, a parent equal to the id, and
  // a parent 2^63 away (the largest zigzag).
  RangeRecord zero;
  ranges.insert(ranges.begin() + 3, zero);
  marks.insert(marks.begin() + 3, MarkRecord{});
  RangeRecord self;
  self.thread = 7;
  self.id = 42;
  self.parent_id = 42;
  self.start_ns = 5;
  self.end_ns = 4;
  ranges.push_back(self);
  RangeRecord far;
  far.thread = 7;
  far.id = uint64_t{1} << 63;
  far.parent_id = 1;
  far.end_thread = big32;
  ranges.push_back(far);
  for (const RangeRecord& r : ranges) b.AddRange(r);
  for (const MarkRecord& m : marks) b.AddMark(m);
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  const std::vector<RangeRecord> got = DecodeRanges(c.range_batch());
  ASSERT_EQ(got.size(), ranges.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameRange(got[i], ranges[i]);
  }
  const std::vector<MarkRecord> got_marks = DecodeMarks(c.mark_batch());
  ASSERT_EQ(got_marks.size(), marks.size());
  for (size_t i = 0; i < got_marks.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameMark(got_marks[i], marks[i]);
  }
  EXPECT_DOUBLE_EQ(got[7].payload.f64, -1.25);  // kind 3 (the zero row is at 3)
  EXPECT_EQ(got[5].payload.i64, INT64_MIN);
}

// A batch of rows whose every field is 0 still has its rows (the thread
// column is always written), and the next frame's deltas start from 0
// again.
TEST(ChunkBuilderTest, AllZeroRangeRowsAndDeltasRestartPerFrame) {
  ChunkBuilder b;
  b.AddRange(RangeRecord{});
  b.AddRange(RangeRecord{});
  b.AddMark(MarkRecord{});
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  EXPECT_EQ(DecodeRanges(c.range_batch()).size(), 2u);
  EXPECT_EQ(DecodeMarks(c.mark_batch()).size(), 1u);
  RangeRecord r;
  r.thread = 1;
  r.id = 10;
  r.start_ns = 1000;
  r.end_ns = 1500;
  b.AddRange(r);
  r.id = 11;
  r.start_ns = 2000;
  r.end_ns = 2100;
  b.AddRange(r);
  out.clear();
  b.FinishFrame(&out);
  c = ParseSingleFrame(out);
  ASSERT_EQ(c.range_batch().start_delta_size(), 2);
  EXPECT_EQ(c.range_batch().start_delta(0), 1000);
  EXPECT_EQ(c.range_batch().start_delta(1), 1000);
  EXPECT_EQ(c.range_batch().id_delta(0), 10);
  EXPECT_EQ(c.range_batch().id_delta(1), 1);
  ASSERT_EQ(DecodeRanges(c.range_batch()).size(), 2u);
  EXPECT_EQ(DecodeRanges(c.range_batch())[1].end_ns, 2100u);
}

// Enough rows to cross the builder's room checks and grow its columns
// (varint_columns.h: room is checked once per 64 rows), with wide values,
// a rarely set field that turns up mid-batch (its earlier rows read as 0),
// and usually set fields that stay 0 (left out of the batch, as a
// conforming writer omits an all-zero column): every row reads back, twice
// (the builder is reused for a second frame).
TEST(ChunkBuilderTest, ManyRowsWithFieldsThatTurnUpMidBatchRoundTrip) {
  ChunkBuilder b;
  for (int frame = 0; frame < 2; ++frame) {
    std::vector<RangeRecord> in;
    for (uint64_t i = 0; i < 5000; ++i) {
      RangeRecord r;
      r.id = (uint64_t{2} << 40) | (i + 1);
      r.thread = 2;
      r.end_thread = 2;
      r.name = static_cast<uint32_t>(1 + i % 300);
      r.start_ns = 1'700'000'000'000'000'000ull + i * 3000 + (i % 7) * 1'000'000'000'000ull;
      r.end_ns = r.start_ns + (i % 11 == 0 ? ~uint64_t{0} >> 1 : 2000);
      r.depth = 0;                                  // a usually set column left all zero
      if (i >= 1234) r.flags = kRangeFlagUnclosed;  // a rare one, from row 1234 on
      if (i == 4321) r.end_thread = 3;
      in.push_back(r);
      b.AddRange(r);
    }
    std::string out;
    b.FinishFrame(&out);
    proto::Chunk c = ParseSingleFrame(out);
    EXPECT_EQ(c.range_batch().depth_size(), 0) << "an all-zero column is left out";
    EXPECT_EQ(c.range_batch().parent_offset_size(), 0);
    EXPECT_EQ(c.range_batch().category_size(), 0);
    EXPECT_EQ(c.range_batch().flags_size(), 5000);
    const std::vector<RangeRecord> ranges = DecodeRanges(c.range_batch());
    ASSERT_EQ(ranges.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      SCOPED_TRACE(i);
      ExpectSameRange(ranges[i], in[i]);
    }
  }
}

// A push/pop range leaves end_thread 0 in the capture (the decoder does not
// set it): written as ending on its own thread, its end_thread_delta is 0,
// so a batch of such ranges has no column for it (it once held -thread, a
// byte a range). A start/end range without an end thread (never ended)
// still reads back 0, and one ended elsewhere its end thread.
TEST(ChunkBuilderTest, PushPopRangeWithoutEndThreadEndsOnItsOwnThread) {
  ChunkBuilder b;
  RangeRecord r;
  r.thread = 7;
  r.start_ns = 1000;
  r.end_ns = 1500;
  for (uint64_t i = 1; i <= 100; ++i) {
    r.id = i;
    b.AddRange(r);
  }
  std::string out;
  b.FinishFrame(&out);
  proto::Chunk c = ParseSingleFrame(out);
  EXPECT_EQ(c.range_batch().end_thread_delta_size(), 0);
  EXPECT_EQ(c.range_batch().kind_size(), 0);
  std::vector<RangeRecord> ranges = DecodeRanges(c.range_batch());
  ASSERT_EQ(ranges.size(), 100u);
  EXPECT_EQ(ranges[99].end_thread, 7u);

  RangeRecord never_ended = r, ended_elsewhere = r;
  never_ended.kind = ended_elsewhere.kind = RangeKind::kStartEnd;
  ended_elsewhere.end_thread = 9;
  b.AddRange(r);
  b.AddRange(never_ended);
  b.AddRange(ended_elsewhere);
  out.clear();
  b.FinishFrame(&out);
  c = ParseSingleFrame(out);
  ranges = DecodeRanges(c.range_batch());
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].end_thread, 7u);
  EXPECT_EQ(ranges[1].end_thread, 0u);
  EXPECT_EQ(ranges[2].end_thread, 9u);
}

// The dense columns are encoded by the CPU's fastest varint codec
// (varint_encode.h): every codec this CPU runs gives the same frames, for
// rows that cross the 64-row stages, values of every length, and a frame
// cut in the middle of a stage.
TEST(ChunkBuilderTest, FramesAreTheSameWithEveryVarintCodec) {
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  std::mt19937_64 rng(13);
  for (uint64_t i = 0; i < 1000; ++i) {
    RangeRecord r;
    r.thread = static_cast<uint32_t>(1 + i / 300);
    r.id = (uint64_t{r.thread} << 40) | (i + 1);
    r.parent_id = i % 4 == 0 ? 0 : r.id - 1 - rng() % 3;
    r.name = static_cast<uint32_t>(rng() >> (32 + rng() % 32));
    r.domain = i % 5 == 0 ? 2 : 0;
    r.depth = static_cast<uint32_t>(i % 8);
    r.color = i % 3 == 0 ? 0xFF00FF00u : 0;
    r.start_ns = 1'700'000'000'000'000'000ull + i * 1000 + (rng() >> (rng() % 64));
    r.end_ns = r.start_ns + (rng() >> (rng() % 64));
    ranges.push_back(r);
    MarkRecord m;
    m.thread = r.thread;
    m.time_ns = r.start_ns;
    m.name = r.name;
    marks.push_back(m);
  }
  auto frames = [&](VarintCodec codec) {
    ChunkBuilder b;
    b.set_varint_codec(codec);
    std::string out;
    for (size_t i = 0; i < ranges.size(); ++i) {
      b.AddRange(ranges[i]);
      b.AddMark(marks[i]);
      if (i == 100 || i == 777) b.FinishFrame(&out);
    }
    b.FinishFrame(&out);
    return out;
  };
  const std::string portable = frames(VarintCodec::kPortable);
  for (VarintCodec codec : {VarintCodec::kPdep, VarintCodec::kAvx512, VarintCodec::kScalar}) {
    if (!VarintCodecSupported(codec)) continue;
    EXPECT_EQ(frames(codec), portable) << static_cast<int>(codec);
  }
  // And they read back as added.
  ChunkBuilder b;
  b.set_varint_codec(VarintCodec::kPortable);
  for (const RangeRecord& r : ranges) b.AddRange(r);
  std::string out;
  b.FinishFrame(&out);
  const std::vector<RangeRecord> read = DecodeRanges(ParseSingleFrame(out).range_batch());
  ASSERT_EQ(read.size(), ranges.size());
  for (size_t i = 0; i < read.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameRange(read[i], ranges[i]);
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
