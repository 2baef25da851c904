// The CUPTI adapter against an in-process CuptiApi (standing for libcupti):
// the order and set of calls it makes, its degraded modes when any call
// fails, the buffer pool under pressure, flushes, and the capture window.
#include "libtracer/capture/cupti_adapter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/capture/config.h"
#include "tests/cupti/activity_records.h"
#include "tests/cupti/in_process_cupti.h"
#include "tests/cupti/recording_sink.h"

namespace tracer {
namespace {

using testing::InProcessCupti;
using testing::MakeKernel;
using testing::RecordingSink;

class CuptiAdapterTest : public ::testing::Test {
 protected:
  CuptiAdapter::Options Options(uint32_t activities = kDefaultActivities) {
    CuptiAdapter::Options o;
    o.activities = activities;
    o.buffer_size = 64 * 1024;
    o.buffer_count = 4;
    o.log = [this](const std::string& line) { lines_.push_back(line); };
    return o;
  }
  std::unique_ptr<CuptiAdapter> Make(CuptiAdapter::Options o) {
    return std::make_unique<CuptiAdapter>(&api_, std::move(o));
  }
  int CallIndex(const std::string& name) {
    auto it = std::find(api_.calls.begin(), api_.calls.end(), name);
    return it == api_.calls.end() ? -1 : static_cast<int>(it - api_.calls.begin());
  }
  // Plays one CUPTI API callback on this thread.
  void Callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                uint32_t correlation = 1) {
    CUpti_CallbackData d;
    std::memset(&d, 0, sizeof(d));
    d.callbackSite = site;
    d.correlationId = correlation;
    api_.callback(api_.userdata, domain, cbid, &d);
  }

  InProcessCupti api_;
  std::vector<std::string> lines_;
};

TEST_F(CuptiAdapterTest, StartRegistersClockBeforeEnablingKinds) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  EXPECT_TRUE(lines_.empty());
  ASSERT_GE(CallIndex("cuptiActivityRegisterTimestampCallback"), 0);
  EXPECT_LT(CallIndex("cuptiActivityRegisterTimestampCallback"), CallIndex("cuptiActivityEnable"));
  EXPECT_LT(CallIndex("cuptiActivityRegisterCallbacks"), CallIndex("cuptiActivityEnable"));
  EXPECT_EQ(CallIndex("cuptiSubscribe"), 0);
  // The registered clock is ours.
  ASSERT_NE(api_.timestamp, nullptr);
  EXPECT_EQ(api_.timestamp, &CuptiAdapter::TimestampNs);
  // Default kinds; graph trace off because it suppresses per-kernel records.
  const std::set<int> expected = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                  CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_MEMSET,
                                  CUPTI_ACTIVITY_KIND_RUNTIME,
                                  CUPTI_ACTIVITY_KIND_DRIVER,
                                  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                  CUPTI_ACTIVITY_KIND_OVERHEAD};
  EXPECT_EQ(api_.enabled_kinds, expected);
}

TEST_F(CuptiAdapterTest, GraphTraceOnlyWhenAsked) {
  auto a = Make(Options(kActivityKernel | kActivityGraph));
  ASSERT_TRUE(a->Start());
  EXPECT_EQ(api_.enabled_kinds, (std::set<int>{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                               CUPTI_ACTIVITY_KIND_GRAPH_TRACE}));
}

TEST_F(CuptiAdapterTest, EnablesEveryLaunchTypeCallback) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  auto has = [&](CUpti_CallbackDomain d, uint32_t cbid) {
    return api_.enabled_callbacks.count({static_cast<int>(d), cbid}) == 1;
  };
  const CUpti_CallbackDomain rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
  // CUDA 13 <<<>>> launches (docs/cupti.md section 2) and the classic ones.
  for (uint32_t cbid : {505u, 506u, 211u, 214u, 430u, 431u, 269u, 270u, 311u, 312u, 41u, 225u, 51u,
                        235u, 31u, 509u, 171u, 172u, 164u}) {
    EXPECT_TRUE(has(rt, cbid)) << "runtime " << cbid;
  }
  for (uint32_t cbid : {307u, 442u, 652u, 653u, 477u, 478u, 514u, 515u, 115u, 116u,
                        117u, 306u, 418u, 277u, 279u, 216u, 220u, 796u, 308u, 309u}) {
    EXPECT_TRUE(has(drv, cbid)) << "driver " << cbid;
  }
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED));
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING));
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING));
  EXPECT_TRUE(has(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING));
  for (uint32_t cbid : {335u}) EXPECT_TRUE(has(rt, cbid)) << "runtime " << cbid;
  for (uint32_t cbid : {561u, 696u}) EXPECT_TRUE(has(drv, cbid)) << "driver " << cbid;
  // Not a launch: not enabled, so it costs nothing.
  EXPECT_FALSE(has(rt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
}

// What the adapter keeps per graph node goes when the graph or exec does:
// a program capturing a new graph every step stays bounded. (The in-process
// CUPTI's ids are the handles' values.)
TEST_F(CuptiAdapterTest, DestroyedGraphsAndExecsLetTheirNodesGo) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  auto handle = [](uintptr_t v) { return reinterpret_cast<void*>(v); };
  auto resource = [&](CUpti_CallbackId cbid, CUpti_GraphData g) {
    CUpti_ResourceData r{};
    r.resourceDescriptor = &g;
    CuptiAdapter::OnCallback(a.get(), CUPTI_CB_DOMAIN_RESOURCE, cbid, &r);
  };
  auto node = [&](uintptr_t graph, uintptr_t id) {
    CUpti_GraphData g{};
    g.graph = static_cast<CUgraph>(handle(graph));
    g.node = static_cast<CUgraphNode>(handle(id));
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, g);
  };
  auto clone = [&](uintptr_t exec, uintptr_t id, uintptr_t original) {
    CUpti_GraphData g{};
    g.graph = static_cast<CUgraph>(handle(exec));
    g.node = static_cast<CUgraphNode>(handle(id));
    g.graphExec = static_cast<CUgraphExec>(handle(exec));
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, g);
    g.originalNode = static_cast<CUgraphNode>(handle(original));
    g.originalGraph = static_cast<CUgraph>(handle(1));
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, g);
  };
  node(1, 11);
  node(1, 12);
  clone(5, 21, 11);
  clone(5, 22, 12);
  // 4 nodes; graph 1, the exec's own graph 5, exec 5.
  EXPECT_EQ(a->graph_entries(), 7u);
  CUpti_GraphData g{};
  g.graph = static_cast<CUgraph>(handle(1));
  resource(CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING, g);
  EXPECT_EQ(a->graph_entries(), 4u);  // the clones stay: the exec still runs
  g = CUpti_GraphData{};
  g.graphExec = static_cast<CUgraphExec>(handle(5));
  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, g);
  EXPECT_EQ(a->graph_entries(), 0u);
}

TEST_F(CuptiAdapterTest, NoDriverIsOneClearLine) {
  api_.FailCall("cuptiSubscribe", CUPTI_ERROR_UNKNOWN);
  auto a = Make(Options());
  EXPECT_FALSE(a->Start());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("CUPTI unavailable (no CUDA driver?)"), std::string::npos) << lines_[0];
  EXPECT_NE(lines_[0].find("tracing NVTX only"), std::string::npos);
  EXPECT_EQ(CallIndex("cuptiActivityEnable"), -1);
}

TEST_F(CuptiAdapterTest, AnotherSubscriberIsNamed) {
  api_.FailCall("cuptiSubscribe", CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  api_.other_subscriber = "CUPTI for Nsight Systems";
  auto a = Make(Options());
  EXPECT_FALSE(a->Start());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("another CUPTI client is attached (CUPTI for Nsight Systems)"),
            std::string::npos)
      << lines_[0];
}

// Every call the adapter makes, made to fail in turn: one line, no crash,
// and whatever still works keeps working.
class CuptiAdapterErrorTest : public CuptiAdapterTest,
                              public ::testing::WithParamInterface<const char*> {};

TEST_P(CuptiAdapterErrorTest, OneLineAndDegrade) {
  const std::string call = GetParam();
  api_.FailCall(call, CUPTI_ERROR_NOT_INITIALIZED);
  auto a = Make(Options());
  const bool started = a->Start();
  EXPECT_EQ(started, call != "cuptiSubscribe");
  // Buffers, drains and shutdown all survive the failure.
  RecordingSink sink;
  if (api_.requested != nullptr) {
    api_.DeliverBuffer([](fake_cupti::BufferWriter& w) {
      static const char kName[] = "k";
      w.Append(MakeKernel(kName, 10, 20, 1, 1));
    });
  }
  a->Drain(sink, false);
  a->Stop();
  a->Drain(sink, true);
  int mentions = 0;
  for (const std::string& l : lines_)
    mentions += l.find(call == "cuptiSubscribe" ? "cuptiSubscribe" : call) != std::string::npos;
  const bool silent_by_design =
      call == "cuptiGetCallbackName" || call == "cuptiActivityGetNumDroppedRecords";
  EXPECT_EQ(lines_.size(), silent_by_design ? 0u : 1u) << call;
  EXPECT_EQ(mentions, silent_by_design ? 0 : 1) << call;
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, CuptiAdapterErrorTest,
    ::testing::Values("cuptiSubscribe", "cuptiActivityRegisterTimestampCallback",
                      "cuptiActivityRegisterCallbacks", "cuptiActivityEnable",
                      "cuptiEnableCallback", "cuptiActivityDisable", "cuptiActivityFlushAll",
                      "cuptiActivityGetNumDroppedRecords", "cuptiGetCallbackName"));

TEST_F(CuptiAdapterTest, ClockFailureKeepsCallbacksButNoActivity) {
  api_.FailCall("cuptiActivityRegisterTimestampCallback", CUPTI_ERROR_UNKNOWN);
  auto a = Make(Options());
  EXPECT_TRUE(a->Start());
  EXPECT_FALSE(a->activity_enabled());
  EXPECT_TRUE(api_.enabled_kinds.empty());  // never mix CUPTI's clock with ours
  EXPECT_FALSE(api_.enabled_callbacks.empty());
}

TEST_F(CuptiAdapterTest, BuffersAreDecodedOnDrainNotInTheCallback) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  static const char kName[] = "gemm";
  ASSERT_TRUE(api_.DeliverBuffer([](fake_cupti::BufferWriter& w) {
    w.Append(MakeKernel(kName, 10, 20, 1, 5));
    w.Append(MakeKernel(kName, 30, 40, 2, 6));
  }));
  RecordingSink sink;
  EXPECT_EQ(a->decoder().totals().kernels, 0u);  // the complete callback only queued it
  api_.dropped = 9;
  a->Drain(sink, false);
  EXPECT_EQ(sink.kernels.size(), 2u);
  EXPECT_EQ(sink.counters["dropped.cupti_dropped"], 9u);
  EXPECT_EQ(a->pool().outstanding(), 0u);
}

// A writer that stops inside the first kernel it is handed (a slow disk, a
// descheduled thread) until released.
class StallingSink : public RecordingSink {
 public:
  void Kernel(const KernelRecord& r) override {
    RecordingSink::Kernel(r);
    if (kernels.size() != 1) return;
    stalled.store(true);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<bool> stalled{false}, release{false};
};

// MODULE_UNLOAD_STARTING arrives on the application thread that unloads the
// module (cuModuleUnload), which must not wait for the writer: the callback
// returns promptly while the writer is stalled in the middle of the
// module's records. The module's name is then freed and its address taken
// by the next module's kernel name (as a reused allocation would); every
// record still gets its own module's name.
TEST_F(CuptiAdapterTest, ModuleUnloadNeverWaitsForAStalledWriterAndMislabelsNothing) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  char name[64] = "_Z12first_kernelv";  // the module's copy of its kernel name
  static const char kPlain[] = "other_module_kernel";
  ASSERT_TRUE(api_.DeliverBuffer([&](fake_cupti::BufferWriter& w) {
    w.Append(MakeKernel(kPlain, 10, 20, 1, 1));
    w.Append(MakeKernel(name, 30, 40, 1, 2));
  }));
  ASSERT_TRUE(api_.DeliverBuffer(
      [&](fake_cupti::BufferWriter& w) { w.Append(MakeKernel(name, 50, 60, 1, 3)); }));
  StallingSink sink;
  std::thread writer([&] { a->Drain(sink, false); });
  while (!sink.stalled.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  CUpti_ModuleResourceData module;
  std::memset(&module, 0, sizeof(module));
  module.moduleId = 1;
  CUpti_ResourceData r;
  std::memset(&r, 0, sizeof(r));
  r.resourceDescriptor = &module;
  const auto t0 = std::chrono::steady_clock::now();
  api_.callback(api_.userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
                &r);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::milliseconds(500));
  EXPECT_TRUE(sink.stalled.load());
  EXPECT_EQ(sink.kernels.size(), 1u);  // the writer has not moved meanwhile

  // The module is freed; the next one's name lands at the same address.
  std::snprintf(name, sizeof(name), "%s", "_Z13second_kernelv");
  const uint64_t later = CuptiAdapter::TimestampNs() + 1000;
  ASSERT_TRUE(api_.DeliverBuffer(
      [&](fake_cupti::BufferWriter& w) { w.Append(MakeKernel(name, later, later + 10, 1, 4)); }));
  sink.release.store(true);
  writer.join();
  a->Drain(sink, false);
  ASSERT_EQ(sink.kernels.size(), 4u);
  std::vector<std::string> names;
  for (const KernelRecord& k : sink.kernels) names.push_back(sink.Text(k.name));
  EXPECT_EQ(names, (std::vector<std::string>{"other_module_kernel", "_Z12first_kernelv",
                                             "_Z12first_kernelv", "_Z13second_kernelv"}));
  EXPECT_EQ(a->decoder().totals().names_lost_at_unload, 0u);
  EXPECT_EQ(a->pool().outstanding(), 0u);
}

// A buffer being read at a module unload (pinned) that the writer finishes
// with meanwhile is not handed back to CUPTI, which would overwrite it,
// until the unload is done reading it.
TEST(CuptiBufferPoolTest, APinnedBufferReleasedMeanwhileIsHandedOutOnlyAfterUnpin) {
  CuptiBufferPool pool(4096, 1);
  uint8_t* b = pool.Acquire();
  ASSERT_NE(b, nullptr);
  pool.Complete(b, 100);
  std::vector<CuptiBufferPool::Completed> taken, pinned;
  pool.TakeCompleted(&taken);  // the writer is decoding it
  pool.PinUndecoded(&pinned);
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_EQ(pinned[0].buffer, b);
  EXPECT_EQ(pinned[0].valid_bytes, 100u);
  pool.Release(b);  // the writer is done with it
  EXPECT_EQ(pool.Acquire(), nullptr);
  pool.Unpin(pinned);
  EXPECT_EQ(pool.Acquire(), b);
  // Released and not pinned: nothing left to pin.
  pool.Complete(b, 10);
  taken.clear();
  pool.TakeCompleted(&taken);
  pool.Release(b);
  pinned.clear();
  pool.PinUndecoded(&pinned);
  EXPECT_TRUE(pinned.empty());
}

TEST_F(CuptiAdapterTest, PoolExhaustionDeclinesCountsAndRecovers) {
  auto o = Options();
  o.buffer_count = 2;
  auto a = Make(o);
  ASSERT_TRUE(a->Start());
  std::vector<uint8_t*> held;
  for (int i = 0; i < 1000; ++i) {
    uint8_t* b = nullptr;
    size_t size = 0, max = 0;
    api_.requested(&b, &size, &max);
    if (b != nullptr) held.push_back(b);
  }
  EXPECT_EQ(held.size(), 2u);  // bounded: never grows
  EXPECT_EQ(a->pool().allocated(), 2u);
  RecordingSink sink;
  a->Drain(sink, false);
  EXPECT_EQ(sink.counters["cupti_buffer_pool_exhausted"], 998u);
  for (uint8_t* b : held) api_.completed(nullptr, 0, b, 0, 0);
  a->Drain(sink, false);
  // Returned buffers are handed out again.
  EXPECT_TRUE(api_.DeliverBuffer([](fake_cupti::BufferWriter&) {}));
  EXPECT_EQ(a->pool().allocated(), 2u);
}

TEST_F(CuptiAdapterTest, ConcurrentStormNeverBlocksAndStaysBounded) {
  auto o = Options();
  o.buffer_count = 3;
  auto a = Make(o);
  ASSERT_TRUE(a->Start());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> delivered{0}, declined{0};
  RecordingSink sink;
  std::thread writer([&] {
    while (!done.load()) a->Drain(sink, false);
    a->Drain(sink, true);
  });
  std::vector<std::thread> producers;
  static const char kName[] = "storm";
  for (int t = 0; t < 6; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        bool ok = api_.DeliverBuffer(
            [&](fake_cupti::BufferWriter& w) { w.Append(MakeKernel(kName, 10, 20, t, i + 1)); });
        (ok ? delivered : declined).fetch_add(1);
      }
    });
  }
  for (auto& p : producers) p.join();
  done = true;
  writer.join();
  EXPECT_LE(a->pool().allocated(), 3u);
  EXPECT_EQ(delivered + declined, 12000u);
  EXPECT_EQ(sink.kernels.size(), delivered.load());
  EXPECT_EQ(sink.counters["cupti_buffer_pool_exhausted"], declined.load());
}

TEST_F(CuptiAdapterTest, StopDisablesKindsThenForcesAFlush) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  a->Stop();
  EXPECT_TRUE(api_.enabled_kinds.empty());
  ASSERT_EQ(api_.flushes.size(), 1u);
  EXPECT_EQ(api_.flushes[0], static_cast<uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  EXPECT_GT(CallIndex("cuptiActivityFlushAll"), CallIndex("cuptiActivityDisable"));
  a->Stop();  // once only
  EXPECT_EQ(api_.flushes.size(), 1u);
}

TEST_F(CuptiAdapterTest, DeviceResetAndContextDestroyForceAFlushProfilerStopDoesNot) {
  std::vector<bool> profiler;
  auto o = Options();
  o.on_profiler_active = [&](bool on) { profiler.push_back(on); };
  auto a = Make(o);
  ASSERT_TRUE(a->Start());
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,
           CUPTI_API_ENTER);
  EXPECT_EQ(api_.flushes.size(), 1u);
  CUpti_ResourceData r;
  std::memset(&r, 0, sizeof(r));
  api_.callback(api_.userdata, CUPTI_CB_DOMAIN_RESOURCE,
                CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &r);
  EXPECT_EQ(api_.flushes.size(), 2u);
  Callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, CUPTI_API_ENTER);
  EXPECT_EQ(api_.flushes.size(), 3u);
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
           CUPTI_API_EXIT);
  EXPECT_EQ(profiler, (std::vector<bool>{false, true}));
  // A device going away: whatever CUPTI holds now. A profiler stop: only the
  // complete records, so that the window's ops still queued are not handed
  // back unfinished (a forced flush never delivers them again).
  EXPECT_EQ(api_.flushes, (std::vector<uint32_t>{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED,
                                                 CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, 0u}));
}

TEST_F(CuptiAdapterTest, ProfilerWindowKeepsOpsLaunchedInsideHoweverLateTheyRun) {
  auto o = Options();
  o.gated = true;
  auto a = Make(o);
  ASSERT_TRUE(a->Start());
  constexpr CUpti_CallbackId kLaunch = CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000;
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, CUPTI_API_ENTER, 5);  // profiler on
  Callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, CUPTI_API_ENTER, 10);
  const uint64_t stopped_at = CuptiAdapter::TimestampNs();
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, CUPTI_API_ENTER, 15);  // stopped
  Callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_API_EXIT, 20);
  const uint64_t started_at = CuptiAdapter::TimestampNs();
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, CUPTI_API_ENTER, 25);  // on again
  static const char kName[] = "k";
  api_.DeliverBuffer([&](fake_cupti::BufferWriter& w) {
    // Launched before the stop, run while stopped: kept.
    w.Append(MakeKernel(kName, stopped_at + 1, stopped_at + 2, 1, 5));
    // Launched while stopped, run after the start: dropped.
    w.Append(MakeKernel(kName, started_at + 1, started_at + 2, 1, 15));
    w.Append(MakeKernel(kName, started_at + 3, started_at + 4, 1, 25));
  });
  RecordingSink sink;
  a->Drain(sink, false);
  ASSERT_EQ(sink.kernels.size(), 2u);
  EXPECT_EQ(sink.kernels[0].correlation_id, 5u);
  EXPECT_EQ(sink.kernels[1].correlation_id, 25u);
  EXPECT_EQ(sink.counters["cupti_outside_capture_window"], 1u);
}

TEST_F(CuptiAdapterTest, SessionWindowTransitionsGateOtherCallsByTime) {
  CaptureWindow session(/*has_range=*/true, /*start=*/1, /*stop=*/1);
  auto o = Options();
  o.session_window = &session;
  o.initially_open = session.active();
  auto a = Make(o);
  ASSERT_TRUE(a->Start());
  // Sleeps keep the clock readings apart from the transitions' own.
  auto tick = [] { std::this_thread::sleep_for(std::chrono::microseconds(5)); };
  const uint64_t before = CuptiAdapter::TimestampNs();
  tick();
  session.OnInstanceStart();  // the named range opens the window: observed at once
  tick();
  const uint64_t inside = CuptiAdapter::TimestampNs();
  tick();
  session.OnInstanceEnd();
  tick();
  const uint64_t after = CuptiAdapter::TimestampNs();
  constexpr uint32_t kStreamSync = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
  api_.DeliverBuffer([&](fake_cupti::BufferWriter& w) {
    w.Append(testing::MakeApi(false, kStreamSync, before, before + 1, 1, 1));
    w.Append(testing::MakeApi(false, kStreamSync, inside, inside + 1, 1, 2));
    w.Append(testing::MakeApi(false, kStreamSync, after + 1, after + 2, 1, 3));
  });
  RecordingSink sink;
  a->Drain(sink, false);
  ASSERT_EQ(sink.apis.size(), 1u);
  EXPECT_EQ(sink.apis[0].correlation_id, 2u);
  a.reset();
  session.OnInstanceStart();  // no observer any more: nothing to call
}

TEST_F(CuptiAdapterTest, CallbacksWithoutATracedThreadDoNothing) {
  // No session in this process: CurrentThreadState() is null and the launch
  // callback must simply return.
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, 505, CUPTI_API_ENTER);
  Callback(CUPTI_CB_DOMAIN_RUNTIME_API, 505, CUPTI_API_EXIT);
  api_.callback(api_.userdata, CUPTI_CB_DOMAIN_RUNTIME_API, 505, nullptr);
  EXPECT_TRUE(api_.flushes.empty());
}

TEST_F(CuptiAdapterTest, OnlyOneAdapterPerProcess) {
  auto a = Make(Options());
  ASSERT_TRUE(a->Start());
  InProcessCupti other_api;
  CuptiAdapter b(&other_api, Options());
  EXPECT_FALSE(b.Start());
  EXPECT_TRUE(other_api.calls.empty());
}

}  // namespace
}  // namespace tracer
