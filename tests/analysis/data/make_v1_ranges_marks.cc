// How v1_ranges_marks.trace was made: compiled against libtracer_core of the
// tree before range/mark batches (format version 1, one Range / Mark message
// per record) and run once; the output is checked in and read by
// reader_test.cc (OldVersionFileReadsIntoTheSameRecords). Not built: it only
// documents the file's contents.
//
//   g++ -std=c++17 -I. make_v1_ranges_marks.cc libtracer_core.a -lz
#include <cstdio>
#include <cstdint>
#include <string>

#include "libtracer/core/chunk_builder.h"

using namespace tracer;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string out;
  AppendFileMagic(&out);
  ChunkBuilder b;
  HeaderInfo h;
  h.tracer_version = "0.1.0-v1";
  h.host = "v1host";
  h.pid = 4242;
  h.rank = 1;
  h.world_size = 2;
  h.clock_description = "v1 test clock";
  h.session_start_wall_ns = 1700000000000000000ull;
  h.session_start_trace_ns = 1000;
  b.SetHeader(h);
  b.AddString(1, "outer");
  b.AddString(2, "inner");
  b.AddString(3, "async");
  b.AddString(4, "mydomain");
  b.AddString(5, "mycategory");
  b.AddString(6, "tick");
  b.AddString(7, "main");
  b.AddThread({1, 5001, 7, 0x7f0000001000ull});
  b.AddThread({2, 5002, 0, 0x7f0000002000ull});
  b.AddDomain({1, 4});
  b.AddCategory({1, 3, 5});

  const uint64_t t1 = uint64_t{1} << 40;
  RangeRecord inner;  // closes first (pop order)
  inner.id = t1 | 2;
  inner.parent_id = t1 | 1;
  inner.thread = 1;
  inner.name = 2;
  inner.start_ns = 2000;
  inner.end_ns = 2500;
  inner.depth = 1;
  inner.end_thread = 1;
  inner.color = 0xff00ff00u;
  inner.payload.type = PayloadValue::Type::kU64;
  inner.payload.u64 = 77;
  b.AddRange(inner);
  RangeRecord outer;
  outer.id = t1 | 1;
  outer.thread = 1;
  outer.name = 1;
  outer.start_ns = 1500;
  outer.end_ns = 3000;
  outer.end_thread = 1;
  b.AddRange(outer);
  RangeRecord async;  // start/end, ended on another thread, in a domain
  async.id = t1 | 3;
  async.thread = 1;
  async.end_thread = 2;
  async.name = 3;
  async.domain = 1;
  async.category = 3;
  async.kind = RangeKind::kStartEnd;
  async.start_ns = 2200;
  async.end_ns = 4000;
  async.payload.type = PayloadValue::Type::kF64;
  async.payload.f64 = 2.5;
  b.AddRange(async);
  MarkRecord m;
  m.time_ns = 2300;
  m.thread = 2;
  m.name = 6;
  m.domain = 1;
  m.category = 3;
  m.color = 0xffff0000u;
  m.payload.type = PayloadValue::Type::kI64;
  m.payload.i64 = -5;
  b.AddMark(m);
  b.FinishFrame(&out);

  // Second frame: extremes and an unclosed range.
  b.AddString(8, "big");
  RangeRecord big;
  big.id = UINT64_MAX;
  big.parent_id = UINT64_MAX - 1;
  big.thread = 2;
  big.end_thread = 2;
  big.name = 8;
  big.domain = 1;
  big.category = UINT32_MAX;
  big.start_ns = UINT64_MAX - 10;
  big.end_ns = UINT64_MAX;
  big.depth = 255;
  big.flags = 2;
  big.color = UINT32_MAX;
  big.payload.type = PayloadValue::Type::kI64;
  big.payload.i64 = INT64_MIN;
  b.AddRange(big);
  RangeRecord unclosed;
  unclosed.id = (uint64_t{2} << 40) | 1;
  unclosed.thread = 2;
  unclosed.end_thread = 2;
  unclosed.name = 1;
  unclosed.start_ns = 3500;
  unclosed.end_ns = 5000;
  unclosed.flags = 1;
  b.AddRange(unclosed);
  MarkRecord m2;
  m2.time_ns = 4500;
  m2.thread = 1;
  m2.name = 6;
  b.AddMark(m2);
  FooterInfo f;
  f.session_end_trace_ns = 5000;
  f.records_by_kind = {{"ranges", 5}, {"marks", 2}};
  b.SetFooter(f);
  b.FinishFrame(&out);
  FILE* fp = std::fopen(argv[1], "wb");
  if (fp == nullptr) return 1;
  std::fwrite(out.data(), 1, out.size(), fp);
  return std::fclose(fp) == 0 ? 0 : 1;
}
