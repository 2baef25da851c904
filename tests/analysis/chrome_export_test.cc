// Chrome trace export: valid JSON that Perfetto's JSON importer accepts, with
// ranges on thread tracks, GPU ops on per-stream tracks and launch flows.
#include "libtracer/analysis/export/chrome_export.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "libtracer/analysis/read/reader.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

nlohmann::json Export(const Trace& trace) {
  std::ostringstream out;
  std::string error;
  EXPECT_TRUE(WriteChromeTrace(trace, out, &error)) << error;
  return nlohmann::json::parse(out.str());
}

TEST(ChromeExportTest, TracksFlowsAndTimestamps) {
  testing::TraceFileBuilder b(100);
  testing::BuildScenario(&b);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "s.trace", &trace, &error));
  const nlohmann::json j = Export(trace);
  const auto& events = j.at("traceEvents");
  std::map<std::string, int> by_cat;
  std::map<std::string, int> by_ph;
  std::set<std::string> thread_names;
  std::map<int64_t, std::pair<int64_t, int64_t>> flow_start;  // id -> pid, tid
  int flows_finished = 0;
  for (const auto& e : events) {
    const std::string ph = e.at("ph");
    ++by_ph[ph];
    if (e.contains("cat")) ++by_cat[e["cat"].get<std::string>()];
    if (ph == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"]);
    if (ph == "s") flow_start[e["id"].get<int64_t>()] = {e["pid"], e["tid"]};
    if (ph == "f") {
      ++flows_finished;
      EXPECT_EQ(e["bp"], "e");
      EXPECT_GE(e["pid"].get<int64_t>(), 1000000000);  // a GPU pseudo process
      EXPECT_TRUE(flow_start.count(e["id"].get<int64_t>()));
    }
    if (ph == "X" && e["cat"] == "nvtx" && e["name"] == "layer" &&
        e["args"]["id"].get<int>() == 3) {
      // [200, 2000] ns -> ts 0.2 us, dur 1.8 us (exact decimals).
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.2);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.8);
      EXPECT_EQ(e["pid"], 100);
      EXPECT_EQ(e["tid"], 100);
    }
    if (ph == "X" && e["cat"] == "kernel" && e["args"]["correlation"] == 6) {
      EXPECT_EQ(e["tid"], 8);  // CUPTI stream 8
      EXPECT_EQ(e["name"], "bwd_kernel");
    }
  }
  EXPECT_EQ(by_cat["nvtx"], 6 + 2);  // 6 push/pop "X" + start/end "b" and "e"
  EXPECT_EQ(by_cat["kernel"], 8);
  EXPECT_EQ(by_cat["memcpy"], 1);
  // Every op with a launch record (8 of 9; K8 has none) has a flow.
  EXPECT_EQ(flows_finished, 8);
  EXPECT_EQ(flow_start.size(), 8u);
  EXPECT_TRUE(thread_names.count("main"));
  EXPECT_TRUE(thread_names.count("stream 7"));
  EXPECT_TRUE(thread_names.count("stream 8"));
}

TEST(ChromeExportTest, OddNamesStillGiveValidJson) {
  testing::TraceFileBuilder b;
  b.Range(1, 0, 1, "quote\" back\\slash \x01 latin1 \xe9", 0, 10);
  Trace trace;
  std::string error;
  ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "odd.trace", &trace, &error));
  const nlohmann::json j = Export(trace);
  bool found = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      found = true;
      EXPECT_EQ(e["name"].get<std::string>().substr(0, 17), "quote\" back\\slash");
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeExportTest, MergedProcessesWithTheSamePidStayApart) {
  Trace trace;
  std::string error;
  for (int i = 0; i < 2; ++i) {
    testing::TraceFileBuilder b(100);
    b.Thread(1, 100);
    b.Range(1, 0, 1, "r", 0, 10);
    ASSERT_TRUE(ReadTraceBytes(b.Bytes(), "same.trace", &trace, &error));
  }
  std::set<int64_t> pids;
  const nlohmann::json j = Export(trace);
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") pids.insert(e["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 2u);
}

}  // namespace
}  // namespace tracer::analysis
