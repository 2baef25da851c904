// Golden tests of the report tables: the scenario of scenario.h in, the
// expected rows out, every number derived by hand in the comments.
#include "libtracer/analysis/tables/tables.h"

#include <gtest/gtest.h>

#include "libtracer/analysis/aggregate/duration_accumulator.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/table_util.h"
#include "tests/analysis/duration_stats_expect.h"
#include "tests/analysis/scenario.h"
#include "tests/analysis/table_lookup.h"

namespace tracer::analysis {
namespace {

using namespace testing;  // NOLINT: test helpers

class TablesTest : public ::testing::Test {
 protected:
  void SetUp() override { Load(false); }
  void Load(bool api_only, AttributionOptions o = {}) {
    trace_ = Trace();
    TraceFileBuilder b;
    BuildScenario(&b, api_only);
    std::string error;
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "s.trace", &trace_, &error));
    analyzed_ = std::make_unique<AnalyzedTrace>(trace_, o);
  }
  Trace trace_;
  std::unique_ptr<AnalyzedTrace> analyzed_;
  ReportOptions options_;
};

TEST_F(TablesTest, RangesTableAggregatesInstancesByName) {
  const Table t = RangesTable(*analyzed_, options_);
  const auto* layer = FindRow(t, {{"range", "layer"}});
  ASSERT_NE(layer, nullptr);
  // CPU: #3 = 2000-200 = 1800, #4 = 4000-2100 = 1900.
  EXPECT_EQ(IntAt(t, *layer, "instances"), 2);
  EXPECT_EQ(IntAt(t, *layer, "cpu_total_ns"), 3700);
  EXPECT_EQ(IntAt(t, *layer, "cpu_avg_ns"), 1850);
  EXPECT_EQ(IntAt(t, *layer, "cpu_med_ns"), 1850);  // mean of the two middle values
  EXPECT_EQ(IntAt(t, *layer, "cpu_min_ns"), 1800);
  EXPECT_EQ(IntAt(t, *layer, "cpu_max_ns"), 1900);
  // Sample stddev: sqrt((50^2 + 50^2) / 1) = 70.7 -> 71.
  EXPECT_EQ(IntAt(t, *layer, "cpu_stddev_ns"), 71);
  EXPECT_EQ(TextAt(t, *layer, "depth"), "2");
  EXPECT_EQ(TextAt(t, *layer, "threads"), "100 (main)");
  // GPU: proj 600 (#3) + 1100 (#4); busy 500 + 600; kernels 3 + 2.
  EXPECT_EQ(IntAt(t, *layer, "gpu_instances"), 2);
  EXPECT_EQ(IntAt(t, *layer, "gpu_proj_total_ns"), 1700);
  EXPECT_EQ(IntAt(t, *layer, "gpu_proj_avg_ns"), 850);
  EXPECT_EQ(IntAt(t, *layer, "gpu_busy_ns"), 1100);
  EXPECT_EQ(IntAt(t, *layer, "kernels"), 5);
  EXPECT_EQ(IntAt(t, *layer, "kernel_ns"), 1200);
  // gemm: K1 400 + K3 100 + K4 400 = 900 of 1200 (75 %); relu 300 (25 %).
  EXPECT_EQ(TextAt(t, *layer, "top_kernels"), "gemm 75%, relu 25%");

  const auto* cpu_only = FindRow(t, {{"range", "cpu_only"}});
  ASSERT_NE(cpu_only, nullptr);
  EXPECT_EQ(IntAt(t, *cpu_only, "gpu_instances"), 0);
  EXPECT_TRUE(IsEmpty(t, *cpu_only, "gpu_proj_total_ns"));  // no projection, not 0
  EXPECT_TRUE(IsEmpty(t, *cpu_only, "gpu_busy_ns"));

  const auto* step = FindRow(t, {{"range", "step"}});
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(IntAt(t, *step, "gpu_proj_total_ns"), 5500);  // includes inherited K6
  EXPECT_EQ(IntAt(t, *step, "kernels"), 6);               // K1..K6
  // Sorted by CPU total: step (10000) and epoch (10000) before fwd (4900).
  EXPECT_EQ(TextAt(t, t.rows[2], "range"), "fwd");
}

TEST_F(TablesTest, FilterDomainSortAndTop) {
  options_.filter = "^la";
  Table t = RangesTable(*analyzed_, options_);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(TextAt(t, t.rows[0], "range"), "layer");
  options_ = {};
  options_.sort = SortKey::kName;
  options_.top = 2;
  t = RangesTable(*analyzed_, options_);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(TextAt(t, t.rows[0], "range"), "bwd");
  EXPECT_EQ(TextAt(t, t.rows[1], "range"), "cpu_only");
  options_ = {};
  options_.domain = "no-such-domain";
  EXPECT_TRUE(RangesTable(*analyzed_, options_).rows.empty());
}

TEST_F(TablesTest, AnInvalidFilterIsAStatusNotAnException) {
  options_.filter = "^la";
  EXPECT_TRUE(RangeFilter::Check(options_).ok());
  options_.filter = "(la";
  const Status s = RangeFilter::Check(options_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--filter: invalid regular expression '(la'"), std::string::npos);
  // Unchecked, it selects nothing rather than throwing through the table.
  EXPECT_TRUE(RangesTable(*analyzed_, options_).rows.empty());
}

TEST_F(TablesTest, KernelsTable) {
  const Table t = KernelsTable(*analyzed_, options_);
  const auto* gemm = FindRow(t, {{"kernel", "gemm"}});
  ASSERT_NE(gemm, nullptr);
  // gemm: 400, 100, 400.
  EXPECT_EQ(IntAt(t, *gemm, "count"), 3);
  EXPECT_EQ(IntAt(t, *gemm, "total_ns"), 900);
  EXPECT_EQ(IntAt(t, *gemm, "avg_ns"), 300);
  EXPECT_EQ(IntAt(t, *gemm, "med_ns"), 400);
  EXPECT_EQ(IntAt(t, *gemm, "min_ns"), 100);
  // All kernels: 900 + relu 300 + bwd 500 + outside 100 + lost 100 = 1900.
  EXPECT_NEAR(DoubleAt(t, *gemm, "share_pct"), 100.0 * 900 / 1900, 1e-9);
  EXPECT_EQ(TextAt(t, t.rows[0], "kernel"), "gemm");  // largest total first
  EXPECT_EQ(t.rows.size(), 5u);
}

TEST_F(TablesTest, RangeKernelsCountsAKernelTowardEveryAncestor) {
  const Table t = RangeKernelsTable(*analyzed_, options_);
  // gemm K1, K3, K4 are in layer, fwd and step alike.
  for (const char* range : {"layer", "fwd", "step"}) {
    const auto* row = FindRow(t, {{"range", range}, {"kernel", "gemm"}});
    ASSERT_NE(row, nullptr) << range;
    EXPECT_EQ(IntAt(t, *row, "count"), 3) << range;
    EXPECT_EQ(IntAt(t, *row, "total_ns"), 900) << range;
  }
  // Two layer instances ran gemm; one fwd instance.
  EXPECT_EQ(IntAt(t, *FindRow(t, {{"range", "layer"}, {"kernel", "gemm"}}), "range_instances"), 2);
  EXPECT_EQ(IntAt(t, *FindRow(t, {{"range", "fwd"}, {"kernel", "gemm"}}), "range_instances"), 1);
  // The worker's kernel counts toward bwd and (inherited) step, not fwd.
  EXPECT_NE(FindRow(t, {{"range", "bwd"}, {"kernel", "bwd_kernel"}}), nullptr);
  EXPECT_NE(FindRow(t, {{"range", "step"}, {"kernel", "bwd_kernel"}}), nullptr);
  EXPECT_EQ(FindRow(t, {{"range", "fwd"}, {"kernel", "bwd_kernel"}}), nullptr);
  // Launched outside any range / unattributed: in no row.
  EXPECT_EQ(FindRow(t, {{"kernel", "outside"}}), nullptr);
  EXPECT_EQ(FindRow(t, {{"kernel", "lost"}}), nullptr);
  // layer: gemm 900 of 1200 kernel time.
  EXPECT_NEAR(DoubleAt(t, *FindRow(t, {{"range", "layer"}, {"kernel", "gemm"}}), "range_share_pct"),
              75.0, 1e-9);
}

TEST_F(TablesTest, GpuProjectionTable) {
  const Table t = GpuProjectionTable(*analyzed_, options_);
  const auto* layer = FindRow(t, {{"range", "layer"}});
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(IntAt(t, *layer, "proj_instances"), 2);
  EXPECT_EQ(IntAt(t, *layer, "proj_total_ns"), 1700);  // 600 + 1100
  EXPECT_EQ(IntAt(t, *layer, "proj_min_ns"), 600);
  EXPECT_EQ(IntAt(t, *layer, "proj_max_ns"), 1100);
  EXPECT_EQ(IntAt(t, *layer, "proj_med_ns"), 850);
  EXPECT_EQ(IntAt(t, *layer, "busy_ns"), 1100);
  EXPECT_EQ(IntAt(t, *layer, "ops"), 6);  // K1 K2 K3 | K4 K5 M1
  EXPECT_EQ(IntAt(t, *layer, "kernels"), 5);
  EXPECT_EQ(IntAt(t, *layer, "max_streams"), 2);
  const auto* cpu_only = FindRow(t, {{"range", "cpu_only"}});
  ASSERT_NE(cpu_only, nullptr);
  EXPECT_EQ(IntAt(t, *cpu_only, "instances"), 1);
  EXPECT_EQ(IntAt(t, *cpu_only, "proj_instances"), 0);
  EXPECT_TRUE(IsEmpty(t, *cpu_only, "proj_total_ns"));
  // epoch (start/end [0,10000]) covers every attributed launch but K7:
  // K1..K6 + M1 = 7 ops, span [1000, 6500].
  const auto* epoch = FindRow(t, {{"range", "epoch"}});
  EXPECT_EQ(IntAt(t, *epoch, "ops"), 7);
  EXPECT_EQ(IntAt(t, *epoch, "proj_total_ns"), 5500);
}

TEST_F(TablesTest, MemoryAndApiTables) {
  Table t = MemoryOpsTable(*analyzed_, options_);
  const auto* htod = FindRow(t, {{"operation", "memcpy HtoD"}});
  ASSERT_NE(htod, nullptr);
  EXPECT_EQ(IntAt(t, *htod, "count"), 1);
  EXPECT_EQ(IntAt(t, *htod, "bytes"), 1000);
  EXPECT_EQ(IntAt(t, *htod, "total_ns"), 100);
  EXPECT_NEAR(DoubleAt(t, *htod, "bandwidth_gbps"), 10.0, 1e-9);  // 1000 B / 100 ns
  Load(/*api_only=*/true);
  t = ApiTable(*analyzed_, options_);
  const auto* launch = FindRow(t, {{"function", "cudaLaunchKernel"}});
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(IntAt(t, *launch, "calls"), 7);       // 8 launches, one of them the memcpy
  EXPECT_EQ(IntAt(t, *launch, "total_ns"), 140);  // 7 x 20
}

TEST_F(TablesTest, ApiRecordAttributionGivesTheSameRangeTable) {
  // The importer path (API records, no parent ids) must match the capture
  // path (launch records) row for row.
  const Table captured = RangesTable(*analyzed_, options_);
  Load(/*api_only=*/true);
  const Table imported = RangesTable(*analyzed_, options_);
  ASSERT_EQ(captured.rows.size(), imported.rows.size());
  for (size_t r = 0; r < captured.rows.size(); ++r) {
    EXPECT_EQ(captured.rows[r], imported.rows[r]) << TextAt(captured, captured.rows[r], "range");
  }
}

TEST_F(TablesTest, SummaryCountsUnattributedAndInherited) {
  const Table t = SummaryTable(*analyzed_, options_);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(IntAt(t, t.rows[0], "kernels"), 8);
  EXPECT_EQ(IntAt(t, t.rows[0], "unattributed_ops"), 1);    // K8
  EXPECT_EQ(IntAt(t, t.rows[0], "ops_outside_ranges"), 1);  // K7
  EXPECT_EQ(IntAt(t, t.rows[0], "inherited_ops"), 1);       // K6
  EXPECT_EQ(TextAt(t, t.rows[0], "main_thread"), "100 (main)");
  bool inherited_note = false;
  for (const auto& n : t.notes) inherited_note |= n.find("1 GPU ops (11.1%)") != std::string::npos;
  EXPECT_TRUE(inherited_note) << "notes must say how many ops were inherited (1 of 9)";
}

TEST(TablesMergeTest, TwoProcessesAggregateByNameOrStayApart) {
  // Two ranks of the same program: rows add up; --by-process splits them.
  Trace trace;
  std::string error;
  for (uint32_t pid : {100u, 200u}) {
    TraceFileBuilder b(pid);
    BuildScenario(&b);
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "rank.trace", &trace, &error));
  }
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  ReportOptions o;
  Table t = RangesTable(analyzed, o);
  const auto* layer = FindRow(t, {{"range", "layer"}});
  EXPECT_EQ(IntAt(t, *layer, "instances"), 4);
  EXPECT_EQ(IntAt(t, *layer, "cpu_total_ns"), 7400);
  o.by_process = true;
  t = RangesTable(analyzed, o);
  const auto* p200 = FindRow(t, {{"range", "layer"}, {"process", "pid 200"}});
  ASSERT_NE(p200, nullptr);
  EXPECT_EQ(IntAt(t, *p200, "instances"), 2);
  EXPECT_EQ(SummaryTable(analyzed, o).rows.size(), 2u);
  // Process 200's thread 100 is not its pid: its main thread is the one that
  // opened the first range (thread 1, "step" at 0).
  EXPECT_EQ(analyzed.process(1).attribution.main_thread(), 1u);
}

}  // namespace
}  // namespace tracer::analysis

namespace tracer::analysis {
namespace {

using namespace testing;  // NOLINT: test helpers

TEST(SummaryDroppedTest, CounterDeltasWithoutFooterAndFooterTotals) {
  // A killed process: only the per-chunk counter deltas (2 + 3) exist.
  TraceFileBuilder killed(1);
  killed.Range(1, 0, 1, "r", 0, 10);
  killed.Counter("dropped_cupti_buffer_pool_exhausted", 2);
  killed.Frame();
  killed.Counter("dropped_cupti_buffer_pool_exhausted", 3);
  killed.Memset(256, 1, 100, 164, 0);
  // A clean exit: the footer's totals win over the deltas.
  TraceFileBuilder clean(2);
  clean.Range(1, 0, 1, "r", 0, 10);
  clean.Counter("dropped_nvtx_ring_full", 1);
  clean.Frame();
  FooterInfo f;
  f.dropped_by_cause = {{"nvtx_ring_full", 4}, {"cupti_dropped", 6}};
  clean.Footer(f);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(killed.Bytes(), "killed.trace", &trace, &error));
  ASSERT_TRUE(ReadTraceBytes(clean.Bytes(), "clean.trace", &trace, &error));
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table t = SummaryTable(analyzed, ReportOptions{});
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(IntAt(t, t.rows[0], "dropped"), 5);
  EXPECT_EQ(TextAt(t, t.rows[0], "complete"), "no");
  EXPECT_EQ(IntAt(t, t.rows[1], "dropped"), 10);  // 4 + 6
  EXPECT_EQ(TextAt(t, t.rows[1], "complete"), "yes");
  bool causes = false;
  for (const auto& n : t.notes)
    causes |= n == "pid 2: dropped records by cause: cupti_dropped 6, nvtx_ring_full 4";
  EXPECT_TRUE(causes);
  // The memset shows in the memory table: 256 B in 64 ns = 4 GB/s.
  const Table m = MemoryOpsTable(analyzed, ReportOptions{});
  const auto* memset = FindRow(m, {{"operation", "memset"}});
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(IntAt(m, *memset, "bytes"), 256);
  EXPECT_NEAR(DoubleAt(m, *memset, "bandwidth_gbps"), 4.0, 1e-9);
  // The memset has no correlation id: unattributed.
  EXPECT_EQ(IntAt(t, t.rows[0], "unattributed_ops"), 1);
}

// Issue 12 (9): three ranges of 2^63 - 1 ns each wrapped the CPU total to
// -9223372036854775808 (signed overflow, UBSan). Totals saturate.
TEST(TablesOverflowTest, HugeDurationsSaturateInsteadOfWrapping) {
  TraceFileBuilder b;
  b.Thread(1, 100);
  constexpr uint64_t kLong = static_cast<uint64_t>(INT64_MAX);
  for (uint64_t i = 1; i <= 3; ++i) b.Range(i, 0, 1, "forever", 0, kLong);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "long.trace", &trace, &error)) << error;
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table t = RangesTable(analyzed, ReportOptions{});
  const auto* row = FindRow(t, {{"range", "forever"}});
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(IntAt(t, *row, "cpu_total_ns"), INT64_MAX);
  EXPECT_EQ(IntAt(t, *row, "cpu_avg_ns"), INT64_MAX);

  // The bounded accumulator, exact and binned, and merged.
  DurationAccumulator acc;
  for (int i = 0; i < 3; ++i) acc.Add(INT64_MAX);
  EXPECT_EQ(acc.total(), INT64_MAX);
  DurationAccumulator binned;
  for (size_t i = 0; i <= DurationAccumulator::kExactLimit; ++i) binned.Add(INT64_MAX / 4);
  EXPECT_FALSE(binned.exact());
  EXPECT_EQ(binned.Stats().total, INT64_MAX);
  binned.Merge(acc);
  EXPECT_EQ(binned.total(), INT64_MAX);
  std::vector<int64_t> values(3, INT64_MAX);
  EXPECT_EQ(ComputeStats(&values).total, INT64_MAX);
}

// Totals() gives what Stats() gives for count, total, min, max and avg: kept
// values, a saturated sum of kept values (whose average is taken from the
// unsaturated sum), and binned values.
TEST(DurationAccumulatorTest, TotalsMatchStats) {
  const auto expect_same = [](DurationAccumulator acc) {
    const DurationStats totals = acc.Totals();
    ExpectSameTotals(totals, acc.Stats());
  };
  expect_same(DurationAccumulator());
  DurationAccumulator few;
  for (int64_t v : {7, -3, 100, 2, 2}) few.Add(v);
  EXPECT_EQ(few.Totals().avg, 22);  // 111 / 5, the negative value counted as 0
  expect_same(few);
  DurationAccumulator saturated;
  for (int64_t v : {INT64_MAX, INT64_MAX / 2, int64_t{1} << 62}) saturated.Add(v);
  EXPECT_EQ(saturated.Totals().total, INT64_MAX);
  EXPECT_LT(saturated.Totals().avg, INT64_MAX);
  expect_same(saturated);
  DurationAccumulator binned;
  for (size_t i = 0; i <= DurationAccumulator::kExactLimit; ++i) binned.Add(1000 + i % 977);
  EXPECT_FALSE(binned.exact());
  expect_same(binned);
}

// The GPU sums of a range (kernel time, busy) and the kernels' share base
// saturate too: three kernels of 2^63 - 1 ns in one range.
TEST(TablesOverflowTest, HugeKernelTimesSaturate) {
  TraceFileBuilder b;
  b.Thread(1, 100);
  b.Stream(1, 0, 7);
  b.Stream(2, 0, 8);
  b.Stream(3, 0, 9);
  constexpr uint64_t kLong = static_cast<uint64_t>(INT64_MAX);
  for (uint64_t i = 1; i <= 3; ++i) {
    b.Launch(i, 1, 10, 1);
    b.Kernel("k", static_cast<uint32_t>(i), 0, kLong, i);
  }
  b.Range(1, 0, 1, "r", 0, 100);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "gpu_long.trace", &trace, &error)) << error;
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table t = RangesTable(analyzed, ReportOptions{});
  const auto* row = FindRow(t, {{"range", "r"}});
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(IntAt(t, *row, "kernel_ns"), INT64_MAX);
  EXPECT_GE(IntAt(t, *row, "gpu_busy_ns"), 0);
  const Table k = KernelsTable(analyzed, ReportOptions{});
  EXPECT_EQ(IntAt(k, k.rows[0], "total_ns"), INT64_MAX);
}

}  // namespace
}  // namespace tracer::analysis
