// Ranges and marks of both stream versions: version 1 (one message per
// record, read from a file that writer produced, checked in) and version 2
// (RangeBatch / MarkBatch) decode into the same in-memory records, through
// the whole-trace reader and the bounded streaming one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "libtracer/analysis/read/reader.h"
#include "libtracer/core/chunk_builder.h"
#include "tests/analysis/trace_file_builder.h"
#include "tests/record_compare.h"

namespace tracer::analysis {
namespace {

// Names resolved, so files whose string ids differ compare.
struct NamedRange {
  RangeRecord r;
  std::string name;
};

std::vector<NamedRange> Named(const Trace& t) {
  std::vector<NamedRange> out;
  for (const RangeRecord& r : t.processes.at(0).ranges)
    out.push_back({r, std::string(t.strings.Get(r.name))});
  return out;
}

void ExpectSameRange(const RangeRecord& a, const RangeRecord& b) {
  tracer::testing::ExpectSameRangeButName(a, b);
}

void ExpectSameMark(const MarkRecord& a, const MarkRecord& b) {
  tracer::testing::ExpectSameMarkButName(a, b);
}

const char kV1File[] = TRACER_SOURCE_DIR "/tests/analysis/data/v1_ranges_marks.trace";

// tests/analysis/data/make_v1_ranges_marks.cc lists what the file holds.
TEST(RangeBatchReaderTest, VersionOneFileReadsEveryRangeAndMarkField) {
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceFile(kV1File, &trace, &error)) << error;
  EXPECT_TRUE(trace.warnings.empty());
  const ProcessTrace& p = trace.processes.at(0);
  EXPECT_EQ(p.header.format_version, 1u);
  EXPECT_EQ(p.header.pid, 4242u);
  EXPECT_EQ(p.header.host, "v1host");
  EXPECT_EQ(p.header.rank, 1);
  ASSERT_EQ(p.ranges.size(), 5u);
  ASSERT_EQ(p.marks.size(), 2u);
  const uint64_t t1 = uint64_t{1} << 40;
  const RangeRecord& inner = p.ranges[0];  // pop order: inner before outer
  EXPECT_EQ(inner.id, t1 | 2);
  EXPECT_EQ(inner.parent_id, t1 | 1);
  EXPECT_EQ(inner.thread, 1u);
  EXPECT_EQ(trace.strings.Get(inner.name), "inner");
  EXPECT_EQ(inner.start_ns, 2000u);
  EXPECT_EQ(inner.end_ns, 2500u);
  EXPECT_EQ(inner.depth, 1u);
  EXPECT_EQ(inner.end_thread, 1u);
  EXPECT_EQ(inner.color, 0xff00ff00u);
  EXPECT_EQ(inner.payload.type, PayloadValue::Type::kU64);
  EXPECT_EQ(inner.payload.u64, 77u);
  const RangeRecord& outer = p.ranges[1];
  EXPECT_EQ(outer.id, t1 | 1);
  EXPECT_EQ(outer.parent_id, 0u);
  EXPECT_EQ(trace.strings.Get(outer.name), "outer");
  EXPECT_EQ(outer.start_ns, 1500u);
  EXPECT_EQ(outer.end_ns, 3000u);
  EXPECT_EQ(outer.payload.type, PayloadValue::Type::kNone);
  const RangeRecord& async = p.ranges[2];
  EXPECT_EQ(async.kind, RangeKind::kStartEnd);
  EXPECT_EQ(async.end_thread, 2u);
  EXPECT_EQ(async.domain, 1u);
  EXPECT_EQ(async.category, 3u);
  EXPECT_EQ(trace.strings.Get(async.name), "async");
  EXPECT_EQ(async.payload.type, PayloadValue::Type::kF64);
  EXPECT_DOUBLE_EQ(async.payload.f64, 2.5);
  const RangeRecord& big = p.ranges[3];
  EXPECT_EQ(big.id, UINT64_MAX);
  EXPECT_EQ(big.parent_id, UINT64_MAX - 1);
  EXPECT_EQ(big.thread, 2u);
  EXPECT_EQ(big.category, UINT32_MAX);
  EXPECT_EQ(big.start_ns, UINT64_MAX - 10);
  EXPECT_EQ(big.end_ns, UINT64_MAX);
  EXPECT_EQ(big.depth, 255u);
  EXPECT_EQ(big.flags, 2u);
  EXPECT_EQ(big.color, UINT32_MAX);
  EXPECT_EQ(big.payload.type, PayloadValue::Type::kI64);
  EXPECT_EQ(big.payload.i64, INT64_MIN);
  const RangeRecord& unclosed = p.ranges[4];
  EXPECT_EQ(unclosed.flags, kRangeFlagUnclosed);
  EXPECT_EQ(unclosed.end_ns, 5000u);
  EXPECT_EQ(p.marks[0].time_ns, 2300u);
  EXPECT_EQ(p.marks[0].thread, 2u);
  EXPECT_EQ(trace.strings.Get(p.marks[0].name), "tick");
  EXPECT_EQ(p.marks[0].domain, 1u);
  EXPECT_EQ(p.marks[0].category, 3u);
  EXPECT_EQ(p.marks[0].color, 0xffff0000u);
  EXPECT_EQ(p.marks[0].payload.type, PayloadValue::Type::kI64);
  EXPECT_EQ(p.marks[0].payload.i64, -5);
  EXPECT_EQ(p.marks[1].time_ns, 4500u);
  EXPECT_EQ(p.marks[1].thread, 1u);
  EXPECT_EQ(p.marks[1].payload.type, PayloadValue::Type::kNone);
  EXPECT_EQ(trace.strings.Get(p.domain_names.at(1)), "mydomain");
  EXPECT_EQ(trace.strings.Get(p.category_names.at({1, 3})), "mycategory");
  ASSERT_TRUE(p.footer.has_value());
  EXPECT_EQ(p.footer->session_end_trace_ns, 5000u);
}

// The version-1 file's records written again by today's writer (version 2
// batches) read back as the same records, whole-trace and streamed.
TEST(RangeBatchReaderTest, VersionTwoBatchesReadAsTheSameRecordsAsVersionOne) {
  Trace v1;
  std::string error;
  ASSERT_TRUE(ReadTraceFile(kV1File, &v1, &error)) << error;
  const ProcessTrace& old = v1.processes.at(0);

  std::string bytes;
  AppendFileMagic(&bytes);
  ChunkBuilder b;
  HeaderInfo header = old.header;
  header.format_version = HeaderInfo{}.format_version;  // today's
  b.SetHeader(header);
  // String ids: the global ones of v1's table (any consistent ids do).
  for (uint32_t id = 1; id < v1.strings.size(); ++id) b.AddString(id, v1.strings.Get(id));
  for (uint32_t t = 1; t < old.threads.size(); ++t) {
    b.AddThread({t, old.threads[t].os_tid, old.threads[t].name, old.threads[t].pthread_id});
  }
  for (const auto& [id, name] : old.domain_names) b.AddDomain({id, name});
  for (const auto& [key, name] : old.category_names) b.AddCategory({key.first, key.second, name});
  // Two frames, as the original.
  for (size_t i = 0; i < 3; ++i) b.AddRange(old.ranges[i]);
  b.AddMark(old.marks[0]);
  b.FinishFrame(&bytes);
  for (size_t i = 3; i < 5; ++i) b.AddRange(old.ranges[i]);
  b.AddMark(old.marks[1]);
  b.SetFooter(*old.footer);
  b.FinishFrame(&bytes);

  Trace v2;
  ASSERT_TRUE(ReadTraceBytes(bytes, "v2.trace", &v2, &error)) << error;
  EXPECT_TRUE(v2.warnings.empty());
  const ProcessTrace& now = v2.processes.at(0);
  EXPECT_EQ(now.header.format_version, 2u);
  const auto a = Named(v1), c = Named(v2);
  ASSERT_EQ(a.size(), c.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameRange(a[i].r, c[i].r);
    EXPECT_EQ(a[i].name, c[i].name);
  }
  ASSERT_EQ(now.marks.size(), old.marks.size());
  for (size_t i = 0; i < old.marks.size(); ++i) {
    ExpectSameMark(old.marks[i], now.marks[i]);
    EXPECT_EQ(v1.strings.Get(old.marks[i].name), v2.strings.Get(now.marks[i].name));
  }

  // The bounded reader: both files, frame by frame, the same records.
  const std::string path = testing::TraceFileBuilder::TempPath("v2_ranges.trace");
  std::ofstream(path, std::ios::binary) << bytes;
  for (const std::string& file : {std::string(kV1File), path}) {
    SCOPED_TRACE(file);
    StringTable strings;
    ProcessTrace process;
    std::vector<RangeRecord> ranges;
    std::vector<MarkRecord> marks;
    std::vector<std::string> names, warnings;
    ASSERT_TRUE(StreamTraceFile(
        file, &strings, &process,
        [&](const ProcessTrace& batch) {
          for (const RangeRecord& r : batch.ranges) {
            ranges.push_back(r);
            names.emplace_back(strings.Get(r.name));
          }
          marks.insert(marks.end(), batch.marks.begin(), batch.marks.end());
        },
        &warnings, &error))
        << error;
    EXPECT_TRUE(warnings.empty());
    ASSERT_EQ(ranges.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(i);
      ExpectSameRange(a[i].r, ranges[i]);
      EXPECT_EQ(a[i].name, names[i]);
    }
    ASSERT_EQ(marks.size(), old.marks.size());
    for (size_t i = 0; i < marks.size(); ++i) ExpectSameMark(old.marks[i], marks[i]);
  }
  std::remove(path.c_str());
}

// Every field at its extremes through the batches and the reader: the
// reader's own rules still apply (an end before the start reads as the
// start, thread ids past its direct table are remapped in order of first
// use, push/pop ranges deeper than 256 levels are left out) and nothing
// else changes.
TEST(RangeBatchReaderTest, FieldsAtExtremesRoundTripThroughTheReader) {
  std::string bytes;
  AppendFileMagic(&bytes);
  ChunkBuilder b;
  b.SetHeader(HeaderInfo{});
  b.AddString(1, "a");
  b.AddString(UINT32_MAX, "last");
  std::vector<RangeRecord> in;
  std::vector<MarkRecord> marks;
  for (int kind = 0; kind < 4; ++kind) {
    RangeRecord r;
    r.id = UINT64_MAX - static_cast<uint64_t>(kind);
    r.parent_id = kind == 3 ? r.id : UINT64_MAX - 7;  // one parent equal to the id
    r.thread = kind % 2 == 0 ? 1 : 2;                 // interleaved threads
    r.name = kind == 0 ? 1 : UINT32_MAX;
    r.domain = UINT32_MAX;
    r.category = UINT32_MAX;
    r.start_ns = kind == 2 ? 0 : UINT64_MAX - 1;
    r.end_ns = UINT64_MAX;
    r.kind = RangeKind::kStartEnd;  // depth limit applies to push/pop only
    r.depth = UINT32_MAX;
    r.end_thread = kind == 1 ? 1 : 2;
    r.flags = UINT32_MAX;
    r.color = UINT32_MAX;
    MarkRecord m;
    m.time_ns = kind == 2 ? 0 : UINT64_MAX;
    m.thread = r.thread;
    m.name = r.name;
    m.domain = UINT32_MAX;
    m.category = UINT32_MAX;
    m.color = UINT32_MAX;
    if (kind == 1) {
      r.payload.type = PayloadValue::Type::kU64;
      r.payload.u64 = UINT64_MAX;
    } else if (kind == 2) {
      r.payload.type = PayloadValue::Type::kI64;
      r.payload.i64 = INT64_MIN;
    } else if (kind == 3) {
      r.payload.type = PayloadValue::Type::kF64;
      r.payload.f64 = -0.0;
    }
    m.payload = r.payload;
    in.push_back(r);
    marks.push_back(m);
  }
  RangeRecord zero;  // every field 0
  in.push_back(zero);
  marks.push_back(MarkRecord{});
  RangeRecord deep;  // left out by the reader, but still moves thread 1's deltas
  deep.thread = 1;
  deep.id = 5;
  deep.depth = 256;
  deep.start_ns = 10;
  deep.end_ns = 20;
  in.push_back(deep);
  RangeRecord after;
  after.thread = 1;
  after.id = 6;
  after.parent_id = 5;
  after.depth = 255;
  after.start_ns = 11;
  after.end_ns = 5;  // before its start: read as the start
  in.push_back(after);
  for (const RangeRecord& r : in) b.AddRange(r);
  for (const MarkRecord& m : marks) b.AddMark(m);
  b.FinishFrame(&bytes);

  Trace t;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "x.trace", &t, &error)) << error;
  const ProcessTrace& p = t.processes.at(0);
  ASSERT_EQ(p.ranges.size(), in.size() - 1);
  in.erase(in.end() - 2);  // the one too deep
  in.back().end_ns = in.back().start_ns;
  // A push/pop range without an end thread is written as ending on its own
  // thread (trace.proto RangeBatch.end_thread_delta).
  in.back().end_thread = in.back().thread;
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("1 range(s) recorded deeper than 256"), std::string::npos);
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameRange(p.ranges[i], in[i]);
    EXPECT_EQ(t.strings.Get(p.ranges[i].name), in[i].name == 0   ? ""
                                               : in[i].name == 1 ? "a"
                                                                 : "last");
  }
  EXPECT_DOUBLE_EQ(p.ranges[3].payload.f64, -0.0);
  EXPECT_TRUE(std::signbit(p.ranges[3].payload.f64));
  ASSERT_EQ(p.marks.size(), marks.size());
  for (size_t i = 0; i < marks.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameMark(p.marks[i], marks[i]);
  }
}

// A batch from a foreign writer: thread ids past the reader's direct table
// (remapped to compact ids), rows of one thread split by another's, deltas
// taken per thread as written.
TEST(RangeBatchReaderTest, PerThreadDeltasFollowTheThreadIdAsWritten) {
  std::string bytes;
  AppendFileMagic(&bytes);
  ChunkBuilder b;
  b.SetHeader(HeaderInfo{});
  std::vector<RangeRecord> in;
  const uint32_t threads[] = {5000000, 3, 5000000, 4000000000u, 3, 5000000};
  uint64_t t = 1'700'000'000'000'000'000ull;
  for (size_t i = 0; i < 6; ++i) {
    RangeRecord r;
    r.thread = threads[i];
    r.end_thread = threads[i];
    r.id = (uint64_t{threads[i]} << 24) | i;
    r.start_ns = t + 1000 * i;
    r.end_ns = r.start_ns + 10;
    in.push_back(r);
  }
  for (const RangeRecord& r : in) b.AddRange(r);
  b.FinishFrame(&bytes);
  Trace tr;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "x.trace", &tr, &error)) << error;
  const ProcessTrace& p = tr.processes.at(0);
  ASSERT_EQ(p.ranges.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(p.ranges[i].id, in[i].id);
    EXPECT_EQ(p.ranges[i].start_ns, in[i].start_ns);
    EXPECT_EQ(p.ranges[i].end_ns, in[i].end_ns);
    EXPECT_EQ(p.ranges[i].thread, p.ranges[i].end_thread);
  }
  // Compact ids: 3 keeps its value, the large ones get 4096, 4097 in order.
  EXPECT_EQ(p.ranges[0].thread, 4096u);
  EXPECT_EQ(p.ranges[1].thread, 3u);
  EXPECT_EQ(p.ranges[3].thread, 4097u);
}

}  // namespace
}  // namespace tracer::analysis
