// The replay driver: plays back a real Nsight Systems export as what CUPTI
// and NVTX would have delivered to the tracer on the recording machine. It
// plays libcuda like the fake driver (CUDA_INJECTION64_PATH ->
// InitializeInjection) and drives the fake libcupti (TRACER_CUPTI_LIBRARY)
// through its replay control API:
//  - one OS thread per recorded thread; every event runs in global recorded
//    time order (a sequencer hands out turns), so NVTX calls and API callbacks
//    interleave across threads as they did when recorded;
//  - before each event the tracer's test clock (tracerTestSetClockNs, only in
//    the test variant libtracer_test.so; needs TRACER_TEST_CLOCK=replay) is
//    set to the recorded time, so NVTX and API timestamps are the recorded
//    ones;
//  - NVTX push/pop and start/end are real nvtx3 calls (the tracer is the NVTX
//    injection), in their recorded domains; thread names via nvtxNameOsThread;
//  - API calls are ENTER/EXIT callbacks with the recorded cbid (from the
//    CUPTI cbid headers by name) and correlation id;
//  - the recorded kernels, copies and sets are queued at their launch's EXIT
//    with the recorded timestamps; the fake writes them in end-time order on
//    its own thread, so they arrive out of launch order across streams.
//
// usage: nsys_replay_driver EXPORT.sqlite PROCESS_INDEX TID_MAP_OUT
// Replays the PROCESS_INDEX-th imported process (one process per run, as it
// was recorded; exit status 3 when there is no such process). TID_MAP_OUT
// receives one "recorded_tid replayed_tid" line per thread, so a test can
// compare thread columns.
#include <cupti_activity.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libtracer/analysis/importers/nsys_sqlite_importer.h"
#include "libtracer/analysis/read/trace_model.h"
#include "tests/cupti/fake_cupti/fake_cupti_control.h"
#include "tests/cupti/replay/replay_plan.h"

namespace {

using tracer::analysis::ProcessTrace;
using tracer::analysis::Trace;
using tracer::replay::Event;
using tracer::replay::EventType;
using tracer::replay::Plan;

struct Control {
  void (*set_clock)(uint64_t) = nullptr;
  void (*set_name)(int, uint32_t, const char*) = nullptr;
  void (*api_enter)(int, uint32_t, uint32_t) = nullptr;
  void (*api_exit)(int, uint32_t, uint32_t, uint64_t) = nullptr;
  int (*gpu_record)(const void*, size_t) = nullptr;
  void (*complete_all)() = nullptr;
};

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn, std::string* error) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) *error = std::string("missing symbol ") + name;
  return *fn != nullptr;
}

// cuInit's part: load the injection and call its entry point; then the same
// fake libcupti instance the tracer loaded.
bool Load(Control* c, uint64_t start_time, std::string* error) {
  const char* tracer_path = std::getenv("CUDA_INJECTION64_PATH");
  const char* cupti_path = std::getenv("TRACER_CUPTI_LIBRARY");
  if (tracer_path == nullptr || cupti_path == nullptr) {
    *error = "CUDA_INJECTION64_PATH and TRACER_CUPTI_LIBRARY must be set";
    return false;
  }
  void* tracer = dlopen(tracer_path, RTLD_NOW | RTLD_LOCAL);
  if (tracer == nullptr) {
    *error = std::string("cannot load ") + tracer_path + ": " + dlerror();
    return false;
  }
  if (!Resolve(tracer, "tracerTestSetClockNs", &c->set_clock, error)) return false;
  c->set_clock(start_time);  // the session header's start time
  int (*init)() = nullptr;
  if (!Resolve(tracer, "InitializeInjection", &init, error)) return false;
  if (init() != 1) {
    *error = "InitializeInjection did not return 1";
    return false;
  }
  void* cupti = dlopen(cupti_path, RTLD_NOW | RTLD_LOCAL);
  if (cupti == nullptr) {
    *error = std::string("cannot load ") + cupti_path + ": " + dlerror();
    return false;
  }
  return Resolve(cupti, "fakeCuptiReplaySetCallbackName", &c->set_name, error) &&
         Resolve(cupti, "fakeCuptiReplayApiEnter", &c->api_enter, error) &&
         Resolve(cupti, "fakeCuptiReplayApiExit", &c->api_exit, error) &&
         Resolve(cupti, "fakeCuptiReplayGpuRecord", &c->gpu_record, error) &&
         Resolve(cupti, "fakeCuptiReplayCompleteAll", &c->complete_all, error);
}

class Replayer {
 public:
  Replayer(const Trace& trace, const ProcessTrace& p, const Plan& plan, const Control& c)
      : trace_(trace), p_(p), plan_(plan), c_(c) {}

  // Runs every recorded thread's events; the thread the tracer's analysis
  // will take as the main thread (docs/design.md "Worker threads") runs on this
  // process's main thread so both sides pick the same one.
  void Run(std::map<uint64_t, long>* tids) {
    std::vector<std::thread> workers;
    std::vector<long> real(plan_.threads.size(), 0);
    for (size_t t = 0; t < plan_.threads.size(); ++t) {
      if (t == plan_.main_thread_slot) continue;
      workers.emplace_back([this, t, &real] { RunThread(t, &real[t]); });
    }
    if (plan_.main_thread_slot < plan_.threads.size()) {
      RunThread(plan_.main_thread_slot, &real[plan_.main_thread_slot]);
    }
    for (std::thread& w : workers) w.join();
    for (size_t t = 0; t < plan_.threads.size(); ++t) {
      (*tids)[plan_.threads[t].os_tid] = real[t];
    }
  }

 private:
  void RunThread(size_t slot, long* real_tid) {
    *real_tid = syscall(SYS_gettid);
    const tracer::replay::ThreadPlan& tp = plan_.threads[slot];
    bool named = false;
    for (size_t idx : tp.events) {
      WaitTurn(idx);
      const Event& e = plan_.events[idx];
      c_.set_clock(e.time);
      if (!named) {
        named = true;
        if (!tp.name.empty()) {
          pthread_setname_np(pthread_self(), tp.name.substr(0, 15).c_str());
          nvtxNameOsThreadA(static_cast<uint32_t>(*real_tid), tp.name.c_str());
        }
      }
      Execute(e);
      turn_.store(idx + 1, std::memory_order_release);
      turn_.notify_all();
    }
  }

  void WaitTurn(size_t idx) {
    for (;;) {
      size_t cur = turn_.load(std::memory_order_acquire);
      if (cur == idx) return;
      turn_.wait(cur, std::memory_order_acquire);
    }
  }

  nvtxDomainHandle_t Domain(uint32_t domain) {
    if (domain == 0) return nullptr;
    auto it = domains_.find(domain);
    if (it != domains_.end()) return it->second;
    auto name = p_.domain_names.find(domain);
    std::string text =
        name != p_.domain_names.end() ? std::string(trace_.strings.Get(name->second)) : "";
    nvtxDomainHandle_t h = text.empty() ? nullptr : nvtxDomainCreateA(text.c_str());
    domains_[domain] = h;
    return h;
  }

  nvtxEventAttributes_t Attributes(uint32_t name, uint32_t category, uint32_t color,
                                   std::string* storage) {
    *storage = std::string(trace_.strings.Get(name));
    nvtxEventAttributes_t a;
    std::memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = category;
    if (color != 0) {
      a.colorType = NVTX_COLOR_ARGB;
      a.color = color;
    }
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = storage->c_str();
    return a;
  }

  void Execute(const Event& e) {
    std::string text;
    switch (e.type) {
      case EventType::kPush: {
        const auto& r = p_.ranges[e.index];
        nvtxEventAttributes_t a = Attributes(r.name, r.category, r.color, &text);
        nvtxDomainRangePushEx(Domain(r.domain), &a);
        break;
      }
      case EventType::kPop:
        nvtxDomainRangePop(Domain(p_.ranges[e.index].domain));
        break;
      case EventType::kStart: {
        const auto& r = p_.ranges[e.index];
        nvtxEventAttributes_t a = Attributes(r.name, r.category, r.color, &text);
        std::lock_guard<std::mutex> lock(mu_);
        started_[e.index] = nvtxDomainRangeStartEx(Domain(r.domain), &a);
        break;
      }
      case EventType::kEnd: {
        nvtxRangeId_t id = 0;
        {
          std::lock_guard<std::mutex> lock(mu_);
          id = started_[e.index];
        }
        nvtxDomainRangeEnd(Domain(p_.ranges[e.index].domain), id);
        break;
      }
      case EventType::kMark: {
        const auto& m = p_.marks[e.index];
        nvtxEventAttributes_t a = Attributes(m.name, m.category, m.color, &text);
        nvtxDomainMarkEx(Domain(m.domain), &a);
        break;
      }
      case EventType::kApiEnter: {
        const auto& api = p_.api_calls[e.index];
        c_.api_enter(api.domain == tracer::ApiDomain::kDriver, plan_.api_cbids[e.index],
                     static_cast<uint32_t>(api.correlation_id));
        break;
      }
      case EventType::kApiExit: {
        const auto& api = p_.api_calls[e.index];
        c_.api_exit(api.domain == tracer::ApiDomain::kDriver, plan_.api_cbids[e.index],
                    static_cast<uint32_t>(api.correlation_id), api.start_ns);
        QueueGpuWork(e.index);
        break;
      }
    }
  }

  // The GPU records of one launch, queued once its call returned.
  void QueueGpuWork(size_t api_index) {
    auto range = plan_.gpu_by_api.equal_range(api_index);
    for (auto it = range.first; it != range.second; ++it) {
      const std::vector<uint8_t>& rec = plan_.gpu_records[it->second];
      if (c_.gpu_record(rec.data(), rec.size()) != 0) queued_.fetch_add(1);
    }
  }

 public:
  // GPU records no replayed API call launched (orphans in the export).
  void QueueOrphans() {
    for (size_t i : plan_.orphan_gpu_records) {
      const std::vector<uint8_t>& rec = plan_.gpu_records[i];
      if (c_.gpu_record(rec.data(), rec.size()) != 0) queued_.fetch_add(1);
    }
  }
  uint64_t queued() const { return queued_.load(); }

 private:
  const Trace& trace_;
  const ProcessTrace& p_;
  const Plan& plan_;
  const Control& c_;
  std::atomic<size_t> turn_{0};
  std::atomic<uint64_t> queued_{0};
  std::mutex mu_;
  std::map<size_t, nvtxRangeId_t> started_;
  std::map<uint32_t, nvtxDomainHandle_t> domains_;  // only the turn holder touches it
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: nsys_replay_driver EXPORT.sqlite PROCESS_INDEX TID_MAP_OUT\n");
    return 2;
  }
  const size_t process = std::strtoul(argv[2], nullptr, 10);
  Trace trace;
  std::string error;
  if (!tracer::analysis::importers::ImportNsysSqlite(argv[1], &trace, &error)) {
    std::fprintf(stderr, "nsys_replay_driver: %s\n", error.c_str());
    return 2;
  }
  if (process >= trace.processes.size()) {
    std::fprintf(stderr, "nsys_replay_driver: %s holds %zu processes, no process %zu\n", argv[1],
                 trace.processes.size(), process);
    return 3;
  }
  const ProcessTrace& p = trace.processes[process];
  Plan plan;
  if (!tracer::replay::BuildPlan(trace, p, CUPTI_INCLUDE_DIR, &plan, &error)) {
    std::fprintf(stderr, "nsys_replay_driver: %s\n", error.c_str());
    return 2;
  }
  Control control;
  if (!Load(&control, plan.first_time, &error)) {
    std::fprintf(stderr, "nsys_replay_driver: %s\n", error.c_str());
    return 2;
  }
  for (const auto& [key, name] : plan.callback_names) {
    control.set_name(key.first, key.second, name.c_str());
  }
  Replayer replayer(trace, p, plan, control);
  std::map<uint64_t, long> tids;
  replayer.Run(&tids);
  replayer.QueueOrphans();
  control.complete_all();
  // Ranges still open are closed by the tracer at exit, at the clock's time:
  // the export's last timestamp, where the importer closes them too.
  control.set_clock(plan.last_time);
  std::ofstream out(argv[3]);
  for (const auto& [recorded, real] : tids) out << recorded << ' ' << real << '\n';
  std::fprintf(stderr, "nsys_replay_driver: %zu events on %zu threads, %llu GPU records\n",
               plan.events.size(), plan.threads.size(),
               static_cast<unsigned long long>(replayer.queued()));
  return 0;
}
