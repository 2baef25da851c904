// The fake libcupti against the real CUPTI behaviours it must reproduce
// (docs/cupti.md), driven through the same loader the tracer uses
// (RealCuptiApi) plus its control API. A test double that drifted from CUPTI
// would make every end-to-end test meaningless, so its own contract is
// checked here.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "libtracer/cupti_api/real_cupti_api.h"
#include "tests/cupti/fake_cupti/fake_cupti_control.h"

namespace tracer {
namespace {

struct Seen {
  std::mutex mu;
  std::vector<std::pair<int, uint32_t>> callbacks;  // site, correlation
  std::set<pthread_t> callback_threads, request_threads, complete_threads;
  std::vector<std::vector<uint8_t>> completed;  // copies of completed buffers
  std::atomic<int> decline{0};                  // decline the next n requests
};
Seen* g_seen = nullptr;
// The clock handed to the fake. Not in Seen: the lagging GPU's thread keeps
// reading it after a test's fixture is gone, up to process exit, so it lives
// as long as the process (trivially destructible).
std::atomic<uint64_t> g_clock{1000};

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* d) {
  const auto* data = static_cast<const CUpti_CallbackData*>(d);
  std::lock_guard<std::mutex> lock(g_seen->mu);
  g_seen->callbacks.push_back({data->callbackSite, data->correlationId});
  g_seen->callback_threads.insert(pthread_self());
}
void CUPTIAPI OnRequest(uint8_t** buffer, size_t* size, size_t* max) {
  std::lock_guard<std::mutex> lock(g_seen->mu);
  g_seen->request_threads.insert(pthread_self());
  *max = 0;
  if (g_seen->decline > 0) {
    --g_seen->decline;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *size = 4096;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
}
void CUPTIAPI OnComplete(CUcontext ctx, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_seen->mu);
  EXPECT_EQ(ctx, nullptr);
  g_seen->complete_threads.insert(pthread_self());
  g_seen->completed.emplace_back(buffer, buffer + valid);
  free(buffer);
}
uint64_t CUPTIAPI FakeClock() {
  // Not the real clock: the fake must pass whatever we return through.
  return g_clock += 10;
}

class FakeCuptiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    api_ = RealCuptiApi::Load(FAKE_CUPTI_PATH, &error);
    ASSERT_NE(api_, nullptr) << error;
    void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
    launch_ = reinterpret_cast<decltype(launch_)>(dlsym(h, "fakeCuptiLaunchKernel"));
    sync_ = reinterpret_cast<decltype(sync_)>(dlsym(h, "fakeCuptiSynchronize"));
    other_ = reinterpret_cast<decltype(other_)>(dlsym(h, "fakeCuptiSetOtherSubscriber"));
    gpu_ = reinterpret_cast<decltype(gpu_)>(dlsym(h, "fakeCuptiSetGpu"));
    ASSERT_TRUE(launch_ && sync_ && other_ && gpu_);
    g_seen = &seen_;
    ASSERT_EQ(api_->Subscribe(&sub_, OnCallback, nullptr, "test", nullptr, 0), CUPTI_SUCCESS);
    ASSERT_EQ(api_->ActivityRegisterTimestampCallback(FakeClock), CUPTI_SUCCESS);
    ASSERT_EQ(api_->ActivityRegisterCallbacks(OnRequest, OnComplete), CUPTI_SUCCESS);
    ASSERT_EQ(api_->ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
    ASSERT_EQ(api_->ActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
    ASSERT_EQ(api_->EnableCallback(1, sub_, CUPTI_CB_DOMAIN_RUNTIME_API, 505), CUPTI_SUCCESS);
  }
  void TearDown() override {
    api_->ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    api_->ActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    api_->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    api_->Unsubscribe(sub_);
    g_seen = nullptr;
  }
  uint32_t Launch(uint32_t stream, uint64_t dur) {
    FakeKernelLaunch l{};
    l.name = "k";
    l.context = 1;
    l.stream = stream;
    l.duration_ns = dur;
    return launch_(&l);
  }
  // Every record of every completed buffer, walked with the CUPTI iterator.
  std::vector<CUpti_Activity*> Records() {
    std::vector<CUpti_Activity*> out;
    for (auto& b : seen_.completed) {
      CUpti_Activity* r = nullptr;
      while (api_->ActivityGetNextRecord(b.data(), b.size(), &r) == CUPTI_SUCCESS) out.push_back(r);
    }
    return out;
  }

  Seen seen_;
  std::unique_ptr<RealCuptiApi> api_;
  CUpti_SubscriberHandle sub_ = nullptr;
  uint32_t (*launch_)(const FakeKernelLaunch*) = nullptr;
  uint32_t (*sync_)() = nullptr;
  void (*other_)(const char*) = nullptr;
  void (*gpu_)(uint64_t, size_t) = nullptr;
};

TEST_F(FakeCuptiTest, BehavesLikeCupti) {
  // One subscriber only: a second one is refused and told who holds CUPTI.
  {
    CUpti_SubscriberHandle second = nullptr;
    char other[64] = {0};
    EXPECT_EQ(api_->Subscribe(&second, OnCallback, nullptr, "second", other, sizeof(other)),
              CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    EXPECT_STREQ(other, "CUPTI for test");
  }

  // Callbacks on the calling thread, ENTER and EXIT with the same id, one
  // process-wide increasing counter.
  const uint32_t c1 = Launch(1, 100000);
  const uint32_t c2 = Launch(2, 10);
  EXPECT_GT(c2, c1);
  ASSERT_EQ(seen_.callbacks.size(), 4u);
  EXPECT_EQ(seen_.callbacks[0], std::make_pair(static_cast<int>(CUPTI_API_ENTER), c1));
  EXPECT_EQ(seen_.callbacks[1], std::make_pair(static_cast<int>(CUPTI_API_EXIT), c1));
  EXPECT_EQ(seen_.callback_threads, std::set<pthread_t>{pthread_self()});

  // FlushAll(0): only completed records (the API records), not running work.
  ASSERT_EQ(api_->ActivityFlushAll(0), CUPTI_SUCCESS);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  for (auto* r : records) EXPECT_EQ(r->kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  // Timestamps are ours, passed through.
  const auto* api_record = reinterpret_cast<const CUpti_ActivityAPI*>(records[0]);
  EXPECT_GT(api_record->start, 1000u);
  EXPECT_LT(api_record->end, g_clock + 1);

  // After a synchronize the GPU records come, in end-time order (the short
  // kernel on stream 2 first), completed on the fake's worker thread.
  sync_();
  ASSERT_EQ(api_->ActivityFlushAll(0), CUPTI_SUCCESS);
  std::vector<uint32_t> kernel_order;
  for (auto* r : Records()) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      kernel_order.push_back(reinterpret_cast<CUpti_ActivityKernel10*>(r)->correlationId);
    }
  }
  EXPECT_EQ(kernel_order, (std::vector<uint32_t>{c2, c1}));
  EXPECT_EQ(seen_.complete_threads.count(pthread_self()), 0u);

  // Forced flush returns running work with end = 0.
  seen_.completed.clear();
  const uint32_t c3 = Launch(1, 50);
  ASSERT_EQ(api_->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  bool found = false;
  for (auto* r : Records()) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
    EXPECT_EQ(k->correlationId, c3);
    EXPECT_EQ(k->end, 0u);
    found = true;
  }
  EXPECT_TRUE(found);

  // Declined buffers: the records are dropped and counted, once.
  size_t dropped = 0;
  ASSERT_EQ(api_->ActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
  seen_.decline = 1000;
  Launch(1, 10);
  sync_();
  api_->ActivityFlushAll(0);
  ASSERT_EQ(api_->ActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 3u);  // the launch's API record, its kernel, the sync's API record
  ASSERT_EQ(api_->ActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);  // reset by the read
  seen_.decline = 0;
}

// Graph ids as CUDA gives them (libtracer/capture/cupti_adapter.cc states
// the rule): a graph and each exec instantiated from it have distinct ids;
// an exec's nodes are clones with their own ids; records of a launch carry
// the exec's id and the clone's node id, for memcpy and memset nodes too.
// And a module unload frees its kernel name for the next module to reuse.
TEST_F(FakeCuptiTest, GraphIdsAndModuleNamesAsCudaGivesThem) {
  void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
#define SYM(name) auto name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name))
  SYM(fakeCuptiGraphCreate);
  SYM(fakeCuptiGraphAddMemcpyNode);
  SYM(fakeCuptiGraphAddMemsetNode);
  SYM(fakeCuptiGraphInstantiate);
  SYM(fakeCuptiGraphLaunch);
  SYM(fakeCuptiModuleLoad);
  SYM(fakeCuptiModuleUnload);
  SYM(fakeCuptiModuleKernelName);
#undef SYM
  ASSERT_TRUE(fakeCuptiGraphCreate && fakeCuptiGraphAddMemcpyNode && fakeCuptiGraphAddMemsetNode &&
              fakeCuptiGraphInstantiate && fakeCuptiGraphLaunch && fakeCuptiModuleLoad &&
              fakeCuptiModuleUnload && fakeCuptiModuleKernelName);
  ASSERT_EQ(api_->ActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  ASSERT_EQ(api_->ActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), CUPTI_SUCCESS);

  const uint64_t g = fakeCuptiGraphCreate(2, "gk", 100);
  fakeCuptiGraphAddMemcpyNode(g, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 64, 100);
  fakeCuptiGraphAddMemsetNode(g, 64, 0, 100);
  const uint64_t e1 = fakeCuptiGraphInstantiate(g), e2 = fakeCuptiGraphInstantiate(g);
  uint32_t graph_id = 0, exec1 = 0, exec2 = 0;
  ASSERT_EQ(api_->GetGraphId(reinterpret_cast<CUgraph>(g), &graph_id), CUPTI_SUCCESS);
  ASSERT_EQ(api_->GetGraphExecId(reinterpret_cast<CUgraphExec>(e1), &exec1), CUPTI_SUCCESS);
  ASSERT_EQ(api_->GetGraphExecId(reinterpret_cast<CUgraphExec>(e2), &exec2), CUPTI_SUCCESS);
  EXPECT_EQ(std::set<uint32_t>({graph_id, exec1, exec2}).size(), 3u);
  const uint32_t c1 = fakeCuptiGraphLaunch(e1, 3), c2 = fakeCuptiGraphLaunch(e2, 3);
  sync_();
  ASSERT_EQ(api_->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  std::map<uint32_t, std::set<uint64_t>> nodes_by_exec;
  int kernels = 0, memcpys = 0, memsets = 0;
  for (CUpti_Activity* r : Records()) {
    uint32_t gid = 0, corr = 0;
    uint64_t node = 0;
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      gid = k->graphId, node = k->graphNodeId, corr = k->correlationId;
      ++kernels;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      gid = m->graphId, node = m->graphNodeId, corr = m->correlationId;
      ++memcpys;
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      gid = m->graphId, node = m->graphNodeId, corr = m->correlationId;
      ++memsets;
    } else {
      continue;
    }
    EXPECT_EQ(corr, gid == exec1 ? c1 : c2);
    nodes_by_exec[gid].insert(node);
  }
  EXPECT_EQ(kernels, 4);
  EXPECT_EQ(memcpys, 2);
  EXPECT_EQ(memsets, 2);
  ASSERT_EQ(nodes_by_exec.size(), 2u);
  EXPECT_EQ(nodes_by_exec[exec1].size(), 4u);
  EXPECT_EQ(nodes_by_exec[exec2].size(), 4u);
  for (uint64_t n : nodes_by_exec[exec1]) EXPECT_FALSE(nodes_by_exec[exec2].count(n));

  const uint64_t m1 = fakeCuptiModuleLoad("first");
  const char* first = fakeCuptiModuleKernelName(m1);
  fakeCuptiModuleUnload(m1);
  const uint64_t m2 = fakeCuptiModuleLoad("second");
  EXPECT_EQ(fakeCuptiModuleKernelName(m2), first);  // the freed address, reused
  EXPECT_STREQ(first, "second");
  fakeCuptiModuleUnload(m2);
  api_->ActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  api_->ActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
}

// Last in this file: the lagging GPU stays on in the process once set.
TEST_F(FakeCuptiTest, LaggingGpuCompletesWorkWhenTheClockPassesItsEnd) {
  gpu_(/*launch_latency_ns=*/1000000, /*queue_depth=*/0);
  auto kernels = [&] {
    std::vector<const CUpti_ActivityKernel10*> out;
    for (auto* r : Records()) {
      if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        out.push_back(reinterpret_cast<const CUpti_ActivityKernel10*>(r));
      }
    }
    return out;
  };
  const uint64_t launched_at = g_clock.load();
  const uint32_t c1 = Launch(1, 1000000);
  // Not before the clock passes its end, then without any synchronize.
  ASSERT_EQ(api_->ActivityFlushAll(0), CUPTI_SUCCESS);
  EXPECT_TRUE(kernels().empty());
  g_clock += 3000000;
  std::vector<const CUpti_ActivityKernel10*> done;
  for (int i = 0; i < 200 && done.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(api_->ActivityFlushAll(0), CUPTI_SUCCESS);
    done = kernels();
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0]->correlationId, c1);
  EXPECT_GE(done[0]->start, launched_at + 1000000);  // the launch latency
  EXPECT_EQ(done[0]->end, done[0]->start + 1000000);
  // Work still queued when a forced flush comes: no timestamps at all.
  seen_.completed.clear();
  const uint32_t c2 = Launch(2, 1000000);
  ASSERT_EQ(api_->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  done = kernels();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0]->correlationId, c2);
  EXPECT_EQ(done[0]->start, 0u);
  EXPECT_EQ(done[0]->end, 0u);
}

}  // namespace
}  // namespace tracer
