// Round trip (issue 5): import a real trace, write it as our stream
// (stream_writer.h, what `tracer import` writes), read that stream back with
// the regular reader, and get the same report tables, cell for cell.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/importers/import_file.h"
#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/importers/stream_writer.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/importers/test_data.h"

namespace tracer::analysis::importers {
namespace {

std::string Report(const Trace& trace) {
  AnalyzedTrace analyzed(trace, AttributionOptions{});
  ReportOptions o;
  o.by_process = true;
  return RenderTables(
      {RangesTable(analyzed, o), KernelsTable(analyzed, o), RangeKernelsTable(analyzed, o),
       GpuProjectionTable(analyzed, o), MemoryOpsTable(analyzed, o), ApiTable(analyzed, o)},
      OutputFormat::kCsv);
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, StreamReadBackGivesTheSameTables) {
  SKIP_WITHOUT_SHARED_DATA();
  const std::string path = testing::SharedDataPath(GetParam());
  Trace imported;
  std::string error;
  ASSERT_TRUE(ImportFile(path, &imported, &error)) << error;
  ASSERT_FALSE(imported.processes.empty());

  Trace reread;
  for (size_t i = 0; i < imported.processes.size(); ++i) {
    const std::string bytes = EncodeProcessStream(imported, i);
    ASSERT_TRUE(ReadTraceBytes(bytes, "roundtrip", &reread, &error)) << error;
  }
  EXPECT_TRUE(reread.warnings.empty()) << reread.warnings.front();
  ASSERT_EQ(reread.processes.size(), imported.processes.size());
  for (size_t i = 0; i < imported.processes.size(); ++i) {
    const ProcessTrace& a = imported.processes[i];
    const ProcessTrace& b = reread.processes[i];
    EXPECT_EQ(b.header.source, a.header.source);
    EXPECT_EQ(b.header.pid, a.header.pid);
    EXPECT_EQ(b.header.rank, a.header.rank);
    EXPECT_EQ(b.ranges.size(), a.ranges.size());
    EXPECT_EQ(b.kernels.size(), a.kernels.size());
    EXPECT_EQ(b.memcpys.size(), a.memcpys.size());
    EXPECT_EQ(b.memsets.size(), a.memsets.size());
    EXPECT_EQ(b.api_calls.size(), a.api_calls.size());
    EXPECT_EQ(b.syncs.size(), a.syncs.size());
    EXPECT_EQ(b.counters, a.counters);
    for (size_t r = 0; r < a.ranges.size() && r < b.ranges.size(); ++r) {
      EXPECT_EQ(b.ranges[r].id, a.ranges[r].id);
      EXPECT_EQ(b.ranges[r].parent_id, a.ranges[r].parent_id);
      EXPECT_EQ(b.ranges[r].start_ns, a.ranges[r].start_ns);
      EXPECT_EQ(b.ranges[r].end_ns, a.ranges[r].end_ns);
      EXPECT_EQ(reread.strings.Get(b.ranges[r].name), imported.strings.Get(a.ranges[r].name));
    }
  }
  const std::string before = Report(imported);
  const std::string after = Report(reread);
  EXPECT_GT(before.size(), 1000u);
  EXPECT_EQ(after, before);
}

// import -> `tracer export --format sqlite` (an nsys-shaped database) ->
// import again with the nsys importer -> the same report.
TEST_P(RoundTripTest, SqliteExportImportedAgainGivesTheSameTables) {
  SKIP_WITHOUT_SHARED_DATA();
  Trace imported;
  std::string error;
  ASSERT_TRUE(ImportFile(testing::SharedDataPath(GetParam()), &imported, &error)) << error;
  const std::string db = (std::filesystem::temp_directory_path() /
                          ("tracer_roundtrip_" + std::to_string(getpid()) + ".sqlite"))
                             .string();
  ASSERT_TRUE(exporters::WriteSqlite(imported, db, &error)) << error;
  Trace again;
  const bool ok = ImportNsysSqlite(db, &again, &error);
  std::filesystem::remove(db);
  ASSERT_TRUE(ok) << error;
  ASSERT_EQ(again.processes.size(), imported.processes.size());
  for (size_t i = 0; i < again.processes.size(); ++i) {
    // An nsys export has no place for the rank (Kineto's distributedInfo).
    EXPECT_EQ(again.processes[i].header.rank, -1);
    again.processes[i].header.rank = imported.processes[i].header.rank;
  }
  EXPECT_EQ(Report(again), Report(imported));
}

INSTANTIATE_TEST_SUITE_P(SharedData, RoundTripTest,
                         ::testing::Values("nsys/workflow.sqlite", "nsys/cudf-groupby.sqlite",
                                           "nsys/h100_2gpu_mfu.sqlite",
                                           "kineto/resnet_ddp_rank0.pt.trace.json.gz"),
                         [](const auto& info) {
                           std::string n = info.param.substr(info.param.find('/') + 1);
                           n = n.substr(0, n.find('.'));
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace tracer::analysis::importers
