// Issue 16 as a user runs it: `--timeunit` and `--columns` on report and
// diff, the bounded path printing the new statistics identically, `diff
// --table kernels` with the numbers before the long name, and the Chrome
// export keeping a PyTorch profiler trace's categories.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/analysis/run_tracer.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

using Result = testing::CliRun;

Result Tracer(const std::string& args) { return testing::RunTracerCli(args, false); }
Result TracerMerged(const std::string& args) { return testing::RunTracerCli(args, true); }

// The first line that is not a "# <table>" line (CSV of several tables).
std::string FirstLine(const std::string& s) {
  size_t at = 0;
  while (at < s.size() && s[at] == '#') at = s.find('\n', at) + 1;
  return s.substr(at, s.find_first_of("\r\n", at) - at);
}

class ViewCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TraceFileBuilder b;
    testing::BuildScenario(&b);
    path_ = b.WriteTemp("view_cli.trace");
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(ViewCliTest, TimeunitRenamesAndConvertsEveryDurationColumn) {
  const Result r = Tracer("report " + path_ + " --table kernels --format csv --timeunit us");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(FirstLine(r.out),
            "kernel,count,total_us,avg_us,med_us,min_us,max_us,stddev_us,share_pct,full_name");
  // gemm: 400 + 100 + 400 ns.
  EXPECT_NE(r.out.find("gemm,3,0.900,0.300,0.400,0.100,0.400,0.173,"), std::string::npos) << r.out;
  const Result text = Tracer("report " + path_ + " --table kernels --timeunit us");
  EXPECT_NE(text.out.find("Total (us)"), std::string::npos) << text.out;
  const Result json = Tracer("report " + path_ + " --table kernels --format json --timeunit ms");
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_TRUE(nlohmann::json::parse(json.out)["kernels"][0].contains("total_ns")) << json.out;
}

TEST_F(ViewCliTest, ColumnsChooseAndBadOptionsFailWithOneLine) {
  Result r = Tracer("report " + path_ + " --table kernels --format csv --columns kernel,total_ns");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(FirstLine(r.out), "kernel,total_ns");
  r = TracerMerged("report " + path_ + " --table kernels --columns nope");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("tracer report: --columns: no table has nope"), std::string::npos) << r.out;
  r = TracerMerged("report " + path_ + " --timeunit hours");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--timeunit: unknown unit 'hours'"), std::string::npos) << r.out;
}

TEST(ViewCli, BoundedPathPrintsTheSameStatistics) {
  // Push/pop ranges only, so that --stream keeps the bounded path (a
  // start/end range over GPU work would send it to the whole-trace path).
  testing::TraceFileBuilder b;
  b.Thread(1, 100, "main");
  b.Stream(1, 0, 7);
  b.Range(1, 0, 1, "step", 0, 10000, 0);
  b.Range(2, 1, 1, "layer", 100, 3000, 1);
  b.Range(3, 0, 1, "step", 20000, 30000, 0);
  b.Frame();
  const uint64_t launch[][4] = {{1, 200, 1000, 1400},
                                {2, 300, 1500, 1600},
                                {3, 21000, 22000, 22500},
                                {4, 21100, 23000, 23001}};
  for (const auto& l : launch) {
    b.Launch(l[0], 1, l[1], l[1] < 3000 ? 2 : 3);
    b.Api("cudaLaunchKernel_v7000", 1, l[1], l[1] + 7 * l[0], l[0]);
    b.Kernel(l[0] % 2 ? "void k<1>(int)" : "void k<2>(int)", 1, l[2], l[3], l[0]);
  }
  b.Memcpy(/*HtoD*/ 1, 1000, 1, 4000, 4100, 9);
  b.Memcpy(/*HtoD*/ 1, 3000, 1, 24000, 24300, 10);
  b.Frame();
  const std::string path = b.WriteTemp("view_stream.trace");
  for (const char* unit : {"", " --timeunit ms"}) {
    const std::string args =
        "report " + path + " --table ranges,kernels,gpu,memory,api --format csv" + unit;
    const Result whole = Tracer(args + " --no-stream");
    const Result bounded = TracerMerged(args + " --stream");
    ASSERT_EQ(whole.exit_code, 0) << whole.out;
    EXPECT_EQ(bounded.out.find("reading the input whole"), std::string::npos) << bounded.out;
    EXPECT_EQ(bounded.out, whole.out);
    EXPECT_NE(whole.out.find("cudaLaunchKernel,runtime,4,"), std::string::npos) << whole.out;
  }
  std::remove(path.c_str());
}

TEST_F(ViewCliTest, DiffKernelsPutsTheFullNameLast) {
  const Result r = Tracer("diff " + path_ + " " + path_ + " --table kernels --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string header = FirstLine(r.out);
  EXPECT_EQ(header.rfind("kernel,status,", 0), 0u) << header;
  EXPECT_EQ(header.substr(header.size() - 10), ",full_name") << header;
  const Result us = Tracer("diff " + path_ + " " + path_ +
                           " --table kernels --format csv "
                           "--timeunit us --columns kernel,total_ns_delta");
  ASSERT_EQ(us.exit_code, 0) << us.out;
  EXPECT_EQ(FirstLine(us.out), "kernel,total_us_delta");
}

TEST(ViewCli, PhasesReadWithin120Characters) {
  const std::string data =
      std::string(TRACER_SHARED_DATA_DIR) + "/kineto/resnet_ddp_rank0.pt.trace.json.gz";
  if (access(data.c_str(), R_OK) != 0) GTEST_SKIP() << "../shared/data is absent";
  const Result r = Tracer("report " + data + " --table phases");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream in(r.out);
  std::string line;
  int lines = 0;
  while (std::getline(in, line) && line.rfind("  ", 0) != 0) {  // notes are indented
    EXPECT_LE(line.size(), 120u) << line;
    ++lines;
  }
  EXPECT_GE(lines, 8);  // title, header, rule, 5 steps, all
  // Each phase's time stays one option away.
  const Result detail =
      Tracer("report " + data + " --table phases --columns step,forward_cpu_ns --timeunit ms");
  ASSERT_EQ(detail.exit_code, 0) << detail.out;
  EXPECT_NE(detail.out.find("forward (ms)"), std::string::npos) << detail.out;
}

TEST(ChromeExportCategories, KinetoOpsKeepTheirCategory) {
  const std::string in = testing::TraceFileBuilder::TempPath("cats.pt.trace.json");
  const std::string out = testing::TraceFileBuilder::TempPath("cats.chrome.json");
  std::ofstream(in) << R"({"schemaVersion":1,"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"step","pid":1,"tid":1,"ts":0,"dur":5},
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]})";
  const Result r = Tracer("export " + in + " --format chrome -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  std::set<std::string> cats;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") == "aten::mm" || e.value("name", "") == "step")
      cats.insert(e.value("name", "") + "=" + e.value("cat", ""));
  }
  EXPECT_EQ(cats, (std::set<std::string>{"aten::mm=cpu_op", "step=user_annotation"}));
  std::remove(in.c_str());
  std::remove(out.c_str());
}

}  // namespace
}  // namespace tracer::analysis
