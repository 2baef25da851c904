// Reader of our stream format: round trip of every record kind, string id
// remapping, merging, damaged files (one warning, records before kept) and
// random input (never a crash).
#include "libtracer/analysis/read/reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "libtracer/analysis/export/chrome_export.h"
#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "proto/trace.pb.h"
#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis {
namespace {

using testing::TraceFileBuilder;

// Three frames: definitions + 2 ranges, then kernels, then API/launch/memcpy.
// Returns the start offsets of the frames.
std::vector<size_t> BuildThreeFrames(TraceFileBuilder* b) {
  std::vector<size_t> at;
  b->Thread(1, 100, "main");
  b->Stream(1, 0, 7);
  b->Range(1, 0, 1, "step", 1000, 9000);
  b->Range(2, 1, 1, "layer", 2000, 5000, 1);
  b->Counter("dropped_nvtx_ring_full", 2);
  at.push_back(b->Frame());
  b->Kernel("_Z4gemmv", 1, 3000, 3500, 11);
  b->Kernel("_Z4gemmv", 1, 3600, 3700, 12, /*graph=*/5, /*node=*/6);
  b->Counter("dropped_nvtx_ring_full", 3);
  at.push_back(b->Frame());
  b->Launch(11, 1, 2100, 2);
  b->Launch(12, 1, 2200, 2);
  b->Api("cudaLaunchKernel", 1, 2100, 2150, 11);
  b->Memcpy(1, 4096, 1, 4000, 4100, 13);
  at.push_back(b->Frame());
  return at;
}

TEST(ReaderTest, RoundTripRemapsStringsAndDecodesBatches) {
  TraceFileBuilder b(4242);
  BuildThreeFrames(&b);
  Trace trace;
  // Pre-existing strings shift the global ids away from the file's ids.
  trace.strings.Intern("something else");
  trace.strings.Intern("and more");
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "t.trace", &trace, &error)) << error;
  EXPECT_TRUE(trace.warnings.empty());
  ASSERT_EQ(trace.processes.size(), 1u);
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(p.header.pid, 4242u);
  EXPECT_EQ(p.source_file, "t.trace");
  ASSERT_EQ(p.ranges.size(), 2u);
  EXPECT_EQ(trace.strings.Get(p.ranges[0].name), "step");
  EXPECT_EQ(trace.strings.Get(p.ranges[1].name), "layer");
  EXPECT_EQ(p.ranges[1].parent_id, 1u);
  EXPECT_EQ(trace.strings.Get(p.threads[1].name), "main");
  EXPECT_EQ(p.threads[1].os_tid, 100u);
  EXPECT_EQ(p.streams[1].stream, 7u);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].start_ns, 3000u);
  EXPECT_EQ(p.kernels[0].end_ns, 3500u);
  EXPECT_EQ(p.kernels[1].start_ns, 3600u);  // delta from the previous row
  EXPECT_EQ(p.kernels[1].correlation_id, 12u);
  EXPECT_EQ(p.kernels[1].graph_id, 5u);
  EXPECT_EQ(p.kernels[1].graph_node_id, 6u);
  EXPECT_EQ(p.kernels[0].graph_id, 0u);
  EXPECT_EQ(trace.strings.Get(p.kernels[0].name), "_Z4gemmv");
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[1].range_id, 2u);
  EXPECT_EQ(p.launches[1].time_ns, 2200u);
  ASSERT_EQ(p.api_calls.size(), 1u);
  EXPECT_EQ(trace.strings.Get(p.api_calls[0].name), "cudaLaunchKernel");
  ASSERT_EQ(p.memcpys.size(), 1u);
  EXPECT_EQ(p.memcpys[0].bytes, 4096u);
  EXPECT_EQ(p.memcpys[0].copy_kind, 1u);
  // 2 + 3 over two chunks.
  EXPECT_EQ(p.counters.at("dropped_nvtx_ring_full"), 5u);
  EXPECT_FALSE(p.footer.has_value());
}

TEST(ReaderTest, DeltasRestartPerBatchAndMissingColumnsReadAsZero) {
  TraceFileBuilder b;
  // Stream id 0 and duration 0 on every row: those columns are left out.
  b.Kernel("k", 0, 5000, 5000, 1);
  b.Kernel("k", 0, 6000, 6000, 2);
  b.Frame();
  b.Kernel("k", 0, 7000, 7000, 3);  // a new batch: first delta is from 0
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "z.trace", &trace, &error));
  const auto& k = trace.processes[0].kernels;
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[2].start_ns, 7000u);
  EXPECT_EQ(k[2].correlation_id, 3u);
  for (const auto& x : k) {
    EXPECT_EQ(x.stream, 0u);
    EXPECT_EQ(x.end_ns, x.start_ns);
  }
}

TEST(ReaderTest, FooterIsRead) {
  TraceFileBuilder b;
  b.Range(1, 0, 1, "r", 1, 2);
  b.Frame();
  FooterInfo f;
  f.session_end_trace_ns = 99;
  f.dropped_by_cause = {{"cupti_dropped", 7}};
  b.Footer(f);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "f.trace", &trace, &error));
  ASSERT_TRUE(trace.processes[0].footer.has_value());
  EXPECT_EQ(trace.processes[0].footer->session_end_trace_ns, 99u);
  EXPECT_EQ(trace.processes[0].footer->dropped_by_cause[0].second, 7u);
}

// The progress callback (the CLI's progress bar) sees every 64th frame and a
// last call at 100 %, never going backwards.
TEST(ReaderTest, ProgressIsMonotonicAndEndsAtTheTotal) {
  TraceFileBuilder b;
  for (int i = 0; i < 130; ++i) {
    b.Range(1 + i, 0, 1, "r", 10 * i, 10 * i + 5);
    b.Frame();
  }
  const std::string& bytes = b.Bytes();
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "p.trace", &trace, &error, [&](uint64_t done, uint64_t total) {
    calls.emplace_back(done, total);
  }));
  EXPECT_EQ(trace.processes[0].ranges.size(), 130u);
  // Frames 64 and 128, then the final call.
  ASSERT_EQ(calls.size(), 3u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, bytes.size());
    if (i > 0) {
      EXPECT_GT(calls[i].first, calls[i - 1].first);
    }
  }
  EXPECT_LT(calls[0].first, bytes.size());
  EXPECT_EQ(calls.back().first, bytes.size());
}

TEST(ReaderTest, CutMidFrameKeepsEarlierFramesWithOneWarning) {
  TraceFileBuilder b;
  const std::vector<size_t> at = BuildThreeFrames(&b);
  const std::string& full = b.Bytes();
  // Cut 5 bytes into the third frame's payload.
  const std::string cut = full.substr(0, at[2] + 8 + 5);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(cut, "cut.trace", &trace, &error));
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(p.ranges.size(), 2u);   // frame 1
  EXPECT_EQ(p.kernels.size(), 2u);  // frame 2
  EXPECT_TRUE(p.launches.empty());  // frame 3 lost
  ASSERT_EQ(trace.warnings.size(), 1u);
  const std::string& w = trace.warnings[0];
  EXPECT_NE(w.find("cut.trace"), std::string::npos) << w;
  EXPECT_NE(w.find("byte " + std::to_string(at[2])), std::string::npos) << w;
  EXPECT_NE(w.find("cut short"), std::string::npos) << w;
  EXPECT_NE(w.find("2 frame(s) before it kept"), std::string::npos) << w;
}

TEST(ReaderTest, FlippedByteIsACrcMismatchAndLaterFramesAreCounted) {
  TraceFileBuilder b;
  const std::vector<size_t> at = BuildThreeFrames(&b);
  std::string bytes = b.Bytes();
  bytes[at[1] + 8 + 3] ^= 0x40;  // inside frame 2's payload
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "flip.trace", &trace, &error));
  EXPECT_EQ(trace.processes[0].ranges.size(), 2u);
  EXPECT_TRUE(trace.processes[0].kernels.empty());
  ASSERT_EQ(trace.warnings.size(), 1u);
  const std::string& w = trace.warnings[0];
  EXPECT_NE(w.find("byte " + std::to_string(at[1])), std::string::npos) << w;
  EXPECT_NE(w.find("CRC mismatch"), std::string::npos) << w;
  // Frame 3 is still well-formed behind the damaged frame 2.
  EXPECT_NE(w.find("1 frame(s) after it"), std::string::npos) << w;
}

TEST(ReaderTest, NotATraceFails) {
  Trace trace;
  std::string error;
  EXPECT_FALSE(ReadTraceBytes("hello world, not a trace", "x.txt", &trace, &error));
  EXPECT_NE(error.find("x.txt"), std::string::npos);
  EXPECT_TRUE(trace.processes.empty());
  EXPECT_FALSE(ReadTraceFile("/nonexistent/dir/none.trace", &trace, &error));
  EXPECT_NE(error.find("none.trace"), std::string::npos);
  EXPECT_FALSE(LoadInput("/nonexistent/dir/none.trace", &trace, &error));
}

TEST(ReaderTest, FilesMergeAsProcessesSharingStrings) {
  TraceFileBuilder a(1), b(2);
  a.Range(1, 0, 1, "step", 0, 10);
  b.Range(1, 0, 1, "other", 0, 10);
  b.Range(2, 0, 1, "step", 20, 30);
  const std::string pa = a.WriteTemp("merge_a.trace");
  const std::string pb = b.WriteTemp("merge_b.trace");
  Trace trace;
  std::string error;
  ASSERT_TRUE(LoadInput(pa, &trace, &error)) << error;
  ASSERT_TRUE(LoadInput(pb, &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 2u);
  EXPECT_EQ(trace.processes[0].header.pid, 1u);
  EXPECT_EQ(trace.processes[1].header.pid, 2u);
  // "step" is one global id in both processes.
  EXPECT_EQ(trace.processes[0].ranges[0].name, trace.processes[1].ranges[1].name);
  std::remove(pa.c_str());
  std::remove(pb.c_str());
}

// Runs every consumer over whatever was read, so the fuzz loop checks the
// whole pipeline, not only the decoder.
void ConsumeEverything(const Trace& trace) {
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  ReportOptions o;
  for (const Table& t :
       {SummaryTable(analyzed, o), RangesTable(analyzed, o), KernelsTable(analyzed, o),
        RangeKernelsTable(analyzed, o), GpuProjectionTable(analyzed, o),
        MemoryOpsTable(analyzed, o), ApiTable(analyzed, o)}) {
    (void)RenderTable(t, OutputFormat::kText);
    (void)RenderTable(t, OutputFormat::kJson);
  }
  std::ostringstream out;
  std::string error;
  EXPECT_TRUE(WriteChromeTrace(trace, out, &error));
}

std::string Frame(const std::string& payload) {
  std::string out(8, '\0');
  const uint32_t len = static_cast<uint32_t>(payload.size());
  const uint32_t crc =
      static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), len));
  std::memcpy(out.data(), &len, 4);
  std::memcpy(out.data() + 4, &crc, 4);
  return out + payload;
}

// Where the process stands in a multi-process job (rank, world size, local
// rank, device) reads back as written; local rank 0 is a rank, not "unset".
TEST(ReaderTest, RankWorldSizeAndDeviceAreRead) {
  TraceFileBuilder b(7);
  HeaderInfo h;
  h.pid = 7;
  h.host = "node3";
  h.rank = 5;
  h.world_size = 8;
  h.local_rank = 0;
  h.device = "4";
  h.cuda_visible_devices = "4,5";
  b.Header(h);
  b.Range(1, 0, 1, "step", 0, 10);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "ranked", &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 1u);
  const HeaderInfo& x = trace.processes[0].header;
  EXPECT_EQ(x.host, "node3");
  EXPECT_EQ(x.rank, 5);
  EXPECT_EQ(x.world_size, 8);
  EXPECT_EQ(x.local_rank, 0);
  EXPECT_EQ(x.device, "4");
  EXPECT_EQ(x.cuda_visible_devices, "4,5");
  // The summary says where the process stood.
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table summary = SummaryTable(analyzed, ReportOptions{});
  bool found = false;
  for (const auto& n : summary.notes) {
    found |= n == "rank 5 (pid 7): rank 5 of 8, local rank 0, host node3, device 4";
  }
  EXPECT_TRUE(found) << RenderTable(summary, OutputFormat::kText);
}

// A file written before world size, local rank and device were recorded: a
// header holding fields 1-12 only (built with the protobuf classes, as the
// old writer's bytes decode) reads with them unknown, and the rest intact.
TEST(ReaderTest, OldHeaderWithoutRankFieldsReadsAsUnknown) {
  proto::Header old;
  old.set_format_version(1);
  old.set_host("oldhost");
  old.set_pid(99);
  old.set_rank(1);
  old.set_session_start_trace_ns(5);
  proto::Chunk chunk;
  *chunk.mutable_header() = old;
  std::string bytes;
  AppendFileMagic(&bytes);
  bytes += Frame(chunk.SerializeAsString());
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "old", &trace, &error)) << error;
  ASSERT_EQ(trace.processes.size(), 1u);
  const HeaderInfo& x = trace.processes[0].header;
  EXPECT_EQ(x.host, "oldhost");
  EXPECT_EQ(x.pid, 99u);
  EXPECT_EQ(x.rank, 1);
  EXPECT_EQ(x.world_size, 0);
  EXPECT_EQ(x.local_rank, -1);
  EXPECT_EQ(x.device, "");
  EXPECT_EQ(x.cuda_visible_devices, "");
}

TEST(ReaderFuzzTest, RandomTruncationsFlipsAndPayloadsNeverCrash) {
  TraceFileBuilder b;
  BuildThreeFrames(&b);
  const std::string valid = b.Bytes();
  std::mt19937 rng(12345);  // fixed seed: reproducible
  for (int iter = 0; iter < 300; ++iter) {
    std::string bytes = valid;
    switch (iter % 3) {
      case 0:  // truncated anywhere after the magic
        bytes.resize(8 + rng() % (valid.size() - 8));
        break;
      case 1:  // a few flipped bytes
        for (int k = 0; k < 3; ++k) bytes[8 + rng() % (bytes.size() - 8)] ^= (1 + rng() % 255);
        break;
      case 2: {  // random payloads with valid framing: reaches the decoder
        bytes.assign(kTraceMagic, sizeof(kTraceMagic));
        for (int f = 0; f < 3; ++f) {
          std::string payload(1 + rng() % 200, '\0');
          for (char& c : payload) c = static_cast<char>(rng());
          bytes += Frame(payload);
        }
        break;
      }
    }
    Trace trace;
    std::string error;
    ASSERT_TRUE(ReadTraceBytes(bytes, "fuzz.trace", &trace, &error)) << error;
    ConsumeEverything(trace);
  }
}

TEST(ReaderFuzzTest, MutatedValidPayloadsWithRecomputedCrc) {
  // Flipping bytes inside a payload and fixing the CRC exercises the decoder
  // on almost-valid chunks (bad ids, ragged columns, odd values).
  TraceFileBuilder b;
  const std::vector<size_t> at = BuildThreeFrames(&b);
  const std::string valid = b.Bytes();
  std::mt19937 rng(777);
  for (int iter = 0; iter < 300; ++iter) {
    std::string bytes = valid.substr(0, 8);
    for (size_t f = 0; f < at.size(); ++f) {
      const size_t begin = at[f] + 8;
      const size_t end = f + 1 < at.size() ? at[f + 1] : valid.size();
      std::string payload = valid.substr(begin, end - begin);
      payload[rng() % payload.size()] ^= static_cast<char>(1 + rng() % 255);
      bytes += Frame(payload);
    }
    Trace trace;
    std::string error;
    ASSERT_TRUE(ReadTraceBytes(bytes, "mut.trace", &trace, &error));
    ConsumeEverything(trace);
  }
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

TEST(ReaderTest, NonUtf8RangeNameDoesNotLoseTheChunk) {
  // NVTX ASCII messages are arbitrary bytes (e.g. Latin-1 "caf\xe9").
  TraceFileBuilder b;
  b.Range(1, 0, 1, "caf\xe9", 0, 10);
  b.Range(2, 0, 1, "ok", 20, 30);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "latin1.trace", &trace, &error));
  EXPECT_EQ(trace.processes[0].ranges.size(), 2u);
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings[0];
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

// Issue 12 (7): a 108-byte trace with thread, stream and launch-config ids of
// 2^24 - 1 made the reader allocate 1.6 GB (the ids sized dense vectors).
// Large ids are renumbered compactly; every reference still resolves.
TEST(ReaderTest, HugeIdsDoNotSizeVectorsAndStillResolve) {
  constexpr uint32_t kHuge = (1u << 24) - 1, kMax = UINT32_MAX;
  TraceFileBuilder b;
  b.Thread(kHuge, 777, "worker");
  b.Thread(kMax, 778);
  b.Thread(1, 779);
  b.Stream(kHuge, 3, 42);
  LaunchConfigRecord lc;
  lc.id = kMax;
  lc.grid[0] = 9;
  b.builder().AddLaunchConfig(lc);
  b.Range(1, 0, kHuge, "outer", 100, 900);
  b.Range(2, 0, kMax, "other", 100, 900);
  KernelRecord k;
  k.name = b.Str("k");
  k.stream = kHuge;
  k.launch_config = kMax;
  k.start_ns = 200;
  k.end_ns = 300;
  k.correlation_id = 5;
  b.builder().AddKernel(k);
  b.Launch(5, kHuge, 150, 1);
  const std::string bytes = b.Bytes();
  ASSERT_LT(bytes.size(), 400u);

  auto check = [&](const ProcessTrace& p, const StringTable& strings) {
    EXPECT_LE(p.threads.size(), 4100u);
    EXPECT_LE(p.streams.size(), 4100u);
    EXPECT_LE(p.launch_configs.size(), 4100u);
    ASSERT_EQ(p.ranges.size(), 2u);
    ASSERT_LT(p.ranges[0].thread, p.threads.size());
    EXPECT_EQ(p.threads[p.ranges[0].thread].os_tid, 777u);
    EXPECT_EQ(strings.Get(p.threads[p.ranges[0].thread].name), "worker");
    ASSERT_LT(p.ranges[1].thread, p.threads.size());
    EXPECT_EQ(p.threads[p.ranges[1].thread].os_tid, 778u);
    EXPECT_EQ(p.threads[1].os_tid, 779u);  // small ids keep their value
  };
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(bytes, "ids.trace", &trace, &error)) << error;
  EXPECT_TRUE(trace.warnings.empty()) << trace.warnings[0];
  const ProcessTrace& p = trace.processes[0];
  check(p, trace.strings);
  ASSERT_EQ(p.kernels.size(), 1u);
  ASSERT_LT(p.kernels[0].stream, p.streams.size());
  EXPECT_EQ(p.streams[p.kernels[0].stream].device, 3u);
  ASSERT_LT(p.kernels[0].launch_config, p.launch_configs.size());
  EXPECT_EQ(p.launch_configs[p.kernels[0].launch_config].grid[0], 9u);
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].thread, p.ranges[0].thread);

  // The whole report works on it, and the kernel is attributed to its range.
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const std::string text = RenderTable(RangesTable(analyzed, ReportOptions{}), OutputFormat::kText);
  EXPECT_NE(text.find("777 (worker)"), std::string::npos) << text;

  // Streaming reads the same way, frame by frame.
  const std::string path = b.WriteTemp("huge_ids.trace");
  StringTable strings;
  ProcessTrace streamed;
  std::vector<std::string> warnings;
  std::vector<RangeRecord> ranges;
  ASSERT_TRUE(StreamTraceFile(
      path, &strings, &streamed,
      [&](const ProcessTrace& batch) {
        ranges.insert(ranges.end(), batch.ranges.begin(), batch.ranges.end());
      },
      &warnings, &error))
      << error;
  streamed.ranges = ranges;
  check(streamed, strings);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

// Issue 12 (9): a payload libprotobuf rejects (invalid UTF-8 in a proto3
// string field) printed a raw "[libprotobuf ERROR ...]" line besides our
// one warning.
TEST(ReaderTest, UnparsablePayloadGivesOurWarningOnlyNoLibprotobufLine) {
  TraceFileBuilder b;
  b.Range(1, 0, 1, "kept", 0, 10);
  b.Frame();
  HeaderInfo h;
  h.host = "bad\xff\xfe host";  // proto3 `string`: must be UTF-8
  b.builder().SetHeader(h);
  b.Range(2, 0, 1, "lost", 20, 30);
  const size_t second = b.Frame();
  b.Range(3, 0, 1, "after", 40, 50);
  const std::string bytes = b.Bytes();
  Trace trace;
  std::string error;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(ReadTraceBytes(bytes, "utf8.trace", &trace, &error)) << error;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("libprotobuf"), std::string::npos) << err;
  // Only the bad frame is lost: the one after it is read.
  ASSERT_EQ(trace.processes[0].ranges.size(), 2u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0],
            "utf8.trace: 1 frame(s) whose payload does not parse skipped (the first at byte " +
                std::to_string(second) + "); the frames around them are read");
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

// Issue 12 (9): 100 k nested pushes were read as 100 k ranges at depths far
// past the capture's 256-level stack. The reader applies the same limit:
// ranges recorded deeper are left out and counted in one warning; GPU work
// launched inside them counts toward the innermost kept ancestor.
TEST(ReaderTest, RangesRecordedDeeperThanTheCaptureLimitAreLeftOutAndCounted) {
  constexpr uint64_t kLevels = 300;
  TraceFileBuilder b;
  b.Thread(1, 100);
  b.Stream(1, 0, 7);
  // The writer's order: the innermost range ends (is written) first.
  b.Launch(1, 1, 5000, kLevels);  // launched in the deepest range
  b.Kernel("deep_kernel", 1, 6000, 7000, 1);
  for (uint64_t d = kLevels; d-- > 0;) {
    b.Range(d + 1, d, 1, "level", 1000 + d, 100000 - d, static_cast<uint32_t>(d));
  }
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "deep.trace", &trace, &error)) << error;
  const ProcessTrace& p = trace.processes[0];
  EXPECT_EQ(p.ranges.size(), 256u);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0],
            "deep.trace: 44 range(s) recorded deeper than 256 levels (the capture's nesting "
            "limit) left out; GPU work launched inside them counts toward their innermost kept "
            "ancestor");
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const auto& pa = analyzed.process(0);
  const auto stack = pa.attribution.Stack(OpKind::kKernel, 0);
  ASSERT_EQ(stack.size(), 256u);
  EXPECT_EQ(p.ranges[stack[0]].id, 256u);  // the level-255 range
  EXPECT_EQ(pa.ranges.Depth(stack[0]), 255u);
}

// A crafted file can still chain parents deeper than its recorded depths say
// (imports compute nesting themselves): the range index caps the chain, so
// attribution, which copies each GPU op's chain, stays bounded.
TEST(ReaderTest, ParentChainsDeeperThanTheLimitAreFlattenedInTheIndex) {
  constexpr uint64_t kLevels = 1000;
  TraceFileBuilder b;
  b.Thread(1, 100);
  for (uint64_t d = 0; d < kLevels; ++d) b.Range(d + 1, d, 1, "level", 1000 + d, 100000 - d, 0);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "chain.trace", &trace, &error)) << error;
  ASSERT_EQ(trace.processes[0].ranges.size(), kLevels);
  const RangeIndex index(trace.processes[0]);
  EXPECT_EQ(index.flattened(), kLevels - kMaxNestingDepth);
  uint32_t max_depth = 0;
  size_t children = 0;
  for (uint32_t i = 0; i < kLevels; ++i) {
    max_depth = std::max(max_depth, index.Depth(i));
    std::vector<uint32_t> chain;
    index.AppendChain(i, &chain);
    EXPECT_LE(chain.size(), kMaxNestingDepth);
    EXPECT_EQ(chain.size(), index.Depth(i) + 1);
    children += index.Children(i).size();
  }
  EXPECT_EQ(max_depth, kMaxNestingDepth - 1);
  EXPECT_EQ(children, kLevels - 1);  // every range but the root is someone's child
}

// Issue 12 (9): the summary explains what ring drops do to nesting, and a
// file without footer no longer blames a kill alone (a full disk ends it the
// same way).
TEST(ReaderTest, SummaryNotesForRingDropsAndMissingFooter) {
  TraceFileBuilder b(5);
  b.Range(1, 0, 1, "r", 0, 10);
  b.Counter("dropped.nvtx_ring_full", 3);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "drops.trace", &trace, &error)) << error;
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table t = SummaryTable(analyzed, ReportOptions{});
  std::string notes;
  for (const auto& n : t.notes) notes += n + "\n";
  EXPECT_NE(notes.find("pid 5: NVTX events were dropped with a full thread buffer: a range whose "
                       "push was dropped is missing, and the ranges inside it show one level up"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("no footer: the program was killed, its disk filled up"), std::string::npos)
      << notes;
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

// Issue 12 (9): on a full disk `tracer run` still said "trace written". It
// now checks that the file ends with its footer frame.
TEST(ReaderTest, IncompleteTraceReasonTellsAClosedFileFromACutOne) {
  TraceFileBuilder b;
  b.Range(1, 0, 1, "r", 0, 10);
  b.Frame();
  b.Footer(FooterInfo{});
  const std::string closed = b.WriteTemp("closed.trace");
  EXPECT_EQ(IncompleteTraceReason(closed), "");
  std::ifstream in(closed, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = TraceFileBuilder::TempPath("cut.trace");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  EXPECT_NE(IncompleteTraceReason(cut).find("ends inside a frame"), std::string::npos)
      << IncompleteTraceReason(cut);
  TraceFileBuilder open_file;
  open_file.Range(1, 0, 1, "r", 0, 10);
  const std::string no_footer = open_file.WriteTemp("nofooter.trace");
  EXPECT_EQ(IncompleteTraceReason(no_footer), "no footer after 1 frame(s)");
  EXPECT_NE(IncompleteTraceReason("/nonexistent/x.trace").find("cannot open"), std::string::npos);
  for (const auto& p : {closed, cut, no_footer}) std::remove(p.c_str());
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

// StreamTraceFile reads and parses frames on a thread ahead of the caller:
// every frame's records still come in file order, one batch per frame, with
// the warnings of the whole read (an unparsable frame, a torn tail), and a
// callback that throws stops the reading without hanging.
TEST(ReaderTest, StreamingReadAheadKeepsFrameOrderWarningsAndStopsOnAThrow) {
  TraceFileBuilder b;
  size_t bad = 0;
  for (uint64_t f = 0; f < 40; ++f) {
    if (f == 17) {
      HeaderInfo h;
      h.host = "bad\xff host";  // proto3 `string`: must be UTF-8, the frame does not parse
      b.builder().SetHeader(h);
      b.Range(1000, 0, 1, "lost", 1, 2);
      bad = b.Frame();
      continue;
    }
    for (uint64_t i = 0; i < 3; ++i) b.Range(f * 10 + i + 1, 0, 1, "r", f * 100 + i, f * 100 + 50);
    b.Frame();
  }
  const std::string full = b.Bytes();
  const std::string torn = full.substr(0, full.size() - 5);  // the last frame cut short
  Trace whole;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(torn, "torn.trace", &whole, &error)) << error;
  ASSERT_EQ(whole.warnings.size(), 2u);

  const std::string path = TraceFileBuilder::TempPath("torn_stream.trace");
  std::ofstream(path, std::ios::binary) << torn;
  StringTable strings;
  ProcessTrace streamed;
  std::vector<std::string> warnings;
  std::vector<uint64_t> ids;
  size_t batches = 0;
  ASSERT_TRUE(StreamTraceFile(
      path, &strings, &streamed,
      [&](const ProcessTrace& batch) {
        ++batches;
        for (const RangeRecord& r : batch.ranges) ids.push_back(r.id);
      },
      &warnings, &error))
      << error;
  std::vector<uint64_t> expected;
  for (const RangeRecord& r : whole.processes[0].ranges) expected.push_back(r.id);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(batches, 38u);  // 40 frames, one unparsable, one torn
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("(the first at byte " + std::to_string(bad) + ")"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("cut short"), std::string::npos) << warnings[1];

  // A callback that throws on the third frame: the exception reaches the
  // caller, the reader thread is stopped and joined.
  size_t seen = 0;
  EXPECT_THROW(StreamTraceFile(
                   path, &strings, &streamed,
                   [&](const ProcessTrace&) {
                     if (++seen == 3) throw std::runtime_error("stop");
                   },
                   &warnings, &error),
               std::runtime_error);
  EXPECT_EQ(seen, 3u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tracer::analysis
