#include "libtracer/capture/cupti_adapter.h"

#include <cstdio>
#include <exception>

#include "libtracer/capture/config.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/event.h"
#include "libtracer/capture/thread_state.h"
#include "libtracer/core/clock.h"

namespace tracer {

namespace {

// CUPTI's buffer callbacks carry no user data; one adapter per process.
std::atomic<CuptiAdapter*> g_adapter{nullptr};

constexpr uint32_t kForcedFlush = CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;

}  // namespace

CuptiAdapter::CuptiAdapter(CuptiApi* api, Options options)
    : api_(api),
      options_(std::move(options)),
      pool_(options_.buffer_size, options_.buffer_count),
      source_(options_.session_window != nullptr ? options_.session_window
              : options_.gated                   ? &own_window_
                                                 : nullptr),
      window_(source_ != nullptr, options_.initially_open, NowNs()),
      decoder_(api, &window_) {
  launches_see_open_.store(options_.initially_open, std::memory_order_relaxed);
  if (source_ == &own_window_ && !options_.initially_open) own_window_.SetProfilerActive(false);
  if (source_ != nullptr) {
    source_->SetObserver(this);
    OnCaptureWindowChange();  // it may have changed since initially_open was read
  }
}

CuptiAdapter::~CuptiAdapter() {
  if (source_ != nullptr) source_->SetObserver(nullptr);
  CuptiAdapter* self = this;
  g_adapter.compare_exchange_strong(self, nullptr);
}

void CuptiAdapter::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "tracer: %s\n", line.c_str());
  }
}

void CuptiAdapter::Fail(const char* call, CUptiResult r, const char* consequence) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  Log(std::string("CUPTI ") + call + " failed: " + api_->ResultString(r) + "; " + consequence);
}

std::vector<CUpti_ActivityKind> CuptiAdapter::KindsToEnable() const {
  std::vector<CUpti_ActivityKind> kinds;
  const uint32_t a = options_.activities;
  if (a & kActivityKernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (a & kActivityMemcpy) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (a & kActivityMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (a & kActivityRuntime) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (a & kActivityDriver) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (a & kActivitySync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (a & kActivityOverhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  // Off unless asked: it replaces the per-kernel records of graph launches
  // by one record per launch (docs/cupti.md section 3).
  if (a & kActivityGraph) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  return kinds;
}

bool CuptiAdapter::Start() {
  CuptiAdapter* expected = nullptr;
  if (!g_adapter.compare_exchange_strong(expected, this)) {
    Log("CUPTI adapter already started in this process; ignoring a second one");
    return false;
  }
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {0};
  CUptiResult r = api_->Subscribe(&subscriber_, &CuptiAdapter::OnCallback, this, "tracer", other,
                                  sizeof(other));
  if (r != CUPTI_SUCCESS) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      Log(std::string("another CUPTI client is attached (") +
          (other[0] != '\0' ? other : "unnamed: Nsight Systems/Compute, cuda-gdb or a profiler") +
          "); GPU activity not traced, tracing NVTX only");
    } else if (r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED) {
      Log(std::string("CUPTI unavailable (no CUDA driver?): cuptiSubscribe: ") +
          api_->ResultString(r) + "; tracing NVTX only");
    } else {
      Log(std::string("CUPTI unavailable: cuptiSubscribe: ") + api_->ResultString(r) +
          "; tracing NVTX only");
    }
    subscriber_ = nullptr;
    g_adapter.store(nullptr);
    return false;
  }
  attached_ = true;

  // Our clock first: records made before it is registered would carry
  // CUPTI's default clock (cupti_activity.h, RegisterTimestampCallback).
  bool activity_ok = true;
  if ((r = api_->ActivityRegisterTimestampCallback(&CuptiAdapter::TimestampNs)) != CUPTI_SUCCESS) {
    Fail("cuptiActivityRegisterTimestampCallback", r,
         "GPU activity not traced (its clock would not match NVTX)");
    activity_ok = false;
  }
  if (activity_ok &&
      (r = api_->ActivityRegisterCallbacks(&CuptiAdapter::OnBufferRequested,
                                           &CuptiAdapter::OnBufferCompleted)) != CUPTI_SUCCESS) {
    Fail("cuptiActivityRegisterCallbacks", r, "GPU activity not traced");
    activity_ok = false;
  }
  if (activity_ok) {
    std::string failed_kinds;
    CUptiResult kind_error = CUPTI_SUCCESS;
    for (CUpti_ActivityKind kind : KindsToEnable()) {
      if ((r = api_->ActivityEnable(kind)) != CUPTI_SUCCESS) {
        if (!failed_kinds.empty()) failed_kinds += ",";
        failed_kinds += std::to_string(static_cast<int>(kind));
        kind_error = r;
        continue;
      }
      enabled_kinds_.push_back(kind);
    }
    if (!failed_kinds.empty()) {
      // One line for all kinds (CUpti_ActivityKind numbers): one cause.
      Fail("cuptiActivityEnable", kind_error,
           ("activity kinds " + failed_kinds + " not traced").c_str());
    }
    activity_enabled_ = !enabled_kinds_.empty();
  }

  int n = 0;
  const CbidEntry* entries = CbidEntries(&n);
  int failed = 0;
  CUptiResult first_error = CUPTI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    if (entries[i].domain == CUPTI_CB_DOMAIN_DRIVER_API && !options_.driver_callbacks &&
        entries[i].action == CbidAction::kLaunch) {
      continue;
    }
    r = api_->EnableCallback(1, subscriber_, entries[i].domain, entries[i].cbid);
    if (r != CUPTI_SUCCESS && failed++ == 0) first_error = r;
  }
  const CUpti_CallbackId resource_cbids[] = {
      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,   CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
      CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,           CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
      CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING};
  for (CUpti_CallbackId cbid : resource_cbids) {
    r = api_->EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (r != CUPTI_SUCCESS && failed++ == 0) first_error = r;
  }
  if (options_.on_context) {
    r = api_->EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                             CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (r != CUPTI_SUCCESS && failed++ == 0) first_error = r;
  }
  if (failed > 0) {
    // One line for the lot: the same cause fails them all.
    Fail("cuptiEnableCallback", first_error,
         (std::to_string(failed) + " callbacks not enabled; kernels of those calls are "
                                   "not attributed to NVTX ranges")
             .c_str());
  }
  return true;
}

void CuptiAdapter::Stop() {
  if (!attached_ || stopped_.exchange(true)) return;
  for (CUpti_ActivityKind kind : enabled_kinds_) {
    CUptiResult r = api_->ActivityDisable(kind);
    if (r != CUPTI_SUCCESS) {
      Fail("cuptiActivityDisable", r, "continuing shutdown");
      break;
    }
  }
  if (activity_enabled_) {
    // Forced: also the buffers whose records are not all complete; no
    // automatic flush at exit can be relied on (docs/cupti.md section 4). Work still
    // queued or running comes back with end = 0: the decoder counts what was
    // launched inside the window as dropped.cupti_unfinished_at_flush.
    // Waiting for it is not possible from here: CUPTI offers no way to know
    // what is still in flight, and the tracer must not synchronise the
    // application's device at exit.
    decoder_.NoteForcedFlush();
    CUptiResult r = api_->ActivityFlushAll(kForcedFlush);
    if (r != CUPTI_SUCCESS) Fail("cuptiActivityFlushAll", r, "records still in CUPTI are lost");
  }
}

void CuptiAdapter::FlushFromCallback(bool forced) {
  if (!activity_enabled_ || stopped_.load(std::memory_order_relaxed)) return;
  // Completed buffers come back through OnBufferCompleted on this thread,
  // which only queues them: no re-entry into CUPTI, no lock held across.
  if (forced) decoder_.NoteForcedFlush();
  CUptiResult r = api_->ActivityFlushAll(forced ? kForcedFlush : 0);
  if (r != CUPTI_SUCCESS) {
    Fail("cuptiActivityFlushAll", r, "records are flushed later");
    return;
  }
  if (options_.on_flushed) options_.on_flushed();
}

void CuptiAdapter::FlushCompleted() {
  if (!activity_enabled_ || stopped_.load(std::memory_order_relaxed)) return;
  CUptiResult r = api_->ActivityFlushAll(0);
  if (r != CUPTI_SUCCESS) {
    Fail("cuptiActivityFlushAll", r, "records are flushed later");
    return;
  }
  if (options_.on_flushed) options_.on_flushed();
}

void CuptiAdapter::Drain(RecordSink& sink, bool final) {
  completed_scratch_.clear();
  pool_.TakeCompleted(&completed_scratch_);
  for (const CuptiBufferPool::Completed& c : completed_scratch_) {
    if (c.valid_bytes > 0) decoder_.DecodeBuffer(c.buffer, c.valid_bytes, sink);
    pool_.Release(c.buffer);
  }
  if (activity_enabled_) {
    size_t dropped = 0;
    if (api_->ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      sink.Count("dropped.cupti_dropped", dropped);
    }
  }
  auto report = [&](const char* name, uint64_t now, uint64_t* seen) {
    if (now > *seen) {
      sink.Count(name, now - *seen);
      *seen = now;
    }
  };
  report("cupti_buffer_pool_exhausted", pool_.exhausted(), &reported_exhausted_);
  report("cupti_errors", errors_.load(std::memory_order_relaxed), &reported_errors_);
  report("cupti_callback_errors", callback_errors_.load(std::memory_order_relaxed),
         &reported_callback_errors_);
  report("cupti_foreign_buffers", pool_.foreign(), &reported_foreign_);
  if (final && pool_.outstanding() > 0) {
    sink.Count("cupti_buffers_not_returned", pool_.outstanding());
  }
}

uint64_t CUPTIAPI CuptiAdapter::TimestampNs() noexcept {
  return Guarded("CUPTI timestamp callback", [] { return NowNs(); });
}

void CUPTIAPI CuptiAdapter::OnBufferRequested(uint8_t** buffer, size_t* size,
                                              size_t* max_records) noexcept {
  // Declining (NULL) is safe since CUPTI API v27 (docs/cupti.md section 4): CUPTI drops
  // the records and counts them in cuptiActivityGetNumDroppedRecords. So it
  // is also what a failure leaves behind.
  *buffer = nullptr;
  *size = 0;
  if (max_records != nullptr) *max_records = 0;  // 0 = fill the buffer
  Guarded(
      "CUPTI buffer request", "GPU records of that buffer were dropped",
      [&] {
        CuptiAdapter* self = g_adapter.load(std::memory_order_acquire);
        if (self == nullptr) return;
        uint8_t* b = self->pool_.Acquire();
        if (b == nullptr) return;
        *buffer = b;
        *size = self->pool_.buffer_size();
      },
      []() noexcept {});
}

void CUPTIAPI CuptiAdapter::OnBufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                              size_t valid_size) noexcept {
  Guarded(
      "CUPTI buffer completion", "GPU records of that buffer were lost",
      [&] {
        CuptiAdapter* self = g_adapter.load(std::memory_order_acquire);
        if (self == nullptr) return;  // after teardown; the buffer is the pool's, freed with it
        self->pool_.Complete(buffer, valid_size);
      },
      []() noexcept {});
}

// The launch path outside the guard: nothing in it calls or allocates, so
// there is nothing to catch (the guard's frame and the dispatch through
// HandleApi were a third of its cost) and no register to save. It leaves
// the rare cases to HandleApi, which records the same event: a window
// change to follow, the thread's first event (its state is created, which
// may throw), a ring past its limit (counted, or the producer yields), a
// clock that is not the TSC.
// Inlined into OnCallback (its only caller): one call frame, not two.
__attribute__((always_inline)) inline bool CuptiAdapter::RecordLaunch(
    CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& data) noexcept {
  if (data.callbackSite != CUPTI_API_ENTER) return true;  // nothing at EXIT
  if (source_ != nullptr &&
      source_->active() != launches_see_open_.load(std::memory_order_relaxed)) {
    return false;
  }
  ThreadState* ts = internal::t_current.state;
  if (__builtin_expect(ts == nullptr || !FastTicksReady(), 0)) return false;
  const uint64_t range = ts->innermost_range_id();
  return ts->TryAppendOne([&](Event* e) noexcept {
    SetEventHead(e, EventType::kLaunch, /*domain=*/0, cbid,
                 static_cast<uint8_t>(domain == CUPTI_CB_DOMAIN_DRIVER_API ? ApiDomain::kDriver
                                                                           : ApiDomain::kRuntime));
    e->time = FastTicks();
    e->a = data.correlationId;
    e->b = range;
  });
}

void CUPTIAPI CuptiAdapter::OnCallback(void* userdata, CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid, const void* cbdata) noexcept {
  auto* self = static_cast<CuptiAdapter*>(userdata);
  if (self == nullptr || cbdata == nullptr) return;
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
      ActionFor(domain, cbid) == CbidAction::kLaunch &&
      self->RecordLaunch(domain, cbid, *static_cast<const CUpti_CallbackData*>(cbdata))) {
    return;
  }
  OnOtherCallback(self, domain, cbid, cbdata);
}

__attribute__((noinline)) void CuptiAdapter::OnOtherCallback(CuptiAdapter* self,
                                                             CUpti_CallbackDomain domain,
                                                             CUpti_CallbackId cbid,
                                                             const void* cbdata) noexcept {
  Guarded(
      "CUPTI callback", kNotTraced,
      [&] {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
          self->HandleApi(domain, cbid, *static_cast<const CUpti_CallbackData*>(cbdata));
        } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
          self->HandleResource(cbid, *static_cast<const CUpti_ResourceData*>(cbdata));
        }
      },
      // Counted in the trace (cupti_callback_errors) as well as logged once.
      [self]() noexcept { self->callback_errors_.fetch_add(1, std::memory_order_relaxed); });
}

void CuptiAdapter::HandleApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const CUpti_CallbackData& data) {
  const CbidAction action = ActionFor(domain, cbid);
  const bool enter = data.callbackSite == CUPTI_API_ENTER;
  switch (action) {
    case CbidAction::kLaunch:
    case CbidAction::kGraphLaunch: {
      if (!enter) return;
      // The hot path: two relaxed loads for the window, one thread-local
      // read, one clock read, one ring store.
      if (source_ != nullptr) FollowWindow(data.correlationId);
      ThreadState* ts = CurrentThreadState();
      if (ts == nullptr) return;
      Event e;
      e.type = EventType::kLaunch;
      e.flags = static_cast<uint8_t>(domain == CUPTI_CB_DOMAIN_DRIVER_API ? ApiDomain::kDriver
                                                                          : ApiDomain::kRuntime);
      e.name = cbid;
      e.time = NowTicks();
      e.a = data.correlationId;
      e.b = ts->innermost_range_id();
      ts->Append(e);
      if (action == CbidAction::kGraphLaunch && data.functionParams != nullptr) {
        // cudaGraphLaunch[_ptsz]_params and cuGraphLaunch[_ptsz]_params all
        // start with the CUgraphExec (generated_cuda*_meta.h).
        CUgraphExec exec = *static_cast<const CUgraphExec*>(data.functionParams);
        uint32_t exec_id = 0;
        if (exec != nullptr && api_->GetGraphExecId(exec, &exec_id) == CUPTI_SUCCESS) {
          Snapshot(exec_id, 0, e.b);
        }
      }
      return;
    }
    case CbidAction::kProfilerStart:
      // EXIT: launches after this call (higher ids) are inside.
      if (enter) return;
      ProfilerActive(true, data.correlationId + 1);
      return;
    case CbidAction::kProfilerStop:
      if (!enter) return;
      ProfilerActive(false, data.correlationId);
      // Not forced: a forced flush would hand back the window's ops still
      // queued or running with end = 0, and CUPTI never delivers those again
      // (docs/cupti.md section 4; pytorch/pytorch#195844). FlushAll(0) returns what is
      // complete now; the rest stays in CUPTI and arrives, complete, with a
      // later flush, and is kept because its launch was inside the window.
      FlushCompleted();
      return;
    case CbidAction::kDeviceReset:
      if (enter) FlushFromCallback();
      return;
    case CbidAction::kGraphExecUpdate:
      if (!enter) GraphExecUpdated(data);
      return;
    case CbidAction::kNone:
      return;
  }
}

void CuptiAdapter::ProfilerActive(bool on, uint32_t correlation_id) {
  if (source_ == &own_window_) own_window_.SetProfilerActive(on);
  if (options_.on_profiler_active) options_.on_profiler_active(on);
  // This thread's own launches after a start / before a stop are on the right
  // side even when it launches nothing in between.
  if (source_ != nullptr) FollowWindow(correlation_id);
}

void CuptiAdapter::LaunchSawChange(bool open, uint32_t correlation_id) {
  // Rare (once per transition). Several threads may get here for one
  // transition, or for two racing ones: under the lock, re-read, so that the
  // flag the launch path compares against always matches window_.
  std::lock_guard<std::mutex> lock(observe_mu_);
  open = source_->active();
  if (open == launches_see_open_.load(std::memory_order_relaxed)) return;
  launches_see_open_.store(open, std::memory_order_relaxed);
  if (open) {
    window_.OpenAtLaunch(correlation_id);
  } else {
    window_.CloseAtLaunch(correlation_id);
  }
}

void CuptiAdapter::OnCaptureWindowChange() noexcept {
  Guarded(
      "capture window change", "GPU records of calls other than launches may be misplaced",
      [&] {
        // Read and record under one lock, so that two transitions racing on
        // two threads leave the state of the later one.
        std::lock_guard<std::mutex> lock(observe_mu_);
        const uint64_t now = NowNs();
        if (source_->active()) {
          window_.Open(now);
        } else {
          window_.Close(now);
        }
      },
      [this]() noexcept { callback_errors_.fetch_add(1, std::memory_order_relaxed); });
}

void CuptiAdapter::Snapshot(uint64_t graph_id, uint64_t node_id, uint64_t range_id) {
  ThreadState* ts = CurrentThreadState();
  if (ts == nullptr) return;
  Event events[2];
  events[0].type = EventType::kGraphNode;
  events[0].time = NowTicks();
  events[0].a = graph_id;
  events[0].b = range_id;
  events[1].type = EventType::kPayload;
  events[1].a = node_id;
  ts->Append(events, 2);
}

// CUDA graphs as CUPTI reports them, and what the snapshots are keyed by:
//  - cuptiGetGraphId gives "the unique ID of CUDA graph", cuptiGetGraphExecId
//    "the unique ID of executable CUDA graph", cuptiGetGraphNodeId "the
//    unique ID of the CUDA graph node" (cupti_activity.h). Graph and exec ids
//    do not overlap (Proton keeps both in one map).
//  - A GPU record's graphId is "the unique ID of the graph that launched this
//    kernel" / "that executed this memcpy|memset" (CUpti_ActivityKernel10,
//    Memcpy6, Memset4): the executable graph's id, the one
//    cuptiGetGraphExecId gives for the launched CUgraphExec (Proton matches
//    it so, "a misnomer confirmed by NVIDIA, actually it refers to
//    graphExecId"). Its graphNodeId is the node of that executable graph.
//  - cudaGraphInstantiate clones every node into the executable graph: for
//    each, GRAPHNODE_CREATED and GRAPHNODE_CLONED fire (Proton), the clone has
//    a new node id, and CUpti_GraphData.originalNode is "the original CUDA
//    graph node from which node is cloned" (cupti_callbacks.h). NVIDIA's
//    cuda_graphs_trace sample moves its per-node data to the clone's id there
//    and finds the kernel record's graphNodeId in it. Instantiating a graph
//    twice gives two execs with their own clones.
//  - Stream capture adds nodes to the capture graph from inside the captured
//    launch call: GRAPHNODE_CREATED fires then, as for cudaGraphAdd*Node.
// So: a node gets the range open when it was created; a clone gets its
// original's (not the one open around cudaGraphInstantiate: when CREATED for
// the clone comes first, the later CLONED snapshot wins, readers take the
// last snapshot before the launch); a node id identifies a node process-wide,
// so readers match node snapshots on the node id alone
// (analysis GraphSnapshotKey); the launch-time snapshot is keyed by the exec
// id, for nodes made before tracing began.
void CuptiAdapter::GraphNodeMade(CUpti_CallbackId cbid, const CUpti_GraphData& g) {
  ThreadState* ts = CurrentThreadState();
  uint64_t range = ts != nullptr ? ts->innermost_range_id() : 0;
  uint32_t graph_id = 0;
  uint64_t node_id = 0;
  if (api_->GetGraphId(g.graph, &graph_id) != CUPTI_SUCCESS ||
      api_->GetGraphNodeId(g.node, &node_id) != CUPTI_SUCCESS) {
    callback_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(graph_mu_);
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      uint64_t original = 0;
      if (g.originalNode != nullptr &&
          api_->GetGraphNodeId(g.originalNode, &original) == CUPTI_SUCCESS) {
        auto it = node_ranges_.find(original);
        if (it != node_ranges_.end()) range = it->second;
      }
      // The clone's executable graph: graphExec when CUPTI fills it in, else
      // the graph the clone sits in.
      uint32_t exec_id = graph_id;
      if (g.graphExec != nullptr) api_->GetGraphExecId(g.graphExec, &exec_id);
      exec_nodes_[exec_id].push_back(node_id);
    } else {
      // CLONED came first for this node: keep the original's range.
      if (node_ranges_.count(node_id) != 0) return;
      graph_nodes_[graph_id].push_back(node_id);
    }
    node_ranges_[node_id] = range;
  }
  Snapshot(graph_id, node_id, range);
}

// cudaGraphExecUpdate "updates the node parameters in the instantiated graph
// ... with the node parameters in a topologically identical graph"
// (cuda_runtime_api.h): the exec's nodes keep their ids but now run the new
// graph's work, so they take the ranges of the new graph's nodes. CUDA pairs
// nodes by topology and the order of the API calls that made them; pairing by
// creation order is that for graphs built or captured by the same code. When
// the node counts differ (nodes the tracer did not see), every node of the
// exec takes the range open around the update.
void CuptiAdapter::GraphExecUpdated(const CUpti_CallbackData& data) {
  if (data.functionParams == nullptr) return;
  // cudaGraphExecUpdate_v10020_params, cuGraphExecUpdate[_v2]_params: the
  // exec, then the graph (generated_cuda*_meta.h).
  struct ExecAndGraph {
    CUgraphExec exec;
    CUgraph graph;
  };
  const auto* params = static_cast<const ExecAndGraph*>(data.functionParams);
  // cudaSuccess / CUDA_SUCCESS only: a failed update changed nothing.
  if (data.functionReturnValue != nullptr &&
      *static_cast<const int*>(data.functionReturnValue) != 0) {
    return;
  }
  uint32_t exec_id = 0, graph_id = 0;
  if (params->exec == nullptr || params->graph == nullptr ||
      api_->GetGraphExecId(params->exec, &exec_id) != CUPTI_SUCCESS ||
      api_->GetGraphId(params->graph, &graph_id) != CUPTI_SUCCESS) {
    return;
  }
  ThreadState* ts = CurrentThreadState();
  const uint64_t here = ts != nullptr ? ts->innermost_range_id() : 0;
  std::vector<std::pair<uint64_t, uint64_t>> updated;  // clone, range
  {
    std::lock_guard<std::mutex> lock(graph_mu_);
    auto clones = exec_nodes_.find(exec_id);
    if (clones == exec_nodes_.end()) return;
    auto sources = graph_nodes_.find(graph_id);
    const bool paired =
        sources != graph_nodes_.end() && sources->second.size() == clones->second.size();
    for (size_t i = 0; i < clones->second.size(); ++i) {
      uint64_t range = here;
      if (paired) {
        auto it = node_ranges_.find(sources->second[i]);
        if (it != node_ranges_.end()) range = it->second;
      }
      node_ranges_[clones->second[i]] = range;
      updated.emplace_back(clones->second[i], range);
    }
  }
  for (const auto& [node, range] : updated) Snapshot(exec_id, node, range);
}

// A destroyed graph or exec takes its nodes' entries with it: a program that
// captures a new graph every step keeps a bounded map. (An exec's clones have
// their own entries, so destroying the graph it came from, as is common right
// after instantiation, loses nothing.)
void CuptiAdapter::GraphDestroyed(CUpti_CallbackId cbid, const CUpti_GraphData& g) {
  uint32_t id = 0;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING) {
    if (g.graph == nullptr || api_->GetGraphId(g.graph, &id) != CUPTI_SUCCESS) return;
  } else if (g.graphExec == nullptr || api_->GetGraphExecId(g.graphExec, &id) != CUPTI_SUCCESS) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(graph_mu_);
    auto drop = [&](std::unordered_map<uint32_t, std::vector<uint64_t>>& map) {
      auto it = map.find(id);
      if (it == map.end()) return;
      for (uint64_t node : it->second) node_ranges_.erase(node);
      map.erase(it);
    };
    // An exec's own graph may report the exec id (graph and exec ids never
    // overlap), so its clones' CREATED entries go with it as well.
    drop(graph_nodes_);
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) drop(exec_nodes_);
  }
}

size_t CuptiAdapter::graph_entries() {
  std::lock_guard<std::mutex> lock(graph_mu_);
  return node_ranges_.size() + graph_nodes_.size() + exec_nodes_.size();
}

void CuptiAdapter::HandleResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
      const bool created = cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED;
      if (options_.on_context) {
        uint32_t device = 0;
        if (api_->GetDeviceId(data.context, &device) == CUPTI_SUCCESS) {
          options_.on_context(created, device);
        }
      }
      if (!created) FlushFromCallback();
      return;
    }
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
      // The module's kernel names may be freed once this returns and their
      // addresses reused by a later module (the rule: CuptiDecoder::
      // ModuleUnloaded). Its records, done by now, are flushed into the pool
      // (not forced: other modules' kernels may still be running), and the
      // names of every buffer not yet decoded are copied here, on this
      // thread, while they are intact; the writer is never waited for.
      const uint64_t now = NowNs();
      if (activity_enabled_ && !stopped_.load(std::memory_order_relaxed)) {
        FlushFromCallback(/*forced=*/false);
      }
      std::vector<CuptiBufferPool::Completed> undecoded;
      pool_.PinUndecoded(&undecoded);
      try {
        decoder_.ModuleUnloaded(now, undecoded);
      } catch (...) {
        pool_.Unpin(undecoded);
        throw;
      }
      pool_.Unpin(undecoded);
      return;
    }
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
      const auto* g = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
      if (g != nullptr) GraphNodeMade(cbid, *g);
      return;
    }
    case CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING:
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: {
      const auto* g = static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
      if (g != nullptr) GraphDestroyed(cbid, *g);
      return;
    }
    default:
      return;
  }
}

}  // namespace tracer
