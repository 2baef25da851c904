// CUDA graphs and kernel names end to end: the fake driver plays the program
// (graphs built, captured, instantiated, updated and launched; modules loaded
// and unloaded), the fake libcupti reports it as CUDA does (distinct graph,
// exec and cloned node ids; graphId/graphNodeId on kernel, memcpy and memset
// records), libtracer.so records it through the injection path, and the
// analysis side attributes every GPU op: both the in-memory attribution and
// the streaming aggregator must name the range its graph node was created in.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/stream_aggregator.h"
#include "libtracer/analysis/tables/tables.h"
#include "tests/cupti/scenario_runner.h"

namespace tracer::testing {
namespace {

using analysis::OpKind;

// (op kind, kernel name or "memcpy"/"memset", innermost range) -> count.
using OpCounts = std::map<std::tuple<std::string, std::string, std::string>, int>;

// The in-memory path: every op's innermost range, by name.
OpCounts InMemory(const std::string& path) {
  analysis::Trace trace;
  std::string error;
  EXPECT_TRUE(analysis::ReadTraceFile(path, &trace, &error)) << error;
  OpCounts out;
  if (trace.processes.empty()) return out;
  analysis::AnalyzedTrace at(trace, analysis::AttributionOptions{});
  const analysis::ProcessAnalysis& pa = at.process(0);
  const analysis::ProcessTrace& p = *pa.process;
  auto range = [&](OpKind kind, size_t i) -> std::string {
    const uint32_t r = pa.attribution.Of(kind, i).range;
    return r == analysis::kNoRange ? "(none)" : std::string(at.RangeName(p.ranges[r]));
  };
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    ++out[{"kernel", std::string(trace.strings.Get(p.kernels[i].name)), range(OpKind::kKernel, i)}];
  }
  for (size_t i = 0; i < p.memcpys.size(); ++i) ++out[{"memcpy", "", range(OpKind::kMemcpy, i)}];
  for (size_t i = 0; i < p.memsets.size(); ++i) ++out[{"memset", "", range(OpKind::kMemset, i)}];
  return out;
}

// The streaming path: ops per range name and kernels per (range, name).
struct Streamed {
  std::map<std::string, int64_t> ops;                              // range -> ops
  std::map<std::pair<std::string, std::string>, int64_t> kernels;  // (range, kernel)
};
Streamed Streaming(const std::string& path) {
  analysis::Trace trace;
  analysis::TableRows rows;
  rows.strings = &trace.strings;
  analysis::StreamAggregator aggregator(0, &rows);
  analysis::ProcessTrace process;
  std::vector<std::string> warnings;
  std::string error;
  EXPECT_TRUE(analysis::StreamTraceFile(
      path, &trace.strings, &process,
      [&](const analysis::ProcessTrace& batch) { aggregator.AddBatch(batch); }, &warnings, &error))
      << error;
  aggregator.Finish(process, trace);
  Streamed out;
  for (const auto& [key, row] : rows.ranges) out.ops[std::get<2>(key)] += row.ops;
  for (const auto& [key, by_name] : rows.range_kernels) {
    for (const auto& [name, row] : by_name) {
      out.kernels[{key.second, std::string(trace.strings.Get(name))}] += row.durations.count();
    }
  }
  return out;
}

// Both paths agree on what each range got (ranges are flat in these
// scenarios, so a range's ops are its own).
void ExpectStreamingAgrees(const OpCounts& expected, const std::string& path) {
  std::map<std::string, int64_t> ops;
  std::map<std::pair<std::string, std::string>, int64_t> kernels;
  for (const auto& [key, n] : expected) {
    ops[std::get<2>(key)] += n;
    if (std::get<0>(key) == "kernel") kernels[{std::get<2>(key), std::get<1>(key)}] += n;
  }
  Streamed s = Streaming(path);
  std::erase_if(s.ops, [](const auto& kv) { return kv.second == 0; });
  EXPECT_EQ(s.ops, ops);
  EXPECT_EQ(s.kernels, kernels);
}

ScenarioRun RunTraced(const std::string& scenario, std::map<std::string, std::string> env = {}) {
  env.emplace("TRACER_ACTIVITIES", "kernel,memcpy,memset,runtime");
  ScenarioRun run = RunScenario(scenario, env);
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.TracerLines(), 0) << run.stderr_text;
  return run;
}

void ExpectInstantiatedTwice(const std::string& scenario, bool distinct_exec_graph_ids) {
  ScenarioRun run = RunTraced(scenario);
  const TraceContents& t = run.trace;
  // Ids as CUDA reports them: 2 launches of exec A and 3 of exec B, each
  // record with its exec's id and its clone's node id.
  ASSERT_EQ(t.kernels.size(), 10u);
  ASSERT_EQ(t.memcpys.size(), 5u);
  ASSERT_EQ(t.memsets.size(), 5u);
  std::set<uint64_t> execs, kernel_nodes, copy_nodes, set_nodes;
  for (const KernelRow& k : t.kernels) {
    execs.insert(k.graph_id);
    kernel_nodes.insert(k.graph_node_id);
  }
  for (const CopyRow& m : t.memcpys) {
    EXPECT_TRUE(execs.count(m.graph_id)) << m.graph_id;
    copy_nodes.insert(m.graph_node_id);
  }
  for (const CopyRow& m : t.memsets) {
    EXPECT_TRUE(execs.count(m.graph_id)) << m.graph_id;
    set_nodes.insert(m.graph_node_id);
  }
  EXPECT_EQ(execs.size(), 2u);
  EXPECT_EQ(kernel_nodes.size(), 4u);  // 2 kernel nodes x 2 execs
  EXPECT_EQ(copy_nodes.size(), 2u);
  EXPECT_EQ(set_nodes.size(), 2u);
  // The nodes the program created (snapshots under "build") are not the
  // nodes the records name, and their graph is neither exec.
  std::set<uint64_t> record_nodes = kernel_nodes;
  record_nodes.insert(copy_nodes.begin(), copy_nodes.end());
  record_nodes.insert(set_nodes.begin(), set_nodes.end());
  EXPECT_EQ(record_nodes.size(), 8u);
  std::set<uint64_t> built_nodes, built_graphs;
  for (const proto::GraphNodeSnapshot& s : t.graph_nodes) {
    if (s.graph_node_id() != 0 && !record_nodes.count(s.graph_node_id())) {
      EXPECT_EQ(t.RangeName(s.range_id()), "build");
      built_nodes.insert(s.graph_node_id());
      built_graphs.insert(s.graph_id());
    }
  }
  EXPECT_EQ(built_nodes.size(), 4u);  // 2 kernels, a memcpy, a memset
  ASSERT_EQ(built_graphs.size(), 1u);
  EXPECT_FALSE(execs.count(*built_graphs.begin()));
  // Clones were seen in their exec's own graph, whose cuptiGetGraphId is the
  // exec id unless the fake was told otherwise.
  for (const proto::GraphNodeSnapshot& s : t.graph_nodes) {
    if (record_nodes.count(s.graph_node_id())) {
      EXPECT_EQ(execs.count(s.graph_id()) == 1, !distinct_exec_graph_ids) << s.graph_id();
    }
  }

  const OpCounts expected = {{{"kernel", "twice_0", "build"}, 5},
                             {{"kernel", "twice_1", "build"}, 5},
                             {{"memcpy", "", "build"}, 5},
                             {{"memset", "", "build"}, 5}};
  EXPECT_EQ(InMemory(run.trace_path), expected);
  ExpectStreamingAgrees(expected, run.trace_path);
}

TEST(CuptiGraphAttribution, AGraphInstantiatedTwiceKeepsItsNodesRanges) {
  ExpectInstantiatedTwice("graph_instantiate_twice.scn", false);
}

// Whether an exec's own graph reports the exec id or another one through
// cuptiGetGraphId must not matter: node snapshots are matched by node id.
TEST(CuptiGraphAttribution, AttributionDoesNotDependOnTheExecGraphsId) {
  ExpectInstantiatedTwice("graph_distinct_exec_ids.scn", true);
}

TEST(CuptiGraphAttribution, StreamCapturedGraphsFollowExecUpdates) {
  ScenarioRun run = RunTraced("graph_exec_update.scn");
  const TraceContents& t = run.trace;
  // One exec throughout: its id and node ids never change.
  ASSERT_EQ(t.kernels.size(), 8u);  // 2 kernels x (1 + 2 + 1) launches
  std::set<uint64_t> execs, nodes;
  for (const KernelRow& k : t.kernels) {
    execs.insert(k.graph_id);
    nodes.insert(k.graph_node_id);
  }
  EXPECT_EQ(execs.size(), 1u);
  EXPECT_EQ(nodes.size(), 2u);
  // Captured launches ran nothing: only graph launches made GPU records.
  for (const KernelRow& k : t.kernels) EXPECT_NE(k.graph_id, 0u);

  const OpCounts expected = {{{"kernel", "fwd1", "capture1"}, 1},
                             {{"kernel", "bwd1", "capture1"}, 1},
                             {{"memset", "", "capture1"}, 1},
                             // updated from capture2, launched twice in run2,
                             // and once more in run3 after the failed update
                             {{"kernel", "fwd2", "capture2"}, 3},
                             {{"kernel", "bwd2", "capture2"}, 3},
                             {{"memset", "", "capture2"}, 3}};
  EXPECT_EQ(InMemory(run.trace_path), expected);
  ExpectStreamingAgrees(expected, run.trace_path);
}

TEST(CuptiKernelNames, AKernelAtAnAddressReusedAfterAModuleUnloadGetsItsOwnName) {
  ScenarioRun run = RunTraced("module_unload.scn");
  const TraceContents& t = run.trace;
  ASSERT_EQ(t.kernels.size(), 3u);
  std::map<std::string, int> names;
  for (const KernelRow& k : t.kernels) ++names[k.name];
  EXPECT_EQ(names,
            (std::map<std::string, int>{{"_Z12first_kernelv", 1}, {"_Z13second_kernelv", 2}}));
  const OpCounts expected = {{{"kernel", "_Z12first_kernelv", "first"}, 1},
                             {{"kernel", "_Z13second_kernelv", "second"}, 2}};
  EXPECT_EQ(InMemory(run.trace_path), expected);
}

// The same program with a writer that is slow just when the module goes: its
// first buffer walk after the unload began sleeps 1.5 s (fake_cupti). The
// unload callback, on the application thread inside cuModuleUnload, must
// return promptly all the same, and the first module's kernel, decoded after
// its name's memory was taken by the second module's name, keeps its own.
TEST(CuptiKernelNames, AModuleUnloadNeverWaitsForAStalledWriter) {
  ScenarioRun run =
      RunTraced("module_unload.scn", {{"FAKE_CUPTI_STALL_WALK_AFTER_UNLOAD_MS", "1500"}});
  const std::string marker = "MODULE_UNLOAD_STARTING callback returned after ";
  const size_t at = run.stderr_text.find(marker);
  ASSERT_NE(at, std::string::npos) << run.stderr_text;
  const long ms = std::stol(run.stderr_text.substr(at + marker.size()));
  EXPECT_LT(ms, 500) << "the unloading thread waited for the writer";
  std::map<std::string, int> names;
  for (const KernelRow& k : run.trace.kernels) ++names[k.name];
  EXPECT_EQ(names,
            (std::map<std::string, int>{{"_Z12first_kernelv", 1}, {"_Z13second_kernelv", 2}}));
  EXPECT_EQ(run.trace.counters.count("cupti_kernel_names_lost_at_unload"), 0u);
}

}  // namespace
}  // namespace tracer::testing
