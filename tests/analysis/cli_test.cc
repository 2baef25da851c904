// `tracer report` and `tracer export` as a user runs them: exit codes, one
// line per problem on stderr, the tables on stdout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/analysis/run_tracer.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

using Result = testing::CliRun;  // out: stdout + stderr

Result RunTracer(const std::string& args) { return testing::RunTracerCli(args, true); }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TraceFileBuilder b;
    testing::BuildScenario(&b);
    path_ = b.WriteTemp("cli.trace");
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(CliTest, DefaultReportShowsSummaryRangesAndGpuTables) {
  const Result r = RunTracer("report " + path_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* s : {"Summary", "NVTX ranges", "GPU kernels", "GPU projection", "Memory",
                        "layer", "bwd_kernel"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST_F(CliTest, JsonOutputParses) {
  const Result r = RunTracer("report " + path_ + " --table ranges,range-kernels --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("ranges"));
  EXPECT_TRUE(j.contains("range-kernels"));
}

TEST_F(CliTest, DamagedAndMissingInputs) {
  // Cut the file in the middle of its last frame: still a report, one warning.
  std::ifstream in(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = testing::TraceFileBuilder::TempPath("cli_cut.trace");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 10);
  Result r = RunTracer("report " + cut + " --table ranges");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + cut + ": corrupt frame"), std::string::npos) << r.out;
  std::remove(cut.c_str());

  r = RunTracer("report /nonexistent/x.trace");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent/x.trace: cannot open"), std::string::npos) << r.out;

  // One good file and one missing: the good one is reported, exit 0.
  r = RunTracer("report " + path_ + " /nonexistent/x.trace --table summary");
  EXPECT_EQ(r.exit_code, 0) << r.out;

  r = RunTracer("report " + path_ + " --table nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unknown table 'nope'"), std::string::npos) << r.out;
  r = RunTracer("report " + path_ + " --filter '('");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--filter"), std::string::npos) << r.out;
}

// Issue 12 (9): bad inputs, one clear line each naming what is wrong.
TEST_F(CliTest, BadInputsSayWhatIsWrong) {
  // --stream on a missing file said it was an import.
  Result r = RunTracer("report --stream /nonexistent/x.trace");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent/x.trace: cannot open"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("import"), std::string::npos) << r.out;
  // A directory as --groups was read as a file with no rules.
  r = RunTracer("report " + path_ + " --table groups --groups /tmp");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("cannot read /tmp: is a directory"), std::string::npos) << r.out;
  // Rule files: a bad regex names the file and line, a file that cannot be
  // read says why; one line each, exit code 1.
  const std::string rules = testing::TraceFileBuilder::TempPath("bad_phases.rules");
  std::ofstream(rules) << "forward -> fwd\n(unclosed -> bwd\n";
  for (const char* flag :
       {"--table phases --phase-rules ", "--table categories --category-rules ", "--name-rules "}) {
    r = RunTracer("report " + path_ + " " + flag + rules);
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.out.find(rules + ":2: invalid regex '(unclosed'"), std::string::npos) << r.out;
    r = RunTracer("report " + path_ + " " + flag + "/nonexistent/x.rules");
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.out.find("cannot read /nonexistent/x.rules (No such file or directory)\n"),
              std::string::npos)
        << r.out;
  }
  std::remove(rules.c_str());
  // A JSON array of numbers is no PyTorch trace.
  const std::string numbers = testing::TraceFileBuilder::TempPath("numbers.json");
  std::ofstream(numbers) << "[1,2,3]\n";
  r = RunTracer("report " + numbers);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(numbers + ": not a Chrome trace"), std::string::npos) << r.out;
  std::remove(numbers.c_str());
}

// A stream in the tracer's own record order: per thread, a launch before the
// range it names, children before parents.
// pid: the process (and its file's name); slow: times its step and kernels
// take (a straggler).
std::string WriteRecordedOrder(uint32_t pid = 31, uint64_t slow = 1) {
  testing::TraceFileBuilder b(pid);
  b.Thread(1, pid);
  b.Stream(1, 0, 7);
  uint64_t corr = 0;
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t base = 10'000 * step, sid = 10 * step + 1;
    for (uint64_t layer = 0; layer < 2; ++layer) {
      const uint64_t lid = sid + 1 + layer, t = base + 100 + 1000 * layer;
      b.Launch(++corr, 1, t + 10, lid);
      b.Kernel(layer == 0 ? "gemm" : "relu", 1, t + 500, t + 500 + (200 + 100 * step) * slow, corr);
      b.Range(lid, sid, 1, "layer", t, t + 900, 1);
    }
    b.Range(sid, 0, 1, "step", base, base + 5000 * slow, 0);
    b.Frame();
  }
  return b.WriteTemp(pid == 31 ? std::string("recorded_order.trace")
                               : "recorded_order_" + std::to_string(pid) + ".trace");
}

// The output of a command without the stderr lines that say how it read.
std::string Tables(const Result& r) {
  std::istringstream in(r.out);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("tracer report: ", 0) != 0) out += line + "\n";
  }
  return out;
}

TEST_F(CliTest, StreamFlagGivesTheSameNumbersOrReadsWhole) {
  const std::string recorded = WriteRecordedOrder();
  const std::string tables = " --table kernels,range-kernels,ranges,gpu,summary --format csv";
  const Result memory = RunTracer("report " + recorded + tables);
  const Result stream = RunTracer("report --stream " + recorded + tables);
  ASSERT_EQ(memory.exit_code, 0) << memory.out;
  ASSERT_EQ(stream.exit_code, 0) << stream.out;
  // Every column, GPU busy included, and nothing said on stderr.
  EXPECT_NE(memory.out.find("step,gemm,3,3,900"), std::string::npos) << memory.out;
  EXPECT_EQ(stream.out, memory.out);

  // Records out of the tracer's order and a worker thread inside the main
  // thread's ranges (the scenario file): read whole, saying why, so the
  // numbers are those of --no-stream.
  Result r = RunTracer("report --stream " + path_ + tables);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("bounded-memory reading cannot give the exact numbers"), std::string::npos)
      << r.out;
  EXPECT_EQ(Tables(r), RunTracer("report --no-stream " + path_ + tables).out);

  // A table that is computed from the whole trace: said, then computed.
  r = RunTracer("report --stream " + recorded + " --table timeline");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--stream: table 'timeline' is computed from the whole trace"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Tables(r), RunTracer("report " + recorded + " --table timeline").out);
  // Automatic streaming above a size: same numbers; never for a table that
  // needs the whole trace.
  r = RunTracer("report " + recorded + " --stream-above 100 --table ranges");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("large input ("), std::string::npos) << r.out;
  EXPECT_EQ(Tables(r), RunTracer("report " + recorded + " --table ranges").out);
  r = RunTracer("report " + recorded + " --stream-above 100 --table timeline");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("large input ("), std::string::npos) << r.out;
  r = RunTracer("report " + recorded + " --stream-above 3X");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--stream-above: expected a size"), std::string::npos) << r.out;
  r = RunTracer("report --stream --no-stream " + recorded);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("exclude each other"), std::string::npos) << r.out;
  const std::string json = testing::TraceFileBuilder::TempPath("not_a_stream.json");
  std::ofstream(json) << "{\"traceEvents\": []}";
  // A PyTorch profiler (Kineto) trace takes the bounded path too
  // (importers/kineto_json_stream.h): same output, nothing read whole.
  r = RunTracer("report --stream " + json);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("reading the input whole"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kineto-json"), std::string::npos) << r.out;
  EXPECT_EQ(r.out, RunTracer("report --no-stream " + json).out);
  std::remove(json.c_str());
  // 'all' under --stream: every table this path computes.
  r = RunTracer("report --stream " + recorded + " --table all --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* t : {"summary", "ranges", "kernels", "range-kernels", "gpu", "memory", "api"}) {
    EXPECT_TRUE(j.contains(t)) << t;
  }
  EXPECT_FALSE(j.contains("timeline"));
  std::remove(recorded.c_str());
}

TEST_F(CliTest, RanksTableReadsOneFileAtATime) {
  // Three ranks' files (the last a straggler) and the scenario file, whose
  // records are out of the tracer's order: the bounded ranks table reads
  // each file whole, one at a time, so it takes any input, and its numbers
  // are those of all files read at once.
  const std::vector<std::string> recorded = {WriteRecordedOrder(41), WriteRecordedOrder(42),
                                             WriteRecordedOrder(43, 2)};
  std::string files;
  for (const std::string& f : recorded) files += " " + f;
  for (const std::string tables :
       {" --table ranks", " --table ranks --step-range layer --top 1 --filter ^layer$"}) {
    const Result whole = RunTracer("report --no-stream" + files + " " + path_ + tables);
    const Result bounded = RunTracer("report --stream" + files + " " + path_ + tables);
    ASSERT_EQ(whole.exit_code, 0) << whole.out;
    ASSERT_EQ(bounded.exit_code, 0) << bounded.out;
    EXPECT_EQ(bounded.out, whole.out);  // stderr merged: nothing said either
  }
  const Result whole = RunTracer("report --no-stream" + files + " --table ranks --format csv");
  // The straggler's steps: 5000 ns on two ranks, 10000 on pid 43.
  EXPECT_NE(whole.out.find("step,step #0,3,5000,5000,10000,pid 43,100"), std::string::npos)
      << whole.out;
  // With streamed tables, in the order asked; automatically above
  // --stream-above, saying so.
  const std::string tables = " --table range-kernels,ranks,ranges --format csv";
  Result r = RunTracer("report --stream" + files + tables);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, RunTracer("report --no-stream" + files + tables).out);
  EXPECT_LT(r.out.find("step #0"), r.out.find("Range,Calls"));
  r = RunTracer("report --stream-above 100" + files + tables);
  EXPECT_NE(r.out.find("large input ("), std::string::npos) << r.out;
  EXPECT_EQ(Tables(r), RunTracer("report --no-stream" + files + tables).out);
  for (const std::string& f : recorded) std::remove(f.c_str());
}

TEST_F(CliTest, HelpTeachesTheDefinitions) {
  const Result r = RunTracer("report --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"Examples:", "projected GPU", "GPU busy", "kernel time", "range-kernels",
                        "--main-thread"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

TEST_F(CliTest, ExportChrome) {
  const std::string out = testing::TraceFileBuilder::TempPath("cli.json");
  const Result r = RunTracer("export " + path_ + " --format chrome -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_GT(j["traceEvents"].size(), 20u);
  std::remove(out.c_str());
  EXPECT_EQ(RunTracer("export " + path_ + " --format nope").exit_code, 1);
}

}  // namespace
}  // namespace tracer::analysis
