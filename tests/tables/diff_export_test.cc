// DiffTables on hand-made tables, the report-table entry point's errors, and
// the CSV export.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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

// The rule files of the phases and categories tables: a bad line, a file
// that cannot be read and a directory each come back as one line naming the
// file (and line), the message `tracer report` prints after "error: ".
TEST(BuildExtraTables, RuleFileErrorsAreOneLineStatuses) {
  Small s;
  AnalyzedTrace analyzed(s.trace, {});
  const std::string dir = ::testing::TempDir();
  const std::string bad = dir + "extra_tables_bad.rules";
  const std::string good = dir + "extra_tables_good.rules";
  const std::string missing = dir + "extra_tables_missing.rules";
  std::ofstream(bad) << "forward -> fwd\n(unclosed -> bwd\n";
  std::ofstream(good) << "^forward$ -> fwd\n";
  for (const char* table : {"phases", "categories"}) {
    SCOPED_TRACE(table);
    auto options = [&](const std::string& file) {
      ExtraTableOptions o;
      (std::string(table) == "phases" ? o.phase_rules_file : o.category_rules_file) = file;
      return o;
    };
    auto built = BuildExtraTables(analyzed, {table}, options(bad));
    ASSERT_FALSE(built.ok());
    const std::string message = built.status().message();
    EXPECT_EQ(message.rfind(bad + ":2: invalid regex '(unclosed': ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    built = BuildExtraTables(analyzed, {table}, options(missing));
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.status().message(), "cannot read " + missing + " (No such file or directory)");
    built = BuildExtraTables(analyzed, {table}, options(dir));
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.status().message(),
              "cannot read " + dir + ": is a directory, not a rules file");
    EXPECT_TRUE(BuildExtraTables(analyzed, {table}, options(good)).ok());
  }
  // The user's phase names are the columns.
  ExtraTableOptions o;
  o.phase_rules_file = good;
  const auto phases = BuildExtraTables(analyzed, {"phases"}, o).value();
  ASSERT_EQ(phases.size(), 1u);
  bool fwd = false;
  for (const Column& c : phases[0].columns) fwd = fwd || c.name == "fwd_cpu_ns";
  EXPECT_TRUE(fwd);
  std::remove(bad.c_str());
  std::remove(good.c_str());
}

// ReadTextFile's errors, which every rules file shares.
TEST(ReadTextFile, SaysWhyAFileCannotBeRead) {
  const std::string dir = ::testing::TempDir();
  const std::string big = dir + "read_text_file_big.rules";
  {
    std::ofstream out(big, std::ios::binary);
    const std::string line(1024, '#');
    for (uint64_t n = 0; n <= kMaxTextFileBytes / line.size(); ++n) out << line;
  }
  auto text = ReadTextFile(big);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "cannot read " + big + ": larger than 16 MiB, not a rules file");
  std::remove(big.c_str());
  text = ReadTextFile(dir + "read_text_file_missing.rules");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "cannot read " + dir + "read_text_file_missing.rules (No such file or directory)");
  const std::string small = dir + "read_text_file_small.rules";
  std::ofstream(small) << "a -> b\n";
  text = ReadTextFile(small);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "a -> b\n");
  std::remove(small.c_str());
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
  const std::string timeline = ReadTextFile((dir / "timeline.csv").string()).value();
  EXPECT_EQ(timeline.substr(0, timeline.find("\r\n")),  // RFC 4180 line ends
            "index,depth,range,thread,start_offset_ns,cpu_ns,gpu_proj_ns,gpu_busy_ns,kernels");
  EXPECT_NE(timeline.find("step,main,0,1000,200,200,1"), std::string::npos) << timeline;
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(exporters::WriteCsv(s.trace, "/proc/no/such/dir", &error));
  EXPECT_NE(error.find("/proc/no/such/dir"), std::string::npos);
}

}  // namespace
}  // namespace tracer::analysis::reports
