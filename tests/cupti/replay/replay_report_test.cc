// The capture path on real data (issue 5): each nsys export in
// shared/data/nsys is replayed as the CUPTI and NVTX traffic it records
// (nsys_replay_driver, through libtracer.so and the fake libcupti), and the
// `tracer report` tables of the captured stream must equal those of the
// export imported directly. Differences allowed, each for a stated reason:
//  - thread ids: the replay runs on this machine's threads; the driver writes
//    the recorded -> replayed tid map, and the test maps the threads column
//    back before comparing;
//  - order of rows whose sort key ties: the tables break ties by first
//    appearance of the names, and the captured stream meets kernel names in
//    activity-buffer order (end time, out of launch order across streams)
//    while the importer meets them in table order; so each table is compared
//    as a multiset of rows.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr const char* kTables = "ranges,kernels,range-kernels,gpu,api";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a command with a clean environment plus `env`; returns its status.
int RunCommand(const std::map<std::string, std::string>& env, const std::vector<std::string>& argv,
               const fs::path& out, const fs::path& err) {
  std::string cmd = "timeout 300 env -i PATH=/usr/bin:/bin";
  for (const auto& [k, v] : env) cmd += " " + k + "=" + Quote(v);
  for (const std::string& a : argv) cmd += " " + Quote(a);
  cmd += " > " + Quote(out.string()) + " 2> " + Quote(err.string());
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      fields.back() += c;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

std::string JoinCsv(const std::vector<std::string>& fields) {
  std::string s;
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? "," : "") + fields[i];
  return s;
}

// "14623 (python3)" or several such -> the recorded tids.
std::string MapTids(const std::string& field, const std::map<std::string, std::string>& tids) {
  std::string out, token;
  auto flush = [&] {
    auto it = tids.find(token);
    out += it != tids.end() ? it->second : token;
    token.clear();
  };
  for (char c : field) {
    if (c >= '0' && c <= '9') {
      token += c;
    } else {
      flush();
      out += c;
    }
  }
  flush();
  return out;
}

struct Table {
  std::string header;
  std::vector<std::string> rows;
};

// The CSV report: "# name" sections, a header line, rows, blank separators.
std::map<std::string, Table> ParseReport(const std::string& text,
                                         const std::map<std::string, std::string>& tids) {
  std::map<std::string, Table> tables;
  std::istringstream in(text);
  std::string line, current;
  int threads_column = -1;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CSV lines end in CRLF
    if (line.empty()) continue;
    if (line.rfind("# ", 0) == 0) {
      current = line.substr(2);
      tables[current];
      threads_column = -1;
      continue;
    }
    Table& t = tables[current];
    std::vector<std::string> fields = SplitCsv(line);
    if (t.header.empty()) {
      t.header = line;
      auto it = std::find(fields.begin(), fields.end(), "threads");
      threads_column = it == fields.end() ? -1 : static_cast<int>(it - fields.begin());
      continue;
    }
    if (threads_column >= 0 && threads_column < static_cast<int>(fields.size())) {
      fields[threads_column] = MapTids(fields[threads_column], tids);
    }
    t.rows.push_back(JoinCsv(fields));
  }
  for (auto& [name, t] : tables) std::sort(t.rows.begin(), t.rows.end());
  return tables;
}

// Blanks the named columns of every table (columns only one path fills).
void BlankColumns(std::map<std::string, Table>* tables, const std::vector<std::string>& names) {
  for (auto& [name, t] : *tables) {
    const std::vector<std::string> header = SplitCsv(t.header);
    std::vector<size_t> blank;
    for (size_t i = 0; i < header.size(); ++i) {
      if (std::find(names.begin(), names.end(), header[i]) != names.end()) blank.push_back(i);
    }
    for (std::string& row : t.rows) {
      std::vector<std::string> fields = SplitCsv(row);
      for (size_t i : blank) {
        if (i < fields.size()) fields[i].clear();
      }
      row = JoinCsv(fields);
    }
    std::sort(t.rows.begin(), t.rows.end());
  }
}

// First differing row of each table, not a 45k-line dump.
void ExpectSameRows(const std::map<std::string, Table>& want,
                    const std::map<std::string, Table>& got, const std::string& what) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << what << " lacks table " << name;
    const Table& g = it->second;
    EXPECT_EQ(g.header, w.header) << what << ": " << name;
    EXPECT_EQ(g.rows.size(), w.rows.size()) << what << ": " << name;
    auto mismatch = std::mismatch(w.rows.begin(), w.rows.end(), g.rows.begin(), g.rows.end());
    if (mismatch.first != w.rows.end() || mismatch.second != g.rows.end()) {
      ADD_FAILURE() << what << ": " << name << ": expected row\n  "
                    << (mismatch.first != w.rows.end() ? *mismatch.first : "(none)")
                    << "\ngot row\n  "
                    << (mismatch.second != g.rows.end() ? *mismatch.second : "(none)");
    }
  }
}

class ReplayReportTest : public testing::TestWithParam<const char*> {};

TEST_P(ReplayReportTest, ReplayedCaptureReportsLikeTheImport) {
  const fs::path data = fs::path(NSYS_DATA_DIR) / GetParam();
  if (!fs::exists(data)) GTEST_SKIP() << data << " absent";
  char tmpl[] = "/tmp/replay_report_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir(tmpl);

  // One replay run per recorded process, as each was its own process.
  std::vector<std::string> traces;
  std::map<std::string, std::string> tids;  // replayed -> recorded
  for (int process = 0;; ++process) {
    const std::string n = std::to_string(process);
    const fs::path trace = dir / ("replay" + n + ".trace");
    const fs::path map = dir / ("tids" + n + ".txt");
    const int rc = RunCommand({{"TRACER_TEST_CLOCK", "replay"},
                               {"CUDA_INJECTION64_PATH", TRACER_SO_PATH},
                               {"NVTX_INJECTION64_PATH", TRACER_SO_PATH},
                               {"TRACER_CUPTI_LIBRARY", FAKE_CUPTI_PATH},
                               {"TRACER_OUTPUT", trace.string()},
                               {"TRACER_LOG_LEVEL", "warn"},
                               // Small buffers: the records of one launch spread over many buffers.
                               {"FAKE_CUPTI_BUFFER_LIMIT", "65536"}},
                              {REPLAY_DRIVER_PATH, data.string(), n, map.string()},
                              dir / ("driver" + n + ".out"), dir / ("driver" + n + ".err"));
    if (rc == 3) break;  // no such process
    ASSERT_EQ(rc, 0) << ReadFile(dir / ("driver" + n + ".err"));
    traces.push_back(trace.string());
    std::istringstream in(ReadFile(map));
    std::string recorded, replayed;
    while (in >> recorded >> replayed) tids[replayed] = recorded;
  }
  ASSERT_FALSE(traces.empty());

  std::vector<std::string> replay_cmd = {TRACER_CLI_PATH, "report"};
  replay_cmd.insert(replay_cmd.end(), traces.begin(), traces.end());
  for (const char* a : {"--table", kTables, "--format", "csv"}) replay_cmd.push_back(a);
  ASSERT_EQ(RunCommand({}, replay_cmd, dir / "replay.csv", dir / "replay.err"), 0)
      << ReadFile(dir / "replay.err");
  ASSERT_EQ(
      RunCommand({},
                 {TRACER_CLI_PATH, "report", data.string(), "--table", kTables, "--format", "csv"},
                 dir / "import.csv", dir / "import.err"),
      0)
      << ReadFile(dir / "import.err");

  const auto replayed = ParseReport(ReadFile(dir / "replay.csv"), tids);
  const auto imported = ParseReport(ReadFile(dir / "import.csv"), {});
  ASSERT_EQ(imported.size(), 5u) << "expected the five requested tables";
  ExpectSameRows(imported, replayed, "replay vs import");

  // The bounded-memory reader on the same recorded streams, main-thread
  // inheritance on: the same numbers as reading whole, every column (GPU busy
  // included). Where a stream needs what the bounded path cannot decide while
  // reading, it says so in one line and reads whole: same numbers again.
  std::vector<std::string> stream_cmd = replay_cmd, memory_cmd = replay_cmd;
  stream_cmd.push_back("--stream");
  memory_cmd.push_back("--no-stream");
  ASSERT_EQ(RunCommand({}, stream_cmd, dir / "stream.csv", dir / "stream.err"), 0)
      << ReadFile(dir / "stream.err");
  ASSERT_EQ(RunCommand({}, memory_cmd, dir / "memory.csv", dir / "memory.err"), 0)
      << ReadFile(dir / "memory.err");
  EXPECT_EQ(ReadFile(dir / "stream.csv"), ReadFile(dir / "memory.csv"));
  const std::string stream_err = ReadFile(dir / "stream.err");
  EXPECT_TRUE(stream_err.empty() ||
              stream_err.find("bounded-memory reading cannot give the exact numbers") !=
                  std::string::npos)
      << stream_err;
  // And with nsys semantics (no inheritance) these recorded streams stay on
  // the bounded path.
  stream_cmd.insert(stream_cmd.end(), {"--main-thread", "off"});
  memory_cmd.insert(memory_cmd.end(), {"--main-thread", "off"});
  ASSERT_EQ(RunCommand({}, stream_cmd, dir / "stream_off.csv", dir / "stream_off.err"), 0);
  ASSERT_EQ(RunCommand({}, memory_cmd, dir / "memory_off.csv", dir / "memory_off.err"), 0);
  EXPECT_EQ(ReadFile(dir / "stream_off.csv"), ReadFile(dir / "memory_off.csv"));
  EXPECT_EQ(ReadFile(dir / "stream_off.err"), "");

  // Every file has ranges, kernels and API calls: a replay that lost a kind
  // would compare equal only if the import lost it too.
  for (const char* name : {"ranges", "kernels", "api"}) {
    EXPECT_FALSE(imported.at(name).rows.empty()) << name;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(NsysExports, ReplayReportTest,
                         testing::Values("workflow.sqlite", "cudf-groupby.sqlite",
                                         "h100_2gpu_mfu.sqlite"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
