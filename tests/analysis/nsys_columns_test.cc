// Issue 16: the statistics nsys's reports print (cuda_gpu_kern_sum,
// cuda_api_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum, nvtx_sum,
// nvtx_gpu_proj_sum), on small traces whose numbers are derived by hand
// here; the unique short kernel names, API names as nsys prints them, and
// the renderer's --timeunit / --columns / empty-column rules.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "libtracer/analysis/aggregate/duration_stats.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/reports/diff.h"
#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/analysis/table_lookup.h"
#include "tests/analysis/trace_file_builder.h"

namespace tracer::analysis {
namespace {

using namespace testing;  // NOLINT: test helpers

// Kernels, API calls, copies and sets with durations chosen so that every
// statistic has a hand-computed value:
//   kernel "even": 1 ns and 2 ns  -> median 1.5 -> 2 (nsys rounds 1.5 half
//                  away from zero; to the ns it is 2), stddev sqrt(0.5) -> 1
//   kernel "odd":  100, 200, 600  -> total 900, avg 300, med 200,
//                  stddev sqrt((200^2 + 100^2 + 300^2) / 2) = 264.575 -> 265
//   API cudaMemcpy2D_v3020: 10, 30 (total 40); cuMemcpyHtoDAsync_v2: 60
//                  -> Time % 40 and 60; names "cudaMemcpy2D", "cuMemcpyHtoDAsync_v2"
//   memcpy HtoD:   100 B in 10 ns, 300 B in 30 ns, 800 B in 80 ns -> sizes
//                  avg 400, med 300, min 100, max 800, stddev
//                  sqrt((300^2 + 100^2 + 400^2) / 2) = 360.555 -> 361;
//                  time total 120, med 30, stddev 36 (360.555 / 10)
//   memset:        40 B in 40 ns -> Time % of memory = 40 / 160 = 25 %
class NsysColumnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceFileBuilder b;
    b.Thread(1, 100, "main");
    b.Stream(1, 0, 7);
    b.Range(1, 0, 1, "step", 0, 1000, 0);
    b.Range(2, 0, 1, "step", 2000, 2400, 0);
    b.Range(3, 0, 1, "epoch", 0, 3000, 0, RangeKind::kStartEnd);
    b.Frame();
    b.Kernel("even", 1, 100, 101, 1);
    b.Kernel("even", 1, 200, 202, 2);
    b.Kernel("odd", 1, 300, 400, 3);
    b.Kernel("odd", 1, 500, 700, 4);
    b.Kernel("odd", 1, 800, 1400, 5);
    b.Api("cudaMemcpy2D_v3020", 1, 10, 20, 10);
    b.Api("cudaMemcpy2D_v3020", 1, 30, 60, 11);
    b.Api("cuMemcpyHtoDAsync_v2", 1, 70, 130, 12);
    b.Memcpy(/*HtoD*/ 1, 100, 1, 1500, 1510, 20);
    b.Memcpy(/*HtoD*/ 1, 300, 1, 1600, 1630, 21);
    b.Memcpy(/*HtoD*/ 1, 800, 1, 1700, 1780, 22);
    b.Memset(40, 1, 1800, 1840, 23);
    b.Frame();
    std::string error;
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "n.trace", &trace_, &error)) << error;
    analyzed_ = std::make_unique<AnalyzedTrace>(trace_, AttributionOptions{});
  }
  Trace trace_;
  std::unique_ptr<AnalyzedTrace> analyzed_;
  ReportOptions options_;
};

TEST_F(NsysColumnsTest, KernelsHaveMedianAndStddevAsNsys) {
  const Table t = KernelsTable(*analyzed_, options_);
  const auto* even = FindRow(t, {{"kernel", "even"}});
  const auto* odd = FindRow(t, {{"kernel", "odd"}});
  ASSERT_NE(even, nullptr);
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(IntAt(t, *even, "med_ns"), 2);
  EXPECT_EQ(IntAt(t, *even, "avg_ns"), 2);  // 1.5 rounded half away from zero
  EXPECT_EQ(IntAt(t, *even, "stddev_ns"), 1);
  EXPECT_EQ(IntAt(t, *odd, "total_ns"), 900);
  EXPECT_EQ(IntAt(t, *odd, "avg_ns"), 300);
  EXPECT_EQ(IntAt(t, *odd, "med_ns"), 200);
  EXPECT_EQ(IntAt(t, *odd, "min_ns"), 100);
  EXPECT_EQ(IntAt(t, *odd, "max_ns"), 600);
  EXPECT_EQ(IntAt(t, *odd, "stddev_ns"), 265);
  EXPECT_NEAR(DoubleAt(t, *odd, "share_pct"), 100.0 * 900 / 903, 1e-9);
}

TEST_F(NsysColumnsTest, ApiTableHasStddevTimePercentAndNsysNames) {
  const Table t = ApiTable(*analyzed_, options_);
  const auto* copy2d = FindRow(t, {{"function", "cudaMemcpy2D"}});
  const auto* driver = FindRow(t, {{"function", "cuMemcpyHtoDAsync_v2"}});
  ASSERT_NE(copy2d, nullptr) << RenderTable(t, OutputFormat::kText);
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(FindRow(t, {{"function", "cudaMemcpy2D_v3020"}}), nullptr);
  EXPECT_EQ(IntAt(t, *copy2d, "calls"), 2);
  EXPECT_EQ(IntAt(t, *copy2d, "med_ns"), 20);
  EXPECT_EQ(IntAt(t, *copy2d, "stddev_ns"), 14);  // sqrt(200) = 14.14
  EXPECT_NEAR(DoubleAt(t, *copy2d, "time_pct"), 40.0, 1e-9);
  EXPECT_NEAR(DoubleAt(t, *driver, "time_pct"), 60.0, 1e-9);
}

TEST_F(NsysColumnsTest, MemoryTableHasTimeAndSizeStatistics) {
  const Table t = MemoryOpsTable(*analyzed_, options_);
  const auto* htod = FindRow(t, {{"operation", "memcpy HtoD"}});
  const auto* memset = FindRow(t, {{"operation", "memset"}});
  ASSERT_NE(htod, nullptr);
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(IntAt(t, *htod, "count"), 3);
  EXPECT_EQ(IntAt(t, *htod, "total_ns"), 120);
  EXPECT_EQ(IntAt(t, *htod, "med_ns"), 30);
  EXPECT_EQ(IntAt(t, *htod, "stddev_ns"), 36);
  EXPECT_NEAR(DoubleAt(t, *htod, "time_pct"), 75.0, 1e-9);
  EXPECT_NEAR(DoubleAt(t, *memset, "time_pct"), 25.0, 1e-9);
  EXPECT_EQ(IntAt(t, *htod, "bytes"), 1200);
  EXPECT_EQ(IntAt(t, *htod, "bytes_avg"), 400);
  EXPECT_EQ(IntAt(t, *htod, "bytes_med"), 300);
  EXPECT_EQ(IntAt(t, *htod, "bytes_min"), 100);
  EXPECT_EQ(IntAt(t, *htod, "bytes_max"), 800);
  EXPECT_EQ(IntAt(t, *htod, "bytes_stddev"), 361);
  EXPECT_EQ(IntAt(t, *memset, "bytes_avg"), 40);
  EXPECT_EQ(IntAt(t, *memset, "bytes_stddev"), 0);  // one value: 0, as SQLite's stdev
}

TEST_F(NsysColumnsTest, RangesHaveTimePercentAndStyle) {
  const Table t = RangesTable(*analyzed_, options_);
  const auto* step = FindRow(t, {{"range", "step"}});
  const auto* epoch = FindRow(t, {{"range", "epoch"}});
  ASSERT_NE(step, nullptr);
  ASSERT_NE(epoch, nullptr);
  // nvtx_sum: 1400 of 4400 ns of all ranges.
  EXPECT_NEAR(DoubleAt(t, *step, "cpu_time_pct"), 100.0 * 1400 / 4400, 1e-9);
  EXPECT_EQ(TextAt(t, *step, "style"), "PushPop");
  EXPECT_EQ(TextAt(t, *epoch, "style"), "StartEnd");
  EXPECT_EQ(IntAt(t, *step, "cpu_med_ns"), 700);  // (1000 + 400) / 2
  const Table g = GpuProjectionTable(*analyzed_, options_);
  ASSERT_GE(ColumnIndex(g, "proj_stddev_ns"), 0);
  ASSERT_GE(ColumnIndex(g, "style"), 0);
}

TEST(StatsRounding, MedianOfAnEvenCountRoundsHalfUpAsNsysToTheNs) {
  std::vector<int64_t> v = {1, 2};
  EXPECT_EQ(ComputeStats(&v).median, 2);
  v = {10, 13};
  EXPECT_EQ(ComputeStats(&v).median, 12);  // 11.5
  v = {10, 12};
  EXPECT_EQ(ComputeStats(&v).median, 11);
  v = {4, 1, 3};
  EXPECT_EQ(ComputeStats(&v).median, 3);
  EXPECT_EQ(HalfwayUp(0, INT64_MAX), INT64_MAX / 2 + 1);
}

TEST(ApiDisplayName, DropsTheCuptiVersionSuffixOnly) {
  EXPECT_EQ(ApiDisplayName("cudaMemcpy2D_v3020"), "cudaMemcpy2D");
  EXPECT_EQ(ApiDisplayName("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel_ptsz");
  EXPECT_EQ(ApiDisplayName("cudaStreamGetCaptureInfo_v2_v11030"), "cudaStreamGetCaptureInfo_v2");
  EXPECT_EQ(ApiDisplayName("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync_v2");
  EXPECT_EQ(ApiDisplayName("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(ApiDisplayName("_v1234"), "");
  EXPECT_EQ(ApiDisplayName("cudaFoo_v12a4"), "cudaFoo_v12a4");
}

TEST(UniqueShortNames, CollidingNamesGetTheLeastContextThatTellsThemApart) {
  const std::vector<std::string_view> names = {
      "void at::native::elementwise_kernel<128, 2, at::native::(anonymous "
      "namespace)::MulFunctor<float>>(int, at::native::(anonymous namespace)::MulFunctor<float>)",
      "void at::native::elementwise_kernel<128, 2, at::native::(anonymous "
      "namespace)::AddFunctor<float>>(int, at::native::(anonymous namespace)::AddFunctor<float>)",
      "void at::native::reduce_kernel<512, 1>(int)",
      "void at::native::reduce_kernel<256, 1>(int)",
      "ampere_sgemm_128x64_nn",
      "void at::native::(anonymous namespace)::softmax_kernel<float>(float*)",
  };
  const std::vector<std::string> labels = UniqueShortNames(names);
  ASSERT_EQ(labels.size(), names.size());
  EXPECT_EQ(std::set<std::string>(labels.begin(), labels.end()).size(), names.size());
  EXPECT_EQ(labels[0], "at::native::elementwise_kernel<...MulFunctor...>");
  EXPECT_EQ(labels[1], "at::native::elementwise_kernel<...AddFunctor...>");
  EXPECT_EQ(labels[2], "at::native::reduce_kernel<512...");
  EXPECT_EQ(labels[3], "at::native::reduce_kernel<256...");
  EXPECT_EQ(labels[4], "ampere_sgemm_128x64_nn");  // no collision: as it is
  EXPECT_EQ(labels[5], "at::native::(anonymous namespace)::softmax_kernel");
}

TEST(UniqueShortNames, IdenticalDemangledNamesAreNumbered) {
  const std::vector<std::string> labels = UniqueShortNames({"k<1>(int)", "k<1>(int)", ""});
  EXPECT_EQ(labels[0], "k");
  EXPECT_EQ(labels[1], "k #2");
  EXPECT_EQ(labels[2], "(unnamed)");
}

TEST(UniqueShortNames, LabelsDoNotDependOnTheOrderNamesArrive) {
  // Two instantiations no word tells apart ((int)1 vs (int)2 both hold 1
  // and 2): numbered by full name, whichever was read first.
  const std::vector<std::string_view> names = {"void ns::copy<(int)2, (int)1>(int)",
                                               "void ns::copy<(int)1, (int)2>(int)",
                                               "void ns::copy<(int)1, (int)2, (int)3>(int)"};
  const std::vector<std::string> forward = UniqueShortNames(names);
  const std::vector<std::string> backward = UniqueShortNames({names.rbegin(), names.rend()});
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(forward[i], backward[names.size() - 1 - i]) << names[i];
  }
  EXPECT_EQ(std::set<std::string>(forward.begin(), forward.end()).size(), names.size());
}

Table Durations() {
  Table t;
  t.name = "d";
  t.columns = {{"name", ColumnKind::kText, "Name"},
               {"total_ns", ColumnKind::kDuration, "Total"},
               {"gpu_ns", ColumnKind::kDuration, "GPU"},
               {"count", ColumnKind::kCount, "Count"}};
  t.rows.push_back({std::string("a"), int64_t{1600}, Cell(), int64_t{3}});
  t.rows.push_back({std::string("b"), int64_t{2500000001}, Cell(), int64_t{1}});
  return t;
}

TEST(RenderView, EmptyColumnsAreLeftOutOfTextAndMdButNotCsv) {
  const std::string text = RenderTable(Durations(), OutputFormat::kText);
  EXPECT_EQ(text.find("GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("Count"), std::string::npos);
  EXPECT_EQ(RenderTable(Durations(), OutputFormat::kMarkdown).find("GPU"), std::string::npos);
  EXPECT_NE(RenderTable(Durations(), OutputFormat::kCsv).find("gpu_ns"), std::string::npos);
}

TEST(RenderView, TimeUnitIsOnePerColumnNamedInTheHeader) {
  RenderOptions o;
  o.time_unit = TimeUnit::kMs;
  const std::string text = RenderTable(Durations(), OutputFormat::kText, o);
  EXPECT_NE(text.find("Total (ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("0.002"), std::string::npos) << text;     // 1600 ns
  EXPECT_NE(text.find("2500.000"), std::string::npos) << text;  // 2.5 s
  EXPECT_EQ(text.find(" us"), std::string::npos) << text;
  // CSV: renamed column, every ns kept.
  const std::string csv = RenderTable(Durations(), OutputFormat::kCsv, o);
  EXPECT_NE(csv.find("name,total_ms,gpu_ms,count\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("a,0.001600,,3\r\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("b,2500.000001,,1\r\n"), std::string::npos) << csv;
  // JSON stays in ns.
  const std::string json = RenderTable(Durations(), OutputFormat::kJson, o);
  EXPECT_NE(json.find("\"total_ns\": 1600"), std::string::npos) << json;
  o.time_unit = TimeUnit::kNs;
  EXPECT_NE(RenderTable(Durations(), OutputFormat::kText, o).find("2500000001"), std::string::npos);
  TimeUnit u;
  EXPECT_TRUE(ParseTimeUnit("usec", &u));
  EXPECT_EQ(u, TimeUnit::kUs);
  EXPECT_FALSE(ParseTimeUnit("minutes", &u));
}

TEST(RenderView, ColumnsChooseAndOrder) {
  RenderOptions o;
  o.columns = {"count", "Name", "gpu_ns"};
  const std::string csv = RenderTable(Durations(), OutputFormat::kCsv, o);
  EXPECT_EQ(csv.substr(0, csv.find('\r')), "count,name,gpu_ns");
  // Chosen columns are shown even when empty.
  EXPECT_NE(RenderTable(Durations(), OutputFormat::kText, o).find("GPU"), std::string::npos);
  o.columns = {"nope", "count"};
  EXPECT_EQ(UnknownColumns({Durations()}, o), std::vector<std::string>{"nope"});
  // The names a CSV header shows under --timeunit choose the same columns
  // (total_ms is total_ns in ms), whatever unit is asked for.
  o.columns = {"name", "total_ms"};
  EXPECT_TRUE(UnknownColumns({Durations()}, o).empty());
  o.time_unit = TimeUnit::kMs;
  const std::string ms = RenderTable(Durations(), OutputFormat::kCsv, o);
  EXPECT_EQ(ms.substr(0, ms.find('\r')), "name,total_ms");
  o.columns = {"total_us", "count"};
  o.time_unit = TimeUnit::kUs;
  const std::string us = RenderTable(Durations(), OutputFormat::kCsv, o);
  EXPECT_EQ(us.substr(0, us.find('\r')), "total_us,count");
  o.columns = {"total_min"};
  EXPECT_EQ(UnknownColumns({Durations()}, o), std::vector<std::string>{"total_min"});
}

TEST(DiffTables, TailKeysComeAfterTheNumbers) {
  Table a;
  a.name = "kernels";
  a.columns = {{"kernel", ColumnKind::kText, "Kernel"},
               {"total_ns", ColumnKind::kDuration, "Total"},
               {"full_name", ColumnKind::kText, "Full name"}};
  a.rows.push_back({std::string("k"), int64_t{10}, std::string("void k<1>(int)")});
  a.rows.push_back({std::string("k #2"), int64_t{10}, std::string("void k<2>(int)")});
  Table b = a;
  std::get<int64_t>(b.rows[0][1]) = 30;
  const auto d = reports::DiffTables(a, b, {{"kernel"}, {"total_ns"}, {"full_name"}});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->columns.front().name, "kernel");
  EXPECT_EQ(d->columns.back().name, "full_name");
  EXPECT_EQ(d->rows.size(), 2u);
  const auto* k = FindRow(*d, {{"full_name", "void k<1>(int)"}});
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(IntAt(*d, *k, "total_ns_delta"), 20);
}

}  // namespace
}  // namespace tracer::analysis
