// DiffTables on hand-made tables, the report-table entry point's errors, and
// the CSV export.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "libtracer/analysis/export/csv_export.h"
#include "libtracer/analysis/reports/diff.h"
#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "tests/tables/trace_fixture.h"

namespace tracer::analysis::reports {
namespace {

Table Side(std::vector<std::pair<std::string, int64_t>> rows) {
  Table t;
  t.name = "ranges";
  t.columns = {{"range", ColumnKind::kText, "Range"}, {"cpu_ns", ColumnKind::kDuration, "CPU"}};
  for (auto& [name, v] : rows) t.rows.push_back({name, v});
  return t;
}

TEST(DiffTables, MatchedThenOneSidedRows) {
  const Table a = Side({{"f_lora", 100}, {"f_mlp", 400}, {"only_a", 5}});
  const Table b = Side({{"f_mlp", 200}, {"only_b", 7}, {"f_lora", 300}});
  const auto diffed = DiffTables(a, b, {{"range"}, {"cpu_ns"}});
  ASSERT_TRUE(diffed.ok());
  const Table& d = *diffed;
  ASSERT_EQ(d.columns.size(), 6u);
  EXPECT_EQ(d.columns[2].name, "cpu_ns_a");
  EXPECT_EQ(d.columns[4].name, "cpu_ns_delta");
  EXPECT_EQ(d.columns[5].kind, ColumnKind::kRatio);
  ASSERT_EQ(d.rows.size(), 4u);
  EXPECT_EQ(std::get<std::string>(d.rows[0][0]), "f_lora");
  EXPECT_EQ(std::get<std::string>(d.rows[0][1]), "both");
  EXPECT_EQ(std::get<int64_t>(d.rows[0][4]), 200);
  EXPECT_DOUBLE_EQ(std::get<double>(d.rows[0][5]), 3.0);
  EXPECT_EQ(std::get<int64_t>(d.rows[1][4]), -200);
  EXPECT_DOUBLE_EQ(std::get<double>(d.rows[1][5]), 0.5);
  EXPECT_EQ(std::get<std::string>(d.rows[2][1]), "A only");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.rows[2][3]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(d.rows[2][5]));
  EXPECT_EQ(std::get<std::string>(d.rows[3][0]), "only_b");
  EXPECT_EQ(std::get<std::string>(d.rows[3][1]), "B only");
  EXPECT_NE(d.notes[0].find("2 rows in both, 1 in A only, 1 in B only"), std::string::npos);
  const auto missing = DiffTables(a, b, {{"range"}, {"nope"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "table 'ranges' has no column 'nope'");
}

struct Small {
  Trace trace;
  Small() {
    testing::TraceFixture f(&trace);
    const uint64_t step = f.Range("step", 0, 1000);
    const uint64_t fwd = f.Range("forward", 10, 500, step);
    f.Kernel("ampere_sgemm_128x64_nn", 100, 300, fwd, 20);
    f.Range("backward", 500, 900, step);
  }
};

TEST(BuildExtraTables, EveryTableAndClearErrors) {
  Small s;
  AnalyzedTrace analyzed(s.trace, {});
  ExtraTableOptions o;
  const auto tables =
      BuildExtraTables(analyzed, {"timeline", "phases", "categories", "gaps", "top"}, o).value();
  ASSERT_EQ(tables.size(), 6u);  // categories gives two
  EXPECT_EQ(tables[0].name, "timeline");
  EXPECT_EQ(tables[2].name, "range_categories");
  EXPECT_EQ(tables[3].name, "kernel_categories");
  // Expected failures come back as a Status, never as an exception.
  auto no_file = BuildExtraTables(analyzed, {"groups"}, o);
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.status().message().find("--groups FILE"), std::string::npos);
  o.groups_file = "/nonexistent/x.groups";
  auto unreadable = BuildExtraTables(analyzed, {"groups"}, o);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find("cannot read /nonexistent/x.groups"),
            std::string::npos);
  o.iteration = 5;
  EXPECT_FALSE(BuildExtraTables(analyzed, {"timeline"}, o).ok());
  EXPECT_FALSE(BuildExtraTables(analyzed, {"nope"}, o).ok());
  EXPECT_TRUE(IsExtraTable("groups"));
  EXPECT_FALSE(IsExtraTable("ranges"));
}

TEST(CsvExport, OneFilePerTable) {
  Small s;
  const auto dir =
      std::filesystem::temp_directory_path() / ("tables_csv_" + std::to_string(::getpid()));
  std::string error;
  ASSERT_TRUE(exporters::WriteCsv(s.trace, dir.string(), &error)) << error;
  for (const char* name : {"ranges", "kernels", "gaps", "top", "phases", "timeline",
                           "range_categories", "kernel_categories"}) {
    const auto path = dir / (std::string(name) + ".csv");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
  }
  const std::string timeline = ReadTextFile((dir / "timeline.csv").string());
  EXPECT_EQ(timeline.substr(0, timeline.find("\r\n")),  // RFC 4180 line ends
            "index,depth,range,thread,start_offset_ns,cpu_ns,gpu_proj_ns,gpu_busy_ns,kernels");
  EXPECT_NE(timeline.find("step,main,0,1000,200,200,1"), std::string::npos) << timeline;
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(exporters::WriteCsv(s.trace, "/proc/no/such/dir", &error));
  EXPECT_NE(error.find("/proc/no/such/dir"), std::string::npos);
}

}  // namespace
}  // namespace tracer::analysis::reports
