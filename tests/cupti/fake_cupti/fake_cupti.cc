// The fake libcupti: the subset of the CUPTI 13.0 C API that the tracer
// calls, exported under the real names and built against the real headers'
// structs, plus the control API of fake_cupti_control.h. It reproduces what
// a client of the real CUPTI can observe (docs/cupti.md):
//  - one process-wide correlation counter shared by runtime and driver calls;
//    ENTER and EXIT callbacks on the calling thread with the same id;
//  - per-thread activity buffers for API records (requested on the calling
//    thread), GPU records in separate buffers requested, filled and completed
//    on the fake's worker thread, so the records of one launch arrive in
//    different buffers; completed GPU work is written in end-time order, so
//    kernels of different streams arrive out of launch order;
//  - timestamps from the registered timestamp callback, passed through as is;
//  - cuptiActivityFlushAll(0) returns the buffers of completed records only;
//    FLUSH_FORCED also returns work still running, with end = 0, and work
//    still queued, with start = end = 0 (inferred); neither is ever
//    re-delivered (pytorch/pytorch#195844);
//  - a lagging GPU on request (fakeCuptiSetGpu, "cupti gpu" in scenarios):
//    work starts a launch latency after its launch call and behind the
//    stream's earlier work, completes when the clock passes its end (a
//    device thread), launches block while the queue is full, and a device
//    synchronize waits for the work; without it, work completes only at a
//    synchronize, as if the GPU ran infinitely late;
//  - a declined buffer (NULL) drops the record, counted by
//    cuptiActivityGetNumDroppedRecords (which resets the count);
//  - one subscriber only; any call can be made to fail on demand.
#include <cupti.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/cupti/fake_cupti/activity_buffer.h"
#include "tests/cupti/fake_cupti/fake_cupti_control.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake_cupti {
namespace {

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// Fake CUDA objects behind the opaque handles CUPTI hands its client.
// Ids as CUDA gives them (cupti_adapter.cc states the rule and its sources):
// graphs and executable graphs draw ids from one counter, so a graph and an
// exec made from it differ, and instantiating twice gives two execs; every
// node, cloned ones included, has its own id from one process-wide counter.
// An exec's nodes sit in the exec's own graph, whose cuptiGetGraphId is the
// exec id (what Proton relies on), unless SetDistinctExecGraphIds asks for
// another id to show a client does not depend on it.
struct FakeNode {
  uint64_t id;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL;
  std::string kernel;
  uint64_t duration;
  uint64_t bytes = 0;
  uint32_t value = 0;
  int copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
};
struct FakeGraph {
  uint32_t id;        // cuptiGetGraphExecId for an exec, cuptiGetGraphId otherwise
  uint32_t graph_id;  // cuptiGetGraphId
  bool exec;
  std::vector<std::unique_ptr<FakeNode>> nodes;
};

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;  // usable bytes (client size capped by the buffer limit)
  size_t used = 0;
};

// A GPU operation launched and not yet written as a record.
struct GpuOp {
  std::vector<uint8_t> record;  // the activity record, end filled at completion
  uint64_t start = 0, end = 0;
  uint64_t seq = 0;
};

struct Job {
  enum Type { kCompleteOps, kCompleteBuffer, kFlush } type;
  std::vector<GpuOp> ops;
  Buffer buffer;
  bool forced = false;
  uint64_t id = 0;
};

class Engine {
 public:
  static Engine& Get() {
    // Leaked so that a call after the teardown below reaches the check in
    // INJECT and fails loudly, never undefined behaviour in the fake itself.
    static Engine* engine = new Engine();
    return *engine;
  }

  // ---- error injection ---------------------------------------------------
  CUptiResult Injected(const char* fn) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = errors_.find(fn);
    return it == errors_.end() ? CUPTI_SUCCESS : static_cast<CUptiResult>(it->second);
  }
  void SetError(const char* fn, int result) {
    std::lock_guard<std::mutex> lock(mu_);
    if (result == 0) {
      errors_.erase(fn);
    } else {
      errors_[fn] = result;
    }
  }
  void SetOtherSubscriber(const char* name) {
    std::lock_guard<std::mutex> lock(mu_);
    other_subscriber_ = name != nullptr ? name : "";
  }
  void SetBufferLimit(size_t bytes) { buffer_limit_ = bytes; }
  void SetInOrder(bool v) { in_order_ = v; }
  void SetGpu(uint64_t launch_latency_ns, size_t queue_depth) {
    std::lock_guard<std::mutex> lock(mu_);
    launch_latency_ = launch_latency_ns;
    queue_depth_ = queue_depth;
    if (!realtime_) {
      realtime_ = true;
      std::thread([this] { DeviceLoop(); }).detach();
    }
  }

  // ---- subscriber and callbacks ------------------------------------------
  CUptiResult Subscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* userdata,
                        CUpti_SubscriberParams* params) {
    if (sub == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(mu_);
    if (subscribed_ || !other_subscriber_.empty()) {
      const std::string other = subscribed_ ? subscriber_name_ : other_subscriber_;
      if (params != nullptr && params->oldSubscriberName != nullptr &&
          params->oldSubscriberSize > 0) {
        std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", other.c_str());
      }
      return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    subscribed_ = true;
    callback_ = cb;
    userdata_ = userdata;
    subscriber_name_ =
        std::string("CUPTI for ") +
        (params != nullptr && params->subscriberName ? params->subscriberName : "unnamed");
    *sub = reinterpret_cast<CUpti_SubscriberHandle>(&subscribed_);
    return CUPTI_SUCCESS;
  }
  CUptiResult Unsubscribe(CUpti_SubscriberHandle sub) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Valid(sub)) return CUPTI_ERROR_INVALID_PARAMETER;
    subscribed_ = false;
    callback_ = nullptr;
    enabled_callbacks_.clear();
    enabled_domains_.clear();
    return CUPTI_SUCCESS;
  }
  CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Valid(sub) || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    if (enable) {
      enabled_callbacks_.insert({domain, cbid});
    } else {
      enabled_callbacks_.erase({domain, cbid});
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle sub,
                           CUpti_CallbackDomain domain) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Valid(sub) || domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    if (enable) {
      enabled_domains_.insert(domain);
    } else {
      enabled_domains_.erase(domain);
    }
    return CUPTI_SUCCESS;
  }

  // ---- activity API -------------------------------------------------------
  CUptiResult RegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                CUpti_BuffersCallbackCompleteFunc done) {
    if (req == nullptr || done == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(mu_);
    request_ = req;
    complete_ = done;
    if (!worker_started_) {
      worker_started_ = true;
      std::thread([this] { WorkerLoop(); }).detach();
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult RegisterTimestamp(CUpti_TimestampCallbackFunc f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!enabled_kinds_.empty()) {
      // Must come before any kind is enabled (cupti_activity.h); the real
      // library's behaviour otherwise is undocumented: refuse loudly.
      return CUPTI_ERROR_INVALID_OPERATION;
    }
    timestamp_ = f;
    return CUPTI_SUCCESS;
  }
  CUptiResult Enable(CUpti_ActivityKind kind, bool on) {
    if (RecordSize(kind) == 0 && kind != CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API) {
      return CUPTI_ERROR_INVALID_KIND;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (on) {
      enabled_kinds_.insert(kind);
    } else {
      enabled_kinds_.erase(kind);
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult GetNumDropped(size_t* n) {
    if (n == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lock(mu_);
    *n = dropped_;
    dropped_ = 0;
    return CUPTI_SUCCESS;
  }
  void AddDropped(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    dropped_ += n;
    stats_.records_dropped += n;
  }

  CUptiResult FlushAll(uint32_t flag) {
    uint64_t id;
    const uint64_t now = Now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (request_ == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
      Job job;
      job.type = Job::kFlush;
      job.forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
      if (job.forced && !pending_.empty()) {
        // Work still running: its records come back incomplete (end = 0);
        // work still queued has no timestamp at all (inferred: the GPU
        // writes start and end; docs/cupti.md section 4 reports end = 0 for running
        // work only).
        Job ops;
        ops.type = Job::kCompleteOps;
        ops.ops.swap(pending_);
        for (GpuOp& op : ops.ops) {
          if (op.start > now) op.start = 0;
          op.end = 0;
        }
        Post(std::move(ops));
        queue_cv_.notify_all();
      }
      // The API records of every thread are complete: hand their buffers over.
      for (auto& [tid, buf] : thread_buffers_) {
        if (buf.used > 0) {
          Job b;
          b.type = Job::kCompleteBuffer;
          b.buffer = buf;
          Post(std::move(b));
          buf = Buffer();
        }
      }
      id = Post(std::move(job));
    }
    // Waits for the worker; bounded so a wedged client cannot hang the host.
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return done_id_ >= id; });
    return CUPTI_SUCCESS;
  }

  uint64_t Now() {
    CUpti_TimestampCallbackFunc f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      f = timestamp_;
    }
    return f != nullptr ? f() : RealtimeNs();
  }

  // ---- the CUDA work the control API plays --------------------------------
  struct ApiCall {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    const char* function;
    const char* symbol = nullptr;
    const void* params = nullptr;
    const void* return_value = nullptr;  // EXIT only
    uint32_t correlation = 0;
    uint64_t start = 0;
  };

  void Enter(ApiCall* call) {
    call->correlation = next_correlation_.fetch_add(1) + 1;
    call->start = Now();
    Callback(*call, CUPTI_API_ENTER);
  }
  // Replay (tests/cupti/replay): an ENTER with a recorded correlation id.
  void EnterRecorded(ApiCall* call, uint32_t correlation) {
    call->correlation = correlation;
    call->start = Now();
    Callback(*call, CUPTI_API_ENTER);
  }
  // Replay: a GPU op with its recorded start and end, kept as they are.
  void QueueRecorded(std::vector<uint8_t> record, uint64_t start, uint64_t end) {
    std::lock_guard<std::mutex> lock(mu_);
    GpuOp op;
    op.start = start;
    op.end = end;
    op.seq = ++op_seq_;
    op.record = std::move(record);
    pending_.push_back(std::move(op));
    if (pending_.size() >= 4096) {
      Job job;
      job.type = Job::kCompleteOps;
      job.ops.swap(pending_);
      Post(std::move(job));
    }
  }

  void Exit(const ApiCall& call, uint64_t min_duration = 0) {
    Callback(call, CUPTI_API_EXIT);
    uint64_t end = std::max(Now(), call.start + min_duration);
    const bool driver = call.domain == CUPTI_CB_DOMAIN_DRIVER_API;
    if (!KindEnabled(driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME)) return;
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof(a));
    a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = call.cbid;
    a.start = call.start;
    a.end = end;
    a.processId = static_cast<uint32_t>(getpid());
    a.threadId = static_cast<uint32_t>(pthread_self());
    a.correlationId = call.correlation;
    WriteThreadRecord(&a, sizeof(a));
  }

  void Resource(CUpti_CallbackId cbid, void* descriptor, CUcontext context = nullptr) {
    CUpti_ResourceData data;
    std::memset(&data, 0, sizeof(data));
    data.context = context != nullptr ? context : FakeContext();
    data.resourceDescriptor = descriptor;
    InvokeCallback(CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
  }

  // Queues a GPU op on `stream`: it starts after the launch call and after
  // the stream's previous op (streams are in-order queues).
  void QueueOp(std::vector<uint8_t> record, uint32_t stream, uint64_t launch_time,
               uint64_t duration, uint64_t* start_out = nullptr) {
    std::vector<GpuOp> overflow;
    bool waited = false;
    {
      // A lagging GPU's launch queue is bounded: the launch call blocks
      // until the device has finished enough work.
      std::unique_lock<std::mutex> lock(mu_);
      while (realtime_ && queue_depth_ > 0 && pending_.size() >= queue_depth_) {
        queue_cv_.wait(lock);
        waited = true;
      }
    }
    if (waited) launch_time = std::max(launch_time, Now());
    {
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t& stream_end = stream_end_[stream];
      GpuOp op;
      op.start = std::max(launch_time + launch_latency_, stream_end + 200);
      op.end = op.start + std::max<uint64_t>(duration, 1);
      stream_end = op.end;
      op.seq = ++op_seq_;
      op.record = std::move(record);
      if (start_out != nullptr) *start_out = op.start;
      pending_.push_back(std::move(op));
      if (realtime_) {
        device_cv_.notify_all();
      } else if (pending_.size() >= 4096) {
        // The GPU keeps pace with a launch storm: bound what is in flight.
        overflow.swap(pending_);
      }
      if (!overflow.empty()) {
        Job job;
        job.type = Job::kCompleteOps;
        job.ops.swap(overflow);
        Post(std::move(job));
      }
    }
  }
  void CompleteAllOps() {
    uint64_t last_end = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (realtime_) {
        for (const GpuOp& op : pending_) last_end = std::max(last_end, op.end);
      }
    }
    // A lagging GPU: the synchronize returns when the work is done.
    for (uint64_t now = Now(); now < last_end; now = Now()) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(last_end - now));
    }
    std::lock_guard<std::mutex> lock(mu_);
    queue_cv_.notify_all();
    if (pending_.empty()) return;
    Job job;
    job.type = Job::kCompleteOps;
    job.ops.swap(pending_);
    Post(std::move(job));
  }

  bool KindEnabled(CUpti_ActivityKind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    return enabled_kinds_.count(kind) != 0;
  }

  FakeGraph* NewGraph(bool exec) {
    std::lock_guard<std::mutex> lock(mu_);
    graphs_.push_back(std::make_unique<FakeGraph>());
    FakeGraph* g = graphs_.back().get();
    g->id = ++graph_ids_;
    g->graph_id = exec && distinct_exec_graph_ids_ ? ++graph_ids_ : g->id;
    g->exec = exec;
    return g;
  }
  void SetDistinctExecGraphIds(bool v) {
    std::lock_guard<std::mutex> lock(mu_);
    distinct_exec_graph_ids_ = v;
  }
  bool DistinctExecGraphIds() {
    std::lock_guard<std::mutex> lock(mu_);
    return distinct_exec_graph_ids_;
  }
  // Stream capture: the graph a capturing stream adds nodes to, or null.
  FakeGraph* Capturing(uint32_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = capturing_.find(stream);
    return it == capturing_.end() ? nullptr : it->second;
  }
  void SetCapturing(uint32_t stream, FakeGraph* g) {
    std::lock_guard<std::mutex> lock(mu_);
    if (g == nullptr) {
      capturing_.erase(stream);
    } else {
      capturing_[stream] = g;
    }
  }
  FakeGraph* FindGraph(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& g : graphs_) {
      if (reinterpret_cast<uint64_t>(g.get()) == handle) return g.get();
    }
    return nullptr;
  }
  uint64_t NextNodeId() { return ++node_ids_; }

  CUcontext FakeContext() { return reinterpret_cast<CUcontext>(&context_tag_); }

  void Stats(FakeCuptiStats* out) {
    std::lock_guard<std::mutex> lock(mu_);
    *out = stats_;
    out->pending_ops = pending_.size();
  }

  void WriteThreadRecordPublic(const void* record, size_t size) { WriteThreadRecord(record, size); }

 private:
  Engine() {
    if (const char* e = std::getenv("FAKE_CUPTI_ERRORS")) {
      std::string spec(e);
      size_t pos = 0;
      while (pos < spec.size()) {
        size_t comma = spec.find(',', pos);
        std::string item =
            spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        size_t eq = item.find('=');
        if (eq != std::string::npos) errors_[item.substr(0, eq)] = std::atoi(item.c_str() + eq + 1);
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    }
    if (const char* o = std::getenv("FAKE_CUPTI_OTHER_SUBSCRIBER")) other_subscriber_ = o;
    if (const char* l = std::getenv("FAKE_CUPTI_BUFFER_LIMIT")) buffer_limit_ = std::atoll(l);
  }

  bool Valid(CUpti_SubscriberHandle sub) const {
    return subscribed_ &&
           sub == reinterpret_cast<CUpti_SubscriberHandle>(const_cast<bool*>(&subscribed_));
  }

  void Callback(const ApiCall& call, CUpti_ApiCallbackSite site) {
    uint64_t correlation_data = 0;
    CUpti_CallbackData data;
    std::memset(&data, 0, sizeof(data));
    data.callbackSite = site;
    data.functionName = call.function;
    data.functionParams = call.params;
    data.symbolName = call.symbol;
    data.context = FakeContext();
    data.contextUid = 1;
    data.correlationData = &correlation_data;
    data.correlationId = call.correlation;
    if (site == CUPTI_API_EXIT) data.functionReturnValue = const_cast<void*>(call.return_value);
    InvokeCallback(call.domain, call.cbid, &data);
  }

  void InvokeCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
    CUpti_CallbackFunc cb = nullptr;
    void* userdata = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!subscribed_ || callback_ == nullptr) return;
      if (enabled_domains_.count(domain) == 0 && enabled_callbacks_.count({domain, cbid}) == 0) {
        return;
      }
      cb = callback_;
      userdata = userdata_;
      ++stats_.callbacks_invoked;
    }
    // Never under our lock: the client may call back into CUPTI (FlushAll).
    cb(userdata, domain, cbid, data);
  }

  // Asks the client for a buffer; called without the lock held.
  Buffer RequestBuffer() {
    CUpti_BuffersCallbackRequestFunc req;
    {
      std::lock_guard<std::mutex> lock(mu_);
      req = request_;
      ++stats_.buffers_requested;
    }
    Buffer b;
    if (req == nullptr) return b;
    size_t max_records = 0;
    req(&b.data, &b.size, &max_records);
    if (b.data == nullptr || b.size == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.buffers_declined;
      return Buffer();
    }
    if (buffer_limit_ > 0) b.size = std::min<size_t>(b.size, buffer_limit_.load());
    return b;
  }

  // CPU-side records (API, synchronization) go to the calling thread's buffer.
  void WriteThreadRecord(const void* record, size_t size) {
    const uint64_t tid = static_cast<uint64_t>(pthread_self());
    for (int attempt = 0; attempt < 2; ++attempt) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        Buffer& buf = thread_buffers_[tid];
        if (buf.data != nullptr && buf.used + size <= buf.size) {
          std::memcpy(buf.data + buf.used, record, size);
          buf.used += size;
          ++stats_.records_written;
          return;
        }
        if (buf.data != nullptr) {  // full: the worker completes it
          Job job;
          job.type = Job::kCompleteBuffer;
          job.buffer = buf;
          Post(std::move(job));
          buf = Buffer();
        }
      }
      // Per-thread buffers are requested by the producing thread.
      Buffer fresh = RequestBuffer();
      std::lock_guard<std::mutex> lock(mu_);
      if (fresh.data == nullptr) {
        ++dropped_;
        ++stats_.records_dropped;
        return;
      }
      thread_buffers_[tid] = fresh;
    }
  }

  // ---- worker thread --------------------------------------------------------
  uint64_t Post(Job job) {  // mu_ held
    job.id = ++posted_id_;
    jobs_.push_back(std::move(job));
    work_cv_.notify_one();
    return posted_id_;
  }

  void WorkerLoop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      switch (job.type) {
        case Job::kCompleteOps:
          WriteGpuRecords(&job.ops);
          break;
        case Job::kCompleteBuffer:
          Complete(job.buffer);
          break;
        case Job::kFlush:
          if (device_buffer_.used > 0 || job.forced) {
            Complete(device_buffer_);
            device_buffer_ = Buffer();
          }
          break;
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_id_ = job.id;
      done_cv_.notify_all();
    }
  }

  // The lagging GPU (SetGpu): completes pending work whose end the clock
  // has passed, in end order, and wakes launches waiting for queue space.
  void DeviceLoop() {
    for (;;) {
      const uint64_t now = Now();
      std::unique_lock<std::mutex> lock(mu_);
      std::vector<GpuOp> done, running;
      uint64_t next = UINT64_MAX;
      for (GpuOp& op : pending_) {
        if (op.end <= now) {
          done.push_back(std::move(op));
        } else {
          next = std::min(next, op.end);
          running.push_back(std::move(op));
        }
      }
      pending_.swap(running);
      if (!done.empty()) {
        Job job;
        job.type = Job::kCompleteOps;
        job.ops.swap(done);
        Post(std::move(job));
        queue_cv_.notify_all();
      }
      const uint64_t wait_ns =
          next == UINT64_MAX ? 50000000 : std::min<uint64_t>(next - now, 50000000);
      device_cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
    }
  }

  void WriteGpuRecords(std::vector<GpuOp>* ops) {
    if (!in_order_) {
      // The GPU finishes work of different streams in end-time order, not in
      // launch order.
      std::stable_sort(ops->begin(), ops->end(),
                       [](const GpuOp& a, const GpuOp& b) { return a.end < b.end; });
    }
    for (GpuOp& op : *ops) {
      PatchTimes(&op);
      if (device_buffer_.data != nullptr &&
          device_buffer_.used + op.record.size() > device_buffer_.size) {
        Complete(device_buffer_);
        device_buffer_ = Buffer();
      }
      if (device_buffer_.data == nullptr) device_buffer_ = RequestBuffer();
      if (device_buffer_.data == nullptr ||
          device_buffer_.used + op.record.size() > device_buffer_.size) {
        std::lock_guard<std::mutex> lock(mu_);
        ++dropped_;
        ++stats_.records_dropped;
        continue;
      }
      std::memcpy(device_buffer_.data + device_buffer_.used, op.record.data(), op.record.size());
      device_buffer_.used += op.record.size();
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.records_written;
    }
  }

  static void PatchTimes(GpuOp* op) {
    uint32_t kind;
    std::memcpy(&kind, op->record.data(), sizeof(kind));
    auto patch = [&](auto* rec) {
      rec->start = op->start;
      rec->end = op->end;
    };
    uint8_t* p = op->record.data();
    switch (kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(p);
        patch(k);
        k->completed = op->end;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        patch(reinterpret_cast<CUpti_ActivityMemcpy6*>(p));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        patch(reinterpret_cast<CUpti_ActivityMemset4*>(p));
        break;
      case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
        patch(reinterpret_cast<CUpti_ActivityGraphTrace2*>(p));
        break;
      default:
        break;
    }
  }

  void Complete(const Buffer& b) {
    if (b.data == nullptr) return;
    CUpti_BuffersCallbackCompleteFunc done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = complete_;
      ++stats_.buffers_completed;
    }
    // ctx is always NULL and streamId deprecated (cupti_activity.h).
    if (done != nullptr) done(nullptr, 0, b.data, b.size, b.used);
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::map<std::string, int> errors_;
  std::string other_subscriber_;
  std::atomic<size_t> buffer_limit_{0};
  std::atomic<bool> in_order_{false};
  // The lagging GPU (under mu_): off = work completes only when synchronised.
  bool realtime_ = false;
  uint64_t launch_latency_ = 1000;
  size_t queue_depth_ = 0;  // 0 = unbounded
  std::condition_variable device_cv_, queue_cv_;
  bool subscribed_ = false;
  std::string subscriber_name_;
  CUpti_CallbackFunc callback_ = nullptr;
  void* userdata_ = nullptr;
  std::set<std::pair<int, uint32_t>> enabled_callbacks_;
  std::set<int> enabled_domains_;
  CUpti_BuffersCallbackRequestFunc request_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_ = nullptr;
  CUpti_TimestampCallbackFunc timestamp_ = nullptr;
  std::set<int> enabled_kinds_;
  std::atomic<uint32_t> next_correlation_{0};
  size_t dropped_ = 0;
  std::map<uint64_t, Buffer> thread_buffers_;
  Buffer device_buffer_;  // worker thread only
  std::vector<GpuOp> pending_;
  std::map<uint32_t, uint64_t> stream_end_;
  uint64_t op_seq_ = 0;
  std::deque<Job> jobs_;
  uint64_t posted_id_ = 0, done_id_ = 0;
  bool worker_started_ = false;
  std::vector<std::unique_ptr<FakeGraph>> graphs_;
  uint32_t graph_ids_ = 0;
  bool distinct_exec_graph_ids_ = false;
  std::map<uint32_t, FakeGraph*> capturing_;
  std::atomic<uint64_t> node_ids_{0};
  int context_tag_ = 0;
  FakeCuptiStats stats_{};
};

Engine& E() { return Engine::Get(); }

// Real libcupti 13 keeps its state in C++ statics that are destroyed at exit,
// in reverse order of registration along with the atexit handlers. On an H100
// (driver 580, libcupti 2025.3.1) a tool whose atexit handler was registered
// before libcupti built that state called cuptiActivityDisable after the
// teardown and died with SIGSEGV. The fake registers its teardown when a
// client subscribes (where the real state is built at the latest) and fails
// the same way when an entry point is called after it, with a line saying
// why.
std::atomic<bool> g_torn_down{false};

void TearDownAtExit() { g_torn_down.store(true, std::memory_order_release); }

void RegisterTeardownOnce() {
  static const bool registered = (std::atexit(&TearDownAtExit), true);
  (void)registered;
}

[[noreturn]] void CalledAfterTeardown(const char* fn) {
  std::fprintf(stderr,
               "fake_cupti: %s called after libcupti's exit-time teardown (real libcupti "
               "crashes here)\n",
               fn);
  std::fflush(stderr);
  std::signal(SIGSEGV, SIG_DFL);
  std::raise(SIGSEGV);
  std::_Exit(139);
}

#define INJECT(fn)                                                             \
  do {                                                                         \
    if (g_torn_down.load(std::memory_order_acquire)) CalledAfterTeardown(#fn); \
    CUptiResult injected_ = E().Injected(#fn);                                 \
    if (injected_ != CUPTI_SUCCESS) return injected_;                          \
  } while (0)

struct CbidName {
  int domain;
  uint32_t cbid;
  const char* name;
};
const CbidName kNames[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel_v7000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 505, "__cudaLaunchKernel_v13000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 506, "__cudaLaunchKernel_ptsz_v13000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 41, "cudaMemcpyAsync_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 31, "cudaMemcpy_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 51, "cudaMemsetAsync_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 131, "cudaStreamSynchronize_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 164, "cudaDeviceReset_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 165, "cudaDeviceSynchronize_v3020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 171, "cudaProfilerStart_v4000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 172, "cudaProfilerStop_v4000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 286, "cudaGraphCreate_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 289, "cudaGraphAddKernelNode_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 310, "cudaGraphInstantiate_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 311, "cudaGraphLaunch_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 290, "cudaGraphAddMemcpyNode_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 293, "cudaGraphAddMemsetNode_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 315, "cudaStreamBeginCapture_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 319, "cudaStreamEndCapture_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 335, "cudaGraphExecUpdate_v10020"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 313, "cudaGraphExecDestroy_v10000"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, 314, "cudaGraphDestroy_v10000"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 22, "cuModuleUnload"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 652, "cuLaunchKernelEx"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 307, "cuLaunchKernel"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 306, "cuMemcpyAsync"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 216, "cuMemsetD8Async"},
    {CUPTI_CB_DOMAIN_DRIVER_API, 514, "cuGraphLaunch"},
};

// Names registered by a replay (fakeCuptiReplaySetCallbackName); they win
// over the built-in table.
std::mutex& ExtraNamesMu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::map<std::pair<int, uint32_t>, std::string>& ExtraNames() {
  static auto* names = new std::map<std::pair<int, uint32_t>, std::string>();
  return *names;
}

const char* CallbackName(int domain, uint32_t cbid) {
  {
    std::lock_guard<std::mutex> lock(ExtraNamesMu());
    auto it = ExtraNames().find({domain, cbid});
    if (it != ExtraNames().end()) return it->second.c_str();
  }
  for (const CbidName& n : kNames) {
    if (n.domain == domain && n.cbid == cbid) return n.name;
  }
  return nullptr;
}

template <typename T>
std::vector<uint8_t> Bytes(const T& r) {
  std::vector<uint8_t> v(sizeof(T));
  std::memcpy(v.data(), &r, sizeof(T));
  return v;
}

// Kernel names live as long as the process, like CUPTI's shared strings.
const char* StableName(const char* name) {
  static std::mutex mu;
  static std::set<std::string>* names = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return names->insert(name != nullptr ? name : "").first->c_str();
}

// Loaded modules: each holds its kernel's name, which kernel records point
// to. A slot freed by an unload is taken by the next load, so the next
// module's name sits at the same address (what a freed and reused allocation
// gives). Slots are never released to the heap: a late reader sees the new
// name, never freed memory.
struct ModuleSlot {
  char name[256] = {0};
  uint32_t id = 0;  // 0 = free
};
constexpr size_t kModuleSlots = 16;
std::mutex& ModuleMu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
ModuleSlot* ModuleSlots() {
  static ModuleSlot* slots = new ModuleSlot[kModuleSlots];
  return slots;
}
uint64_t LoadModule(const char* kernel) {
  std::lock_guard<std::mutex> lock(ModuleMu());
  static uint32_t next_id = 0;
  for (size_t i = 0; i < kModuleSlots; ++i) {
    ModuleSlot& m = ModuleSlots()[i];
    if (m.id != 0) continue;
    m.id = ++next_id;
    std::snprintf(m.name, sizeof(m.name), "%s", kernel);
    return i + 1;
  }
  return 0;
}
ModuleSlot* FindModule(uint64_t module) {
  if (module == 0 || module > kModuleSlots) return nullptr;
  ModuleSlot* m = &ModuleSlots()[module - 1];
  return m->id != 0 ? m : nullptr;
}
uint32_t ModuleId(uint64_t module) {
  std::lock_guard<std::mutex> lock(ModuleMu());
  ModuleSlot* m = FindModule(module);
  return m != nullptr ? m->id : 0;
}
const char* ModuleName(uint64_t module) {
  std::lock_guard<std::mutex> lock(ModuleMu());
  ModuleSlot* m = FindModule(module);
  return m != nullptr ? m->name : nullptr;
}
void FreeModule(uint64_t module) {
  std::lock_guard<std::mutex> lock(ModuleMu());
  ModuleSlot* m = FindModule(module);
  if (m != nullptr) m->id = 0;
}

}  // namespace
}  // namespace fake_cupti

using fake_cupti::CalledAfterTeardown;
using fake_cupti::E;
using fake_cupti::g_torn_down;
using fake_cupti::RegisterTeardownOnce;

// ============================== CUPTI C API ==================================

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  INJECT(cuptiGetVersion);
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc cb,
                                       void* userdata) {
  INJECT(cuptiSubscribe);
  RegisterTeardownOnce();
  return E().Subscribe(s, cb, userdata, nullptr);
}
FAKE_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* s, CUpti_CallbackFunc cb,
                                          void* userdata, CUpti_SubscriberParams* params) {
  INJECT(cuptiSubscribe_v2);
  INJECT(cuptiSubscribe);  // tests name either entry point
  if (params != nullptr && params->structSize != CUpti_SubscriberParams_STRUCT_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  RegisterTeardownOnce();
  return E().Subscribe(s, cb, userdata, params);
}
FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
  INJECT(cuptiUnsubscribe);
  return E().Unsubscribe(s);
}
FAKE_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s,
                                            CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  INJECT(cuptiEnableCallback);
  return E().EnableCallback(enable, s, d, cbid);
}
FAKE_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s,
                                          CUpti_CallbackDomain d) {
  INJECT(cuptiEnableDomain);
  return E().EnableDomain(enable, s, d);
}
FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                       CUpti_BuffersCallbackCompleteFunc done) {
  INJECT(cuptiActivityRegisterCallbacks);
  return E().RegisterCallbacks(req, done);
}
FAKE_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  INJECT(cuptiActivityRegisterTimestampCallback);
  return E().RegisterTimestamp(f);
}
FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  INJECT(cuptiActivityEnable);
  return E().Enable(kind, true);
}
FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  INJECT(cuptiActivityDisable);
  return E().Enable(kind, false);
}
FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  INJECT(cuptiActivityFlushAll);
  return E().FlushAll(flag);
}
FAKE_EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t) {
  INJECT(cuptiActivityFlushPeriod);
  return CUPTI_SUCCESS;
}
namespace fake_cupti {
namespace {
// FAKE_CUPTI_STALL_WALK_AFTER_UNLOAD_MS=N: the first buffer walk that another
// thread (the client's writer) begins after a module unload started sleeps N
// ms first, standing for a client whose decoding thread is slow or
// descheduled just then. The unload's own thread is never stalled.
std::atomic<bool> g_stall_next_walk{false};
std::atomic<pthread_t> g_unloading_thread{};
uint32_t StallWalkMs() {
  static const uint32_t ms = [] {
    const char* v = std::getenv("FAKE_CUPTI_STALL_WALK_AFTER_UNLOAD_MS");
    return v != nullptr ? static_cast<uint32_t>(std::atoi(v)) : 0u;
  }();
  return ms;
}
}  // namespace
}  // namespace fake_cupti

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                   CUpti_Activity** record) {
  INJECT(cuptiActivityGetNextRecord);
  if (record != nullptr && *record == nullptr && fake_cupti::g_stall_next_walk.load() &&
      !pthread_equal(pthread_self(), fake_cupti::g_unloading_thread.load()) &&
      fake_cupti::g_stall_next_walk.exchange(false)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(fake_cupti::StallWalkMs()));
  }
  return fake_cupti::NextRecord(buffer, valid, record);
}
FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* n) {
  INJECT(cuptiActivityGetNumDroppedRecords);
  return E().GetNumDropped(n);
}
FAKE_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t*, void*) {
  INJECT(cuptiActivitySetAttribute);
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* t) {
  INJECT(cuptiGetTimestamp);
  if (t == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *t = E().Now();
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid,
                                             const char** name) {
  INJECT(cuptiGetCallbackName);
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = fake_cupti::CallbackName(d, cbid);
  return *name != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
FAKE_EXPORT CUptiResult cuptiGetGraphId(CUgraph graph, uint32_t* id) {
  INJECT(cuptiGetGraphId);
  if (graph == nullptr || id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<fake_cupti::FakeGraph*>(graph)->graph_id;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiGetGraphExecId(CUgraphExec exec, uint32_t* id) {
  INJECT(cuptiGetGraphExecId);
  if (exec == nullptr || id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<fake_cupti::FakeGraph*>(exec)->id;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) {
  INJECT(cuptiGetGraphNodeId);
  if (node == nullptr || id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<fake_cupti::FakeNode*>(node)->id;
  return CUPTI_SUCCESS;
}
// Contexts: the default one is device 0's; fakeCuptiContextCreate makes one
// per device (at most kFakeDevices).
namespace fake_cupti {
namespace {
constexpr uint32_t kFakeDevices = 16;
int device_context_tags[kFakeDevices];
}  // namespace
}  // namespace fake_cupti
FAKE_EXPORT CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t* device) {
  INJECT(cuptiGetDeviceId);
  if (device == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (context == nullptr || context == E().FakeContext()) {
    *device = 0;
    return CUPTI_SUCCESS;
  }
  for (uint32_t i = 0; i < fake_cupti::kFakeDevices; ++i) {
    if (context == reinterpret_cast<CUcontext>(&fake_cupti::device_context_tags[i])) {
      *device = i;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_CONTEXT;
}
FAKE_EXPORT void fakeCuptiContextCreate(uint32_t device) {
  if (device >= fake_cupti::kFakeDevices) return;
  E().Resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, nullptr,
               reinterpret_cast<CUcontext>(&fake_cupti::device_context_tags[device]));
}
FAKE_EXPORT void fakeCuptiContextDestroyOn(uint32_t device) {
  if (device >= fake_cupti::kFakeDevices) return;
  E().CompleteAllOps();
  E().Resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, nullptr,
               reinterpret_cast<CUcontext>(&fake_cupti::device_context_tags[device]));
}
// The PM half's first device call (fake_pm_sampling.cc): real libcupti loads
// libnvperf_host and builds its PM state lazily, on the thread that first
// asks (the tracer's sampler thread), so their exit-time teardown is
// registered then, after whatever the client registered before; it runs
// first at exit, and a CUPTI call after it crashed (a core from the fake
// driver: SIGSEGV inside libnvperf_host). Registered once more here, the
// fake's teardown stands for that.
extern "C" __attribute__((visibility("hidden"))) void fakeCuptiRegisterLateTeardown() {
  static const bool registered = (std::atexit(&fake_cupti::TearDownAtExit), true);
  (void)registered;
}

// Error injection for the PM half (fake_pm_sampling.cc).
extern "C" __attribute__((visibility("hidden"))) CUptiResult fakeCuptiInjected(const char* fn) {
  if (g_torn_down.load(std::memory_order_acquire)) CalledAfterTeardown(fn);
  return E().Injected(fn);
}

FAKE_EXPORT CUptiResult cuptiFinalize(void) {
  INJECT(cuptiFinalize);
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiGetLastError(void) { return CUPTI_SUCCESS; }
FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
#define NAME(x) \
  case x:       \
    *str = #x;  \
    return CUPTI_SUCCESS;
    NAME(CUPTI_SUCCESS)
    NAME(CUPTI_ERROR_INVALID_PARAMETER)
    NAME(CUPTI_ERROR_INVALID_OPERATION)
    NAME(CUPTI_ERROR_NOT_COMPATIBLE)
    NAME(CUPTI_ERROR_NOT_INITIALIZED)
    NAME(CUPTI_ERROR_QUEUE_EMPTY)
    NAME(CUPTI_ERROR_INVALID_KIND)
    NAME(CUPTI_ERROR_NOT_SUPPORTED)
    NAME(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    NAME(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED)
    NAME(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    NAME(CUPTI_ERROR_MAX_LIMIT_REACHED)
    NAME(CUPTI_ERROR_UNKNOWN)
    NAME(CUPTI_ERROR_OUT_OF_MEMORY)
    NAME(CUPTI_ERROR_HARDWARE_BUSY)
    NAME(CUPTI_ERROR_INVALID_DEVICE)
    NAME(CUPTI_ERROR_INVALID_CONTEXT)
    NAME(CUPTI_ERROR_INVALID_METRIC_NAME)
    NAME(CUPTI_ERROR_INVALID_CHIP_NAME)
    NAME(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED)
#undef NAME
    default:
      *str = nullptr;
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
}

// ============================== control API ==================================

namespace {
using fake_cupti::Engine;

Engine::ApiCall Call(int driver, uint32_t cbid, const char* symbol = nullptr,
                     const void* params = nullptr) {
  Engine::ApiCall c;
  c.domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  c.cbid = cbid;
  c.function = fake_cupti::CallbackName(c.domain, cbid);
  if (c.function == nullptr) c.function = "fakeCudaCall";
  c.symbol = symbol;
  c.params = params;
  return c;
}

fake_cupti::FakeGraph* Graph(uint64_t handle, bool exec) {
  fake_cupti::FakeGraph* g = E().FindGraph(handle);
  return g != nullptr && g->exec == exec ? g : nullptr;
}

CUpti_GraphData GraphData(fake_cupti::FakeGraph* g, fake_cupti::FakeNode* n) {
  CUpti_GraphData data;
  std::memset(&data, 0, sizeof(data));
  data.graph = reinterpret_cast<CUgraph>(g);
  data.node = reinterpret_cast<CUgraphNode>(n);
  data.nodeType = n->type;
  return data;
}

// A node added to a graph by the call in progress (cudaGraphAdd*Node, or a
// launch, copy or set on a capturing stream): GRAPHNODE_CREATED fires between
// the call's ENTER and EXIT.
void AddNode(fake_cupti::FakeGraph* g, std::unique_ptr<fake_cupti::FakeNode> node) {
  node->id = E().NextNodeId();
  CUpti_GraphData data = GraphData(g, node.get());
  g->nodes.push_back(std::move(node));
  E().Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &data);
}

uint32_t AddNodeCall(uint64_t graph, uint32_t cbid, std::unique_ptr<fake_cupti::FakeNode> node) {
  fake_cupti::FakeGraph* g = Graph(graph, false);
  if (g == nullptr) return 0;
  auto call = Call(0, cbid);
  E().Enter(&call);
  AddNode(g, std::move(node));
  E().Exit(call);
  return call.correlation;
}

}  // namespace

FAKE_EXPORT void fakeCuptiSetError(const char* function, int result) {
  E().SetError(function, result);
}
FAKE_EXPORT void fakeCuptiSetOtherSubscriber(const char* name) { E().SetOtherSubscriber(name); }
FAKE_EXPORT void fakeCuptiSetBufferLimit(size_t bytes) { E().SetBufferLimit(bytes); }
FAKE_EXPORT void fakeCuptiSetInOrder(int in_order) { E().SetInOrder(in_order != 0); }
FAKE_EXPORT void fakeCuptiSetGpu(uint64_t launch_latency_ns, size_t queue_depth) {
  E().SetGpu(launch_latency_ns, queue_depth);
}

FAKE_EXPORT uint32_t fakeCuptiLaunchKernel(const FakeKernelLaunch* l) {
  const uint32_t cbid = l->cbid != 0 ? l->cbid : (l->driver ? 307u : 505u);
  const char* name = l->module != 0 ? fake_cupti::ModuleName(l->module) : nullptr;
  if (name == nullptr) name = fake_cupti::StableName(l->name);
  auto call = Call(l->driver, cbid, name);
  E().Enter(&call);
  if (fake_cupti::FakeGraph* g = E().Capturing(l->stream)) {
    // Captured: a kernel node of the capture graph, no GPU work.
    auto node = std::make_unique<fake_cupti::FakeNode>();
    node->kernel = name;
    node->duration = l->duration_ns;
    AddNode(g, std::move(node));
  } else if (E().KindEnabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ||
             E().KindEnabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.deviceId = l->device;
    k.contextId = l->context;
    k.streamId = l->stream;
    k.correlationId = call.correlation;
    k.gridX = l->grid[0] ? l->grid[0] : 1;
    k.gridY = l->grid[1] ? l->grid[1] : 1;
    k.gridZ = l->grid[2] ? l->grid[2] : 1;
    k.blockX = l->block[0] ? l->block[0] : 1;
    k.blockY = l->block[1] ? l->block[1] : 1;
    k.blockZ = l->block[2] ? l->block[2] : 1;
    k.staticSharedMemory = l->static_smem;
    k.dynamicSharedMemory = l->dynamic_smem;
    k.registersPerThread = l->registers;
    E().QueueOp(fake_cupti::Bytes(k), l->stream, E().Now(), l->duration_ns);
  }
  E().Exit(call);
  return call.correlation;
}

FAKE_EXPORT uint32_t fakeCuptiMemcpy(int driver, int copy_kind, uint64_t bytes, uint32_t stream,
                                     uint64_t duration_ns) {
  auto outer = Call(driver, driver ? 306u : 41u);
  E().Enter(&outer);
  if (fake_cupti::FakeGraph* g = E().Capturing(stream)) {
    auto node = std::make_unique<fake_cupti::FakeNode>();
    node->type = CU_GRAPH_NODE_TYPE_MEMCPY;
    node->copy_kind = copy_kind;
    node->bytes = bytes;
    node->duration = duration_ns;
    AddNode(g, std::move(node));
    E().Exit(outer);
    return outer.correlation;
  }
  uint32_t runtime_corr = 0, driver_corr = outer.correlation;
  Engine::ApiCall inner;
  if (!driver) {  // the runtime call makes a driver call inside it
    runtime_corr = outer.correlation;
    inner = Call(1, 306);
    E().Enter(&inner);
    driver_corr = inner.correlation;
  }
  if (E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) {
    CUpti_ActivityMemcpy6 m;
    std::memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = static_cast<uint8_t>(copy_kind);
    m.srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                                             : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                                                             : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    m.bytes = bytes;
    m.contextId = 1;
    m.streamId = stream;
    m.correlationId = driver_corr;
    m.runtimeCorrelationId = runtime_corr;
    m.copyCount = 1;
    E().QueueOp(fake_cupti::Bytes(m), stream, E().Now(), duration_ns);
  }
  if (!driver) E().Exit(inner);
  E().Exit(outer);
  return outer.correlation;
}

FAKE_EXPORT uint32_t fakeCuptiMemset(int driver, uint64_t bytes, uint32_t value, uint32_t stream,
                                     uint64_t duration_ns) {
  auto call = Call(driver, driver ? 216u : 51u);
  E().Enter(&call);
  if (fake_cupti::FakeGraph* g = E().Capturing(stream)) {
    auto node = std::make_unique<fake_cupti::FakeNode>();
    node->type = CU_GRAPH_NODE_TYPE_MEMSET;
    node->bytes = bytes;
    node->value = value;
    node->duration = duration_ns;
    AddNode(g, std::move(node));
  } else if (E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMSET)) {
    CUpti_ActivityMemset4 m;
    std::memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.value = value;
    m.bytes = bytes;
    m.contextId = 1;
    m.streamId = stream;
    m.correlationId = call.correlation;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
    E().QueueOp(fake_cupti::Bytes(m), stream, E().Now(), duration_ns);
  }
  E().Exit(call);
  return call.correlation;
}

FAKE_EXPORT uint32_t fakeCuptiApiCall(int driver, uint32_t cbid, uint64_t duration_ns) {
  auto call = Call(driver, cbid);
  E().Enter(&call);
  E().Exit(call, duration_ns);
  return call.correlation;
}

FAKE_EXPORT uint32_t fakeCuptiSynchronize(void) {
  auto call = Call(0, 165);
  E().Enter(&call);
  E().CompleteAllOps();
  E().Exit(call);
  if (E().KindEnabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) {
    CUpti_ActivitySynchronization2 s;
    std::memset(&s, 0, sizeof(s));
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    s.start = call.start;
    s.end = E().Now();
    s.correlationId = call.correlation;
    s.contextId = 1;
    s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    // Sync records are CPU-side: they travel with the API records.
    E().WriteThreadRecordPublic(&s, sizeof(s));
  }
  return call.correlation;
}

namespace {
// cudaGraphLaunch_v10000_params / cuGraphLaunch_params: exec first
// (generated_cuda_runtime_api_meta.h, generated_cuda_meta.h).
struct GraphLaunchParams {
  CUgraphExec exec;
  CUstream stream;
};
// cudaGraphExecUpdate_v10020_params: exec, graph, result info.
struct GraphExecUpdateParams {
  CUgraphExec exec;
  CUgraph graph;
  void* result_info;
};

// The GPU record of one node of a launched exec: graphId is the exec's id,
// graphNodeId the exec's node (a clone), correlationId the launch's.
void QueueNodeRecord(const fake_cupti::FakeGraph& exec, const fake_cupti::FakeNode& n,
                     uint32_t correlation, uint32_t stream, uint64_t now) {
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
      CUpti_ActivityMemcpy6 m;
      std::memset(&m, 0, sizeof(m));
      m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m.copyKind = static_cast<uint8_t>(n.copy_kind);
      m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
      m.bytes = n.bytes;
      m.contextId = 1;
      m.streamId = stream;
      m.correlationId = correlation;
      m.copyCount = 1;
      m.graphId = exec.id;
      m.graphNodeId = n.id;
      E().QueueOp(fake_cupti::Bytes(m), stream, now, n.duration);
      return;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMSET)) return;
      CUpti_ActivityMemset4 m;
      std::memset(&m, 0, sizeof(m));
      m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m.value = n.value;
      m.bytes = n.bytes;
      m.contextId = 1;
      m.streamId = stream;
      m.correlationId = correlation;
      m.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
      m.graphId = exec.id;
      m.graphNodeId = n.id;
      E().QueueOp(fake_cupti::Bytes(m), stream, now, n.duration);
      return;
    }
    default: {
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
      CUpti_ActivityKernel10 k;
      std::memset(&k, 0, sizeof(k));
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.name = fake_cupti::StableName(n.kernel.c_str());
      k.contextId = 1;
      k.streamId = stream;
      k.correlationId = correlation;  // every kernel of the launch
      k.gridX = k.gridY = k.gridZ = 1;
      k.blockX = 128;
      k.blockY = k.blockZ = 1;
      k.graphId = exec.id;
      k.graphNodeId = n.id;
      E().QueueOp(fake_cupti::Bytes(k), stream, now, n.duration);
      return;
    }
  }
}
}  // namespace

FAKE_EXPORT void fakeCuptiSetDistinctExecGraphIds(int distinct) {
  E().SetDistinctExecGraphIds(distinct != 0);
}

FAKE_EXPORT uint64_t fakeCuptiGraphCreate(int nodes, const char* kernel, uint64_t duration_ns) {
  auto create = Call(0, 286);
  E().Enter(&create);
  fake_cupti::FakeGraph* g = E().NewGraph(false);
  E().Exit(create);
  const uint64_t handle = reinterpret_cast<uint64_t>(g);
  for (int i = 0; i < nodes; ++i) {
    fakeCuptiGraphAddKernelNode(
        handle,
        (std::string(kernel != nullptr ? kernel : "graph_kernel") + "_" + std::to_string(i))
            .c_str(),
        duration_ns);
  }
  return handle;
}

FAKE_EXPORT uint32_t fakeCuptiGraphAddKernelNode(uint64_t graph, const char* kernel,
                                                 uint64_t duration_ns) {
  auto node = std::make_unique<fake_cupti::FakeNode>();
  node->kernel = kernel != nullptr ? kernel : "graph_kernel";
  node->duration = duration_ns;
  return AddNodeCall(graph, 289, std::move(node));
}

FAKE_EXPORT uint32_t fakeCuptiGraphAddMemcpyNode(uint64_t graph, int copy_kind, uint64_t bytes,
                                                 uint64_t duration_ns) {
  auto node = std::make_unique<fake_cupti::FakeNode>();
  node->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node->copy_kind = copy_kind;
  node->bytes = bytes;
  node->duration = duration_ns;
  return AddNodeCall(graph, 290, std::move(node));
}

FAKE_EXPORT uint32_t fakeCuptiGraphAddMemsetNode(uint64_t graph, uint64_t bytes, uint32_t value,
                                                 uint64_t duration_ns) {
  auto node = std::make_unique<fake_cupti::FakeNode>();
  node->type = CU_GRAPH_NODE_TYPE_MEMSET;
  node->bytes = bytes;
  node->value = value;
  node->duration = duration_ns;
  return AddNodeCall(graph, 293, std::move(node));
}

FAKE_EXPORT uint64_t fakeCuptiGraphInstantiate(uint64_t graph) {
  fake_cupti::FakeGraph* g = Graph(graph, false);
  if (g == nullptr) return 0;
  auto call = Call(0, 310);
  E().Enter(&call);
  // A new exec (its own id, also when the graph was instantiated before)
  // whose nodes are clones with new ids: for each, GRAPHNODE_CREATED and then
  // GRAPHNODE_CLONED naming the original (cupti_adapter.cc).
  fake_cupti::FakeGraph* exec = E().NewGraph(true);
  for (auto& original : g->nodes) {
    auto clone = std::make_unique<fake_cupti::FakeNode>(*original);
    clone->id = E().NextNodeId();
    CUpti_GraphData data = GraphData(exec, clone.get());
    data.graphExec = reinterpret_cast<CUgraphExec>(exec);
    E().Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &data);
    data.originalGraph = reinterpret_cast<CUgraph>(g);
    data.originalNode = reinterpret_cast<CUgraphNode>(original.get());
    exec->nodes.push_back(std::move(clone));
    E().Resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, &data);
  }
  E().Exit(call);
  return reinterpret_cast<uint64_t>(exec);
}

FAKE_EXPORT int fakeCuptiGraphExecUpdate(uint64_t exec_handle, uint64_t graph) {
  fake_cupti::FakeGraph* exec = Graph(exec_handle, true);
  fake_cupti::FakeGraph* g = Graph(graph, false);
  if (exec == nullptr || g == nullptr) return -1;
  GraphExecUpdateParams params{reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraph>(g),
                               nullptr};
  auto call = Call(0, 335, nullptr, &params);
  E().Enter(&call);
  // The exec keeps its id and its nodes' ids; the nodes take the parameters
  // of their paired nodes (here: same position, same type), or nothing
  // changes and cudaErrorGraphExecUpdateFailure is returned.
  bool same = exec->nodes.size() == g->nodes.size();
  for (size_t i = 0; same && i < g->nodes.size(); ++i) {
    same = exec->nodes[i]->type == g->nodes[i]->type;
  }
  int result = same ? 0 : 910;
  if (same) {
    for (size_t i = 0; i < g->nodes.size(); ++i) {
      const uint64_t id = exec->nodes[i]->id;
      *exec->nodes[i] = *g->nodes[i];
      exec->nodes[i]->id = id;
    }
  }
  call.return_value = &result;
  E().Exit(call);
  return result;
}

FAKE_EXPORT uint32_t fakeCuptiGraphLaunch(uint64_t exec_handle, uint32_t stream) {
  fake_cupti::FakeGraph* exec = Graph(exec_handle, true);
  if (exec == nullptr) return 0;
  GraphLaunchParams params{reinterpret_cast<CUgraphExec>(exec),
                           reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream))};
  auto call = Call(0, 311, nullptr, &params);
  E().Enter(&call);
  const uint64_t now = E().Now();
  if (E().KindEnabled(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)) {
    // One record for the whole launch instead of per-kernel records.
    uint64_t total = 0;
    for (auto& n : exec->nodes) total += n->duration;
    CUpti_ActivityGraphTrace2 t;
    std::memset(&t, 0, sizeof(t));
    t.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    t.correlationId = call.correlation;
    t.graphId = exec->id;
    t.contextId = 1;
    t.streamId = stream;
    E().QueueOp(fake_cupti::Bytes(t), stream, now, total);
  } else {
    for (auto& n : exec->nodes) QueueNodeRecord(*exec, *n, call.correlation, stream, now);
  }
  E().Exit(call);
  return call.correlation;
}

FAKE_EXPORT void fakeCuptiGraphDestroy(uint64_t handle) {
  fake_cupti::FakeGraph* g = E().FindGraph(handle);
  if (g == nullptr) return;
  // cudaGraphDestroy / cudaGraphExecDestroy: GRAPH(EXEC)_DESTROY_STARTING.
  // The object stays allocated (handles must not be reused by the test).
  auto call = Call(0, g->exec ? 313u : 314u);
  E().Enter(&call);
  CUpti_GraphData data;
  std::memset(&data, 0, sizeof(data));
  if (g->exec) {
    data.graphExec = reinterpret_cast<CUgraphExec>(g);
  } else {
    data.graph = reinterpret_cast<CUgraph>(g);
  }
  E().Resource(g->exec ? CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING
                       : CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
               &data);
  E().Exit(call);
}

FAKE_EXPORT uint32_t fakeCuptiStreamBeginCapture(uint32_t stream) {
  auto call = Call(0, 315);
  E().Enter(&call);
  E().SetCapturing(stream, E().NewGraph(false));
  E().Exit(call);
  return call.correlation;
}

FAKE_EXPORT uint64_t fakeCuptiStreamEndCapture(uint32_t stream) {
  auto call = Call(0, 319);
  E().Enter(&call);
  fake_cupti::FakeGraph* g = E().Capturing(stream);
  E().SetCapturing(stream, nullptr);
  E().Exit(call);
  return reinterpret_cast<uint64_t>(g);
}

FAKE_EXPORT uint64_t fakeCuptiModuleLoad(const char* kernel) {
  return fake_cupti::LoadModule(kernel != nullptr ? kernel : "module_kernel");
}

FAKE_EXPORT void fakeCuptiModuleUnload(uint64_t module) {
  const uint32_t id = fake_cupti::ModuleId(module);
  if (id == 0) return;
  auto call = Call(1, 22);
  E().Enter(&call);
  E().CompleteAllOps();  // the module's work finishes first
  CUpti_ModuleResourceData data;
  std::memset(&data, 0, sizeof(data));
  data.moduleId = id;
  const uint32_t stall_ms = fake_cupti::StallWalkMs();
  if (stall_ms > 0) {
    fake_cupti::g_unloading_thread.store(pthread_self());
    fake_cupti::g_stall_next_walk.store(true);
  }
  const auto t0 = std::chrono::steady_clock::now();
  E().Resource(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &data);
  if (stall_ms > 0) {
    // The test reads how long the client kept the unloading thread.
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::fprintf(stderr, "fake_cupti: MODULE_UNLOAD_STARTING callback returned after %lld ms\n",
                 static_cast<long long>(ms));
  }
  fake_cupti::FreeModule(module);
  E().Exit(call);
}

FAKE_EXPORT const char* fakeCuptiModuleKernelName(uint64_t module) {
  return fake_cupti::ModuleName(module);
}

FAKE_EXPORT uint32_t fakeCuptiProfilerStart(void) { return fakeCuptiApiCall(0, 171, 0); }
FAKE_EXPORT uint32_t fakeCuptiProfilerStop(void) { return fakeCuptiApiCall(0, 172, 0); }
FAKE_EXPORT uint32_t fakeCuptiDeviceReset(void) {
  E().CompleteAllOps();  // a reset waits for the device
  return fakeCuptiApiCall(0, 164, 0);
}
FAKE_EXPORT void fakeCuptiContextDestroy(void) {
  E().CompleteAllOps();
  E().Resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, nullptr);
}
FAKE_EXPORT void fakeCuptiAddDropped(uint64_t records) { E().AddDropped(records); }
FAKE_EXPORT void fakeCuptiGetStats(FakeCuptiStats* out) {
  if (out != nullptr) E().Stats(out);
}

// ============================== replay API ===================================
// A recorded trace played back (tests/cupti/replay): recorded correlation
// ids, cbids and GPU timestamps instead of generated ones.

FAKE_EXPORT void fakeCuptiReplaySetCallbackName(int driver, uint32_t cbid, const char* name) {
  if (name == nullptr) return;
  std::lock_guard<std::mutex> lock(fake_cupti::ExtraNamesMu());
  fake_cupti::ExtraNames()[{driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                            cbid}] = name;
}

FAKE_EXPORT void fakeCuptiReplayApiEnter(int driver, uint32_t cbid, uint32_t correlation) {
  auto call = Call(driver, cbid);
  E().EnterRecorded(&call, correlation);
}

FAKE_EXPORT void fakeCuptiReplayApiExit(int driver, uint32_t cbid, uint32_t correlation,
                                        uint64_t start) {
  auto call = Call(driver, cbid);
  call.correlation = correlation;
  call.start = start;
  E().Exit(call);
}

FAKE_EXPORT int fakeCuptiReplayGpuRecord(const void* record, size_t size) {
  if (record == nullptr || size < sizeof(uint32_t)) return 0;
  uint32_t kind;
  std::memcpy(&kind, record, sizeof(kind));
  if (fake_cupti::RecordSize(kind) != size) return 0;
  uint64_t start = 0, end = 0;
  auto times = [&](auto* r) {
    std::memcpy(r, record, sizeof(*r));
    start = r->start;
    end = r->end;
  };
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      CUpti_ActivityKernel10 k;
      times(&k);
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
          !E().KindEnabled(CUPTI_ACTIVITY_KIND_KERNEL)) {
        return 0;
      }
      k.name = fake_cupti::StableName(k.name);
      E().QueueRecorded(fake_cupti::Bytes(k), start, end);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      CUpti_ActivityMemcpy6 m;
      times(&m);
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return 0;
      E().QueueRecorded(fake_cupti::Bytes(m), start, end);
      return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      CUpti_ActivityMemset4 m;
      times(&m);
      if (!E().KindEnabled(CUPTI_ACTIVITY_KIND_MEMSET)) return 0;
      E().QueueRecorded(fake_cupti::Bytes(m), start, end);
      return 1;
    }
    default:
      return 0;
  }
}

FAKE_EXPORT void fakeCuptiReplayCompleteAll(void) { E().CompleteAllOps(); }
