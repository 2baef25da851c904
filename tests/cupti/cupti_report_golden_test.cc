// Golden tests: a scenario replayed through fake driver + fake libcupti +
// libtracer.so, then `tracer report --format csv`, checked against tables
// derived by hand from the scenario (the fake makes end = start + dur).
#include <gtest/gtest.h>
#include <stdio.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cupti/scenario_runner.h"

namespace tracer::testing {
namespace {

using Row = std::map<std::string, std::string>;

// `tracer report FILE --table T --format F`, as printed.
std::string ReportText(const std::string& trace, const std::string& table,
                       const std::string& format) {
  const std::string cmd = std::string(TRACER_CLI_PATH) + " report " + trace + " --table " + table +
                          " --format " + format + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) text += buf;
  if (p != nullptr) pclose(p);
  return text;
}

// `tracer report FILE --table T --format csv`, parsed into rows by column.
std::vector<Row> Report(const std::string& trace, const std::string& table) {
  std::istringstream in(ReportText(trace, table, "csv"));
  std::string line;
  std::vector<std::string> header;
  std::vector<Row> rows;
  auto split = [](const std::string& l) {
    std::vector<std::string> out;
    std::stringstream ss(l);
    std::string cell;
    while (std::getline(ss, cell, ',')) out.push_back(cell);
    return out;
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CSV rows end in CRLF
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header = split(line);
      continue;
    }
    auto cells = split(line);
    Row r;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

const Row* Find(const std::vector<Row>& rows, const Row& key) {
  for (const Row& r : rows) {
    bool match = true;
    for (const auto& [k, v] : key) match &= r.count(k) && r.at(k) == v;
    if (match) return &r;
  }
  return nullptr;
}

long Num(const Row* r, const std::string& col) {
  return r == nullptr || !r->count(col) ? -1 : std::stol(r->at(col));
}

TEST(CuptiReportGolden, LayersKernelsRangesAndGpuProjection) {
  ScenarioRun run = RunScenario("golden_layers.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;

  // kernels: gemm 1000 + 3000, relu 200, outside 500; all kernels 4700 ns.
  auto kernels = Report(run.trace_path, "kernels");
  const Row* gemm = Find(kernels, {{"kernel", "gemm_kernel"}});
  EXPECT_EQ(Num(gemm, "count"), 2);
  EXPECT_EQ(Num(gemm, "total_ns"), 4000);
  EXPECT_EQ(Num(gemm, "avg_ns"), 2000);
  EXPECT_EQ(Num(gemm, "min_ns"), 1000);
  EXPECT_EQ(Num(gemm, "max_ns"), 3000);
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(std::stod(gemm->at("share_pct")), 100.0 * 4000 / 4700, 1e-6);
  EXPECT_EQ(Num(Find(kernels, {{"kernel", "relu_kernel"}}), "total_ns"), 200);
  EXPECT_EQ(Num(Find(kernels, {{"kernel", "outside_kernel"}}), "total_ns"), 500);

  // range x kernel: a kernel counts toward every range on its stack.
  auto rk = Report(run.trace_path, "range-kernels");
  EXPECT_EQ(Num(Find(rk, {{"range", "step"}, {"kernel", "gemm_kernel"}}), "count"), 2);
  EXPECT_EQ(Num(Find(rk, {{"range", "step"}, {"kernel", "gemm_kernel"}}), "total_ns"), 4000);
  EXPECT_EQ(Num(Find(rk, {{"range", "step"}, {"kernel", "relu_kernel"}}), "total_ns"), 200);
  EXPECT_EQ(Num(Find(rk, {{"range", "forward"}, {"kernel", "gemm_kernel"}}), "total_ns"), 1000);
  EXPECT_EQ(Num(Find(rk, {{"range", "forward"}, {"kernel", "relu_kernel"}}), "total_ns"), 200);
  EXPECT_EQ(Num(Find(rk, {{"range", "backward"}, {"kernel", "gemm_kernel"}}), "total_ns"), 3000);
  EXPECT_EQ(Find(rk, {{"range", "backward"}, {"kernel", "relu_kernel"}}), nullptr);
  EXPECT_EQ(Find(rk, {{"kernel", "outside_kernel"}}), nullptr);  // launched outside any range

  // GPU projection: ops on one stream never overlap, so busy = sum of op
  // durations; the span also holds the gaps, so it is at least that.
  auto gpu = Report(run.trace_path, "gpu");
  const Row* forward = Find(gpu, {{"range", "forward"}});
  EXPECT_EQ(Num(forward, "ops"), 2);
  EXPECT_EQ(Num(forward, "busy_ns"), 1200);
  EXPECT_EQ(Num(forward, "kernel_ns"), 1200);
  EXPECT_GE(Num(forward, "proj_total_ns"), 1200);
  const Row* backward = Find(gpu, {{"range", "backward"}});
  EXPECT_EQ(Num(backward, "ops"), 2);         // the kernel and the copy
  EXPECT_EQ(Num(backward, "busy_ns"), 3400);  // 3000 + 400
  EXPECT_EQ(Num(backward, "kernel_ns"), 3000);
  const Row* step = Find(gpu, {{"range", "step"}});
  EXPECT_EQ(Num(step, "ops"), 4);
  EXPECT_EQ(Num(step, "busy_ns"), 4600);
  EXPECT_GE(Num(step, "proj_total_ns"), Num(forward, "proj_total_ns") + Num(backward, "busy_ns"));

  // memcpy attribution and bandwidth: 1e6 bytes in 400 ns = 2500 GB/s.
  auto memory = Report(run.trace_path, "memory");
  const Row* dtoh = Find(memory, {{"operation", "memcpy DtoH"}});
  EXPECT_EQ(Num(dtoh, "count"), 1);
  EXPECT_EQ(Num(dtoh, "bytes"), 1000000);
  EXPECT_EQ(Num(dtoh, "total_ns"), 400);

  auto summary = Report(run.trace_path, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Num(&summary[0], "kernels"), 4);
  EXPECT_EQ(Num(&summary[0], "memcpys"), 1);
  EXPECT_EQ(Num(&summary[0], "ops_outside_ranges"), 1);
  EXPECT_EQ(Num(&summary[0], "dropped"), 0);
}

TEST(CuptiReportGolden, EmitNvtxOpRangesAggregatePerOpAndAreNeverTheStep) {
  ScenarioRun run = RunScenario("golden_emit_nvtx.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  // Per op, whatever its seq / op_id / sizes: 4 aten::mm, 2 MulBackward0.
  auto rk = Report(run.trace_path, "range-kernels");
  EXPECT_EQ(Num(Find(rk, {{"range", "aten::mm"}, {"kernel", "gemm_kernel"}}), "count"), 4);
  EXPECT_EQ(Num(Find(rk, {{"range", "aten::mm"}, {"kernel", "gemm_kernel"}}), "total_ns"), 6000);
  EXPECT_EQ(Num(Find(rk, {{"range", "MulBackward0"}, {"kernel", "mul_bwd_kernel"}}), "total_ns"),
            600);
  EXPECT_EQ(Num(Find(rk, {{"range", "aten::to"}, {"kernel", "copy_kernel"}}), "count"), 2);
  EXPECT_EQ(Num(Find(rk, {{"range", "step"}, {"kernel", "gemm_kernel"}}), "total_ns"), 6000);
  auto gpu = Report(run.trace_path, "gpu");
  EXPECT_EQ(Num(Find(gpu, {{"range", "aten::mm"}}), "instances"), 4);
  EXPECT_EQ(Num(Find(gpu, {{"range", "aten::mm"}}), "busy_ns"), 6000);
  EXPECT_EQ(Num(Find(gpu, {{"range", "step"}}), "busy_ns"), 6600);
  // No row per call is left.
  EXPECT_EQ(ReportText(run.trace_path, "ranges", "csv").find("op_id"), std::string::npos);
  // aten::to takes 60 ms of CPU time at top level, the two steps far less:
  // the step is still "step".
  const std::string phases = ReportText(run.trace_path, "phases", "text");
  EXPECT_NE(phases.find("Step phases of 'step'"), std::string::npos) << phases;
}

TEST(CuptiReportGolden, GraphReplaysAndASecondThreadOnTheSameStream) {
  ScenarioRun run = RunScenario("golden_graph.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  auto rk = Report(run.trace_path, "range-kernels");
  // The report's rule (tracer report --help, "GPU ops"): CUDA graph kernels
  // belong to the ranges open when their node was created, so the 4 replays
  // of 2 nodes of 100 ns count toward "build", where the nodes were made.
  EXPECT_EQ(Num(Find(rk, {{"range", "build"}, {"kernel", "node_0"}}), "count"), 4);
  EXPECT_EQ(Num(Find(rk, {{"range", "build"}, {"kernel", "node_0"}}), "total_ns"), 400);
  EXPECT_EQ(Num(Find(rk, {{"range", "build"}, {"kernel", "node_1"}}), "total_ns"), 400);
  EXPECT_EQ(Num(Find(rk, {{"range", "loader"}, {"kernel", "load_kernel"}}), "total_ns"), 700);
  auto gpu = Report(run.trace_path, "gpu");
  EXPECT_EQ(Num(Find(gpu, {{"range", "build"}}), "kernels"), 8);
  EXPECT_EQ(Num(Find(gpu, {{"range", "build"}}), "busy_ns"), 800);
  EXPECT_EQ(Num(Find(gpu, {{"range", "loader"}}), "busy_ns"), 700);
  // The launch side is in the stream too: every replayed kernel's
  // correlation id leads to the cudaGraphLaunch made under "replay".
  for (const KernelRow& k : run.trace.kernels) {
    if (k.name == "load_kernel") continue;
    EXPECT_EQ(run.trace.RangeName(run.trace.LaunchRange(k.correlation)), "replay");
  }
}

TEST(CuptiReportGolden, OutOfOrderSplitBuffersAndDroppedRecords) {
  ScenarioRun ooo = RunScenario("out_of_order.scn");
  ASSERT_EQ(ooo.exit_code, 0) << ooo.stderr_text;
  auto rk = Report(ooo.trace_path, "range-kernels");
  // 20 x 50 ms and 20 x 100 ns, whatever order the buffers came in.
  EXPECT_EQ(Num(Find(rk, {{"range", "slow_stream"}, {"kernel", "slow_kernel"}}), "total_ns"),
            20L * 50000000);
  EXPECT_EQ(Num(Find(rk, {{"range", "fast_stream"}, {"kernel", "fast_kernel"}}), "count"), 20);
  EXPECT_EQ(Num(Find(rk, {{"range", "fast_stream"}, {"kernel", "fast_kernel"}}), "total_ns"), 2000);

  ScenarioRun dropped = RunScenario("dropped.scn");
  ASSERT_EQ(dropped.exit_code, 0) << dropped.stderr_text;
  auto summary = Report(dropped.trace_path, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Num(&summary[0], "dropped"), 17);  // CUPTI's own count, reported
}

TEST(CuptiReportGolden, CaptureWindowWithALaggingGpuReportsTheOpsLaunchedInside) {
  // Issue 10: window = second "step"; its three 30 ms kernels, the worker's
  // 5 ms kernel, a 1 ms copy and a 0.5 ms set all run after the step ended.
  ScenarioRun run = RunScenario("lagging_capture_range.scn",
                                {{"TRACER_CAPTURE_RANGE", "step"}, {"TRACER_CAPTURE_START", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  auto kernels = Report(run.trace_path, "kernels");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(Num(Find(kernels, {{"kernel", "in_window"}}), "count"), 3);
  EXPECT_EQ(Num(Find(kernels, {{"kernel", "in_window"}}), "total_ns"), 3L * 30000000);
  EXPECT_EQ(Num(Find(kernels, {{"kernel", "in_window_worker"}}), "total_ns"), 5000000);
  auto memory = Report(run.trace_path, "memory");
  EXPECT_EQ(Num(Find(memory, {{"operation", "memcpy HtoD"}}), "bytes"), 4096);
  EXPECT_EQ(Find(memory, {{"operation", "memcpy DtoH"}}), nullptr);  // step 3's
  auto summary = Report(run.trace_path, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Num(&summary[0], "kernels"), 4);
  EXPECT_EQ(Num(&summary[0], "memcpys"), 1);
  EXPECT_EQ(Num(&summary[0], "memsets"), 1);
  EXPECT_EQ(Num(&summary[0], "dropped"), 0);
}

TEST(CuptiReportGolden, WindowOpsUnfinishedAtExitShowInTheSummaryByCause) {
  ScenarioRun run = RunScenario("lagging_exit.scn", {{"TRACER_CAPTURE_RANGE", "step"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  auto summary = Report(run.trace_path, "summary");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(Num(&summary[0], "kernels"), 0);
  EXPECT_EQ(Num(&summary[0], "dropped"), 3);
  EXPECT_NE(ReportText(run.trace_path, "summary", "text")
                .find("dropped records by cause: cupti_unfinished_at_flush 3"),
            std::string::npos);
}

}  // namespace
}  // namespace tracer::testing
