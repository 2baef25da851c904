// PM metrics per range, kernel and group (tables/metrics_table.h,
// reports/group_metrics.h), in tracer diff, the SQLite and Chrome exports and
// the CLI. Samples are written as the capture writes them (PmSample records,
// proto Chunk field 20) into streams built with the test builders; every
// expectation is derived by hand in the comments next to it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "libtracer/analysis/export/chrome_export.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/reports/diff.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/tables/metrics_table.h"
#include "tests/analysis/run_tracer.h"
#include "tests/analysis/scenario.h"
#include "tests/analysis/table_lookup.h"

namespace tracer::analysis {
namespace {

using testing::DoubleAt;
using testing::FindRow;
using testing::IntAt;
using testing::IsEmpty;
using testing::TraceFileBuilder;

Trace Read(TraceFileBuilder& b) {
  Trace trace;
  std::string error;
  EXPECT_TRUE(ReadTraceBytes(b.Bytes(), "m.trace", &trace, &error)) << error;
  return trace;
}

const Table& Named(const std::vector<Table>& tables, const std::string& name) {
  for (const Table& t : tables) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no table " << name;
  static const Table kNone;
  return kNone;
}

// The scenario of scenario.h (one device, streams 1 and 2) with metric "sm"
// sampled on device 0 every 1000 ns from 500, one sample missing:
//   [500,1500)=10 [1500,2500)=20 [2500,3500)=30 [3500,4500)=40
//   (no sample over [4500,5500)) [5500,6500)=60
// Projected spans (tables_test.cc): layer #3 [1000,1600] (K1 stream 1
// [1000,1400] and K2 stream 2 [1200,1300] run at once), layer #4
// [2500,3600], fwd [1000,3600], bwd [6000,6500], step and epoch [1000,6500]
// (K6 inherited from the worker thread).
void BuildSampledScenario(TraceFileBuilder* b) {
  testing::BuildScenario(b);
  const std::pair<uint64_t, double> samples[] = {
      {500, 10}, {1500, 20}, {2500, 30}, {3500, 40}, {5500, 60}};
  for (const auto& [start, value] : samples) b->PmSample("sm", 0, start, start + 1000, value);
  b->Frame();
}

TEST(MetricsTest, RangesStraddlingShortNestedAndOverlappingStreams) {
  TraceFileBuilder b(100);
  BuildSampledScenario(&b);
  const Trace trace = Read(b);
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const std::vector<Table> tables = MetricsTables(analyzed, ReportOptions{});
  const Table& t = Named(tables, "metrics");

  // layer: #3 [1000,1600] takes 500 ns of the 10 sample (it straddles the
  // span's start) and 100 ns of the 20 one; the two streams running at once
  // are one span of 600 ns, not 400 + 100. #4 [2500,3600] takes 1000 ns of
  // 30 and 100 of 40. Sum 10*500 + 20*100 + 30*1000 + 40*100 = 41000 over
  // 1700 ns of span, all covered: mean 24.1176..., 4 samples.
  const auto* layer = FindRow(t, {{"range", "layer"}, {"metric", "sm"}});
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(IntAt(t, *layer, "instances"), 2);
  EXPECT_EQ(IntAt(t, *layer, "span_ns"), 1700);
  EXPECT_EQ(IntAt(t, *layer, "samples"), 4);
  EXPECT_NEAR(DoubleAt(t, *layer, "mean"), 41000.0 / 1700, 1e-9);
  EXPECT_EQ(DoubleAt(t, *layer, "min"), 10);
  EXPECT_EQ(DoubleAt(t, *layer, "max"), 40);
  EXPECT_NEAR(DoubleAt(t, *layer, "coverage_pct"), 100, 1e-9);

  // bwd [6000,6500] is shorter than one sample: it lies inside [5500,6500),
  // so it takes that sample's value over all of its span.
  const auto* bwd = FindRow(t, {{"range", "bwd"}, {"metric", "sm"}});
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(IntAt(t, *bwd, "samples"), 1);
  EXPECT_NEAR(DoubleAt(t, *bwd, "mean"), 60, 1e-9);
  EXPECT_NEAR(DoubleAt(t, *bwd, "coverage_pct"), 100, 1e-9);

  // step [1000,6500]: 10*500 + 20*1000 + 30*1000 + 40*1000 + 60*1000 =
  // 155000 over the 4500 ns covered; [4500,5500) has no sample, so coverage
  // is 4500 / 5500 = 81.81...%, and the gap does not pull the mean down.
  const auto* step = FindRow(t, {{"range", "step"}, {"metric", "sm"}});
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(IntAt(t, *step, "span_ns"), 5500);
  EXPECT_EQ(IntAt(t, *step, "samples"), 5);
  EXPECT_NEAR(DoubleAt(t, *step, "mean"), 155000.0 / 4500, 1e-9);
  EXPECT_NEAR(DoubleAt(t, *step, "coverage_pct"), 100.0 * 4500 / 5500, 1e-9);

  // fwd [1000,3600]: 10*500 + 20*1000 + 30*1000 + 40*100 = 59000 / 2600.
  const auto* fwd = FindRow(t, {{"range", "fwd"}, {"metric", "sm"}});
  ASSERT_NE(fwd, nullptr);
  EXPECT_NEAR(DoubleAt(t, *fwd, "mean"), 59000.0 / 2600, 1e-9);

  // cpu_only has no GPU work, hence no span and no row.
  EXPECT_EQ(FindRow(t, {{"range", "cpu_only"}}), nullptr);

  // --filter applies as in the other range tables.
  ReportOptions only_layer;
  only_layer.filter = "^lay";
  const Table filtered = Named(MetricsTables(analyzed, only_layer), "metrics");
  ASSERT_EQ(filtered.rows.size(), 1u);
}

TEST(MetricsTest, KernelsTimeWeightedOverTheirExecutions) {
  TraceFileBuilder b(100);
  BuildSampledScenario(&b);
  const Trace trace = Read(b);
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const Table t = Named(MetricsTables(analyzed, ReportOptions{}), "kernel-metrics");
  // gemm runs [1000,1400] (10), [1500,1600] (20), [2500,2900] (30):
  // (10*400 + 20*100 + 30*400) / 900 = 18000 / 900 = 20; 3 executions.
  const auto* gemm = FindRow(t, {{"kernel", "gemm"}, {"metric", "sm"}});
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(IntAt(t, *gemm, "executions"), 3);
  EXPECT_EQ(IntAt(t, *gemm, "span_ns"), 900);
  EXPECT_NEAR(DoubleAt(t, *gemm, "mean"), 20, 1e-9);
  // relu [1200,1300] (10) and [2800,3000] (30): (1000 + 6000) / 300. Its
  // first execution overlaps K1 on the other stream: both take the value.
  const auto* relu = FindRow(t, {{"kernel", "relu"}, {"metric", "sm"}});
  ASSERT_NE(relu, nullptr);
  EXPECT_NEAR(DoubleAt(t, *relu, "mean"), 7000.0 / 300, 1e-9);
  // outside [11000,11100] and lost [12000,12100] lie after the last sample:
  // rows with no samples, an empty mean and 0 % coverage.
  const auto* outside = FindRow(t, {{"kernel", "outside"}, {"metric", "sm"}});
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(IntAt(t, *outside, "samples"), 0);
  EXPECT_TRUE(IsEmpty(t, *outside, "mean"));
  EXPECT_NEAR(DoubleAt(t, *outside, "coverage_pct"), 0, 1e-9);
}

// One range "r" [0,10000] launching kA on stream 1 (device 0) [1000,2000]
// and kB on stream 2 (device 1) [4000,6000]. Its span over all devices is
// [1000,6000]; per device it is [1000,2000] on 0 and [4000,6000] on 1.
//   dram: device 0 [1000,2000)=10, [3000,4000)=999 (inside the hull, outside
//         device 0's span); device 1 [1000,2000)=500 (outside device 1's
//         span), [4000,5000)=40*k, [5000,6000)=70*k
//   sm:   device 0 only, [1000,2000)=50
void BuildTwoDevices(TraceFileBuilder* b, double k = 1) {
  b->Thread(1, 100, "main");
  b->Stream(1, 0, 7);
  b->Stream(2, 1, 8);
  b->Range(1, 0, 1, "r", 0, 10000, 0);
  b->Frame();
  b->Launch(1, 1, 100, 1);
  b->Launch(2, 1, 200, 1);
  b->Kernel("kA", 1, 1000, 2000, 1);
  b->Kernel("kB", 2, 4000, 6000, 2);
  b->PmSample("dram", 0, 1000, 2000, 10);
  b->PmSample("dram", 0, 3000, 4000, 999);
  b->PmSample("dram", 1, 1000, 2000, 500);
  b->PmSample("dram", 1, 4000, 5000, 40 * k);
  b->PmSample("dram", 1, 5000, 6000, 70 * k);
  b->PmSample("sm", 0, 1000, 2000, 50);
  b->Frame();
}

TEST(MetricsTest, SeveralDevicesWeighAgainstEachDevicesSpan) {
  TraceFileBuilder b(100);
  BuildTwoDevices(&b);
  const Trace trace = Read(b);
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const std::vector<Table> tables = MetricsTables(analyzed, ReportOptions{});
  const Table& t = Named(tables, "metrics");
  // dram: 10*1000 (device 0) + 40*1000 + 70*1000 (device 1) = 120000 over
  // 1000 + 2000 ns: mean 40. The 999 and 500 samples overlap the hull
  // [1000,6000] but not their own device's span: not counted.
  const auto* dram = FindRow(t, {{"range", "r"}, {"metric", "dram"}});
  ASSERT_NE(dram, nullptr);
  EXPECT_EQ(IntAt(t, *dram, "span_ns"), 3000);
  EXPECT_EQ(IntAt(t, *dram, "samples"), 3);
  EXPECT_NEAR(DoubleAt(t, *dram, "mean"), 40, 1e-9);
  EXPECT_EQ(DoubleAt(t, *dram, "max"), 70);
  EXPECT_NEAR(DoubleAt(t, *dram, "coverage_pct"), 100, 1e-9);
  // sm was sampled on device 0 only: 1000 of the 3000 ns are covered.
  const auto* sm = FindRow(t, {{"range", "r"}, {"metric", "sm"}});
  ASSERT_NE(sm, nullptr);
  EXPECT_NEAR(DoubleAt(t, *sm, "mean"), 50, 1e-9);
  EXPECT_NEAR(DoubleAt(t, *sm, "coverage_pct"), 100.0 / 3, 1e-9);

  // Kernels on their own device: kB takes (40 + 70) / 2 = 55 of dram and
  // no sm at all.
  const Table& k = Named(tables, "kernel-metrics");
  const auto* kb = FindRow(k, {{"kernel", "kB"}, {"metric", "dram"}});
  ASSERT_NE(kb, nullptr);
  EXPECT_NEAR(DoubleAt(k, *kb, "mean"), 55, 1e-9);
  const auto* kb_sm = FindRow(k, {{"kernel", "kB"}, {"metric", "sm"}});
  ASSERT_NE(kb_sm, nullptr);
  EXPECT_TRUE(IsEmpty(k, *kb_sm, "mean"));
  EXPECT_NEAR(DoubleAt(k, *kb_sm, "coverage_pct"), 0, 1e-9);
  const auto* ka = FindRow(k, {{"kernel", "kA"}, {"metric", "dram"}});
  ASSERT_NE(ka, nullptr);
  EXPECT_NEAR(DoubleAt(k, *ka, "mean"), 10, 1e-9);
}

TEST(MetricsTest, NoSamplesGivesEmptyTablesThatSaySo) {
  TraceFileBuilder b(100);
  testing::BuildScenario(&b);
  const Trace trace = Read(b);
  EXPECT_FALSE(HasPmSamples(trace));
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  for (const Table& t : MetricsTables(analyzed, ReportOptions{})) {
    EXPECT_TRUE(t.rows.empty());
    ASSERT_FALSE(t.notes.empty());
    EXPECT_NE(t.notes.front().find("no PM samples"), std::string::npos);
  }
}

std::string WriteGroups(const std::string& stem, const std::string& text) {
  const std::string path = TraceFileBuilder::TempPath(stem);
  std::ofstream(path) << text;
  return path;
}

TEST(MetricsTest, GroupsCountNestedMembersOnceAndKeepByKeysApart) {
  TraceFileBuilder b(100);
  BuildSampledScenario(&b);
  const Trace trace = Read(b);
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  reports::ExtraTableOptions o;
  o.groups_file = WriteGroups("nested.groups", "fwd_all = fwd + layer\n");
  auto tables = reports::BuildExtraTables(analyzed, {"metrics"}, o);
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  const Table& g = Named(*tables, "group-metrics");
  // Both layers are nested in fwd: the group is fwd's span once (2600 ns,
  // 59000 / 2600), not fwd's plus the layers' (2600 + 1700).
  const auto* row = FindRow(g, {{"group", "fwd_all"}, {"metric", "sm"}});
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(IntAt(g, *row, "instances"), 1);
  EXPECT_EQ(IntAt(g, *row, "span_ns"), 2600);
  EXPECT_NEAR(DoubleAt(g, *row, "mean"), 59000.0 / 2600, 1e-9);
  std::remove(o.groups_file.c_str());

  // blk_0 [0,1000] launches [100,500], blk_1 [1000,2000] launches
  // [1200,1800]; samples [0,400)=10 [400,1200)=20 [1200,2000)=30.
  //   blk_0: 10*300 + 20*100 = 5000 over 400 -> 12.5
  //   blk_1: 30*600 = 18000 over 600 -> 30
  //   summed over layers: 23000 / 1000 = 23
  TraceFileBuilder lb(200);
  lb.Thread(1, 200, "main");
  lb.Stream(1, 0, 7);
  lb.Range(1, 0, 1, "blk_0", 0, 1000);
  lb.Range(2, 0, 1, "blk_1", 1000, 2000);
  lb.Frame();
  lb.Launch(1, 1, 10, 1);
  lb.Launch(2, 1, 1010, 2);
  lb.Kernel("k", 1, 100, 500, 1);
  lb.Kernel("k", 1, 1200, 1800, 2);
  lb.PmSample("sm", 0, 0, 400, 10);
  lb.PmSample("sm", 0, 400, 1200, 20);
  lb.PmSample("sm", 0, 1200, 2000, 30);
  const Trace lt = Read(lb);
  const AnalyzedTrace la(lt, AttributionOptions{});
  o.groups_file = WriteGroups("blk.groups", "blk\n");
  auto summed = reports::BuildExtraTables(la, {"metrics"}, o);
  ASSERT_TRUE(summed.ok()) << summed.status().message();
  const Table& s = Named(*summed, "group-metrics");
  const auto* all = FindRow(s, {{"group", "blk"}, {"metric", "sm"}});
  ASSERT_NE(all, nullptr);
  EXPECT_NEAR(DoubleAt(s, *all, "mean"), 23, 1e-9);
  o.by = "layer_id";
  auto by_layer = reports::BuildExtraTables(la, {"metrics"}, o);
  ASSERT_TRUE(by_layer.ok()) << by_layer.status().message();
  const Table& l = Named(*by_layer, "group-metrics");
  const auto* l0 = FindRow(l, {{"group", "blk"}, {"layer_id", "0"}});
  const auto* l1 = FindRow(l, {{"group", "blk"}, {"layer_id", "1"}});
  ASSERT_NE(l0, nullptr);
  ASSERT_NE(l1, nullptr);
  EXPECT_NEAR(DoubleAt(l, *l0, "mean"), 12.5, 1e-9);
  EXPECT_NEAR(DoubleAt(l, *l1, "mean"), 30, 1e-9);
  std::remove(o.groups_file.c_str());

  // --by rank: one row per process.
  ReportOptions by_process;
  by_process.by_process = true;
  const Table p = Named(MetricsTables(la, by_process), "metrics");
  ASSERT_NE(FindRow(p, {{"process", la.ProcessLabel(0)}, {"range", "blk_0"}}), nullptr);
}

TEST(MetricsTest, DiffSideBySide) {
  // B doubles device 1's dram samples: r's mean goes from
  // (10 + 40 + 70) * 1000 / 3000 = 40 to (10 + 80 + 140) * 1000 / 3000 =
  // 76.66...; coverage stays 100 %.
  TraceFileBuilder ba(100), bb(100);
  BuildTwoDevices(&ba, 1);
  BuildTwoDevices(&bb, 2);
  const Trace ta = Read(ba), tb = Read(bb);
  const AnalyzedTrace aa(ta, AttributionOptions{}), ab(tb, AttributionOptions{});
  const Table a = Named(MetricsTables(aa, ReportOptions{}), "metrics");
  const Table b = Named(MetricsTables(ab, ReportOptions{}), "metrics");
  auto d = reports::DiffTables(
      a, b, {{"domain", "range", "metric"}, {"mean", "coverage_pct", "samples", "span_ns"}});
  ASSERT_TRUE(d.ok());
  const auto* dram = FindRow(*d, {{"range", "r"}, {"metric", "dram"}, {"status", "both"}});
  ASSERT_NE(dram, nullptr);
  EXPECT_NEAR(DoubleAt(*d, *dram, "mean_a"), 40, 1e-9);
  EXPECT_NEAR(DoubleAt(*d, *dram, "mean_b"), 230.0 / 3, 1e-9);
  EXPECT_NEAR(DoubleAt(*d, *dram, "mean_delta"), 230.0 / 3 - 40, 1e-9);
  EXPECT_NEAR(DoubleAt(*d, *dram, "coverage_pct_delta"), 0, 1e-9);

  // The CLI prints the same join.
  const std::string pa = ba.WriteTemp("diff_a.trace"), pb = bb.WriteTemp("diff_b.trace");
  const auto run =
      testing::RunTracerCli("diff " + pa + " " + pb + " --table metrics --format csv", false);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("mean_a"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(",r,dram,both,40,"), std::string::npos) << run.out;
  std::remove(pa.c_str());
  std::remove(pb.c_str());
}

std::vector<std::vector<std::string>> Query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  std::vector<std::vector<std::string>> rows;
  char* err = nullptr;
  const int rc = sqlite3_exec(
      db, sql.c_str(),
      [](void* out, int n, char** values, char**) {
        std::vector<std::string> row;
        for (int i = 0; i < n; ++i) row.push_back(values[i] ? values[i] : "NULL");
        static_cast<std::vector<std::vector<std::string>>*>(out)->push_back(std::move(row));
        return 0;
      },
      &rows, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return rows;
}

TEST(MetricsTest, SqliteExportInNsysGpuMetricsShape) {
  TraceFileBuilder b(100);
  BuildTwoDevices(&b);
  const Trace trace = Read(b);
  const std::string path = TraceFileBuilder::TempPath("metrics.sqlite");
  std::string error;
  ASSERT_TRUE(exporters::WriteSqlite(trace, path, &error)) << error;
  // nsys's query: the device is typeId's low byte, the name from
  // TARGET_INFO_GPU_METRICS. 6 samples: dram on device 1 sums 500+40+70.
  // value is declared INTEGER as in nsys: whole values read back as
  // integers, others stay REAL.
  const auto rows = Query(path,
                          "SELECT m.typeId & 255, i.metricName, COUNT(*), SUM(m.value), "
                          "MIN(m.timestamp), MAX(m.endTimestamp) FROM GPU_METRICS m JOIN "
                          "TARGET_INFO_GPU_METRICS i USING (typeId, metricId) GROUP BY 1, 2 "
                          "ORDER BY 1, 2");
  const std::vector<std::vector<std::string>> expected = {
      {"0", "dram", "2", "1009", "1000", "4000"},
      {"0", "sm", "1", "50", "1000", "2000"},
      {"1", "dram", "3", "610", "1000", "6000"}};
  EXPECT_EQ(rows, expected);
  // `tracer export --format sqlite` adds the metrics tables beside it:
  // TRACER_METRICS holds r's dram row (mean 40, as derived above).
  const std::string trace_path = b.WriteTemp("export_metrics.trace");
  const auto run = testing::RunTracerCli(
      "export " + trace_path + " --format sqlite --force-overwrite -o " + path, false);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Query(path,
                  "SELECT mean, coverage_pct FROM TRACER_METRICS WHERE range = 'r' AND "
                  "metric = 'dram'"),
            (std::vector<std::vector<std::string>>{{"40.0", "100.0"}}));
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM TRACER_KERNEL_METRICS"),
            (std::vector<std::vector<std::string>>{{"4"}}));
  EXPECT_EQ(Query(path, "SELECT COUNT(*) FROM GPU_METRICS"),
            (std::vector<std::vector<std::string>>{{"6"}}));
  std::remove(trace_path.c_str());
  // Without samples the tables are not created (as nsys without GPU metrics).
  TraceFileBuilder none(100);
  testing::BuildScenario(&none);
  ASSERT_TRUE(exporters::WriteSqlite(Read(none), path, &error)) << error;
  EXPECT_TRUE(
      Query(path, "SELECT name FROM sqlite_master WHERE name LIKE '%GPU_METRICS%'").empty());
  std::remove(path.c_str());
}

TEST(MetricsTest, ChromeCounterTracksPerDeviceAndMetric) {
  TraceFileBuilder b(100);
  BuildTwoDevices(&b);
  const Trace trace = Read(b);
  std::ostringstream out;
  std::string error;
  ASSERT_TRUE(WriteChromeTrace(trace, out, &error)) << error;
  const nlohmann::json j = nlohmann::json::parse(out.str());
  // (pid, counter name) -> values in order; the GPU pseudo processes are
  // 1e9 + device for the first process.
  std::map<std::pair<int64_t, std::string>, std::vector<double>> tracks;
  std::map<int64_t, std::string> process_names;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "C") {
      tracks[{e.at("pid").get<int64_t>(), e.at("name").get<std::string>()}].push_back(
          e.at("args").at("value").get<double>());
    }
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      process_names[e.at("pid").get<int64_t>()] = e.at("args").at("name").get<std::string>();
    }
  }
  const std::map<std::pair<int64_t, std::string>, std::vector<double>> expected = {
      {{1000000000, "dram"}, {10, 999}},
      {{1000000000, "sm"}, {50}},
      {{1000000001, "dram"}, {500, 40, 70}}};
  EXPECT_EQ(tracks, expected);
  EXPECT_EQ(process_names[1000000001].rfind("GPU 1 ", 0), 0u) << process_names[1000000001];
}

TEST(MetricsTest, CliShowsMetricsByDefaultAndReadsWholeForThem) {
  TraceFileBuilder b(100);
  BuildTwoDevices(&b);
  const std::string path = b.WriteTemp("cli_metrics.trace");
  const auto whole = testing::RunTracerCli("report " + path + " --format csv", false);
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.out.find("\n# metrics\r"), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find("\n# kernel-metrics\r"), std::string::npos);
  // --stream: the metrics table is computed from the whole trace, so the
  // bounded path says why and reads whole: the same output.
  const auto streamed = testing::RunTracerCli("report " + path + " --format csv --stream", false);
  EXPECT_EQ(streamed.exit_code, 0);
  EXPECT_NE(streamed.err.find("PM samples"), std::string::npos) << streamed.err;
  EXPECT_EQ(streamed.out, whole.out);
  const auto asked = testing::RunTracerCli("report " + path + " --table metrics --stream", false);
  EXPECT_NE(asked.err.find("table 'metrics' is computed from the whole trace"), std::string::npos)
      << asked.err;
  std::remove(path.c_str());

  // No samples: not among the default tables; asked for, it says so.
  TraceFileBuilder none(100);
  testing::BuildScenario(&none);
  const std::string plain = none.WriteTemp("cli_plain.trace");
  const auto defaults = testing::RunTracerCli("report " + plain, false);
  EXPECT_EQ(defaults.out.find("PM metrics"), std::string::npos);
  const auto empty = testing::RunTracerCli("report " + plain + " --table metrics", false);
  EXPECT_EQ(empty.exit_code, 0);
  EXPECT_NE(empty.out.find("no PM samples"), std::string::npos) << empty.out;
  std::remove(plain.c_str());
}

}  // namespace
}  // namespace tracer::analysis
