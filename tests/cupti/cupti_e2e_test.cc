// End to end: fake driver (playing libcuda) + fake libcupti (playing CUPTI,
// reached through TRACER_CUPTI_LIBRARY like the real one) + libtracer.so,
// output read back with the generated protobuf classes. Each test names the
// scenario it replays (tests/cupti/scenarios/).
#include <cupti_result.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/cupti/scenario_runner.h"

namespace tracer::testing {
namespace {

// Kernel name -> count, for asserting the exact set of kernels kept.
std::map<std::string, int> KernelCounts(const TraceContents& t) {
  std::map<std::string, int> out;
  for (const KernelRow& k : t.kernels) ++out[k.name];
  return out;
}

uint64_t Counter(const TraceContents& t, const std::string& name) {
  auto it = t.counters.find(name);
  return it == t.counters.end() ? 0 : it->second;
}

std::vector<const KernelRow*> KernelsNamed(const TraceContents& t, const std::string& name) {
  std::vector<const KernelRow*> out;
  for (const KernelRow& k : t.kernels) {
    if (k.name == name) out.push_back(&k);
  }
  return out;
}

TEST(CuptiE2e, NestedRangesOnTwoThreadsAttributeEveryOp) {
  ScenarioRun run = RunScenario("nested_ranges.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  const TraceContents& t = run.trace;
  EXPECT_TRUE(t.has_footer);
  EXPECT_EQ(run.TracerLines("CUPTI"), 0) << run.stderr_text;

  ASSERT_EQ(t.kernels.size(), 4u);
  auto gemms = KernelsNamed(t, "gemm_kernel");
  ASSERT_EQ(gemms.size(), 2u);
  std::sort(gemms.begin(), gemms.end(),
            [](auto* a, auto* b) { return a->correlation < b->correlation; });
  EXPECT_EQ(t.RangeName(t.LaunchRange(gemms[0]->correlation)), "forward");
  EXPECT_EQ(t.RangeName(t.LaunchRange(gemms[1]->correlation)), "backward");
  auto relu = KernelsNamed(t, "triton_relu");
  ASSERT_EQ(relu.size(), 1u);
  EXPECT_EQ(t.RangeName(t.LaunchRange(relu[0]->correlation)), "worker");
  auto outside = KernelsNamed(t, "outside_kernel");
  ASSERT_EQ(outside.size(), 1u);
  EXPECT_EQ(t.LaunchRange(outside[0]->correlation), 0u);

  // The whole stack is recoverable: forward's parent is step.
  const proto::Range* forward = t.FindRange(t.LaunchRange(gemms[0]->correlation));
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(t.RangeName(forward->parent_id()), "step");

  // The copy (runtime call with a nested driver call) and the set.
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].bytes, 4096u);
  EXPECT_EQ(t.memcpys[0].copy_kind, static_cast<uint32_t>(proto::COPY_HTOD));
  EXPECT_EQ(t.RangeName(t.LaunchRange(t.memcpys[0].correlation)), "forward");
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 256u);
  EXPECT_EQ(t.RangeName(t.LaunchRange(t.memsets[0].correlation)), "backward");

  // Launch records: runtime launches through __cudaLaunchKernel (505), the
  // Triton-style one through cuLaunchKernel (307), from two threads.
  std::set<uint32_t> launch_threads;
  for (const LaunchRow& l : t.launches) {
    if (l.correlation == gemms[0]->correlation) {
      EXPECT_EQ(l.cbid, 505u);
      EXPECT_EQ(l.domain, static_cast<uint32_t>(proto::API_RUNTIME));
    }
    if (l.correlation == relu[0]->correlation) {
      EXPECT_EQ(l.cbid, 307u);
      EXPECT_EQ(l.domain, static_cast<uint32_t>(proto::API_DRIVER));
    }
    launch_threads.insert(l.thread);
  }
  EXPECT_EQ(launch_threads.size(), 2u);

  // One clock: GPU work starts after its launch on the same time base
  // (CUPTI's default clock is CLOCK_REALTIME, ~1e18 ns; ours is monotonic).
  for (const KernelRow& k : t.kernels) {
    EXPECT_GT(k.end, k.start);
    uint64_t launch_time = 0;
    for (const LaunchRow& l : t.launches) {
      if (l.correlation == k.correlation) launch_time = l.time;
    }
    ASSERT_NE(launch_time, 0u);
    EXPECT_GT(k.start, launch_time);
    EXPECT_LT(k.start - launch_time, 1000000000u);
  }

  // API records carry the function name and the launching thread.
  bool saw_launch_api = false;
  for (const ApiRow& a : t.apis) {
    if (a.correlation == gemms[0]->correlation) {
      saw_launch_api = true;
      EXPECT_EQ(a.name, "__cudaLaunchKernel_v13000");
      EXPECT_EQ(a.cbid, 505u);
      // CUPTI's threadId is pthread_self() cut to 32 bits; it must still map
      // to the NVTX thread that launched (and was named "trainer").
      uint32_t launch_thread = 0;
      for (const LaunchRow& l : t.launches) {
        if (l.correlation == a.correlation) launch_thread = l.thread;
      }
      EXPECT_EQ(a.thread, launch_thread);
      ASSERT_EQ(t.threads.count(a.thread), 1u);
      auto name = t.strings.find(t.threads.at(a.thread).name());
      ASSERT_NE(name, t.strings.end());
      EXPECT_EQ(name->second, "trainer");
    }
  }
  EXPECT_TRUE(saw_launch_api);
  // Launch configuration of the first gemm.
  const auto& cfg = t.launch_configs.at(gemms[0]->launch_config);
  EXPECT_EQ(cfg.grid_x(), 64u);
  EXPECT_EQ(cfg.block_x(), 256u);
}

TEST(CuptiE2e, GraphReplaysAreAttributedToTheLaunchingRange) {
  ScenarioRun run = RunScenario("graph_replay.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.kernels.size(), 15u);  // 3 nodes x 5 launches
  std::set<uint64_t> launches;
  std::set<uint64_t> node_ids;
  for (const KernelRow& k : t.kernels) {
    EXPECT_EQ(t.RangeName(t.LaunchRange(k.correlation)), "replay");
    EXPECT_NE(k.graph_id, 0u);
    launches.insert(k.correlation);
    node_ids.insert(k.graph_node_id);
  }
  EXPECT_EQ(launches.size(), 5u);  // one correlation id per graph launch
  EXPECT_EQ(node_ids.size(), 3u);
  // Snapshots: node creation under build_graph; at instantiation each clone
  // is created (under setup) and then cloned, which gives it its original's
  // range, the one readers use (the last); each launch snapshots the whole
  // exec (node 0) under replay.
  int node_snapshots = 0, launch_snapshots = 0;
  std::map<uint64_t, std::string> last_range;  // node id -> range of its last snapshot
  for (const proto::GraphNodeSnapshot& s : t.graph_nodes) {
    if (s.graph_node_id() == 0) {
      ++launch_snapshots;
      EXPECT_EQ(t.RangeName(s.range_id()), "replay");
      EXPECT_EQ(s.graph_id(), t.kernels[0].graph_id);  // the exec's id
    } else {
      ++node_snapshots;
      last_range[s.graph_node_id()] = t.RangeName(s.range_id());
    }
  }
  EXPECT_EQ(node_snapshots, 9);  // 3 created + 3 x (created, cloned) at instantiation
  EXPECT_EQ(launch_snapshots, 5);
  EXPECT_EQ(last_range.size(), 6u);  // originals and clones have their own ids
  for (const auto& [node, range] : last_range) EXPECT_EQ(range, "build_graph") << node;
  // The replayed kernels' node ids are the clones'.
  for (uint64_t node : node_ids) EXPECT_TRUE(last_range.count(node)) << "node " << node;
}

TEST(CuptiE2e, OutOfOrderAndSplitBuffersAllArrive) {
  ScenarioRun run = RunScenario("out_of_order.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(KernelsNamed(t, "slow_kernel").size(), 20u);
  ASSERT_EQ(KernelsNamed(t, "fast_kernel").size(), 20u);
  for (const KernelRow& k : t.kernels) {
    const std::string range = t.RangeName(t.LaunchRange(k.correlation));
    EXPECT_EQ(range, k.name == "slow_kernel" ? "slow_stream" : "fast_stream");
  }
  // The fake wrote them by end time: the file's order is not launch order.
  int inversions = 0;
  for (size_t i = 1; i < t.kernels.size(); ++i) {
    inversions += t.kernels[i].correlation < t.kernels[i - 1].correlation;
  }
  EXPECT_GT(inversions, 0);
  EXPECT_EQ(t.counters.count("dropped.cupti_invalid_timestamps"), 0u);
}

TEST(CuptiE2e, CuptiDroppedCountsReachTheStream) {
  ScenarioRun run = RunScenario("dropped.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.trace.counters["dropped.cupti_dropped"], 17u);
  // The footer lists it among the causes of loss.
  ASSERT_TRUE(run.trace.has_footer);
  uint64_t in_footer = 0;
  for (const auto& c : run.trace.footer.dropped_by_cause()) {
    if (c.name() == "cupti_dropped") in_footer = c.value();
  }
  EXPECT_EQ(in_footer, 17u);
  EXPECT_EQ(run.trace.kernels.size(), 1u);
}

TEST(CuptiE2e, ForcedFlushAtExitReturnsRunningWorkAndKeepsExitStatus) {
  ScenarioRun run = RunScenario("exit_without_sync.scn");
  EXPECT_EQ(run.exit_code, 3) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_TRUE(t.has_footer);
  // The 3 unfinished kernels came back incomplete (end = 0) and are counted
  // under their own cause, not as spoiled records.
  EXPECT_EQ(t.counters.at("dropped.cupti_unfinished_at_flush"), 3u);
  EXPECT_EQ(t.counters.count("dropped.cupti_invalid_timestamps"), 0u);
  EXPECT_EQ(t.kernels.size(), 0u);
  // Their API records were complete and were flushed at exit.
  int launches = 0;
  for (const ApiRow& a : t.apis) launches += a.cbid == 505;
  EXPECT_EQ(launches, 3);
  EXPECT_EQ(t.launches.size(), 3u);
}

TEST(CuptiE2e, AnotherSubscriberIsNamedAndNvtxContinues) {
  ScenarioRun run = RunScenario("other_subscriber.scn");
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("another CUPTI client is attached (Nsight Systems)"), 1)
      << run.stderr_text;
  EXPECT_EQ(run.TracerLines("CUPTI"), 1) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.trace.kernels.size(), 0u);
  ASSERT_EQ(run.trace.ranges.size(), 1u);
  EXPECT_EQ(run.trace.RangeName(run.trace.ranges[0].id()), "step");
}

TEST(CuptiE2e, RealLibcuptiWithoutDriverDegradesToNvtx) {
  // This machine has no CUDA driver: the real libcupti's cuptiSubscribe
  // returns CUPTI_ERROR_UNKNOWN (docs/cupti.md section 5, measured).
  ScenarioRun run = RunScenario("nvtx_only.scn", {{"TRACER_CUPTI_LIBRARY", REAL_CUPTI_PATH}});
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("CUPTI unavailable (no CUDA driver?)"), 1) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("tracing NVTX only"), 1) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("CUPTI"), 1) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.trace.ranges.size(), 2u);
}

TEST(CuptiE2e, InjectedErrorIsOneLineAndNvtxContinues) {
  ScenarioRun run =
      RunScenario("nested_ranges.scn",
                  {{"FAKE_CUPTI_ERRORS", "cuptiActivityRegisterCallbacks=" +
                                             std::to_string(CUPTI_ERROR_NOT_INITIALIZED)}});
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("cuptiActivityRegisterCallbacks failed"), 1) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("CUPTI"), 1) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.trace.kernels.size(), 0u);
  EXPECT_EQ(run.trace.ranges.size(), 4u);  // step, forward, backward, worker
  EXPECT_EQ(run.trace.counters["cupti_errors"], 1u);
}

TEST(CuptiE2e, LaunchStormWithTinyPoolDropsCountsAndNeverBlocks) {
  ScenarioRun run = RunScenario(
      "storm.scn", {{"TRACER_CUPTI_BUFFER_COUNT", "2"}, {"TRACER_CUPTI_BUFFER_SIZE", "64K"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  const uint64_t expected = 4 * 5000;
  uint64_t storm_kernels = KernelsNamed(t, "storm_kernel").size();
  uint64_t launch_apis = 0;
  for (const ApiRow& a : t.apis) launch_apis += a.cbid == 505;
  auto counter = [&](const char* name) {
    auto it = t.counters.find(name);
    return it == t.counters.end() ? 0 : it->second;
  };
  // Every kernel and API record is either in the file or counted as lost.
  uint64_t sync_records = 0;
  for (const ApiRow& a : t.apis) sync_records += a.cbid == 165;  // cudaDeviceSynchronize
  sync_records += t.syncs.size();
  EXPECT_EQ(storm_kernels + launch_apis + sync_records + counter("dropped.cupti_dropped") +
                counter("dropped.cupti_invalid_timestamps"),
            2 * expected + 2 /* the sync's API and synchronization records */)
      << "kernels " << storm_kernels << " apis " << launch_apis;
  EXPECT_GT(counter("cupti_buffer_pool_exhausted"), 0u);
  EXPECT_GT(counter("dropped.cupti_dropped"), 0u);
  EXPECT_EQ(t.launches.size(), expected);  // attribution rides the rings, not CUPTI
}

TEST(CuptiE2e, ProfilerStartStopGatesGpuRecords) {
  ScenarioRun run = RunScenario("profiler_window.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(KernelsNamed(t, "before_kernel").size(), 1u);
  EXPECT_EQ(KernelsNamed(t, "stopped_kernel").size(), 0u);
  ASSERT_EQ(KernelsNamed(t, "inside_kernel").size(), 1u);
  EXPECT_EQ(t.RangeName(t.LaunchRange(KernelsNamed(t, "inside_kernel")[0]->correlation)),
            "captured");
  EXPECT_GE(t.counters.at("cupti_outside_capture_window"), 1u);
}

TEST(CuptiE2e, NvtxCaptureWindowGatesGpuRecords) {
  ScenarioRun run = RunScenario("capture_range.scn",
                                {{"TRACER_CAPTURE_RANGE", "step"}, {"TRACER_CAPTURE_START", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(KernelsNamed(t, "first_step_kernel").size(), 0u);
  ASSERT_EQ(KernelsNamed(t, "second_step_kernel").size(), 1u);
  EXPECT_EQ(KernelsNamed(t, "after_kernel").size(), 0u);
  // The two kernels, plus API and sync records made while it was closed.
  EXPECT_GE(t.counters.at("cupti_outside_capture_window"), 2u);
  // NVTX follows the same window: only the second step is recorded.
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.RangeName(t.ranges[0].id()), "step");
  EXPECT_EQ(t.RangeName(t.LaunchRange(KernelsNamed(t, "second_step_kernel")[0]->correlation)),
            "step");
}

TEST(CuptiE2e, TracerCudaOffLeavesCuptiAlone) {
  ScenarioRun run = RunScenario("nested_ranges.scn", {{"TRACER_CUDA", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.TracerLines("CUPTI"), 0) << run.stderr_text;
  ASSERT_TRUE(run.trace.ok) << run.trace.error;
  EXPECT_EQ(run.trace.kernels.size(), 0u);
  EXPECT_EQ(run.trace.launches.size(), 0u);
  EXPECT_EQ(run.trace.ranges.size(), 4u);
}

TEST(CuptiE2e, GraphTraceKindGivesOneRecordPerLaunch) {
  // Asked for explicitly: per-launch records replace per-kernel ones.
  ScenarioRun run =
      RunScenario("graph_replay.scn", {{"TRACER_ACTIVITIES", "kernel,runtime,graph"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.kernels.size(), 0u);
  ASSERT_EQ(t.graph_launches.size(), 5u);
  for (const auto& g : t.graph_launches) {
    EXPECT_EQ(t.RangeName(t.LaunchRange(g.correlation_id())), "replay");
    EXPECT_EQ(g.end_ns() - g.start_ns(), 150u);  // 3 nodes x 50 ns
  }
}

// Issue 10, through the lagging fake GPU: the window is the second "step",
// and every op runs long after its launch call.
TEST(CuptiE2e, LaggingGpuCaptureRangeKeepsExactlyTheOpsLaunchedInside) {
  ScenarioRun run = RunScenario("lagging_capture_range.scn",
                                {{"TRACER_CAPTURE_RANGE", "step"}, {"TRACER_CAPTURE_START", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(KernelCounts(t),
            (std::map<std::string, int>{{"in_window", 3}, {"in_window_worker", 1}}));
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].bytes, 4096u);
  EXPECT_EQ(t.memcpys[0].copy_kind, static_cast<uint32_t>(proto::COPY_HTOD));
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 8192u);
  // Only the second step is recorded; the window's ops ran after it ended
  // (queued behind step 1's kernels), which is what the old time test lost.
  ASSERT_EQ(t.ranges.size(), 1u);
  const uint64_t window_end = t.ranges[0].end_ns();
  for (const KernelRow* k : KernelsNamed(t, "in_window")) {
    EXPECT_GT(k->start, window_end);
    EXPECT_EQ(t.RangeName(t.LaunchRange(k->correlation)), "step");
  }
  EXPECT_GT(t.memcpys[0].start, window_end);
  EXPECT_GT(t.memsets[0].start, window_end);
  // The launch API records go with their ops: exactly the 4 kernel launches,
  // the copy (runtime call and its nested driver call) and the set.
  std::map<uint32_t, int> launch_apis;
  for (const ApiRow& a : t.apis) {
    if (a.cbid == 505 || a.cbid == 41 || a.cbid == 306 || a.cbid == 51) ++launch_apis[a.cbid];
  }
  EXPECT_EQ(launch_apis, (std::map<uint32_t, int>{{505, 4}, {41, 1}, {306, 1}, {51, 1}}));
  // Step 1's 3 kernels and step 3's 3 kernels, copy and set were launched
  // outside (their API records too).
  EXPECT_GE(Counter(t, "cupti_outside_capture_window"), 8u);
  EXPECT_EQ(Counter(t, "dropped.cupti_unfinished_at_flush"), 0u);
  EXPECT_EQ(Counter(t, "dropped.cupti_invalid_timestamps"), 0u);
}

TEST(CuptiE2e, LaggingGpuProfilerStopKeepsQueuedWorkAndDropsWorkLaunchedWhileStopped) {
  ScenarioRun run = RunScenario("lagging_profiler_window.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  // The 3 kernels and the graph launch's 2 kernels launched between start
  // and stop; not those launched while stopped (which ran after the start).
  EXPECT_EQ(KernelCounts(t), (std::map<std::string, int>{{"inside", 3}, {"gk_0", 1}, {"gk_1", 1}}));
  for (const char* name : {"gk_0", "gk_1"}) {
    ASSERT_EQ(KernelsNamed(t, name).size(), 1u);
    EXPECT_NE(KernelsNamed(t, name)[0]->graph_id, 0u);
  }
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys[0].copy_kind, static_cast<uint32_t>(proto::COPY_DTOH));
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 8192u);
  // All of them were still queued when cudaProfilerStop came: its flush must
  // not have handed them back unfinished.
  uint64_t stop_time = 0;
  for (const ApiRow& a : t.apis) {
    if (a.cbid == 172) stop_time = std::max(stop_time, a.start);
  }
  ASSERT_NE(stop_time, 0u);
  for (const KernelRow& k : t.kernels) EXPECT_GT(k.end, stop_time);
  EXPECT_EQ(Counter(t, "dropped.cupti_unfinished_at_flush"), 0u);
  EXPECT_EQ(Counter(t, "dropped.cupti_invalid_timestamps"), 0u);
  // 2 kernels + 2 graph kernels before the start, 1 kernel + 1 copy after the
  // stop, and their launch API records.
  EXPECT_GE(Counter(t, "cupti_outside_capture_window"), 6u);
}

TEST(CuptiE2e, WindowOpsUnfinishedAtExitAreCountedAsDroppedByCause) {
  ScenarioRun run = RunScenario("lagging_exit.scn", {{"TRACER_CAPTURE_RANGE", "step"}});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_TRUE(t.has_footer);
  EXPECT_TRUE(t.kernels.empty());
  // The window's 3 kernels: lost, by cause; step 2's 2 kernels: not ours.
  EXPECT_EQ(Counter(t, "dropped.cupti_unfinished_at_flush"), 3u);
  EXPECT_EQ(Counter(t, "dropped.cupti_invalid_timestamps"), 0u);
  EXPECT_GE(Counter(t, "cupti_outside_capture_window"), 2u);
  uint64_t in_footer = 0;
  for (const auto& c : t.footer.dropped_by_cause()) {
    if (c.name() == "cupti_unfinished_at_flush") in_footer = c.value();
  }
  EXPECT_EQ(in_footer, 3u);
}

TEST(CuptiE2e, LaggingGpuBlocksLaunchesWhenItsQueueIsFull) {
  // Two ops in flight at most: the third and fourth launch calls return only
  // when the GPU has finished the op two places before them.
  ScenarioRun run = RunScenario("lagging_queue.scn");
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const TraceContents& t = run.trace;
  ASSERT_TRUE(t.ok) << t.error;
  std::vector<const KernelRow*> k = KernelsNamed(t, "k");
  ASSERT_EQ(k.size(), 4u);
  std::sort(k.begin(), k.end(), [](auto* a, auto* b) { return a->correlation < b->correlation; });
  std::map<uint64_t, const ApiRow*> launch_api;
  for (const ApiRow& a : t.apis) {
    if (a.cbid == 505) launch_api[a.correlation] = &a;
  }
  for (size_t i = 0; i < k.size(); ++i) {
    ASSERT_EQ(launch_api.count(k[i]->correlation), 1u);
    const ApiRow& launch = *launch_api[k[i]->correlation];
    // Latency: nothing runs within 10 ms of its launch call.
    EXPECT_GE(k[i]->start, launch.start + 10000000);
    if (i >= 2) {
      EXPECT_GE(launch.end, k[i - 2]->end) << "launch " << i << " did not wait";
    } else {
      EXPECT_LT(launch.end, k[0]->start) << "launch " << i << " waited";
    }
    if (i > 0) EXPECT_GE(k[i]->start, k[i - 1]->end);  // one stream: in order
  }
}

}  // namespace
}  // namespace tracer::testing
