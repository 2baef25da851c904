// Op -> launching thread, time and range stack (docs/design.md section 3), on the
// scenario of scenario.h and on CUDA graph replays.
#include "libtracer/analysis/model/attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "libtracer/analysis/read/reader.h"
#include "tests/analysis/scenario.h"

namespace tracer::analysis {
namespace {

using testing::BuildScenario;
using testing::TraceFileBuilder;

Trace Read(TraceFileBuilder& b) {
  Trace trace;
  std::string error;
  EXPECT_TRUE(ReadTraceBytes(b.Bytes(), "scenario.trace", &trace, &error)) << error;
  return trace;
}

// Range instance ids of an op's stack, as a set (order checked separately).
std::set<uint64_t> StackIds(const ProcessTrace& p, const Attribution& a, OpKind kind, size_t i) {
  std::set<uint64_t> ids;
  for (uint32_t r : a.Stack(kind, i)) ids.insert(p.ranges[r].id);
  return ids;
}

class ScenarioAttribution : public ::testing::TestWithParam<bool> {};

TEST_P(ScenarioAttribution, StacksFollowLaunchingThreadAndTime) {
  TraceFileBuilder b;
  BuildScenario(&b, /*api_only=*/GetParam());
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  const Attribution a(p, index, AttributionOptions{});
  EXPECT_EQ(p.threads[a.main_thread()].os_tid, 100u);  // os_tid == pid

  // K1 launched in layer #3: layer, fwd, step, plus the start/end "epoch"
  // whose [0, 10000] contains the launch time 300.
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 0), (std::set<uint64_t>{3, 2, 1, 7}));
  // Innermost first: the own chain leads.
  ASSERT_GE(a.Stack(OpKind::kKernel, 0).size(), 3u);
  EXPECT_EQ(p.ranges[a.Stack(OpKind::kKernel, 0)[0]].id, 3u);
  EXPECT_EQ(p.ranges[a.Stack(OpKind::kKernel, 0)[1]].id, 2u);
  EXPECT_EQ(a.OwnDepth(OpKind::kKernel, 0), 3u);
  // K4 in layer #4; the memcpy M1 too.
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 3), (std::set<uint64_t>{4, 2, 1, 7}));
  EXPECT_EQ(StackIds(p, a, OpKind::kMemcpy, 0), (std::set<uint64_t>{4, 2, 1, 7}));
  // K6 on the worker: its own bwd #5, inherited step #1 (open on the main
  // thread at 5600; fwd #2 closed at 5000), and epoch.
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 5), (std::set<uint64_t>{5, 1, 7}));
  EXPECT_TRUE(a.Of(OpKind::kKernel, 5).inherited);
  EXPECT_EQ(a.OwnDepth(OpKind::kKernel, 5), 1u);
  // K7 at 10500: after every range; K8: never launched as far as we know.
  EXPECT_TRUE(a.Stack(OpKind::kKernel, 6).empty());
  EXPECT_EQ(a.Of(OpKind::kKernel, 7).source, AttributionSource::kNone);

  const AttributionCounts& c = a.counts();
  EXPECT_EQ(c.ops, 9u);             // 8 kernels + 1 memcpy
  EXPECT_EQ(c.unattributed, 1u);    // K8
  EXPECT_EQ(c.outside_ranges, 1u);  // K7
  EXPECT_EQ(c.inherited, 1u);       // K6
  const AttributionSource expected =
      GetParam() ? AttributionSource::kApiRecord : AttributionSource::kLaunchRecord;
  EXPECT_EQ(c.by_source[static_cast<int>(expected)], 8u);
  EXPECT_EQ(a.Of(OpKind::kKernel, 5).thread, 2u);
  EXPECT_EQ(a.Of(OpKind::kKernel, 5).launch_ns, 5600u);
}

INSTANTIATE_TEST_SUITE_P(LaunchRecordsAndApiRecords, ScenarioAttribution, ::testing::Bool());

TEST(AttributionTest, MainThreadOffGivesNsysStacks) {
  TraceFileBuilder b;
  BuildScenario(&b);
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  AttributionOptions o;
  o.main_thread = MainThreadMode::kOff;
  const Attribution a(p, index, o);
  EXPECT_EQ(a.main_thread(), 0u);
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 5), (std::set<uint64_t>{5, 7}));
  EXPECT_EQ(a.counts().inherited, 0u);
}

TEST(AttributionTest, ExplicitMainThreadByOsTid) {
  TraceFileBuilder b;
  BuildScenario(&b);
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  AttributionOptions o;
  o.main_thread = MainThreadMode::kThread;
  o.main_thread_tid = 101;  // the worker is declared "main"
  const Attribution a(p, index, o);
  EXPECT_EQ(a.main_thread(), 2u);
  // Launches on thread 1 now inherit from thread 2, where nothing (push/pop)
  // is open before 5500: no op inherits; K6 is on the main thread itself.
  EXPECT_EQ(a.counts().inherited, 0u);
}

TEST(AttributionTest, GraphKernelsUseNodeThenLaunchSnapshotsThenLaunchRecord) {
  TraceFileBuilder b;
  b.Thread(1, 100);
  b.Stream(1, 0, 7);
  b.Range(1, 0, 1, "capture", 0, 100);
  b.Range(2, 0, 1, "replay_a", 1000, 2000);
  b.Range(3, 0, 1, "replay_b", 3000, 4000);
  // Node 1 was created inside "capture"; graph 9 was launched from replay_a
  // (at 1100) and replay_b (at 3100). Node 3 was seen in a graph whose id is
  // not the exec id the records carry: node ids are unique in a process, so
  // it still matches.
  b.GraphSnapshot(9, 1, 1, 1, 50);
  b.GraphSnapshot(8, 3, 1, 1, 60);
  b.GraphSnapshot(9, 0, 2, 1, 1100);
  b.GraphSnapshot(9, 0, 3, 1, 3100);
  b.Launch(20, 1, 1100, 2);
  b.Launch(21, 1, 3100, 3);
  b.Launch(22, 1, 3200, 3);
  b.Kernel("node1", 1, 1200, 1300, 20, 9, 1);   // -> capture (node snapshot)
  b.Kernel("node2", 1, 1300, 1400, 20, 9, 2);   // -> replay_a (launch snapshot at 1100)
  b.Kernel("node2", 1, 3300, 3400, 21, 9, 2);   // -> replay_b (launch snapshot at 3100)
  b.Kernel("other", 1, 3500, 3600, 22, 10, 5);  // graph 10: no snapshot -> launch record
  b.Kernel("node3", 1, 3700, 3800, 21, 9, 3);   // -> capture (node snapshot, by node id)
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  const Attribution a(p, index, AttributionOptions{});
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 0), (std::set<uint64_t>{1}));
  EXPECT_EQ(a.Of(OpKind::kKernel, 0).source, AttributionSource::kGraphNode);
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 1), (std::set<uint64_t>{2}));
  EXPECT_EQ(a.Of(OpKind::kKernel, 1).source, AttributionSource::kGraphLaunch);
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 2), (std::set<uint64_t>{3}));
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 3), (std::set<uint64_t>{3}));
  EXPECT_EQ(a.Of(OpKind::kKernel, 3).source, AttributionSource::kLaunchRecord);
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 4), (std::set<uint64_t>{1}));
  EXPECT_EQ(a.Of(OpKind::kKernel, 4).source, AttributionSource::kGraphNode);
}

// Ops launched under the same ranges share one stored stack (the whole-trace
// memory budget), and Of() still gives each op its own launching thread and
// time, from whichever record attributed it: launch record, API record or
// graph snapshot.
TEST(AttributionTest, OpsShareStacksAndKeepTheirOwnLaunch) {
  TraceFileBuilder b;
  b.Thread(1, 100);
  b.Thread(2, 101);
  b.Stream(1, 0, 7);
  b.Range(1, 0, 1, "step", 0, 10000);
  b.Range(2, 1, 1, "layer", 100, 5000);
  b.Range(3, 0, 2, "worker", 0, 10000);
  b.GraphSnapshot(9, 4, 2, 1, 150);
  for (uint64_t i = 0; i < 100; ++i) {
    b.Launch(1 + i, 1, 200 + i, 2);
    b.Kernel("k", 1, 20000 + 10 * i, 20005 + 10 * i, 1 + i, 0, 0);
  }
  b.Api("cudaLaunchKernel", 2, 7000, 7010, 500);
  b.Kernel("api", 1, 30000, 30100, 500, 0, 0);
  b.Kernel("graph", 1, 30200, 30300, 0, 9, 4);  // no launch record: the snapshot's
  b.Kernel("none", 1, 30400, 30500, 777, 0, 0);
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  AttributionOptions off;
  off.main_thread = MainThreadMode::kOff;
  const Attribution a(p, index, off);
  // 100 kernels in "layer" + the API kernel + the graph kernel (same ranges
  // as the first 100, other source) + the unattributed one.
  EXPECT_EQ(a.distinct_stacks(), 4u);
  for (size_t k = 0; k < 100; ++k) {
    const OpAttribution at = a.Of(OpKind::kKernel, k);
    EXPECT_EQ(at.source, AttributionSource::kLaunchRecord);
    EXPECT_EQ(at.thread, 1u);
    EXPECT_EQ(at.launch_ns, 200 + k);
    EXPECT_EQ(p.ranges[at.range].id, 2u);
    EXPECT_EQ(StackIds(p, a, OpKind::kKernel, k), (std::set<uint64_t>{2, 1}));
    EXPECT_EQ(a.OwnDepth(OpKind::kKernel, k), 2u);
  }
  const OpAttribution api = a.Of(OpKind::kKernel, 100);
  EXPECT_EQ(api.source, AttributionSource::kApiRecord);
  EXPECT_EQ(api.thread, 2u);
  EXPECT_EQ(api.launch_ns, 7000u);
  EXPECT_EQ(p.ranges[api.range].id, 3u);
  const OpAttribution graph = a.Of(OpKind::kKernel, 101);
  EXPECT_EQ(graph.source, AttributionSource::kGraphNode);
  EXPECT_EQ(graph.thread, 1u);
  EXPECT_EQ(graph.launch_ns, 150u);
  EXPECT_EQ(StackIds(p, a, OpKind::kKernel, 101), (std::set<uint64_t>{2, 1}));
  const OpAttribution none = a.Of(OpKind::kKernel, 102);
  EXPECT_EQ(none.source, AttributionSource::kNone);
  EXPECT_EQ(none.thread, 0u);
  EXPECT_EQ(none.launch_ns, 0u);
  EXPECT_EQ(none.range, kNoRange);
  EXPECT_TRUE(a.Stack(OpKind::kKernel, 102).empty());
}

TEST(RangeIndexTest, InnermostOpenAtAndTimeDerivedParents) {
  TraceFileBuilder b;
  BuildScenario(&b, /*api_only=*/true);  // no parent ids in the file
  const Trace trace = Read(b);
  const ProcessTrace& p = trace.processes[0];
  const RangeIndex index(p);
  auto id_at = [&](uint32_t thread, uint64_t t) {
    const uint32_t r = index.InnermostOpenAt(thread, t);
    return r == kNoRange ? 0 : p.ranges[r].id;
  };
  EXPECT_EQ(id_at(1, 0), 1u);     // step opens at 0
  EXPECT_EQ(id_at(1, 150), 2u);   // fwd
  EXPECT_EQ(id_at(1, 1999), 3u);  // layer #3 still open
  EXPECT_EQ(id_at(1, 2000), 2u);  // layer #3 closed: back to fwd
  EXPECT_EQ(id_at(1, 4500), 2u);  // after layer #4
  EXPECT_EQ(id_at(1, 9200), 6u);  // cpu_only
  EXPECT_EQ(id_at(1, 9600), 1u);
  EXPECT_EQ(id_at(1, 10000), 0u);  // step ended
  EXPECT_EQ(id_at(2, 5600), 5u);
  EXPECT_EQ(id_at(3, 5600), 0u);  // unknown thread
  // Parents and depth rebuilt from time nesting.
  const uint32_t layer3 = index.Find(3);
  EXPECT_EQ(p.ranges[index.Parent(layer3)].id, 2u);
  EXPECT_EQ(index.Depth(layer3), 2u);
  EXPECT_EQ(index.Children(index.Find(2)).size(), 2u);
}

// Find by instance id, whether the ids run consecutively in record order
// (importers: an index plus the first id) or not (recorded streams): every
// id finds its record, ids around and between them find nothing.
TEST(RangeIndexTest, FindsEveryInstanceIdDenseOrNot) {
  for (const std::vector<uint64_t>& ids :
       {std::vector<uint64_t>{7, 8, 9, 10}, std::vector<uint64_t>{40, 3, 17, 5}}) {
    TraceFileBuilder b;
    for (size_t i = 0; i < ids.size(); ++i) {
      b.Range(ids[i], 0, 1, "r" + std::to_string(i), 100 * i, 100 * i + 50);
    }
    const Trace trace = Read(b);
    const ProcessTrace& p = trace.processes[0];
    const RangeIndex index(p);
    ASSERT_EQ(p.ranges.size(), ids.size());
    for (uint32_t i = 0; i < p.ranges.size(); ++i) EXPECT_EQ(index.Find(p.ranges[i].id), i);
    for (uint64_t missing : {0, 1, 2, 4, 6, 11, 16, 18, 39, 41}) {
      if (std::find(ids.begin(), ids.end(), missing) == ids.end()) {
        EXPECT_EQ(index.Find(missing), kNoRange) << missing;
      }
    }
  }
}

TEST(RangeIndexTest, ParentCyclesAreCut) {
  // Corrupt parent ids (1 -> 2 -> 1) must not loop forever.
  TraceFileBuilder b;
  b.Range(1, 2, 1, "a", 0, 10);
  b.Range(2, 1, 1, "b", 0, 10);
  const Trace trace = Read(b);
  const RangeIndex index(trace.processes[0]);
  std::vector<uint32_t> chain;
  index.AppendChain(0, &chain);
  EXPECT_LE(chain.size(), 2u);
  EXPECT_LE(index.Depth(0) + index.Depth(1), 1u);
}

TEST(AttributionOptionsTest, MainThreadOptionAsUsersWriteIt) {
  AttributionOptions o;
  ASSERT_TRUE(ParseMainThreadOption("off", &o));
  EXPECT_EQ(o.main_thread, MainThreadMode::kOff);
  ASSERT_TRUE(ParseMainThreadOption("4242", &o));
  EXPECT_EQ(o.main_thread, MainThreadMode::kThread);
  EXPECT_EQ(o.main_thread_tid, 4242u);
  ASSERT_TRUE(ParseMainThreadOption("auto", &o));
  EXPECT_EQ(o.main_thread, MainThreadMode::kAuto);
  // Anything else leaves the options as they were.
  for (const char* bad : {"", "12x", "-1", "99999999999999999999", "Auto"}) {
    EXPECT_FALSE(ParseMainThreadOption(bad, &o)) << bad;
    EXPECT_EQ(o.main_thread, MainThreadMode::kAuto) << bad;
  }
}

}  // namespace
}  // namespace tracer::analysis
