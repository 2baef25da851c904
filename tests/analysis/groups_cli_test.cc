// `--groups` of report, diff and export as a user runs them: shipped groups
// files found by name from any directory and from an install prefix, the
// groups table shown without --table, and carried into CSV, SQLite and
// Chrome JSON exports.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/analysis/run_tracer.h"

namespace tracer::analysis {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::TraceFileBuilder;

// One decoder layer of a peft model annotated by tracer.torch.annotate, with
// q_proj and v_proj adapted (names qualified: python/tracer/_naming.py).
// Each LoRA range launches one kernel.
std::string PeftTrace() {
  TraceFileBuilder b;
  b.Thread(1, 100, "main");
  b.Stream(1, 0, 7);
  b.Range(1, 0, 1, "f_layers_0", 0, 10000, 0);
  struct R {
    const char* name;
    uint64_t kernel_ns;
  };
  const R ranges[] = {{"f_q_proj_base_layer_0", 1000},   {"f_q_proj_lora_A_default_0", 10},
                      {"f_q_proj_lora_B_default_0", 20}, {"f_v_proj_base_layer_0", 1000},
                      {"f_v_proj_lora_A_default_0", 30}, {"f_v_proj_lora_B_default_0", 40},
                      {"f_q_proj_lora_A_chat_0", 100}};
  uint64_t id = 2, t = 100;
  for (const R& r : ranges) {
    b.Range(id, 1, 1, r.name, t, t + 500, 1);
    b.Launch(id, 1, t + 10, id);
    b.Kernel("k", 1, t + 20, t + 20 + r.kernel_ns, id);
    ++id;
    t += 1000;
  }
  b.Frame();
  return b.WriteTemp("peft.trace");
}

// Runs from dir (the lookup must not depend on the working directory).
CliRun RunIn(const std::string& dir, const std::string& args) {
  const fs::path before = fs::current_path();
  fs::current_path(dir);
  CliRun r = testing::RunTracerCli(args, false);
  fs::current_path(before);
  return r;
}

// group -> kernel_ns of a `--format json` groups table.
std::map<std::string, int64_t> GroupKernelNs(const nlohmann::json& rows) {
  std::map<std::string, int64_t> out;
  for (const auto& row : rows)
    out[row["group"].get<std::string>()] = row["kernel_ns"].get<int64_t>();
  return out;
}

class GroupsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = PeftTrace();
    dir_ = TraceFileBuilder::TempPath("groups_dir");
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::remove(trace_.c_str());
    fs::remove_all(dir_);
  }
  std::string trace_, dir_;
};

TEST_F(GroupsCliTest, ShippedNameFromAnyDirectoryAddsTheGroupsTable) {
  const CliRun r = RunIn(dir_, "report " + trace_ + " --groups peft --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The default tables, then groups.
  EXPECT_TRUE(j.contains("summary"));
  EXPECT_TRUE(j.contains("ranges"));
  EXPECT_TRUE(j.contains("kernels"));
  ASSERT_TRUE(j.contains("groups")) << r.out;
  const auto groups = GroupKernelNs(j["groups"]);
  EXPECT_EQ(groups.at("f_lora_default"), 10 + 20 + 30 + 40);
  EXPECT_EQ(groups.at("f_lora_chat"), 100);
  EXPECT_EQ(groups.at("f_linear"), 2000);
  EXPECT_EQ(groups.count("f_lora_A_chat"), 0u);

  // With --table, groups comes after the tables asked for.
  const CliRun ranges = RunIn(dir_, "report " + trace_ + " --groups mlora.groups --table ranges");
  ASSERT_EQ(ranges.exit_code, 0) << ranges.err;
  const size_t at_ranges = ranges.out.find("NVTX ranges"), at_groups = ranges.out.find("Groups");
  ASSERT_NE(at_groups, std::string::npos) << ranges.out;
  EXPECT_LT(at_ranges, at_groups);
  EXPECT_EQ(ranges.out.find("Summary"), std::string::npos);
}

TEST_F(GroupsCliTest, UnknownNameListsTheKnownOnes) {
  const CliRun r = RunIn(dir_, "report " + trace_ + " --groups nosuch");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "tracer report: --groups: 'nosuch' is neither a file nor a known groups name "
            "(known: mlora, peft)\n");
  const CliRun d = RunIn(dir_, "diff " + trace_ + " " + trace_ + " --groups nosuch");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("tracer diff: --groups: 'nosuch' is neither"), std::string::npos) << d.err;
  const CliRun e = RunIn(dir_, "export " + trace_ + " --groups ./nosuch -o " + dir_ + "/x.json");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("tracer export: --groups: './nosuch' is neither"), std::string::npos)
      << e.err;
}

// bin/tracer finds <prefix>/share/tracer/groups/NAME.groups before the
// source tree's copy.
TEST_F(GroupsCliTest, InstallPrefixComesBeforeTheSourceTree) {
  const fs::path prefix = fs::path(dir_) / "prefix";
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix / "share" / "tracer" / "groups");
  fs::copy_file(TRACER_BIN, prefix / "bin" / "tracer");
  std::ofstream(prefix / "share" / "tracer" / "groups" / "peft.groups")
      << "installed_lora = f_{proj}_lora_A_{adapter}\n";
  std::ofstream(prefix / "share" / "tracer" / "groups" / "mine.groups") << "mine = f_layers\n";
  const std::string bin = (prefix / "bin" / "tracer").string();
  const auto run = [&](const std::string& args) {
    CliRun r;
    FILE* pipe = popen((bin + " " + args + " 2>&1").c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.out.append(buf, n);
    r.exit_code = WEXITSTATUS(pclose(pipe));
    return r;
  };
  const CliRun peft = run("report " + trace_ + " --table groups --groups peft --format json");
  ASSERT_EQ(peft.exit_code, 0) << peft.out;
  EXPECT_EQ(GroupKernelNs(nlohmann::json::parse(peft.out)["groups"]),
            (std::map<std::string, int64_t>{{"installed_lora", 10 + 30 + 100}}));
  const CliRun mine = run("report " + trace_ + " --table groups --groups mine --format json");
  ASSERT_EQ(mine.exit_code, 0) << mine.out;
  EXPECT_EQ(nlohmann::json::parse(mine.out)["groups"][0]["group"], "mine");
  // Names from both places are listed when one is missing.
  const CliRun none = run("report " + trace_ + " --groups nosuch");
  EXPECT_NE(none.out.find("(known: mine, mlora, peft)"), std::string::npos) << none.out;
}

TEST_F(GroupsCliTest, DiffShowsGroupsWhenGivenGroups) {
  const CliRun r = RunIn(dir_, "diff " + trace_ + " " + trace_ + " --groups peft --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array()) << r.out;
  std::map<std::string, int64_t> b;
  for (const auto& row : j) b[row["group"].get<std::string>()] = row["kernel_ns_b"].get<int64_t>();
  EXPECT_EQ(b.at("f_lora_default"), 100);
  EXPECT_EQ(b.at("f_lora_chat"), 100);
}

TEST_F(GroupsCliTest, ExportCarriesGroupsIntoCsvSqliteAndJson) {
  const std::string csv = dir_ + "/csv";
  const CliRun c = RunIn(dir_, "export " + trace_ + " --format csv --groups peft -o " + csv);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream in(csv + "/groups.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("group,members,instances,cpu_ns,", 0), 0u) << text;
  EXPECT_NE(text.find("\r\nf_lora_default,4,4,2000,"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(csv + "/ranges.csv"));
  // Without --groups there is no groups.csv.
  const std::string plain = dir_ + "/plain";
  ASSERT_EQ(RunIn(dir_, "export " + trace_ + " --format csv -o " + plain).exit_code, 0);
  EXPECT_TRUE(fs::exists(plain + "/ranges.csv"));
  EXPECT_FALSE(fs::exists(plain + "/groups.csv"));

  const std::string db_path = dir_ + "/x.sqlite";
  const CliRun s = RunIn(dir_, "export " + trace_ + " --format sqlite --groups peft -o " + db_path);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT members, kernel_ns, typeof(kernel_pct) FROM TRACER_GROUPS "
                               "WHERE \"group\" = 'f_lora_chat'",
                               -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 1);
  EXPECT_EQ(sqlite3_column_int64(st, 1), 100);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 2)), "real");
  sqlite3_finalize(st);
  // The nsys tables are still there, and the notes went along.
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT (SELECT count(*) FROM NVTX_EVENTS), (SELECT count(*) FROM "
                               "TRACER_TABLE_NOTES WHERE tableName = 'groups')",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_GE(sqlite3_column_int64(st, 0), 8);
  EXPECT_GE(sqlite3_column_int64(st, 1), 3);
  sqlite3_finalize(st);
  sqlite3_close(db);

  const std::string json = dir_ + "/x.json";
  const CliRun j = RunIn(dir_, "export " + trace_ + " --groups peft -o " + json);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  std::ifstream jin(json);
  const auto doc = nlohmann::json::parse(jin);
  EXPECT_GT(doc["traceEvents"].size(), 8u);
  EXPECT_EQ(GroupKernelNs(doc["tracerTables"]["groups"]).at("f_lora_default"), 100);
}

}  // namespace
}  // namespace tracer::analysis
