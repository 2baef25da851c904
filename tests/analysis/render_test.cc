// Renderers: text units and alignment, CSV that parses back (RFC 4180), JSON
// that nlohmann parses with numbers as numbers and null for empty cells,
// Markdown tables; and kernel name demangling.
#include "libtracer/analysis/tables/render.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

Table Sample() {
  Table t;
  t.name = "sample";
  t.title = "Sample";
  t.columns = {{"name", ColumnKind::kText, "Name"},
               {"total_ns", ColumnKind::kDuration, "Total"},
               {"share_pct", ColumnKind::kPercent, "Share"},
               {"count", ColumnKind::kCount, "Count"}};
  t.rows.push_back({std::string("plain"), int64_t{1500}, 12.345, int64_t{3}});
  t.rows.push_back(
      {std::string("has, comma \"and quotes\""), int64_t{2500000000}, Cell(), int64_t{10}});
  t.rows.push_back({std::string("no gpu"), Cell(), 0.0, int64_t{0}});
  t.notes.push_back("a note");
  return t;
}

// Minimal RFC 4180 reader: quoted fields, doubled quotes, CRLF records.
std::vector<std::vector<std::string>> ParseCsv(const std::string& s) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, in_field = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      in_field = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\r') {
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
      in_field = true;
    }
  }
  (void)in_field;
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(RenderTest, FormatDurationPicksAUnitPerValue) {
  EXPECT_EQ(FormatDuration(12), "12 ns");
  EXPECT_EQ(FormatDuration(1234), "1.234 us");
  EXPECT_EQ(FormatDuration(1500000), "1.500 ms");
  EXPECT_EQ(FormatDuration(2500000000), "2.500 s");
  EXPECT_EQ(FormatDuration(-1500), "-1.500 us");
}

TEST(RenderTest, TextIsAlignedWithOneUnitPerColumnAndDashes) {
  const std::string text = RenderTable(Sample(), OutputFormat::kText);
  EXPECT_NE(text.find("Sample\n"), std::string::npos);
  // 2.5 s has four digits in ms: the whole column is in ms, named once in
  // the header, no unit in the cells.
  EXPECT_NE(text.find("Total (ms)"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\nplain +0\\.002 +12\\.3%"))) << text;
  EXPECT_NE(text.find(" 2500.000 "), std::string::npos) << text;
  EXPECT_FALSE(std::regex_search(text, std::regex("[0-9] (ns|us|ms|s)\\b"))) << text;
  EXPECT_NE(text.find("12.3%"), std::string::npos);
  EXPECT_NE(text.find("  a note"), std::string::npos);
  // Numeric columns are right-aligned: every data line has the same length
  // up to the last column (all lines padded to the column widths).
  std::istringstream in(text);
  std::string line, header;
  std::getline(in, line);  // title
  std::getline(in, header);
  std::getline(in, line);  // rule
  EXPECT_EQ(line.size(), header.size());
  for (int r = 0; r < 3; ++r) {
    std::getline(in, line);
    EXPECT_EQ(line.size(), header.size()) << line;
  }
  // The empty duration shows as "-".
  EXPECT_TRUE(std::regex_search(text, std::regex("\nno gpu +- +0\\.0%"))) << text;
}

TEST(RenderTest, CsvParsesBackWithRawNumbers) {
  const Table t = Sample();
  const auto rows = ParseCsv(RenderTable(t, OutputFormat::kCsv));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"name", "total_ns", "share_pct", "count"}));
  EXPECT_EQ(rows[1][1], "1500");
  EXPECT_EQ(rows[1][2], "12.345");
  EXPECT_EQ(rows[2][0], "has, comma \"and quotes\"");
  EXPECT_EQ(rows[2][1], "2500000000");
  EXPECT_EQ(rows[2][2], "");
  EXPECT_EQ(rows[3][1], "");
}

TEST(RenderTest, JsonHasNumbersAndNulls) {
  const auto j = nlohmann::json::parse(RenderTable(Sample(), OutputFormat::kJson));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["total_ns"].get<int64_t>(), 1500);
  EXPECT_DOUBLE_EQ(j[0]["share_pct"].get<double>(), 12.345);
  EXPECT_TRUE(j[1]["share_pct"].is_null());
  EXPECT_TRUE(j[2]["total_ns"].is_null());
  EXPECT_EQ(j[1]["name"], "has, comma \"and quotes\"");
}

TEST(RenderTest, MarkdownTable) {
  const std::string md = RenderTable(Sample(), OutputFormat::kMarkdown);
  EXPECT_NE(md.find("| Name | Total (ms) | Share | Count |"), std::string::npos) << md;
  EXPECT_NE(md.find("| --- | ---: | ---: | ---: |"), std::string::npos) << md;
  EXPECT_NE(md.find("| plain | 0.002 | 12.3% | 3 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2500.000 |"), std::string::npos) << md;
}

// Issue 16: one unit per column, the smallest in which the column's largest
// magnitude has at most four digits before the point (as printed, so
// 9999.9996 us is already 10000.000 us and goes to ms).
TEST(RenderTest, ColumnUnitIsTheSmallestWithFourDigits) {
  auto unit_of = [](std::vector<Cell> values) {
    Table t;
    t.columns = {{"x_ns", ColumnKind::kDuration, "X"}, {"n", ColumnKind::kCount, "N"}};
    for (Cell& v : values) t.rows.push_back({v, int64_t{123456789}});
    const std::vector<TimeUnit> u = ColumnTimeUnits(t);
    EXPECT_EQ(u[1], TimeUnit::kAuto);  // not a duration
    return u[0];
  };
  EXPECT_EQ(unit_of({}), TimeUnit::kNs);
  EXPECT_EQ(unit_of({Cell(), int64_t{9999}}), TimeUnit::kNs);
  EXPECT_EQ(unit_of({int64_t{10000}}), TimeUnit::kUs);
  EXPECT_EQ(unit_of({9999.4}), TimeUnit::kNs);
  EXPECT_EQ(unit_of({9999.5}), TimeUnit::kUs);
  EXPECT_EQ(unit_of({int64_t{12}, int64_t{-9999999}}), TimeUnit::kUs);  // magnitude
  EXPECT_EQ(unit_of({int64_t{9999999}}), TimeUnit::kUs);
  EXPECT_EQ(unit_of({int64_t{10000000}}), TimeUnit::kMs);
  EXPECT_EQ(unit_of({int64_t{9999999499}}), TimeUnit::kMs);
  EXPECT_EQ(unit_of({int64_t{9999999500}}), TimeUnit::kS);
  EXPECT_EQ(unit_of({std::numeric_limits<double>::infinity(), int64_t{5}}), TimeUnit::kNs);
  EXPECT_EQ(FormatDurationIn(Cell(int64_t{9999999499}), TimeUnit::kMs), "9999.999");
  EXPECT_EQ(FormatDurationIn(Cell(int64_t{9999999500}), TimeUnit::kS), "10.000");
  EXPECT_EQ(FormatDurationIn(Cell(int64_t{-1500}), TimeUnit::kUs), "-1.500");
  EXPECT_EQ(FormatDurationIn(Cell(int64_t{12}), TimeUnit::kNs), "12");
  EXPECT_EQ(FormatDurationIn(Cell(), TimeUnit::kUs), "-");
  EXPECT_EQ(FormatDurationIn(Cell(std::string()), TimeUnit::kUs), "-");
}

// Integer durations in us, ms and s print without printf's floating point
// (render.cc ThousandthsOf): the digits must be printf's "%.3f" of the
// value in that unit, ties (1500 ns in ms: 0.0015) and their neighbours
// included, which printf rounds on the double nearest the quotient.
TEST(RenderTest, FixedUnitDurationsPrintAsPrintfWould) {
  auto printf3 = [](int64_t ns, double per) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / per);
    return std::string(buf);
  };
  std::vector<int64_t> values;
  for (int64_t base : {int64_t{0}, int64_t{1000}, int64_t{1234000}, int64_t{999999000},
                       int64_t{123456789000}, int64_t{4503599627370000}}) {
    for (int64_t d = -1600; d <= 1600; ++d) values.push_back(base + d);
  }
  for (int64_t step : {int64_t{500}, int64_t{500000}}) {
    for (int64_t k = 1; k < 3000; k += 7) values.push_back(k * step);
  }
  size_t checked = 0;
  for (int64_t ns : values) {
    for (auto [unit, per] : {std::pair{TimeUnit::kUs, 1e3}, std::pair{TimeUnit::kMs, 1e6},
                             std::pair{TimeUnit::kS, 1e9}}) {
      ASSERT_EQ(FormatDurationIn(Cell(ns), unit), printf3(ns, per)) << ns << " ns / " << per;
      ++checked;
    }
  }
  EXPECT_GT(checked, 50000u);
}

// The cells of a column hold the same values as before, only in the
// column's unit: each text cell times the unit equals the raw ns to the
// printed precision, for every row of a mixed column.
TEST(RenderTest, ColumnCellsAreTheRawValuesInTheHeaderUnit) {
  Table t;
  t.name = "mixed";
  t.columns = {{"name", ColumnKind::kText, "Name"}, {"total_ns", ColumnKind::kDuration, "Total"}};
  const std::vector<int64_t> ns = {272317000, 38226000, 150752, 2848, 263, 0, -4005000};
  for (size_t i = 0; i < ns.size(); ++i) t.rows.push_back({"r" + std::to_string(i), ns[i]});
  const std::string text = RenderTable(t, OutputFormat::kText);
  ASSERT_NE(text.find("Total (ms)"), std::string::npos) << text;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  std::getline(in, line);  // rule
  for (size_t i = 0; i < ns.size(); ++i) {
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream words(line);
    std::string name, value;
    words >> name >> value;
    EXPECT_EQ(name, "r" + std::to_string(i));
    EXPECT_NEAR(std::stod(value) * 1e6, static_cast<double>(ns[i]), 500) << line;
    EXPECT_EQ(value.find_first_not_of("-0123456789."), std::string::npos) << line;
  }
}

// A diff's A and B columns of one quantity read in one unit even when only
// one of them reaches the next unit.
TEST(RenderTest, DiffAAndBColumnsShareAUnit) {
  Table t;
  t.name = "diff";
  t.columns = {{"total_ns_a", ColumnKind::kDuration, "Total A"},
               {"total_ns_b", ColumnKind::kDuration, "Total B"},
               {"total_ns_delta", ColumnKind::kDuration, "Total B-A"}};
  t.rows.push_back({int64_t{5000}, int64_t{20000000}, int64_t{19995000}});
  t.rows.push_back({int64_t{3000}, int64_t{3100}, int64_t{100}});
  const std::vector<TimeUnit> u = ColumnTimeUnits(t);
  EXPECT_EQ(u[0], TimeUnit::kMs);
  EXPECT_EQ(u[1], TimeUnit::kMs);
  EXPECT_EQ(u[2], TimeUnit::kMs);
  t.rows[0] = {int64_t{5000}, int64_t{20000000}, int64_t{-100}};
  EXPECT_EQ(ColumnTimeUnits(t)[2], TimeUnit::kNs);  // the change has its own unit
  const std::string text = RenderTable(t, OutputFormat::kText);
  EXPECT_NE(text.find("Total A (ms)  Total B (ms)  Total B-A (ns)"), std::string::npos) << text;
  RenderOptions o;
  o.time_unit = TimeUnit::kUs;
  EXPECT_EQ(ColumnTimeUnits(t, o.time_unit), std::vector<TimeUnit>(3, TimeUnit::kUs));
  EXPECT_NE(RenderTable(t, OutputFormat::kText, o).find("Total B-A (us)"), std::string::npos);
}

// Issue 12 (7): one 1 MiB range name padded every row of its table to 1 MiB
// (a 1 GB report). Text and Markdown cut long cells, at a UTF-8 boundary,
// and say so under the table; CSV and JSON keep them whole.
TEST(RenderTest, LongCellsAreCutWithANoteInHumanFormats) {
  Table t = Sample();
  // "é" is two bytes: the cut must not split one.
  const std::string huge = std::string("xy") + [] {
    std::string s;
    for (int i = 0; i < 10000; ++i) s += "\xc3\xa9";
    return s;
  }();
  for (int r = 0; r < 1000; ++r) t.rows.push_back({huge, int64_t{1}, 1.0, int64_t{1}});
  const std::string text = RenderTable(t, OutputFormat::kText);
  EXPECT_LT(text.size(), 1000u * 300) << "rows are padded to the long name";
  EXPECT_NE(text.find("1000 cell(s) longer than 200 characters cut"), std::string::npos);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ASSERT_LE(line.size(), 400u);
    if (line.rfind("xy\xc3\xa9", 0) == 0) {
      const size_t cut = line.find("...");
      ASSERT_NE(cut, std::string::npos) << line.substr(0, 80);
      EXPECT_EQ((cut - 2) % 2, 0u) << "cut inside a UTF-8 character";
    }
  }
  const std::string md = RenderTable(t, OutputFormat::kMarkdown);
  EXPECT_LT(md.size(), 1000u * 300);
  EXPECT_NE(md.find("- 1000 cell(s) longer than 200 characters cut"), std::string::npos);
  // Machine formats keep the value.
  EXPECT_NE(RenderTable(t, OutputFormat::kCsv).find(huge), std::string::npos);
  // Short tables are untouched: no note.
  EXPECT_EQ(RenderTable(Sample(), OutputFormat::kText).find("cut"), std::string::npos);
}

TEST(RenderTest, EveryReportTableRendersInEveryFormat) {
  testing::TraceFileBuilder b;
  testing::BuildScenario(&b);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "s.trace", &trace, &error));
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  const ReportOptions o;
  const std::vector<Table> tables = {
      SummaryTable(analyzed, o),      RangesTable(analyzed, o),        KernelsTable(analyzed, o),
      RangeKernelsTable(analyzed, o), GpuProjectionTable(analyzed, o), MemoryOpsTable(analyzed, o),
      ApiTable(analyzed, o)};
  for (const Table& t : tables) {
    EXPECT_FALSE(t.rows.empty() && t.name != "api") << t.name;
    const auto rows = ParseCsv(RenderTable(t, OutputFormat::kCsv));
    ASSERT_EQ(rows.size(), t.rows.size() + 1) << t.name;
    for (const auto& r : rows) EXPECT_EQ(r.size(), t.columns.size()) << t.name;
    const auto j = nlohmann::json::parse(RenderTable(t, OutputFormat::kJson));
    EXPECT_EQ(j.size(), t.rows.size()) << t.name;
    EXPECT_FALSE(RenderTable(t, OutputFormat::kText).empty());
    EXPECT_FALSE(RenderTable(t, OutputFormat::kMarkdown).empty());
  }
  const auto all = nlohmann::json::parse(RenderTables(tables, OutputFormat::kJson));
  EXPECT_TRUE(all.contains("ranges"));
  EXPECT_TRUE(all.contains("summary_notes"));
}

TEST(DemangleTest, ShortNamesDropTemplatesParametersAndReturnType) {
  // void at::native::vectorized_elementwise_kernel<4, float>(int, float*)
  EXPECT_EQ(ShortKernelName("_ZN2at6native29vectorized_elementwise_kernelILi4EfEEviPf"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(Demangle("_ZN2at6native29vectorized_elementwise_kernelILi4EfEEviPf"),
            "void at::native::vectorized_elementwise_kernel<4, float>(int, float*)");
  // A plain function: foo(int).
  EXPECT_EQ(ShortKernelName("_Z3fooi"), "foo");
  // (anonymous namespace)::k(): the namespace parentheses are kept.
  EXPECT_EQ(ShortKernelName("_ZN12_GLOBAL__N_11kEv"), "(anonymous namespace)::k");
  // Not mangled: unchanged.
  EXPECT_EQ(ShortKernelName("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(ShortKernelName("i"), "i");
  EXPECT_EQ(ShortKernelName("_Zgarbage"), "_Zgarbage");
  // Demangled already (as nsys and Kineto store them).
  EXPECT_EQ(ShortKernelName("void gen_sequenced<curandStateXORWOW, double>(curandStateXORWOW*, "
                            "double*, unsigned long)"),
            "gen_sequenced");
  EXPECT_EQ(ShortKernelName("my kernel"), "my kernel");
}

}  // namespace
}  // namespace tracer::analysis
