// Issue 16, as a user runs the commands: outputs are never overwritten
// silently (--force-overwrite), --top / --filter / --sort reach every table
// and `tracer diff`, and `--table all --format csv -o DIR` writes one CSV
// file per table that pandas (or python's csv module) reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/analysis/run_tracer.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TraceFileBuilder;

CliRun Tracer(const std::string& args) { return testing::RunTracerCli(args, true); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The rows of one table from `--format json` (one table: an array; several:
// an object keyed by table name).
nlohmann::json Rows(const std::string& args, const std::string& table) {
  const CliRun r = testing::RunTracerCli(args + " --format json", false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_array()) return j;
  if (j.is_object() && j.contains(table)) return j[table];
  ADD_FAILURE() << "no table " << table << " in: " << r.out << r.err;
  return nlohmann::json::array();
}

// A text column, without the indent the timeline gives nested names.
std::vector<std::string> Column(const nlohmann::json& rows, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& row : rows) {
    const std::string v = row[name].is_string() ? row[name].get<std::string>() : "";
    out.push_back(v.substr(std::min(v.find_first_not_of(' '), v.size())));
  }
  return out;
}

class CliOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceFileBuilder b;
    testing::BuildScenario(&b);
    trace_ = b.WriteTemp("opts.trace");
    dir_ = TraceFileBuilder::TempPath("opts_dir");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::remove(trace_.c_str());
    fs::remove_all(dir_);
  }
  std::string trace_, dir_;
};

// One line naming the file and the flag; the file keeps its bytes; the flag
// replaces it. Checked before anything is read or written.
void ExpectRefusedThenForced(const std::string& command, const std::string& out,
                             const std::string& args) {
  std::ofstream(out) << "precious";
  CliRun r = Tracer(args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("tracer " + command + ": " + out + " already exists: not overwritten"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--force-overwrite"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(Slurp(out), "precious");
  r = Tracer(args + " --force-overwrite");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(Slurp(out), "precious");
}

TEST_F(CliOptionsTest, ExistingOutputsAreRefusedUnlessForced) {
  ExpectRefusedThenForced("export", dir_ + "/t.json",
                          "export " + trace_ + " --format chrome -o " + dir_ + "/t.json");
  ExpectRefusedThenForced("report", dir_ + "/r.txt", "report " + trace_ + " -o " + dir_ + "/r.txt");
  ExpectRefusedThenForced("diff", dir_ + "/d.txt",
                          "diff " + trace_ + " " + trace_ + " -o " + dir_ + "/d.txt");
  // import: an nsys-shaped export of the scenario, imported back.
  const std::string db = dir_ + "/t.sqlite";
  ASSERT_EQ(Tracer("export " + trace_ + " --format sqlite -o " + db).exit_code, 0);
  ExpectRefusedThenForced("import", dir_ + "/i.trace", "import " + db + " -o " + dir_ + "/i.trace");
  // stdout is never "existing".
  EXPECT_EQ(Tracer("report " + trace_ + " -o - --table summary").exit_code, 0);
  EXPECT_EQ(Tracer("export " + trace_ + " -o -").exit_code, 0);
}

// `--table all --format csv -o DIR`: DIR/<table>.csv, each a plain CSV.
TEST_F(CliOptionsTest, CsvOfSeveralTablesIsOneFilePerTable) {
  const std::string out = dir_ + "/report_csv";
  CliRun r = Tracer("report " + trace_ + " --table all --format csv -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("to " + out + "/"), std::string::npos) << r.out;
  for (const char* t : {"summary", "ranges", "kernels", "range-kernels", "gpu", "memory", "api"}) {
    const std::string f = out + "/" + t + ".csv";
    ASSERT_TRUE(fs::is_regular_file(f)) << f;
    // One table: no "# name" separator lines, one header.
    EXPECT_EQ(Slurp(f).find("# "), std::string::npos) << f;
  }
  // Read as a user would: pandas when installed, else python's csv module.
  const std::string script = dir_ + "/read.py";
  std::ofstream(script)
      << "import sys\n"
         "d = sys.argv[1]\n"
         "try:\n"
         "    import pandas as pd\n"
         "    r = pd.read_csv(d + '/ranges.csv')\n"
         "    k = pd.read_csv(d + '/kernels.csv')\n"
         "    layer = int(r.loc[r['range'] == 'layer', 'instances'].iloc[0])\n"
         "    gemm = int(k.loc[k['kernel'] == 'gemm', 'total_ns'].iloc[0])\n"
         "except ImportError:\n"
         "    import csv\n"
         "    r = list(csv.DictReader(open(d + '/ranges.csv', newline='')))\n"
         "    k = list(csv.DictReader(open(d + '/kernels.csv', newline='')))\n"
         "    layer = int(next(x for x in r if x['range'] == 'layer')['instances'])\n"
         "    gemm = int(next(x for x in k if x['kernel'] == 'gemm')['total_ns'])\n"
         "print(layer, gemm)\n";
  FILE* p = popen(("python3 " + script + " " + out + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {0};
  const size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  ASSERT_EQ(pclose(p), 0) << std::string(buf, n);
  std::istringstream read(std::string(buf, n));
  long layer = -1, gemm = -1;
  read >> layer >> gemm;
  // The scenario: two layer instances; gemm 400 + 100 + 400 ns.
  EXPECT_EQ(layer, 2);
  EXPECT_EQ(gemm, 900);
  // The same numbers as the text report prints.
  r = Tracer("report " + trace_ + " --table kernels,ranges");
  ASSERT_EQ(r.exit_code, 0);
  std::istringstream text(r.out);
  std::string line;
  bool layer_row = false, gemm_row = false;
  while (std::getline(text, line)) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    // The ranges row: the name (after the domain column, when shown), then
    // the instances.
    const auto name = std::find(w.begin(), w.end(), "layer");
    if (name != w.end() && name + 1 != w.end()) {
      layer_row = true;
      EXPECT_EQ(*(name + 1), std::to_string(layer)) << line;
    }
    // Kernel totals here are under 10 us: the column is in ns.
    if (line.find("gemm") != std::string::npos && std::find(w.begin(), w.end(), "900") != w.end()) {
      gemm_row = true;
    }
  }
  EXPECT_TRUE(layer_row) << r.out;
  EXPECT_TRUE(gemm_row) << r.out;
  EXPECT_NE(r.out.find("Total (ns)"), std::string::npos) << r.out;

  // Again: the directory exists now.
  r = Tracer("report " + trace_ + " --table all --format csv -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  EXPECT_EQ(Tracer("report " + trace_ + " --table all --format csv --force-overwrite -o " + out)
                .exit_code,
            0);
  // One table: one file, as before.
  const std::string single = dir_ + "/kernels.csv";
  ASSERT_EQ(Tracer("report " + trace_ + " --table kernels --format csv -o " + single).exit_code, 0);
  EXPECT_TRUE(fs::is_regular_file(single));
  EXPECT_EQ(Slurp(single).rfind("kernel,", 0), 0u) << Slurp(single);
}

// --top: every table keeps N rows (the top table: N kernels per range).
// One table in CSV to stdout is plain CSV, header first, so
// `tracer report ... --format csv | pandas.read_csv` reads it; several
// tables on one stream keep their "# <table>" separators.
TEST_F(CliOptionsTest, OneCsvTableToStdoutIsPlainCsv) {
  CliRun one = Tracer("report " + trace_ + " --table kernels --format csv");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.rfind("kernel,", 0), 0u) << one.out;
  EXPECT_EQ(one.out.find("# "), std::string::npos) << one.out;
  CliRun two = Tracer("report " + trace_ + " --table kernels,ranges --format csv");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out.rfind("# kernels", 0), 0u) << two.out;
  EXPECT_NE(two.out.find("\n# ranges"), std::string::npos) << two.out;
}

TEST_F(CliOptionsTest, TopAppliesToTimelineCategoriesAndGaps) {
  const std::string base = "report " + trace_;
  for (const auto& [table, name] :
       std::vector<std::pair<std::string, std::string>>{{"timeline", "timeline"},
                                                        {"categories", "range_categories"},
                                                        {"categories", "kernel_categories"},
                                                        {"gaps", "gaps"}}) {
    const auto all = Rows(base + " --table " + table, name);
    ASSERT_GT(all.size(), 1u) << name;
    const auto one = Rows(base + " --table " + table + " --top 1", name);
    ASSERT_EQ(one.size(), 1u) << name;
    EXPECT_EQ(one[0], all[0]) << name << ": the first row of the same order";
  }
  const auto top = Rows(base + " --table top --top 1", "top");
  std::vector<std::string> ranges = Column(top, "range");
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(std::adjacent_find(ranges.begin(), ranges.end()), ranges.end())
      << "one kernel per range";
}

// --filter: the top, gaps, categories and timeline tables keep the ranges
// whose name matches; kernels by category are not per range.
TEST_F(CliOptionsTest, FilterAppliesToTopGapsCategoriesAndTimeline) {
  const std::string base = "report " + trace_ + " --filter '^(layer|bwd)$'";
  for (const auto& [table, name] :
       std::vector<std::pair<std::string, std::string>>{{"top", "top"},
                                                        {"gaps", "gaps"},
                                                        {"categories", "range_categories"},
                                                        {"timeline", "timeline"}}) {
    const auto rows = Rows(base + " --table " + table, name);
    std::vector<std::string> ranges = Column(rows, "range");
    ASSERT_FALSE(ranges.empty()) << name;
    for (const std::string& r : ranges)
      EXPECT_TRUE(r == "layer" || r == "bwd") << name << ": " << r;
    const auto unfiltered = Rows("report " + trace_ + " --table " + table, name);
    EXPECT_GT(unfiltered.size(), rows.size()) << name;
  }
  const auto categories = Rows(base + " --table categories", "kernel_categories");
  EXPECT_EQ(categories.size(),
            Rows("report " + trace_ + " --table categories", "kernel_categories").size());
}

// --sort: given, it orders these tables too; not given, each keeps its own.
TEST_F(CliOptionsTest, SortAppliesWhenGiven) {
  const std::string base = "report " + trace_;
  for (const auto& [table, name] : std::vector<std::pair<std::string, std::string>>{
           {"gaps", "gaps"}, {"categories", "range_categories"}, {"timeline", "timeline"}}) {
    const std::vector<std::string> by_name =
        Column(Rows(base + " --table " + table + " --sort name", name), "range");
    ASSERT_GT(by_name.size(), 1u) << name;
    EXPECT_TRUE(std::is_sorted(by_name.begin(), by_name.end())) << name;
    const auto by_count = Rows(base + " --table " + table + " --sort count", name);
    ASSERT_EQ(by_count.size(), by_name.size());
  }
  // The timeline without --sort: in start order, as before.
  const auto timeline = Rows(base + " --table timeline", "timeline");
  std::vector<int64_t> starts;
  for (const auto& row : timeline) starts.push_back(row["start_offset_ns"].get<int64_t>());
  EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
  // Gaps by total: the first time column (GPU projected), largest first.
  const auto gaps = Rows(base + " --table gaps --sort total", "gaps");
  for (size_t i = 1; i < gaps.size(); ++i) {
    EXPECT_GE(gaps[i - 1]["gpu_proj_ns"].get<int64_t>(), gaps[i]["gpu_proj_ns"].get<int64_t>());
  }
}

// B: the scenario's program with other times: step +10000 ns, cpu_only
// +3000, fwd and bwd +100; no layer or epoch; a new range "extra".
std::string WriteOtherRun() {
  TraceFileBuilder b;
  b.Thread(1, 100, "main");
  b.Thread(2, 101, "autograd");
  b.Range(1, 0, 1, "step", 0, 20000, 0);
  b.Range(2, 1, 1, "fwd", 100, 5000 + 100, 1);
  b.Range(5, 0, 2, "bwd", 5500, 9000 + 100, 0);
  b.Range(6, 1, 1, "cpu_only", 9100, 9500 + 3000, 1);
  b.Range(8, 0, 1, "extra", 30000, 30050, 0);
  b.Frame();
  return b.WriteTemp("opts_b.trace");
}

TEST_F(CliOptionsTest, DiffSortsByTheSizeOfTheChangeAndTakesTopFilterSort) {
  const std::string b = WriteOtherRun();
  const std::string base = "diff " + trace_ + " " + b;
  const auto rows = Rows(base, "");
  const std::vector<std::string> names = Column(rows, "range");
  ASSERT_EQ(names.size(), 7u);  // 4 in both, layer and epoch in A, extra in B
  EXPECT_EQ(names[0], "step");
  EXPECT_EQ(names[1], "cpu_only");
  // Then fwd and bwd (|100| each), then one-sided rows last.
  EXPECT_EQ(std::vector<std::string>(names.begin() + 2, names.begin() + 4).size(), 2u);
  for (size_t i = 4; i < names.size(); ++i) {
    EXPECT_TRUE(names[i] == "layer" || names[i] == "epoch" || names[i] == "extra") << names[i];
  }
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_GE(std::abs(rows[i - 1]["cpu_total_ns_delta"].get<int64_t>()),
              std::abs(rows[i]["cpu_total_ns_delta"].get<int64_t>()));
  }
  EXPECT_EQ(Rows(base + " --top 2", "").size(), 2u);
  const std::vector<std::string> filtered =
      Column(Rows(base + " --filter '^(fwd|bwd)$'", ""), "range");
  ASSERT_EQ(filtered.size(), 2u);
  for (const std::string& n : filtered) EXPECT_TRUE(n == "fwd" || n == "bwd") << n;
  const std::vector<std::string> by_name = Column(Rows(base + " --sort name", ""), "range");
  EXPECT_TRUE(std::is_sorted(by_name.begin(), by_name.end()));
  const CliRun bad = Tracer(base + " --sort nope");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("--sort: unknown key 'nope'"), std::string::npos) << bad.out;
  std::remove(b.c_str());
}

}  // namespace
}  // namespace tracer::analysis
