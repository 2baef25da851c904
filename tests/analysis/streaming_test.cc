// The bounded-memory streaming path (streaming_report.h, stream_aggregator.h,
// frame_scanner.h, duration_accumulator.h, correlation_window.h) against the
// in-memory path on the same files: same rows, memory held by open ranges
// only, damage handled alike.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/aggregate/correlation_window.h"
#include "libtracer/analysis/aggregate/duration_accumulator.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/importers/kineto_json_stream.h"
#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/importers/sqlite_db.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/stream_aggregator.h"
#include "libtracer/analysis/tables/streaming_report.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/analysis/duration_stats_expect.h"
#include "tests/analysis/run_tracer.h"
#include "tests/analysis/table_lookup.h"
#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis {
namespace {

using testing::TraceFileBuilder;

// ---------------------------------------------------------------- accumulator

TEST(DurationAccumulator, ExactUpToTheLimitEqualsComputeStats) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> values;
  DurationAccumulator acc;
  for (int i = 0; i < 5001; ++i) {
    const int64_t v = static_cast<int64_t>(rng() % 1'000'000);
    values.push_back(v);
    acc.Add(v);
  }
  const DurationStats want = ComputeStats(&values);
  const DurationStats got = acc.Stats();
  EXPECT_TRUE(acc.exact());
  ExpectSameStats(got, want);
}

TEST(DurationAccumulator, PastTheLimitMedianWithinBucketError) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // ns, 20 us median, wide tail
  std::vector<int64_t> values;
  DurationAccumulator a, b;
  const size_t n = 3 * DurationAccumulator::kExactLimit + 17;
  for (size_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(dist(rng));
    values.push_back(v);
    (i % 3 == 0 ? a : b).Add(v);
  }
  a.Merge(b);  // merging two accumulators equals adding everything to one
  EXPECT_FALSE(a.exact());
  const DurationStats want = ComputeStats(&values);
  const DurationStats got = a.Stats();
  ExpectSameTotals(got, want);
  EXPECT_LE(std::abs(got.median - want.median), want.median * 0.004 + 1) << want.median;
  EXPECT_LE(std::abs(got.stddev - want.stddev), want.stddev * 1e-6 + 1);
}

TEST(DurationAccumulator, BucketsAreExactBelow1024AndNarrowAbove) {
  for (int64_t v : {0, 1, 5, 1023}) EXPECT_EQ(DurationBucketMid(DurationBucket(v)), v);
  for (int64_t v : {1024LL, 1500LL, 99'999LL, 123'456'789LL, 9'000'000'000'000LL}) {
    const int64_t mid = DurationBucketMid(DurationBucket(v));
    EXPECT_LE(std::abs(mid - v), v / 256 + 1) << v;  // half a bucket of 1/128
  }
  EXPECT_LT(DurationBucket(2047), DurationBucket(2048));  // monotonic at a power of two
}

// ---------------------------------------------------------------- window

TEST(CorrelationWindow, FindsErasesAndEvictsOldestFirst) {
  CorrelationWindow<int> w;
  EXPECT_TRUE(w.Insert(100, 1));
  EXPECT_TRUE(w.Insert(102, 3));
  EXPECT_TRUE(w.Insert(101, 2));
  EXPECT_FALSE(w.Insert(101, 9));  // duplicate id keeps the first value
  EXPECT_TRUE(w.Insert(99, 0));    // below the window: set aside, still found
  const uint64_t far = 100 + CorrelationWindow<int>::kMaxSpan + 5;
  EXPECT_TRUE(w.Insert(far, 7));
  EXPECT_EQ(w.size(), 5u);
  ASSERT_NE(w.Find(101), nullptr);
  EXPECT_EQ(*w.Find(101), 2);
  EXPECT_EQ(*w.Find(99), 0);
  EXPECT_EQ(*w.Find(far), 7);
  w.Erase(100);
  EXPECT_EQ(w.Find(100), nullptr);
  std::vector<uint64_t> evicted;
  w.EvictTo(1, [&](uint64_t id, int) { evicted.push_back(id); });
  EXPECT_EQ(w.size(), 1u);
  // Set-aside ids first (99 and far, in any order), then the window's oldest.
  ASSERT_EQ(evicted.size(), 3u);
  EXPECT_EQ(evicted[2], 101u);
  EXPECT_NE(w.Find(102), nullptr);
}

// ---------------------------------------------------------------- the path

// A training-like program: threads (thread 1 is the main thread, os tid ==
// pid) run steps of layers of ops; every op has a launch record written
// before its innermost range's record (as the per-thread ring does), and
// its GPU record arrives 0-3 frames later, sometimes in the frame BEFORE its
// launch record (CUPTI buffers complete on their own thread). Some ops are
// memcpys; one captured CUDA graph replays per step with its kernels
// attributed through node snapshots; some launches happen outside ranges.
struct Program {
  int threads = 3, steps = 6, layers = 4, ops = 5;
  uint32_t seed = 1;
  bool with_graph = true;
  // Thread 1 (the main thread) holds a "train" range around everything, so
  // every launch of the other threads inherits it (attribution.h).
  bool main_range = false;
};

std::string WriteProgram(const Program& prog, const std::string& stem, uint32_t pid = 4242) {
  std::mt19937 rng(prog.seed);
  TraceFileBuilder b(pid);
  for (int t = 1; t <= prog.threads; ++t)
    b.Thread(t, t == 1 ? pid : pid + t, "t" + std::to_string(t));
  for (uint32_t s = 1; s <= 3; ++s) b.Stream(s, 0, 10 + s);
  b.builder().AddDomain({1, b.Str("dom")});
  // Records by frame; GPU records may land in a later (or earlier) frame.
  std::vector<std::vector<std::function<void()>>> frames(1);
  auto now = [&]() -> std::vector<std::function<void()>>& { return frames.back(); };
  auto at = [&](int delta) -> std::vector<std::function<void()>>& {
    const int i = std::max(0, static_cast<int>(frames.size()) - 1 + delta);
    while (static_cast<int>(frames.size()) <= i) frames.emplace_back();
    return frames[static_cast<size_t>(i)];
  };
  const char* kernels[] = {"gemm_kernel", "flash_fwd", "elementwise", "reduce_kernel"};
  uint64_t t = 1000, corr = 0, range_id = 0;
  const uint64_t train = prog.main_range ? 1'000'000 : 0;
  // Parent and depth offset of thread th's top-level ranges.
  auto root = [&](int th) { return th == 1 ? train : 0; };
  auto base = [&](int th) -> uint32_t { return th == 1 && train != 0 ? 1 : 0; };
  if (prog.with_graph) {
    // Graph captured inside "capture" on the main thread: nodes 1..3.
    const uint64_t cap = ++range_id;
    for (uint64_t node = 1; node <= 3; ++node) {
      now().push_back([&b, node, cap, t] { b.GraphSnapshot(77, node, cap, 1, t + node); });
    }
    now().push_back(
        [&b, cap, t, train] { b.Range(cap, train, 1, "capture", t, t + 50, train ? 1 : 0); });
    t += 100;
  }
  for (int step = 0; step < prog.steps; ++step) {
    for (int th = 1; th <= prog.threads; ++th) {
      const uint64_t step_id = ++range_id;
      const uint64_t step_start = t;
      for (int layer = 0; layer < prog.layers; ++layer) {
        const uint64_t layer_id = ++range_id;
        const uint64_t layer_start = t;
        const std::string lname = "layer_" + std::to_string(layer % 2);
        for (int op = 0; op < prog.ops; ++op) {
          const uint64_t c = ++corr;
          const uint64_t launch = t + 5;
          const uint32_t stream = 1 + static_cast<uint32_t>(rng() % 3);
          const uint64_t start = launch + 1000 + rng() % 500;
          const uint64_t end = start + 10 + rng() % 3000;
          // Op 0 of layer 1 is a leaf range of its own (depth 2).
          uint64_t owner = layer_id;
          uint64_t leaf = 0;
          if (op == 0 && layer == 1) {
            leaf = ++range_id;
            owner = leaf;
          }
          now().push_back([&b, c, th, launch, owner] { b.Launch(c, th, launch, owner); });
          const int delay = static_cast<int>(rng() % 5) - 1;  // -1: before the launch
          if (op == 3) {
            at(delay).push_back(
                [&b, stream, start, end, c] { b.Memcpy(1, 4096, stream, start, end, c); });
          } else {
            const std::string k = kernels[rng() % 4];
            at(delay).push_back(
                [&b, k, stream, start, end, c] { b.Kernel(k, stream, start, end, c); });
          }
          if (leaf != 0) {
            const uint32_t d = base(th) + 2;
            now().push_back([&b, leaf, layer_id, th, launch, d] {
              b.Range(leaf, layer_id, th, "leaf", launch - 2, launch + 20, d);
            });
          }
          t += 100;
          if (rng() % 4 == 0) frames.emplace_back();
        }
        const uint64_t layer_end = t;
        const uint32_t d = base(th) + 1;
        now().push_back([&b, layer_id, step_id, th, lname, layer_start, layer_end, d] {
          b.Range(layer_id, step_id, th, lname, layer_start, layer_end, d);
        });
      }
      if (prog.with_graph && th == 1) {
        // cudaGraphLaunch in the step: one launch record, three kernels.
        const uint64_t c = ++corr;
        const uint64_t launch = t + 3;
        now().push_back([&b, c, launch, step_id] { b.Launch(c, 1, launch, step_id); });
        for (uint64_t node = 1; node <= 3; ++node) {
          const uint64_t start = launch + 2000 + node * 100;
          at(1).push_back([&b, start, c, node] {
            b.Kernel("graph_kernel", 2, start, start + 50, c, 77, node);
          });
        }
        t += 50;
      }
      const uint64_t step_end = t + 10;
      const uint64_t parent = root(th);
      const uint32_t depth = base(th);
      now().push_back([&b, step_id, th, step_start, step_end, parent, depth] {
        RangeRecord r;
        r.id = step_id;
        r.parent_id = parent;
        r.depth = depth;
        r.thread = th;
        r.name = b.Str("step");
        r.domain = 1;
        r.start_ns = step_start;
        r.end_ns = step_end;
        b.builder().AddRange(r);
      });
      t += 20;
      // A launch outside every range, and an API call.
      const uint64_t c = ++corr;
      now().push_back([&b, c, th, t] { b.Launch(c, th, t, 0); });
      at(2).push_back([&b, c, t] { b.Kernel("lonely_kernel", 3, t + 900, t + 950, c); });
      now().push_back([&b, th, t] { b.Api("cudaLaunchKernel", th, t, t + 3, 0); });
      t += 30;
      frames.emplace_back();
    }
  }
  if (train != 0) {
    frames.emplace_back();
    now().push_back([&b, train, t] { b.Range(train, 0, 1, "train", 900, t + 10, 0); });
  }
  for (auto& f : frames) {
    for (auto& add : f) add();
    if (b.builder().pending_items() > 0) b.Frame();
  }
  return b.WriteTemp(stem);
}

// Rows as sorted strings, every column (busy, inherited and main thread
// included: the bounded path gives the whole-trace numbers or none).
std::vector<std::string> Rows(const Table& t) {
  std::vector<std::string> out;
  for (const auto& row : t.rows) {
    std::ostringstream s;
    for (size_t i = 0; i < row.size(); ++i) {
      if (const auto* v = std::get_if<int64_t>(&row[i]))
        s << *v;
      else if (const auto* d = std::get_if<double>(&row[i]))
        s << *d;
      else if (const auto* x = std::get_if<std::string>(&row[i]))
        s << *x;
      s << "|";
    }
    out.push_back(s.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string> kTables = {"summary", "ranges", "kernels", "range-kernels",
                                          "gpu",     "memory", "api"};

std::vector<Table> InMemory(const std::vector<std::string>& files, const ReportOptions& o,
                            const AttributionOptions& a = AttributionOptions()) {
  static std::vector<std::unique_ptr<Trace>> keep;  // tables reference strings
  keep.push_back(std::make_unique<Trace>());
  Trace& trace = *keep.back();
  for (const auto& f : files) {
    std::string error;
    // Streams and nsys exports, as `tracer report --no-stream` loads them.
    EXPECT_TRUE(LoadInput(f, &trace, &error)) << error;
  }
  EXPECT_EQ(SelectProcesses(o.processes, &trace), "");
  const AnalyzedTrace analyzed(trace, a);
  return {
      SummaryTable(analyzed, o),      RangesTable(analyzed, o),        KernelsTable(analyzed, o),
      RangeKernelsTable(analyzed, o), GpuProjectionTable(analyzed, o), MemoryOpsTable(analyzed, o),
      ApiTable(analyzed, o)};
}

StreamingResult Streamed(const std::vector<std::string>& files, const ReportOptions& o,
                         const AttributionOptions& a = AttributionOptions()) {
  std::vector<StreamingInput> in;
  for (const auto& f : files) in.push_back({f, {}});
  return StreamingTables(in, kTables, o, a);
}

void ExpectSameTables(const std::vector<std::string>& files, const ReportOptions& o,
                      const AttributionOptions& a = AttributionOptions(),
                      bool every_table_has_rows = true) {
  const std::vector<Table> want = InMemory(files, o, a);
  const StreamingResult got = Streamed(files, o, a);
  ASSERT_TRUE(got.inexact.empty()) << got.inexact.front();
  ASSERT_EQ(got.tables.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got.tables[i].name, want[i].name);
    ASSERT_EQ(got.tables[i].columns.size(), want[i].columns.size());
    for (size_t c = 0; c < want[i].columns.size(); ++c)
      EXPECT_EQ(got.tables[i].columns[c].name, want[i].columns[c].name);
    if (every_table_has_rows) {
      EXPECT_FALSE(want[i].rows.empty());
    }
    EXPECT_EQ(Rows(got.tables[i]), Rows(want[i]));
  }
}

TEST(StreamingReport, SameRowsAsInMemoryOnAShuffledProgram) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    Program p;
    p.seed = seed;
    const std::string f = WriteProgram(p, "shuffled" + std::to_string(seed));
    ExpectSameTables({f}, {});
    std::remove(f.c_str());
  }
}

TEST(StreamingReport, SameRowsWithInheritanceOnAShuffledProgram) {
  // Every worker launch inherits the main thread's "train" range, whose
  // record comes last; GPU records come up to a frame before their launch
  // and three after.
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    Program p;
    p.seed = seed;
    p.main_range = true;
    const std::string f = WriteProgram(p, "inherit_shuffled" + std::to_string(seed));
    ExpectSameTables({f}, {});
    const StreamingResult got = Streamed({f}, {});
    const auto* summary = testing::FindRow(got.tables[0], {{"source", "tracer"}});
    ASSERT_NE(summary, nullptr);
    EXPECT_GT(testing::IntAt(got.tables[0], *summary, "inherited_ops"), 0);
    std::remove(f.c_str());
  }
}

TEST(StreamingReport, SameRowsWithFilterDomainAndSeveralProcesses) {
  Program p;
  const std::string a = WriteProgram(p, "proc_a", 5001);
  p.seed = 9;
  p.threads = 2;
  const std::string b = WriteProgram(p, "proc_b", 5002);
  ReportOptions o;
  ExpectSameTables({a, b}, o);
  o.by_process = true;
  ExpectSameTables({a, b}, o);
  o.by_process = false;
  o.filter = "^(layer|leaf)";
  ExpectSameTables({a, b}, o);
  o.filter.clear();
  o.processes.pids = {5002};  // --pid: the bounded path reads past pid 5001
  ExpectSameTables({a, b}, o);
  const StreamingResult one = Streamed({a, b}, o);
  EXPECT_EQ(one.processes_selected, 1u);
  EXPECT_EQ(one.tables[0].rows.size(), 1u);  // the summary's one process
  o.processes.pids = {1};
  EXPECT_FALSE(Streamed({a, b}, o).errors.empty());
  o.processes = {};
  o.domain = "dom";  // only the step ranges live in that domain
  const StreamingResult got = Streamed({a}, o);
  const Table& ranges = got.tables[1];
  ASSERT_EQ(ranges.rows.size(), 1u);
  EXPECT_NE(testing::FindRow(ranges, {{"range", "step"}}), nullptr);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(StreamingReport, OneNameInTwoDomainsKeepsOnlyTheChosenDomainsKernels) {
  // "block" exists in domain "dom" (2 instances, 1 kernel each) and in the
  // default domain (3 instances). With --domain dom, range-kernels (keyed by
  // range name alone) must count the dom instances only, on both paths: the
  // rows are filled by one builder (row_builder.h) from either path's facts.
  TraceFileBuilder b(7000);
  b.Thread(1, 7000, "main");
  b.Stream(1, 0, 11);
  b.builder().AddDomain({1, b.Str("dom")});
  uint64_t corr = 0, t = 1000;
  for (uint64_t id = 1; id <= 5; ++id) {
    const bool in_dom = id <= 2;
    b.Launch(++corr, 1, t + 5, id);
    b.Kernel("gemm_kernel", 1, t + 100, t + 200 + id, corr);
    RangeRecord r;
    r.id = id;
    r.thread = 1;
    r.name = b.Str("block");
    r.domain = in_dom ? 1 : 0;
    r.start_ns = t;
    r.end_ns = t + 50;
    b.builder().AddRange(r);
    b.Frame();
    t += 1000;
  }
  const std::string f = b.WriteTemp("two_domains");
  ReportOptions o;
  o.domain = "dom";
  ExpectSameTables({f}, o, AttributionOptions(), /*every_table_has_rows=*/false);
  const StreamingResult got = Streamed({f}, o);
  const Table& rk = got.tables[3];
  ASSERT_EQ(rk.name, "range-kernels");
  ASSERT_EQ(rk.rows.size(), 1u);
  EXPECT_EQ(testing::IntAt(rk, rk.rows[0], "range_instances"), 2);
  EXPECT_EQ(testing::IntAt(rk, rk.rows[0], "count"), 2);
  std::remove(f.c_str());
}

TEST(StreamingReport, GraphKernelsGoToTheCaptureRange) {
  Program p;
  p.steps = 2;
  const std::string f = WriteProgram(p, "graph");
  const StreamingResult got = Streamed({f}, {});
  const Table& rk = got.tables[3];
  const auto* row = testing::FindRow(rk, {{"range", "capture"}, {"kernel", "graph_kernel"}});
  ASSERT_NE(row, nullptr);
  // 3 nodes replayed once per step, all in the one capture instance.
  EXPECT_EQ(testing::IntAt(rk, *row, "count"), 6);
  EXPECT_EQ(testing::IntAt(rk, *row, "range_instances"), 1);
  std::remove(f.c_str());
}

TEST(StreamingReport, HeldStateDependsOnOpenRangesNotOnLength) {
  // The same program shape, 10x longer: the largest number of range
  // instances and launches held at once must not grow.
  Program shorter;
  shorter.steps = 5;
  Program longer = shorter;
  longer.steps = 50;
  const std::string a = WriteProgram(shorter, "short");
  const std::string b = WriteProgram(longer, "long");
  const StreamingResult ra = Streamed({a}, {});
  const StreamingResult rb = Streamed({b}, {});
  // Threads 2 and 3 launch while the main thread has nothing open: their
  // inheritance tickets are dropped as its next top-level range closes.
  EXPECT_TRUE(ra.inexact.empty());
  EXPECT_TRUE(rb.inexact.empty());
  EXPECT_GT(ra.peak_nodes, 0u);
  // Shuffling differs between the two files, so allow a little slack, far
  // below the 10x a reader holding records would show.
  EXPECT_LE(rb.peak_nodes, ra.peak_nodes + 8);
  EXPECT_LE(rb.peak_pending_launches, ra.peak_pending_launches + 16);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(StreamingReport, LaunchesWithoutOpsAreEvictedAndCounted) {
  // A launch whose GPU record never arrives (activity kind off, dropped)
  // must not hold its range forever.
  TraceFileBuilder b(7);
  b.Thread(1, 7);
  b.Stream(1, 0, 1);
  uint64_t corr = 0;
  for (uint64_t r = 1; r <= 50; ++r) {
    b.Launch(++corr, 1, r * 100 + 1, r);  // its op never comes
    b.Launch(++corr, 1, r * 100 + 2, r);
    b.Kernel("k", 1, r * 100 + 10, r * 100 + 20, corr);
    b.Range(r, 0, 1, "r", r * 100, r * 100 + 50);
    b.Frame();
  }
  const std::string f = b.WriteTemp("evict");
  TableRows rows;
  Trace strings_owner;
  rows.strings = &strings_owner.strings;
  StreamAggregator agg(0, &rows);
  agg.SetLimits(/*max_pending_launches=*/4, /*max_orphan_ops=*/4);
  ProcessTrace process;
  std::vector<std::string> warnings;
  std::string error;
  ASSERT_TRUE(StreamTraceFile(
      f, &strings_owner.strings, &process, [&](const ProcessTrace& batch) { agg.AddBatch(batch); },
      &warnings, &error));
  EXPECT_LE(agg.stats().peak_pending_launches, 4u);
  EXPECT_LE(agg.nodes(), 8u);  // ranges finalised as their stale launches left
  EXPECT_GT(agg.stats().evicted_launches, 40u);
  agg.Finish(process, strings_owner);
  ASSERT_EQ(rows.summary.size(), 1u);
  const SummaryRow& s = rows.summary[0];
  const std::vector<std::string>& notes = rows.summary_notes;
  EXPECT_EQ(s.kernels, 50);
  EXPECT_EQ(*s.unattributed, 0);
  ASSERT_EQ(rows.ranges.size(), 1u);
  RangeRow& r = rows.ranges.begin()->second;
  EXPECT_EQ(r.cpu.count(), 50);
  EXPECT_EQ(r.kernel_count, 50);  // every kernel still reached its range
  bool noted = false;
  for (const auto& n : notes)
    noted |= n.find("launch record(s) waited too long") != std::string::npos;
  EXPECT_TRUE(noted);
  std::remove(f.c_str());
}

// A launch naming a range instance already folded (records out of the
// tracer's order) is a late reference: counted, and the tables declined. The
// folded ids are remembered by bits in words of 32 ids, so the ids here sit
// on both sides of word boundaries; an id never seen, one still open and one
// folded next to the late one are not late.
TEST(StreamingReport, LaunchesNamingAFoldedInstanceAreLateReferences) {
  for (const uint64_t late : {uint64_t{31}, uint64_t{32}, uint64_t{64}, uint64_t{1} << 33}) {
    SCOPED_TRACE(late);
    TraceFileBuilder b(9);
    b.Thread(1, 10);  // not the pid's thread: its closed ranges are not held for inheritance
    b.Stream(1, 0, 1);
    // Ranges late - 1 and late fold in the first frame (no launch waits).
    b.Range(late - 1, 0, 1, "a", 100, 150);
    b.Range(late, 0, 1, "b", 200, 250);
    b.Frame();
    // An id never seen (late + 1) and one below every folded id (late - 2)
    // open now: not late.
    b.Launch(1, 1, 310, late + 1);
    b.Kernel("k", 1, 320, 330, 1);
    b.Range(late + 1, 0, 1, "c", 300, 350);
    b.Launch(2, 1, 410, late - 2);
    b.Kernel("k", 1, 420, 430, 2);
    b.Range(late - 2, 0, 1, "d", 400, 450);
    b.Frame();
    // Streams the builder's frames so far through an aggregator: its late
    // references and the reason its tables are declined ("" when exact).
    Trace strings_owner;
    auto aggregate = [&](const char* tag) {
      TableRows rows;
      rows.strings = &strings_owner.strings;
      StreamAggregator agg(0, &rows);
      ProcessTrace process;
      std::vector<std::string> warnings;
      std::string error;
      const std::string f = b.WriteTemp(tag);
      const bool read = StreamTraceFile(
          f, &strings_owner.strings, &process,
          [&](const ProcessTrace& batch) { agg.AddBatch(batch); }, &warnings, &error);
      std::remove(f.c_str());
      EXPECT_TRUE(read) << error;
      agg.Finish(process, strings_owner);
      return std::make_pair(agg.stats().late_references, agg.inexact_reason());
    };
    const auto before = aggregate("late_ok");
    EXPECT_EQ(before.first, 0u);
    EXPECT_EQ(before.second, "");

    // Now a launch naming the folded instance `late`.
    b.Launch(3, 1, 510, late);
    b.Kernel("k", 1, 520, 530, 3);
    b.Frame();
    const auto after = aggregate("late");
    EXPECT_EQ(after.first, 1u);
    EXPECT_FALSE(after.second.empty());
  }
}

TEST(StreamingReport, StartEndRangesOverGpuWorkAreLeftToTheWholeTracePath) {
  // A start/end range covers every launch inside it, on any thread, and
  // its record comes at its end: the bounded path cannot fold the work it
  // covers in time, so it declines rather than print other numbers.
  for (const bool covers : {false, true}) {
    SCOPED_TRACE(covers);
    TraceFileBuilder b(8);
    b.Thread(1, 8);
    b.Stream(1, 0, 1);
    b.Launch(1, 1, 1000, 2);
    b.Kernel("k", 1, 1100, 1200, 1);
    b.Range(2, 0, 1, "pushed", 990, 1010);
    b.Range(1, 0, 1, "async", covers ? 100 : 2000, 5000, 0, RangeKind::kStartEnd);
    const std::string f = b.WriteTemp("startend");
    const StreamingResult got = Streamed({f}, {});
    if (covers) {
      ASSERT_EQ(got.inexact.size(), 1u);
      EXPECT_NE(got.inexact[0].find("start/end"), std::string::npos) << got.inexact[0];
    } else {
      EXPECT_TRUE(got.inexact.empty());
      ExpectSameTables({f}, {}, {}, false);
      const Table& ranges = got.tables[1];
      const auto* row = testing::FindRow(ranges, {{"range", "async"}});
      ASSERT_NE(row, nullptr);
      EXPECT_EQ(testing::IntAt(ranges, *row, "cpu_total_ns"), 3000);
    }
    std::remove(f.c_str());
  }
}

// A PyTorch-like process: the main thread (os tid == pid) holds "step" and
// "backward" while an autograd worker launches the backward kernels. With
// inheritance on, those kernels also count toward the main thread's ranges
// (attribution.h "Worker threads"), on the bounded path as in memory.
std::string WriteWorkerProgram(bool worker_inside_main_range, const std::string& stem,
                               int frames_late = 0) {
  TraceFileBuilder b(900);
  b.Thread(1, 900, "main");
  b.Thread(2, 901, "autograd");
  b.Stream(1, 0, 1);
  b.Stream(2, 0, 2);
  uint64_t corr = 0, id = 0, t = 1000;
  std::vector<std::function<void()>> late;
  for (int step = 0; step < 4; ++step) {
    const uint64_t step_id = ++id, step_start = t;
    const uint64_t fwd = ++id;
    b.Launch(++corr, 1, t + 5, fwd);
    b.Kernel("fwd_kernel", 1, t + 100, t + 200, corr);
    b.Range(fwd, step_id, 1, "forward", t, t + 50, 1);
    t += 60;
    uint64_t bwd_start = t;
    if (!worker_inside_main_range) {
      // The main thread closes its step before the worker runs.
      b.Range(step_id, 0, 1, "step", step_start, t);
      t += 10;
      bwd_start = t;
    }
    const uint64_t worker_range = ++id;
    const uint64_t c1 = ++corr, c2 = ++corr, c3 = ++corr, w = t;
    // The worker's records: two kernels in its own range, one launched
    // outside any range of its own; their GPU records come a frame later.
    auto worker = [&b, c1, c2, c3, w, worker_range] {
      b.Launch(c1, 2, w + 5, worker_range);
      b.Launch(c2, 2, w + 8, worker_range);
      b.Range(worker_range, 0, 2, "autograd::engine", w, w + 40);
      b.Launch(c3, 2, w + 45, 0);
    };
    auto worker_gpu = [&b, c1, c2, c3, w] {
      b.Kernel("bwd_kernel", 1, w + 300, w + 500, c1);
      b.Kernel("bwd_kernel", 2, w + 400, w + 700, c2);
      b.Memcpy(1, 64, 1, w + 700, w + 800, c3);
    };
    if (frames_late == 0) worker();
    t += 50;
    if (worker_inside_main_range) {
      const uint64_t bwd = ++id;
      b.Range(bwd, step_id, 1, "backward", bwd_start, t, 1);
      b.Range(step_id, 0, 1, "step", step_start, t + 5);
    }
    t += 1000;
    b.Frame();
    for (int f = 1; f < frames_late; ++f) {
      b.Thread(3, 999, "idle");  // keeps the frame non-empty
      b.Frame();
    }
    if (frames_late > 0) worker();
    worker_gpu();
    b.Frame();
  }
  return b.WriteTemp(stem);
}

TEST(StreamingReport, WorkerLaunchesInheritMainThreadRangesAsInMemory) {
  for (int late : {0, 1}) {
    SCOPED_TRACE(late);
    const std::string f = WriteWorkerProgram(/*worker_inside_main_range=*/true, "inherit", late);
    ExpectSameTables({f}, {}, {}, false);
    // The whole-trace numbers it matched do count them toward "backward"
    // and "step", and the summary says how many were inherited.
    const StreamingResult got = Streamed({f}, {});
    const auto* row =
        testing::FindRow(got.tables[3], {{"range", "backward"}, {"kernel", "bwd_kernel"}});
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(testing::IntAt(got.tables[3], *row, "count"), 8);
    const auto* summary = testing::FindRow(got.tables[0], {{"source", "tracer"}});
    ASSERT_NE(summary, nullptr);
    EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "inherited_ops"), 12);
    EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "ops_outside_ranges"), 0);
    // With inheritance off (nsys semantics), exact too.
    AttributionOptions off;
    off.main_thread = MainThreadMode::kOff;
    ExpectSameTables({f}, {}, off, false);
    std::remove(f.c_str());
  }
}

TEST(StreamingReport, WorkerLaunchesOutsideMainThreadRangesAreNotInherited) {
  const std::string f = WriteWorkerProgram(/*worker_inside_main_range=*/false, "noinherit");
  ExpectSameTables({f}, {}, {}, false);
  const StreamingResult got = Streamed({f}, {});
  const auto* summary = testing::FindRow(got.tables[0], {{"source", "tracer"}});
  ASSERT_NE(summary, nullptr);
  EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "inherited_ops"), 0);
  EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "ops_outside_ranges"), 4);
  std::remove(f.c_str());
}

TEST(StreamingReport, WorkerLaunchArrivingAfterTheMainRangeWasFoldedIsLeftToTheWholePath) {
  // The worker's launch records reach the file several frames after the
  // main thread's ranges that cover them, past the frames they are held.
  const std::string f = WriteWorkerProgram(/*worker_inside_main_range=*/true, "late_worker", 4);
  const StreamingResult got = Streamed({f}, {});
  ASSERT_EQ(got.inexact.size(), 1u);
  EXPECT_NE(got.inexact[0].find("after the main-thread range"), std::string::npos)
      << got.inexact[0];
  std::remove(f.c_str());
}

// CUDA graphs replayed from a worker thread (an inference or autograd
// thread): the worker captures a three-node graph (two kernels and a memset)
// in its own "capture" range, then launches it each step while the main
// thread (os tid == pid) is inside "step" > "backward". Each graph launch
// writes its launch-time snapshot (exec id, node 0) and its launch record on
// the worker; its three GPU records carry the launch's correlation id and
// come from a frame before the launch record to three after. Some launches
// happen while the main thread has no range open. With inheritance on, the
// graph's ops count toward their node's range and toward the main thread's
// ranges open at the launch, in memory as on the bounded path.
struct WorkerGraphProgram {
  int steps = 8;
  uint32_t seed = 1;
  // The main thread's "train" range holds every step, closing last.
  bool main_range = false;
  // Capture on the main thread (inside "setup") instead of the worker.
  bool capture_on_main = false;
};

std::string WriteWorkerGraphProgram(const WorkerGraphProgram& prog, const std::string& stem) {
  std::mt19937 rng(prog.seed);
  TraceFileBuilder b(700);
  b.Thread(1, 700, "main");
  b.Thread(2, 701, "worker");
  b.Stream(1, 0, 1);
  b.Stream(2, 0, 2);
  std::vector<std::vector<std::function<void()>>> frames(1);
  auto now = [&]() -> std::vector<std::function<void()>>& { return frames.back(); };
  auto at = [&](int delta) -> std::vector<std::function<void()>>& {
    const int i = std::max(0, static_cast<int>(frames.size()) - 1 + delta);
    while (static_cast<int>(frames.size()) <= i) frames.emplace_back();
    return frames[static_cast<size_t>(i)];
  };
  uint64_t t = 1000, corr = 0, id = 0;
  const uint64_t train = prog.main_range ? ++id : 0;
  const uint32_t base = train != 0 ? 1 : 0;
  const uint64_t kGraph = 5, kExec = 6;  // CUDA's distinct graph and exec ids
  {
    // Nodes 11..13 made in "capture", cloned into the exec as 21..23 (the
    // clones take their original's range, as the adapter records them).
    const uint32_t th = prog.capture_on_main ? 1 : 2;
    const uint64_t cap = ++id;
    for (uint64_t n = 0; n < 3; ++n) {
      now().push_back([&b, n, cap, th, t] {
        b.GraphSnapshot(kGraph, 11 + n, cap, th, t + n);
        b.GraphSnapshot(kExec, 21 + n, cap, th, t + 10 + n);
      });
    }
    const uint64_t parent = th == 1 ? train : 0;
    const uint32_t depth = th == 1 ? base : 0;
    now().push_back([&b, cap, parent, th, t, depth] {
      b.Range(cap, parent, th, th == 1 ? "setup" : "capture", t, t + 50, depth);
    });
    t += 100;
  }
  for (int step = 0; step < prog.steps; ++step) {
    const bool main_busy = step % 4 != 3;  // every fourth step the main thread idles
    const uint64_t step_id = main_busy ? ++id : 0, bwd = main_busy ? ++id : 0;
    const uint64_t step_start = t;
    const uint64_t worker_range = ++id;
    const uint64_t w = t + 20;
    // One to three graph launches per step, inside the worker's range or not.
    const int launches = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < launches; ++i) {
      const uint64_t c = ++corr;
      const uint64_t launch = w + 5 + static_cast<uint64_t>(i) * 10;
      const uint64_t own = i == 2 ? 0 : worker_range;
      now().push_back([&b, c, launch, own] {
        b.GraphSnapshot(kExec, 0, own, 2, launch);
        b.Launch(c, 2, launch, own);
      });
      const int delay = static_cast<int>(rng() % 5) - 1;  // -1: before the launch record
      for (uint64_t n = 0; n < 3; ++n) {
        const uint64_t start = launch + 2000 + n * 300 + rng() % 100;
        const uint64_t end = start + 50 + rng() % 200;
        const uint32_t stream = 1 + static_cast<uint32_t>(rng() % 2);
        const int d = delay + static_cast<int>(n == 2 && rng() % 2);
        if (n == 2) {
          at(d).push_back([&b, stream, start, end, c] {
            MemsetRecord m;
            m.bytes = 256;
            m.stream = stream;
            m.start_ns = start;
            m.end_ns = end;
            m.correlation_id = c;
            m.graph_id = kExec;
            m.graph_node_id = 23;
            b.builder().AddMemset(m);
          });
        } else {
          const std::string k = n == 0 ? "graph_gemm" : "graph_relu";
          at(d).push_back([&b, k, stream, start, end, c, n] {
            b.Kernel(k, stream, start, end, c, kExec, 21 + n);
          });
        }
      }
    }
    now().push_back(
        [&b, worker_range, w] { b.Range(worker_range, 0, 2, "autograd::engine", w, w + 60); });
    t += 100;
    if (main_busy) {
      const uint64_t step_end = t + 5;
      now().push_back([&b, bwd, step_id, step_start, t, base] {
        b.Range(bwd, step_id, 1, "backward", step_start + 10, t, base + 1);
      });
      now().push_back([&b, step_id, train, step_start, step_end, base] {
        b.Range(step_id, train, 1, "step", step_start, step_end, base);
      });
    }
    t += 200;
    if (rng() % 2 == 0) frames.emplace_back();
  }
  if (train != 0) {
    frames.emplace_back();
    now().push_back([&b, train, t] { b.Range(train, 0, 1, "train", 900, t + 10, 0); });
  }
  for (auto& f : frames) {
    for (auto& add : f) add();
    if (b.builder().pending_items() > 0) b.Frame();
  }
  return b.WriteTemp(stem);
}

int64_t SummaryInt(const StreamingResult& got, const std::string& column) {
  const auto* summary = testing::FindRow(got.tables[0], {{"source", "tracer"}});
  EXPECT_NE(summary, nullptr);
  return summary == nullptr ? -1 : testing::IntAt(got.tables[0], *summary, column);
}

TEST(StreamingReport, WorkerThreadGraphLaunchesInheritMainThreadRangesAsInMemory) {
  for (bool main_range : {false, true}) {
    for (uint32_t seed : {1u, 2u, 3u, 4u}) {
      SCOPED_TRACE(std::to_string(seed) + (main_range ? " train" : ""));
      WorkerGraphProgram p;
      p.seed = seed;
      p.main_range = main_range;
      const std::string f = WriteWorkerGraphProgram(p, "worker_graph" + std::to_string(seed));
      // Stays on the bounded path (no decline) with every column equal.
      ExpectSameTables({f}, {}, {}, false);
      const StreamingResult got = Streamed({f}, {});
      ASSERT_TRUE(got.inexact.empty());
      // The graph's kernels count toward the worker's capture range and, by
      // inheritance, toward "backward" (busy steps only).
      const auto* own =
          testing::FindRow(got.tables[3], {{"range", "capture"}, {"kernel", "graph_gemm"}});
      const auto* inherited =
          testing::FindRow(got.tables[3], {{"range", "backward"}, {"kernel", "graph_gemm"}});
      ASSERT_NE(own, nullptr);
      ASSERT_NE(inherited, nullptr);
      const int64_t all = testing::IntAt(got.tables[3], *own, "count");
      const int64_t in_backward = testing::IntAt(got.tables[3], *inherited, "count");
      EXPECT_GT(in_backward, 0);
      EXPECT_LT(in_backward, all);  // idle steps' launches are not inherited
      EXPECT_EQ(SummaryInt(got, "inherited_ops"),
                3 * (main_range ? all : in_backward));  // two kernels and a memset each
      // With inheritance off, exact too, and nothing inherited.
      AttributionOptions off;
      off.main_thread = MainThreadMode::kOff;
      ExpectSameTables({f}, {}, off, false);
      std::remove(f.c_str());
    }
  }
}

TEST(StreamingReport, WorkerGraphLaunchesOutlivingTheRecentWindowStayExact) {
  // More graph launches than the window of recent ones (4096) while the main
  // thread's "train" range stays open: the tickets stop taking ops before
  // any main-thread range claims them, and are claimed at the end.
  WorkerGraphProgram p;
  p.steps = 2400;
  p.main_range = true;
  const std::string f = WriteWorkerGraphProgram(p, "worker_graph_long");
  ExpectSameTables({f}, {}, {}, false);
  const StreamingResult got = Streamed({f}, {});
  ASSERT_TRUE(got.inexact.empty());
  EXPECT_GT(SummaryInt(got, "inherited_ops"), 3 * 4096);
  std::remove(f.c_str());
}

TEST(StreamingReport, GraphCapturedOnTheMainThreadAndLaunchedOnAWorkerIsLeftToTheWholePath) {
  // The node's own range chain and the inherited one are both the main
  // thread's and share "train": counted once in memory, which the tree
  // reduction cannot do; it says so instead of counting twice.
  WorkerGraphProgram p;
  p.main_range = true;
  p.capture_on_main = true;
  const std::string f = WriteWorkerGraphProgram(p, "main_captured_graph");
  const StreamingResult got = Streamed({f}, {});
  ASSERT_EQ(got.inexact.size(), 1u);
  EXPECT_NE(got.inexact[0].find("captured in main-thread ranges"), std::string::npos)
      << got.inexact[0];
  std::remove(f.c_str());
}

TEST(StreamingReport, RangesNestedWithoutParentIdsAreLeftToTheWholeTracePath) {
  // Written without parent ids (not by the tracer): in memory the inner
  // range's parent is the enclosing one by time, so the outer gets its
  // kernel; the tree reduction cannot know, so it declines.
  TraceFileBuilder b(930);
  b.Thread(1, 930);
  b.Stream(1, 0, 1);
  b.Launch(1, 1, 150, 2);
  b.Kernel("k", 1, 200, 300, 1);
  b.Range(2, 0, 1, "inner", 100, 160);
  b.Range(1, 0, 1, "outer", 50, 400);
  const std::string f = b.WriteTemp("parentless");
  const StreamingResult got = Streamed({f}, {});
  ASSERT_EQ(got.inexact.size(), 1u);
  const std::vector<Table> whole = InMemory({f}, {});
  const auto* row = testing::FindRow(whole[3], {{"range", "outer"}, {"kernel", "k"}});
  ASSERT_NE(row, nullptr);  // the whole path does count it toward "outer"
  std::remove(f.c_str());
}

TEST(StreamingReport, BusyTimeIsTheUnionOfTheSubtreeOps) {
  // Two children on two streams whose kernels overlap each other: the
  // parent's busy time is the union, not the sum of the children's.
  TraceFileBuilder b(920);
  b.Thread(1, 920);
  b.Stream(1, 0, 1);
  b.Stream(2, 0, 2);
  b.Launch(1, 1, 110, 2);
  b.Launch(2, 1, 120, 2);
  b.Range(2, 1, 1, "a", 100, 130, 1);
  b.Launch(3, 1, 140, 3);
  b.Range(3, 1, 1, "b", 135, 150, 1);
  b.Frame();
  b.Kernel("k1", 1, 1000, 2000, 1);
  b.Kernel("k2", 1, 2000, 2500, 2);  // touches k1
  b.Kernel("k3", 2, 1500, 3000, 3);  // overlaps both, from the sibling
  b.Range(1, 0, 1, "parent", 90, 200);
  const std::string f = b.WriteTemp("busy");
  ExpectSameTables({f}, {}, {}, false);
  const StreamingResult got = Streamed({f}, {});
  const Table& gpu = got.tables[4];
  const auto* parent = testing::FindRow(gpu, {{"range", "parent"}});
  const auto* a = testing::FindRow(gpu, {{"range", "a"}});
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(testing::IntAt(gpu, *parent, "busy_ns"), 2000);
  EXPECT_EQ(testing::IntAt(gpu, *a, "busy_ns"), 1500);
  std::remove(f.c_str());
}

TEST(StreamingReport, TornFileKeepsEarlierFramesAndWarnsLikeTheInMemoryReader) {
  Program p;
  p.steps = 3;
  const std::string f = WriteProgram(p, "torn");
  std::string bytes;
  {
    std::ifstream in(f, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Cut inside the last frame, and corrupt one byte of a middle frame's
  // payload in a second copy.
  const std::string cut = TraceFileBuilder::TempPath("torn_cut");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x5a;
  const std::string bad = TraceFileBuilder::TempPath("torn_crc");
  std::ofstream(bad, std::ios::binary) << flipped;
  for (const std::string& file : {cut, bad}) {
    Trace trace;
    std::string error;
    ASSERT_TRUE(ReadTraceFile(file, &trace, &error));
    const StreamingResult got = Streamed({file}, {});
    ASSERT_EQ(got.files_read, 1u);
    ASSERT_EQ(trace.warnings.size(), 1u);
    EXPECT_EQ(got.warnings, trace.warnings);  // same one line, same offsets
    const auto* row = testing::FindRow(got.tables[0], {{"source", "tracer"}});
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(testing::IntAt(got.tables[0], *row, "ranges"),
              static_cast<int64_t>(trace.processes[0].ranges.size()));
    EXPECT_EQ(testing::IntAt(got.tables[0], *row, "kernels"),
              static_cast<int64_t>(trace.processes[0].kernels.size()));
  }
  const StreamingResult none = Streamed({TraceFileBuilder::TempPath("missing")}, {});
  EXPECT_EQ(none.files_read, 0u);
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_NE(none.errors[0].find("cannot open"), std::string::npos);
  for (const auto& x : {f, cut, bad}) std::remove(x.c_str());
}

// ------------------------------------------------- nsys SQLite exports

// The program written as an nsys SQLite export (tracer export --format
// sqlite): what `tracer report` then reads through the nsys importers.
}  // namespace
namespace tracer::analysis {
// launch_calls: each launch record also becomes the cudaLaunchKernel runtime
// row with its correlation id that a real export holds (the exporter writes
// API records only), so that ops are attributed through the API rows.
std::string WriteExportedProgram(const Program& prog, const std::string& stem,
                                 bool launch_calls = false) {
  const std::string stream = WriteProgram(prog, stem);
  Trace trace;
  std::string error;
  EXPECT_TRUE(ReadTraceFile(stream, &trace, &error)) << error;
  std::remove(stream.c_str());
  if (launch_calls) {
    const uint32_t name = trace.strings.Intern("cudaLaunchKernel");
    for (ProcessTrace& p : trace.processes) {
      for (const LaunchRecord& l : p.launches) {
        ApiRecord a;
        a.start_ns = l.time_ns;
        a.end_ns = l.time_ns + 3;
        a.thread = l.thread;
        a.correlation_id = l.correlation_id;
        a.name = name;
        p.api_calls.push_back(a);
      }
      std::stable_sort(
          p.api_calls.begin(), p.api_calls.end(),
          [](const ApiRecord& x, const ApiRecord& y) { return x.start_ns < y.start_ns; });
    }
  }
  const std::string path = TraceFileBuilder::TempPath(stem) + ".sqlite";
  std::remove(path.c_str());
  EXPECT_TRUE(exporters::WriteSqlite(trace, path, &error)) << error;
  return path;
}

TEST(StreamingReport, NsysExportSameRowsAsTheWholeImport) {
  // Three threads launching inside and outside the main thread's ranges:
  // the launch records the streaming importer synthesizes from API calls
  // must attribute like the whole import's API records, inheritance on
  // and off.
  AttributionOptions off;
  off.main_thread = MainThreadMode::kOff;
  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    Program p;
    p.seed = seed;
    p.with_graph = false;  // the export has no graph node snapshots
    const std::string f = WriteExportedProgram(p, "nsys_prog" + std::to_string(seed));
    ExpectSameTables({f}, {}, {}, false);
    ExpectSameTables({f}, {}, off, false);
    // With the cudaLaunchKernel rows a real export has: ops attributed.
    const std::string g = WriteExportedProgram(p, "nsys_prog_calls" + std::to_string(seed), true);
    ExpectSameTables({g}, {}, {}, false);
    ExpectSameTables({g}, {}, off, false);
    const StreamingResult calls = Streamed({g}, {});
    const auto* row = testing::FindRow(calls.tables[0], {{"source", "nsys-sqlite"}});
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(testing::IntAt(calls.tables[0], *row, "unattributed_ops"), 0);
    std::remove(g.c_str());
    const StreamingResult got = Streamed({f}, {});
    EXPECT_EQ(got.files_read, 1u);
    EXPECT_GT(got.peak_nodes, 0u);
    const auto* summary = testing::FindRow(got.tables[0], {{"source", "nsys-sqlite"}});
    ASSERT_NE(summary, nullptr);
    EXPECT_GT(testing::IntAt(got.tables[0], *summary, "kernels"), 0);
    std::remove(f.c_str());
  }
}

TEST(StreamingReport, NsysExportWithRowsOutOfStartOrderSameRowsAsTheWholeImport) {
  // The streaming importer reads a table as stored when its rows are in
  // (process, start) order, else through ORDER BY: rows of the kernel,
  // memcpy and runtime tables shuffled must give the same tables.
  Program p;
  p.seed = 4;
  p.steps = 40;
  p.with_graph = false;
  const std::string f = WriteExportedProgram(p, "nsys_shuffled", true);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(f.c_str(), &db), SQLITE_OK);
    for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                          "CUPTI_ACTIVITY_KIND_RUNTIME"}) {
      const std::string sql = std::string("CREATE TABLE shuffled AS SELECT * FROM ") + t +
                              " ORDER BY (rowid * 7919) % 65521; DROP TABLE " + t +
                              "; ALTER TABLE shuffled RENAME TO " + t + ";";
      ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << t;
      sqlite3_stmt* st = nullptr;
      const std::string check =
          std::string("SELECT SUM(s < ps) FROM (SELECT start AS s, LAG(start) ") +
          "OVER (ORDER BY rowid) AS ps FROM " + t + ")";
      ASSERT_EQ(sqlite3_prepare_v2(db, check.c_str(), -1, &st, nullptr), SQLITE_OK);
      ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
      EXPECT_GT(sqlite3_column_int64(st, 0), 0) << t << " still in start order";
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
  }
  AttributionOptions off;
  off.main_thread = MainThreadMode::kOff;
  ExpectSameTables({f}, {}, {}, false);
  ExpectSameTables({f}, {}, off, false);
  std::remove(f.c_str());
}

// The rows of the export at path's table read straight from the file: the
// number read before the scan gives up ("" why: it did not).
std::pair<size_t, std::string> ScanRows(const std::string& path, const std::string& table,
                                        const std::vector<std::string>& columns) {
  importers::SqliteDb db;
  std::string error;
  EXPECT_TRUE(db.Open(path, &error)) << error;
  importers::SqliteFileMap file;
  if (!file.Open(path, &error)) return {0, error};
  importers::ScanPlan plan;
  if (!importers::PlanTableScan(&db, table, columns,
                                std::vector<importers::ScanType>(columns.size()), &plan, &error)) {
    return {0, error};
  }
  importers::TableScan scan(&file, plan);
  while (scan.Next()) {
  }
  return {scan.rows(), scan.why()};
}

TEST(StreamingReport, NsysExportReadFromTheFileOrThroughSqlSameRowsAsTheWholeImport) {
  // The streaming importer reads the activity tables straight from the file
  // (sqlite_table_scan.h), both in its prescan and in the sweep, and where
  // the scan gives up at a row, the rest through SQL; where it refuses a
  // table (an index) or the file (WAL), everything through SQL. Each way,
  // the tables of the whole import.
  Program p;
  p.seed = 5;
  p.steps = 60;
  p.with_graph = false;
  const std::vector<std::string> start_end = {"start", "end"};
  struct Variant {
    const char* name;
    const char* sql;
  };
  const Variant variants[] = {
      {"plain", ""},
      // A real where an integer is stored (SQL reads it truncated, as the
      // value it was): the scan gives up there, midway through each table.
      {"gives up at a row",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = \"end\" + 0.5 WHERE rowid = "
       "(SELECT MAX(rowid) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL);"
       "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = \"end\" + 0.5 WHERE rowid = "
       "(SELECT MAX(rowid) / 3 FROM CUPTI_ACTIVITY_KIND_RUNTIME);"},
      {"an index on the kernels",
       "CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL(start);"},
      {"WAL", "PRAGMA journal_mode = WAL;"},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    const std::string f = WriteExportedProgram(p, "nsys_scanned", true);
    if (*v.sql != '\0') {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(f.c_str(), &db), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db, v.sql, nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
    }
    // What the scan does with the kernels, so that each way is the one meant.
    const auto [rows, why] = ScanRows(f, "CUPTI_ACTIVITY_KIND_KERNEL", start_end);
    if (std::string(v.name) == "plain") {
      EXPECT_EQ(why, "");
      EXPECT_GT(rows, 100u);
    } else if (std::string(v.name) == "gives up at a row") {
      EXPECT_NE(why, "");
      EXPECT_GT(rows, 50u);
      EXPECT_NE(ScanRows(f, "CUPTI_ACTIVITY_KIND_RUNTIME", start_end).second, "");
    } else {
      EXPECT_EQ(rows, 0u);
      EXPECT_NE(why, "");
    }
    AttributionOptions off;
    off.main_thread = MainThreadMode::kOff;
    ExpectSameTables({f}, {}, {}, false);
    ExpectSameTables({f}, {}, off, false);
    // Every row once, whichever way it was read (the whole import shares
    // the reading of PrefetchedRows): the counts SQLite gives.
    int64_t kernels = 0, calls = 0;
    {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(f.c_str(), &db), SQLITE_OK);
      for (auto [table, count] : {std::pair{"CUPTI_ACTIVITY_KIND_KERNEL", &kernels},
                                  std::pair{"CUPTI_ACTIVITY_KIND_RUNTIME", &calls}}) {
        sqlite3_stmt* st = nullptr;
        ASSERT_EQ(sqlite3_prepare_v2(db, (std::string("SELECT COUNT(*) FROM ") + table).c_str(), -1,
                                     &st, nullptr),
                  SQLITE_OK);
        ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
        *count = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
      }
      sqlite3_close(db);
    }
    const StreamingResult got = Streamed({f}, {});
    const auto* summary = testing::FindRow(got.tables[0], {{"source", "nsys-sqlite"}});
    ASSERT_NE(summary, nullptr);
    EXPECT_GT(kernels, 100);
    EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "kernels"), kernels);
    EXPECT_EQ(testing::IntAt(got.tables[0], *summary, "api_calls"), calls);
    std::remove(f.c_str());
    std::remove((f + "-wal").c_str());
    std::remove((f + "-shm").c_str());
  }
}

TEST(StreamingReport, NsysExportHeldStateDependsOnOpenRangesNotOnLength) {
  // Closed main-thread ranges are held for two batches (inheritance), so
  // the baseline must span more than those batches of the importer (4096
  // records each): peak nodes are 360 at 60 steps, 590 from 200 steps on.
  Program shorter;
  shorter.steps = 200;
  shorter.with_graph = false;
  Program longer = shorter;
  longer.steps = 1200;
  const std::string a = WriteExportedProgram(shorter, "nsys_short");
  const std::string b = WriteExportedProgram(longer, "nsys_long");
  const StreamingResult ra = Streamed({a}, {});
  const StreamingResult rb = Streamed({b}, {});
  ASSERT_TRUE(ra.inexact.empty()) << ra.inexact.front();
  ASSERT_TRUE(rb.inexact.empty()) << rb.inexact.front();
  EXPECT_GT(ra.peak_nodes, 0u);
  // 6x the records, not 6x the held ranges or launches.
  EXPECT_LE(rb.peak_nodes, ra.peak_nodes + 8);
  EXPECT_LE(rb.peak_pending_launches, ra.peak_pending_launches + 16);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(StreamingReport, NsysExportWithRowsWithoutAProcessIsLeftToTheWholePath) {
  // The whole importer files such rows under whichever process it met
  // first; the streaming one refuses the export rather than guess.
  Program p;
  p.steps = 2;
  p.with_graph = false;
  const std::string f = WriteExportedProgram(p, "nsys_nopid");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(f.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE rowid = "
                           "(SELECT MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const StreamingResult got = Streamed({f}, {});
  ASSERT_EQ(got.inexact.size(), 1u);
  EXPECT_NE(got.inexact[0].find("rows without a process id"), std::string::npos) << got.inexact[0];
  std::remove(f.c_str());
}

using CliOutput = testing::CliRun;

CliOutput RunReport(const std::string& args) {
  return testing::RunTracerCli("report " + args, false);
}

// The real exports of ../shared/data (three schema variants, one with two
// processes): `--stream` prints byte for byte what `--no-stream` prints, and
// does so on the bounded path (nothing on stderr about reading whole).
TEST(StreamingReport, RealNsysExportsStreamAsTheyReadWhole) {
  const std::string dir = std::string(TRACER_SHARED_DATA_DIR) + "/nsys";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent";
  const std::string tables =
      " --table summary,ranges,kernels,range-kernels,gpu,memory,api --format csv";
  for (const char* name : {"cudf-groupby.sqlite", "h100_2gpu_mfu.sqlite", "workflow.sqlite"}) {
    const std::string f = dir + "/" + name;
    if (!std::filesystem::exists(f)) GTEST_SKIP() << f << " is absent";
    for (const char* mode : {"", " --main-thread off"}) {
      SCOPED_TRACE(f + mode);
      const CliOutput whole = RunReport("--no-stream " + f + tables + mode);
      const CliOutput stream = RunReport("--stream " + f + tables + mode);
      ASSERT_EQ(whole.exit_code, 0) << whole.err;
      ASSERT_EQ(stream.exit_code, 0) << stream.err;
      EXPECT_NE(whole.out.find("# range-kernels"), std::string::npos);
      EXPECT_EQ(stream.out, whole.out);
      EXPECT_EQ(stream.err.find("reading the input whole"), std::string::npos) << stream.err;
      EXPECT_EQ(stream.err.find("bounded-memory reading cannot"), std::string::npos) << stream.err;
    }
    // Chosen by size, as for a recorded stream: said once, same numbers.
    const CliOutput automatic = RunReport(f + tables + " --stream-above 1k");
    ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
    EXPECT_NE(automatic.err.find("large input ("), std::string::npos) << automatic.err;
    EXPECT_EQ(automatic.out, RunReport("--no-stream " + f + tables).out);
    // And in the library: read on the bounded path, held state small.
    const StreamingResult got = Streamed({f}, {});
    EXPECT_TRUE(got.inexact.empty());
    EXPECT_TRUE(got.errors.empty());
    EXPECT_EQ(got.files_read, 1u);
    EXPECT_GT(got.peak_nodes, 0u);
    ExpectSameTables({f}, {}, {}, false);
  }
}

// ------------------------------------------------- Kineto JSON traces

// Microseconds with 3 decimals (Kineto's ns-resolution traces).
std::string Micros(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buf;
}

// The program written as a PyTorch profiler (Kineto) trace: push/pop ranges
// as user_annotation (top level) and cpu_op events, each launch record as the
// cudaLaunchKernel cuda_runtime event that carries its correlation id, API
// records as cuda_runtime events, kernels and memcpys as GPU events, plus
// what the importer skips or only counts (python_function, ac2g flows,
// thread names). Events are written in a shuffled order, as Kineto's are in
// no useful one; gzipped or plain.
std::string WriteKinetoProgram(const Program& prog, const std::string& stem, bool gzip,
                               uint32_t shuffle_seed) {
  const std::string stream = WriteProgram(prog, stem);
  Trace trace;
  std::string error;
  EXPECT_TRUE(ReadTraceFile(stream, &trace, &error)) << error;
  std::remove(stream.c_str());
  const ProcessTrace& p = trace.processes.at(0);
  const uint64_t pid = p.header.pid;
  auto tid = [&](uint32_t t) { return p.threads.at(t).os_tid; };
  auto x = [&](const std::string& cat, std::string_view name, uint64_t event_pid,
               uint64_t event_tid, uint64_t start, uint64_t end, const std::string& args) {
    std::string e = "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + std::string(name) +
                    "\", \"pid\": " + std::to_string(event_pid) +
                    ", \"tid\": " + std::to_string(event_tid) + ", \"ts\": " + Micros(start) +
                    ", \"dur\": " + Micros(end - start);
    if (!args.empty()) e += ", \"args\": {" + args + "}";
    return e + "}";
  };
  std::vector<std::string> events;
  for (const RangeRecord& r : p.ranges) {
    if (r.kind != RangeKind::kPushPop) continue;
    events.push_back(x(r.depth == 0 ? "user_annotation" : "cpu_op", trace.strings.Get(r.name), pid,
                       tid(r.thread), r.start_ns, r.end_ns, ""));
  }
  for (const LaunchRecord& l : p.launches) {
    events.push_back(x("cuda_runtime", "cudaLaunchKernel", pid, tid(l.thread), l.time_ns,
                       l.time_ns + 4,
                       "\"cbid\": 211, \"correlation\": " + std::to_string(l.correlation_id)));
    events.push_back("{\"ph\": \"s\", \"id\": " + std::to_string(l.correlation_id) + ", \"pid\": " +
                     std::to_string(pid) + ", \"tid\": " + std::to_string(tid(l.thread)) +
                     ", \"ts\": " + Micros(l.time_ns) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
  }
  for (const ApiRecord& a : p.api_calls) {
    events.push_back(x("cuda_runtime", trace.strings.Get(a.name), pid, tid(a.thread), a.start_ns,
                       a.end_ns, "\"cbid\": 3"));
  }
  auto gpu_args = [&](uint32_t stream, uint64_t corr) {
    const StreamInfo& s = p.streams.at(stream);
    return "\"device\": " + std::to_string(s.device) + ", \"stream\": " + std::to_string(s.stream) +
           ", \"correlation\": " + std::to_string(corr);
  };
  for (const KernelRecord& k : p.kernels) {
    const StreamInfo& s = p.streams.at(k.stream);
    events.push_back(
        x("kernel", trace.strings.Get(k.name), s.device, s.stream, k.start_ns, k.end_ns,
          gpu_args(k.stream, k.correlation_id) + ", \"grid\": [64, 1, 1], \"block\": [128, 1, 1]"));
  }
  for (const MemcpyRecord& m : p.memcpys) {
    const StreamInfo& s = p.streams.at(m.stream);
    events.push_back(x(
        "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", s.device, s.stream, m.start_ns, m.end_ns,
        gpu_args(m.stream, m.correlation_id) + ", \"bytes\": " + std::to_string(m.bytes)));
  }
  events.push_back(x("python_function", "train.py(12): step", pid, pid, 950, 990, ""));
  events.push_back("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(pid) +
                   ", \"tid\": " + std::to_string(pid) +
                   ", \"args\": {\"name\": \"thread 1 (pt_main_thread)\"}}");
  std::mt19937 rng(shuffle_seed);
  std::shuffle(events.begin(), events.end(), rng);
  std::string json =
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [";
  for (size_t i = 0; i < events.size(); ++i) json += (i == 0 ? "\n" : ",\n") + events[i];
  json += "\n]}\n";
  const std::string path = TraceFileBuilder::TempPath(stem) + (gzip ? ".json.gz" : ".json");
  if (gzip) {
    gzFile gz = gzopen(path.c_str(), "wb");
    EXPECT_NE(gz, nullptr);
    gzwrite(gz, json.data(), static_cast<unsigned>(json.size()));
    gzclose(gz);
  } else {
    std::ofstream(path, std::ios::binary) << json;
  }
  return path;
}

TEST(StreamingReport, KinetoTraceSameRowsAsTheWholeImport) {
  // Shuffled events, plain and gzipped, three threads launching inside and
  // outside the main thread's ranges: the sorted sweep and the launch
  // records it makes from cuda_runtime events must attribute like the whole
  // import's API records, inheritance on and off.
  AttributionOptions off;
  off.main_thread = MainThreadMode::kOff;
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    Program p;
    p.seed = seed;
    p.with_graph = false;      // Kineto has no graph node snapshots
    p.main_range = seed == 3;  // every worker launch inherits "train"
    const std::string f =
        WriteKinetoProgram(p, "kineto_prog" + std::to_string(seed), seed != 2, seed * 7);
    ASSERT_TRUE(IsKinetoTrace(f));
    ExpectSameTables({f}, {}, {}, false);
    ExpectSameTables({f}, {}, off, false);
    ReportOptions by_process;
    by_process.by_process = true;
    ExpectSameTables({f}, by_process, {}, false);
    const StreamingResult got = Streamed({f}, {});
    EXPECT_EQ(got.files_read, 1u);
    EXPECT_GT(got.peak_nodes, 0u);
    const auto* summary = testing::FindRow(got.tables[0], {{"source", "kineto-json"}});
    ASSERT_NE(summary, nullptr);
    EXPECT_GT(testing::IntAt(got.tables[0], *summary, "kernels"), 0);
    if (p.main_range) {
      EXPECT_GT(testing::IntAt(got.tables[0], *summary, "inherited_ops"), 0);
    }
    std::remove(f.c_str());
  }
}

TEST(StreamingReport, KinetoTraceSpilledToSortedRunsGivesTheSameRecords) {
  // A trace larger than one sort run goes through the temporary file and
  // the k-way merge: the records handed out, in order and batch by batch,
  // are those of the in-memory sort (whose tables equal the whole import's,
  // above).
  Program p;
  p.steps = 20;
  p.with_graph = false;
  p.main_range = true;
  const std::string f = WriteKinetoProgram(p, "kineto_spill", true, 5);
  auto records = [&](size_t run_items) {
    std::vector<std::string> out;
    Trace trace;
    std::string error;
    importers::KinetoStreamCallbacks cb;
    cb.on_batch = [&](const ProcessTrace& b) {
      std::ostringstream s;
      for (const RangeRecord& r : b.ranges)
        s << "R" << r.id << "," << r.parent_id << "," << r.depth << "," << r.name << "," << r.thread
          << "," << r.start_ns << "," << r.end_ns << ";";
      for (const LaunchRecord& l : b.launches)
        s << "L" << l.correlation_id << "," << l.range_id << "," << l.time_ns << ";";
      for (const ApiRecord& a : b.api_calls)
        s << "A" << a.correlation_id << "," << a.start_ns << ";";
      for (const KernelRecord& k : b.kernels)
        s << "K" << k.correlation_id << "," << k.start_ns << "," << k.name << ";";
      for (const MemcpyRecord& m : b.memcpys) s << "M" << m.correlation_id << "," << m.bytes << ";";
      out.push_back(s.str());
    };
    cb.on_process = [&](const ProcessTrace& process) {
      out.push_back("footer " + std::to_string(process.footer->session_end_trace_ns) + " " +
                    std::to_string(process.counters.size()));
    };
    EXPECT_TRUE(importers::StreamKinetoJson(f, &trace.strings, cb, &error, nullptr, 64, run_items))
        << error;
    return out;
  };
  const std::vector<std::string> in_memory = records(size_t{1} << 20);
  const std::vector<std::string> spilled = records(7);  // hundreds of runs
  EXPECT_GT(in_memory.size(), 10u);
  EXPECT_EQ(spilled, in_memory);
  // No temporary file to be had: declined (the caller reads it whole), not
  // an error and no partial tables.
  {
    const char* old_tmp = std::getenv("TMPDIR");
    const std::string saved = old_tmp != nullptr ? old_tmp : "";
    setenv("TMPDIR", "/nonexistent/tracer-test", 1);
    Trace trace;
    std::string error;
    bool unsupported = false;
    size_t batches = 0;
    importers::KinetoStreamCallbacks cb;
    cb.on_batch = [&](const ProcessTrace&) { ++batches; };
    cb.on_process = [&](const ProcessTrace&) { ++batches; };
    EXPECT_FALSE(importers::StreamKinetoJson(f, &trace.strings, cb, &error, &unsupported, 64, 7));
    EXPECT_TRUE(unsupported);
    EXPECT_EQ(batches, 0u);
    EXPECT_NE(error.find("temporary file"), std::string::npos) << error;
    if (old_tmp != nullptr) {
      setenv("TMPDIR", saved.c_str(), 1);
    } else {
      unsetenv("TMPDIR");
    }
  }
  std::remove(f.c_str());
}

TEST(StreamingReport, KinetoOpsSharingACorrelationIdAreLeftToTheWholePath) {
  // Two kernels of one cudaLaunchKernel correlation (a CUDA graph launch as
  // Kineto records it): the whole import attributes both through the API
  // record; the bounded path matches one op per launch, so it must decline.
  Program p;
  p.steps = 2;
  p.with_graph = false;
  const std::string plain = WriteKinetoProgram(p, "kineto_dup", false, 3);
  std::ifstream in(plain);
  std::string json((std::istreambuf_iterator<char>(in)), {});
  const size_t at = json.rfind("\n]}");
  ASSERT_NE(at, std::string::npos);
  json.insert(at,
              ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"graph_kernel\", \"pid\": 0, "
              "\"tid\": 11, \"ts\": 2.500, \"dur\": 0.100, \"args\": {\"device\": 0, \"stream\": "
              "11, \"correlation\": 1}}");
  std::ofstream(plain, std::ios::binary | std::ios::trunc) << json;
  const StreamingResult got = Streamed({plain}, {});
  ASSERT_EQ(got.inexact.size(), 1u);
  EXPECT_NE(got.inexact[0].find("without a launch record"), std::string::npos) << got.inexact[0];
  // The command falls back to the whole import and says why.
  const CliOutput cli = RunReport("--stream " + plain + " --table kernels --format csv");
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.err.find("reading the input whole"), std::string::npos) << cli.err;
  EXPECT_EQ(cli.out, RunReport("--no-stream " + plain + " --table kernels --format csv").out);
  std::remove(plain.c_str());
}

// The real PyTorch profiler trace of ../shared/data (ResNet, DDP rank 0):
// `--stream` prints byte for byte what `--no-stream` prints, on the bounded
// path.
TEST(StreamingReport, RealKinetoTraceStreamsAsItReadsWhole) {
  const std::string f =
      std::string(TRACER_SHARED_DATA_DIR) + "/kineto/resnet_ddp_rank0.pt.trace.json.gz";
  if (!std::filesystem::exists(f)) GTEST_SKIP() << f << " is absent";
  const std::string tables =
      " --table summary,ranges,kernels,range-kernels,gpu,memory,api --format csv";
  for (const char* mode : {"", " --main-thread off"}) {
    SCOPED_TRACE(mode);
    const CliOutput whole = RunReport("--no-stream " + f + tables + mode);
    const CliOutput stream = RunReport("--stream " + f + tables + mode);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    ASSERT_EQ(stream.exit_code, 0) << stream.err;
    EXPECT_NE(whole.out.find("# range-kernels"), std::string::npos);
    EXPECT_EQ(stream.out, whole.out);
    EXPECT_EQ(stream.err.find("reading the input whole"), std::string::npos) << stream.err;
  }
  const CliOutput automatic = RunReport(f + tables + " --stream-above 1k");
  ASSERT_EQ(automatic.exit_code, 0) << automatic.err;
  EXPECT_NE(automatic.err.find("large input ("), std::string::npos) << automatic.err;
  EXPECT_EQ(automatic.out, RunReport("--no-stream " + f + tables).out);
  const StreamingResult got = Streamed({f}, {});
  EXPECT_TRUE(got.inexact.empty());
  EXPECT_TRUE(got.errors.empty());
  EXPECT_EQ(got.files_read, 1u);
  EXPECT_GT(got.peak_nodes, 0u);
  ExpectSameTables({f}, {}, {}, false);
}

}  // namespace tracer::analysis
}  // namespace tracer::analysis
