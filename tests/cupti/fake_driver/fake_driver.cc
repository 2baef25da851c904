// The fake driver: plays libcuda for the tracer's CUDA injection path. It
// reads CUDA_INJECTION64_PATH and calls InitializeInjection (as cuInit does),
// then replays a scenario script (scenario.h) with real NVTX calls (the
// tracer is the NVTX injection) and fake CUDA work issued through the fake
// libcupti's control API (the same library instance the tracer loaded from
// TRACER_CUPTI_LIBRARY). Each "thread N:" line runs on its own OS thread, one
// line at a time, so correlation ids and range ids are deterministic.
//
// usage: fake_driver SCENARIO.scn
#include <cupti_activity.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cupti/fake_cupti/fake_cupti_control.h"
#include "tests/cupti/fake_driver/scenario.h"

namespace fake_driver {
namespace {

// The control functions the driver uses, listed once for the struct and the
// dlsym loop below.
#define FAKE_DRIVER_CONTROL_FUNCTIONS(FN) \
  FN(fakeCuptiSetError)                   \
  FN(fakeCuptiSetOtherSubscriber)         \
  FN(fakeCuptiSetBufferLimit)             \
  FN(fakeCuptiSetInOrder)                 \
  FN(fakeCuptiSetGpu)                     \
  FN(fakeCuptiLaunchKernel)               \
  FN(fakeCuptiMemcpy)                     \
  FN(fakeCuptiMemset)                     \
  FN(fakeCuptiApiCall)                    \
  FN(fakeCuptiSynchronize)                \
  FN(fakeCuptiGraphCreate)                \
  FN(fakeCuptiGraphAddKernelNode)         \
  FN(fakeCuptiGraphAddMemcpyNode)         \
  FN(fakeCuptiGraphAddMemsetNode)         \
  FN(fakeCuptiGraphInstantiate)           \
  FN(fakeCuptiGraphLaunch)                \
  FN(fakeCuptiGraphExecUpdate)            \
  FN(fakeCuptiGraphDestroy)               \
  FN(fakeCuptiStreamBeginCapture)         \
  FN(fakeCuptiStreamEndCapture)           \
  FN(fakeCuptiSetDistinctExecGraphIds)    \
  FN(fakeCuptiModuleLoad)                 \
  FN(fakeCuptiModuleUnload)               \
  FN(fakeCuptiProfilerStart)              \
  FN(fakeCuptiProfilerStop)               \
  FN(fakeCuptiDeviceReset)                \
  FN(fakeCuptiContextDestroy)             \
  FN(fakeCuptiContextCreate)              \
  FN(fakeCuptiContextDestroyOn)           \
  FN(fakeCuptiPmSetDevice)                \
  FN(fakeCuptiPmGpuNow)                   \
  FN(fakeCuptiPmAddSample)                \
  FN(fakeCuptiPmOverflow)                 \
  FN(fakeCuptiPmState)                    \
  FN(fakeCuptiPmStall)                    \
  FN(fakeCuptiAddDropped)

// The fake libcupti's control API, resolved from the loaded library.
struct Control {
#define FN(name) decltype(&::name) name = nullptr;
  FAKE_DRIVER_CONTROL_FUNCTIONS(FN)
#undef FN
};

bool LoadControl(Control* c, std::string* error) {
  const char* path = std::getenv("TRACER_CUPTI_LIBRARY");
  if (path == nullptr || *path == '\0') {
    *error = "TRACER_CUPTI_LIBRARY must name the fake libcupti";
    return false;
  }
  // Same path as the tracer's dlopen: one instance of the fake in the process.
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    *error = std::string("cannot load ") + path + ": " + dlerror();
    return false;
  }
#define FN(name)                                                  \
  c->name = reinterpret_cast<decltype(c->name)>(dlsym(h, #name)); \
  if (c->name == nullptr) {                                       \
    *error = std::string(path) + " lacks " #name;                 \
    return false;                                                 \
  }
  FAKE_DRIVER_CONTROL_FUNCTIONS(FN)
#undef FN
  return true;
}

// A thread of the scripted program: runs one posted task at a time.
class ScriptThread {
 public:
  ScriptThread() : thread_([this] { Loop(); }) {}
  ~ScriptThread() {
    Post(nullptr);
    thread_.join();
  }
  // Runs fn on this thread and waits for it.
  void Run(std::function<void()> fn) {
    Post(std::move(fn));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !busy_; });
  }

 private:
  void Post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = std::move(fn);
    quit_ = task_ == nullptr;
    busy_ = true;
    cv_.notify_all();
  }
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return busy_; });
        if (quit_) return;
        task = std::move(task_);
      }
      task();
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool busy_ = false;
  bool quit_ = false;
  std::thread thread_;
};

void ParseTriple(const std::string& text, int32_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  std::istringstream in(text);
  std::string part;
  for (int i = 0; i < 3 && std::getline(in, part, ','); ++i) out[i] = std::atoi(part.c_str());
}

int CopyKind(const std::string& word) {
  if (word == "htod") return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  if (word == "dtoh") return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  if (word == "dtod") return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (word == "htoh") return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
  if (word == "ptop") return CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  return -1;
}

class Driver {
 public:
  explicit Driver(const Control& c) : c_(c) {}

  // Returns the process exit code, or -1 to go on.
  int Execute(const Op& op, std::string* error) {
    const std::string& v = op.verb();
    if (v == "cupti") return Cupti(op, error);
    if (v == "pm") return Pm(op, error);
    if (v == "init") {
      Init();
      return -1;
    }
    if (v == "sleep") {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(op.Num("ms", std::atoi(op.Word(1).c_str()))));
      return -1;
    }
    if (v == "exit") return op.words.size() > 1 ? std::atoi(op.Word(1).c_str()) : 0;
    if (v == "storm") {
      Init();
      Storm(op);
      return -1;
    }
    bool ok = true;
    auto body = [&] { ok = Run(op, error); };
    if (op.thread == 0) {
      body();
    } else {
      auto& t = threads_[op.thread];
      if (!t) t = std::make_unique<ScriptThread>();
      t->Run(body);
    }
    return ok ? -1 : 2;
  }

  void Finish() { threads_.clear(); }

 private:
  // PM sampling's device half:
  //   pm device 1 chip=GH100 supported=0
  //   pm anchor          (the GPU clock's now, the global timer, for `at`)
  //   pm sample device=0 at=200000 dur=1000000 values=12.5,40,3
  //      (times in ns from the anchor, else from the GPU clock's now)
  //   pm overflow device=0
  //   pm stall device=0 ms=8000   (its next decode blocks that long)
  //   pm wait device=0 state=started|stopped (at most 5 s)
  int Pm(const Op& op, std::string* error) {
    const std::string what = op.Word(1);
    const auto device = static_cast<uint32_t>(op.Num("device", 0));
    if (what == "device") {
      c_.fakeCuptiPmSetDevice(static_cast<uint32_t>(std::atoi(op.Word(2).c_str())),
                              op.Has("chip") ? op.Str("chip", "").c_str() : nullptr,
                              static_cast<int>(op.Num("supported", 1)));
    } else if (what == "anchor") {
      anchor_ = c_.fakeCuptiPmGpuNow();
    } else if (what == "sample") {
      std::vector<double> values;
      std::string list = op.Str("values", "");
      for (size_t at = 0; at < list.size();) {
        size_t comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        values.push_back(std::atof(list.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
      const uint64_t start = (anchor_ != 0 ? anchor_ : c_.fakeCuptiPmGpuNow()) + op.Num("at", 0);
      c_.fakeCuptiPmAddSample(device, start, start + op.Num("dur", 1000000), values.data(),
                              values.size());
    } else if (what == "overflow") {
      c_.fakeCuptiPmOverflow(device);
    } else if (what == "stall") {  // pm stall device=0 ms=8000
      c_.fakeCuptiPmStall(device, static_cast<uint32_t>(op.Num("ms", 1000)));
    } else if (what == "wait") {
      const int want = op.Str("state", "started") == "started" ? 2 : 0;
      for (int i = 0; i < 500 && (c_.fakeCuptiPmState(device) & 2) != want; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } else {
      *error = "unknown pm command '" + what + "'";
      return 2;
    }
    return -1;
  }

  int Cupti(const Op& op, std::string* error) {
    const std::string what = op.Word(1);
    if (what == "error") {  // cupti error cuptiActivityEnable=35
      for (const auto& [fn, code] : op.kv)
        c_.fakeCuptiSetError(fn.c_str(), std::atoi(code.c_str()));
    } else if (what == "other_subscriber") {
      std::string name = op.rest.substr(op.rest.find("other_subscriber") + 16);
      name.erase(0, name.find_first_not_of(' '));
      c_.fakeCuptiSetOtherSubscriber(name.c_str());
    } else if (what == "buffer_limit") {
      c_.fakeCuptiSetBufferLimit(std::strtoull(op.Word(2).c_str(), nullptr, 0));
    } else if (what == "in_order") {
      c_.fakeCuptiSetInOrder(1);
    } else if (what == "gpu") {  // cupti gpu latency=NS queue=N: a lagging GPU
      c_.fakeCuptiSetGpu(op.Num("latency", 1000), static_cast<size_t>(op.Num("queue", 0)));
    } else if (what == "dropped") {
      c_.fakeCuptiAddDropped(std::strtoull(op.Word(2).c_str(), nullptr, 0));
    } else if (what == "distinct_exec_graph_ids") {
      c_.fakeCuptiSetDistinctExecGraphIds(1);
    } else {
      *error = "unknown cupti setting '" + what + "'";
      return 2;
    }
    return -1;
  }

  // cuInit: the driver loads the injection library and calls its entry point.
  void Init() {
    if (initialized_) return;
    initialized_ = true;
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (path == nullptr || *path == '\0') return;
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      std::fprintf(stderr, "fake_driver: cannot load %s: %s\n", path, dlerror());
      return;
    }
    using InitFn = int (*)();
    auto init = reinterpret_cast<InitFn>(dlsym(h, "InitializeInjection"));
    if (init == nullptr) {
      std::fprintf(stderr, "fake_driver: %s has no InitializeInjection\n", path);
      return;
    }
    if (init() != 1) std::fprintf(stderr, "fake_driver: InitializeInjection did not return 1\n");
  }

  bool IsCuda(const std::string& v) const {
    return v == "launch" || v == "memcpy" || v == "memset" || v == "api" || v == "sync" ||
           v == "graph" || v == "profiler" || v == "device" || v == "context" || v == "capture" ||
           v == "module";
  }

  bool Run(const Op& op, std::string* error) {
    const std::string& v = op.verb();
    if (IsCuda(v)) Init();  // the first CUDA call initialises CUDA
    if (v == "push") {
      nvtxRangePushA(op.rest.c_str());
    } else if (v == "pop") {
      nvtxRangePop();
    } else if (v == "start") {  // start NAME as ID
      std::string name = op.rest;
      std::string id = "default";
      size_t as = name.rfind(" as ");
      if (as != std::string::npos) {
        id = name.substr(as + 4);
        name = name.substr(0, as);
      }
      std::lock_guard<std::mutex> lock(ranges_mu_);
      ranges_[id] = nvtxRangeStartA(name.c_str());
    } else if (v == "end") {
      std::lock_guard<std::mutex> lock(ranges_mu_);
      nvtxRangeEnd(ranges_[op.words.size() > 1 ? op.Word(1) : "default"]);
    } else if (v == "mark") {
      nvtxMarkA(op.rest.c_str());
    } else if (v == "name") {
      nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), op.rest.c_str());
    } else if (v == "launch") {
      FakeKernelLaunch l;
      std::memset(&l, 0, sizeof(l));
      l.driver = op.Word(1) == "driver";
      l.cbid = static_cast<uint32_t>(op.Num("cbid", 0));
      std::string name = op.Str("kernel", "kernel");
      l.name = name.c_str();
      l.device = static_cast<uint32_t>(op.Num("device", 0));
      l.context = static_cast<uint32_t>(op.Num("context", 1));
      l.stream = static_cast<uint32_t>(op.Num("stream", 7));
      l.duration_ns = op.Num("dur", 1000);
      ParseTriple(op.Str("grid", "1,1,1"), l.grid);
      ParseTriple(op.Str("block", "128,1,1"), l.block);
      l.static_smem = static_cast<int32_t>(op.Num("smem", 0));
      l.dynamic_smem = static_cast<int32_t>(op.Num("dsmem", 0));
      l.registers = static_cast<uint16_t>(op.Num("regs", 32));
      if (op.Has("module")) {
        std::lock_guard<std::mutex> lock(ranges_mu_);
        l.module = modules_[op.Str("module", "")];
      }
      for (uint64_t i = 0, n = op.Num("times", 1); i < n; ++i) c_.fakeCuptiLaunchKernel(&l);
    } else if (v == "memcpy") {
      int kind = CopyKind(op.Word(1));
      if (kind < 0) {
        *error = "memcpy needs htod, dtoh, dtod, htoh or ptop";
        return false;
      }
      c_.fakeCuptiMemcpy(op.Word(2) == "driver", kind, op.Num("bytes", 0),
                         static_cast<uint32_t>(op.Num("stream", 7)), op.Num("dur", 500));
    } else if (v == "memset") {
      c_.fakeCuptiMemset(op.Word(1) == "driver", op.Num("bytes", 0),
                         static_cast<uint32_t>(op.Num("value", 0)),
                         static_cast<uint32_t>(op.Num("stream", 7)), op.Num("dur", 200));
    } else if (v == "api") {
      c_.fakeCuptiApiCall(op.Word(1) == "driver", static_cast<uint32_t>(op.Num("cbid", 0)),
                          op.Num("dur", 0));
    } else if (v == "sync") {
      c_.fakeCuptiSynchronize();
    } else if (v == "graph") {
      return Graph(op, error);
    } else if (v == "capture") {  // capture begin stream=S | capture end NAME stream=S
      const uint32_t stream = static_cast<uint32_t>(op.Num("stream", 7));
      if (op.Word(1) == "begin") {
        c_.fakeCuptiStreamBeginCapture(stream);
      } else if (op.Word(1) == "end" && !op.Word(2).empty()) {
        std::lock_guard<std::mutex> lock(ranges_mu_);
        graphs_[op.Word(2)] = c_.fakeCuptiStreamEndCapture(stream);
      } else {
        *error = "capture needs 'begin' or 'end NAME'";
        return false;
      }
    } else if (v == "module") {  // module load NAME kernel=K | module unload NAME
      std::lock_guard<std::mutex> lock(ranges_mu_);
      if (op.Word(1) == "load" && !op.Word(2).empty()) {
        modules_[op.Word(2)] = c_.fakeCuptiModuleLoad(op.Str("kernel", op.Word(2)).c_str());
      } else if (op.Word(1) == "unload" && modules_.count(op.Word(2)) != 0) {
        c_.fakeCuptiModuleUnload(modules_[op.Word(2)]);
        modules_.erase(op.Word(2));
      } else {
        *error = "module needs 'load NAME' or 'unload NAME' of a loaded module";
        return false;
      }
    } else if (v == "profiler") {
      if (op.Word(1) == "start") {
        c_.fakeCuptiProfilerStart();
      } else {
        c_.fakeCuptiProfilerStop();
      }
    } else if (v == "device") {
      c_.fakeCuptiDeviceReset();
    } else if (v == "context") {  // context [create|destroy device=N]
      if (op.Word(1) == "create") {
        c_.fakeCuptiContextCreate(static_cast<uint32_t>(op.Num("device", 0)));
      } else if (op.Has("device")) {
        c_.fakeCuptiContextDestroyOn(static_cast<uint32_t>(op.Num("device", 0)));
      } else {
        c_.fakeCuptiContextDestroy();
      }
    } else {
      *error = "cannot run '" + v + "' on a thread";
      return false;
    }
    return true;
  }

  bool Graph(const Op& op, std::string* error) {
    const std::string what = op.Word(1), name = op.Word(2);
    std::lock_guard<std::mutex> lock(ranges_mu_);
    if (what == "create") {
      graphs_[name] = c_.fakeCuptiGraphCreate(static_cast<int>(op.Num("nodes", 1)),
                                              op.Str("kernel", name).c_str(), op.Num("dur", 1000));
    } else if (what == "kernel") {  // graph kernel G kernel=K dur=D: one more kernel node
      c_.fakeCuptiGraphAddKernelNode(graphs_[name], op.Str("kernel", name).c_str(),
                                     op.Num("dur", 1000));
    } else if (what == "memcpy") {  // graph memcpy G dtod bytes=B dur=D
      const int kind = CopyKind(op.Word(3).empty() ? "dtod" : op.Word(3));
      if (kind < 0) {
        *error = "graph memcpy needs htod, dtoh, dtod, htoh or ptop";
        return false;
      }
      c_.fakeCuptiGraphAddMemcpyNode(graphs_[name], kind, op.Num("bytes", 0), op.Num("dur", 500));
    } else if (what == "memset") {  // graph memset G bytes=B value=V dur=D
      c_.fakeCuptiGraphAddMemsetNode(graphs_[name], op.Num("bytes", 0),
                                     static_cast<uint32_t>(op.Num("value", 0)), op.Num("dur", 200));
    } else if (what == "instantiate") {  // graph instantiate G [exec=E]
      execs_[op.Str("exec", name)] = c_.fakeCuptiGraphInstantiate(graphs_[name]);
    } else if (what == "update") {  // graph update E from=G
      if (execs_.count(name) == 0 || graphs_.count(op.Str("from", "")) == 0) {
        *error = "graph update needs an instantiated exec and from=GRAPH";
        return false;
      }
      c_.fakeCuptiGraphExecUpdate(execs_[name], graphs_[op.Str("from", "")]);
    } else if (what == "destroy") {  // graph destroy E|G: an exec if so named, else a graph
      if (execs_.count(name) != 0) {
        c_.fakeCuptiGraphDestroy(execs_[name]);
        execs_.erase(name);
      } else if (graphs_.count(name) != 0) {
        c_.fakeCuptiGraphDestroy(graphs_[name]);
        graphs_.erase(name);
      } else {
        *error = "graph destroy needs a graph or exec name";
        return false;
      }
    } else if (what == "launch") {  // graph launch E|G: an exec, else G's (instantiated once)
      if (execs_.count(name) == 0) execs_[name] = c_.fakeCuptiGraphInstantiate(graphs_[name]);
      for (uint64_t i = 0, n = op.Num("times", 1); i < n; ++i) {
        c_.fakeCuptiGraphLaunch(execs_[name], static_cast<uint32_t>(op.Num("stream", 7)));
      }
    } else {
      *error = "graph needs create, kernel, memcpy, memset, instantiate, update, destroy or launch";
      return false;
    }
    return true;
  }

  // Many threads launching at once inside a range each: the pool and rings
  // under pressure. Not deterministic in order, only in totals.
  void Storm(const Op& op) {
    const int threads = static_cast<int>(op.Num("threads", 4));
    const uint64_t launches = op.Num("launches", 1000);
    const std::string kernel = op.Str("kernel", "storm_kernel");
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        nvtxRangePushA("storm");
        FakeKernelLaunch l;
        std::memset(&l, 0, sizeof(l));
        l.name = kernel.c_str();
        l.context = 1;
        l.stream = static_cast<uint32_t>(op.Num("stream", 100) + t);
        l.duration_ns = op.Num("dur", 100);
        l.grid[0] = l.block[0] = 1;
        for (uint64_t i = 0; i < launches; ++i) c_.fakeCuptiLaunchKernel(&l);
        nvtxRangePop();
      });
    }
    for (auto& t : pool) t.join();
  }

  const Control& c_;
  bool initialized_ = false;
  uint64_t anchor_ = 0;  // pm anchor: GPU-clock time `pm sample at=` counts from
  std::map<int, std::unique_ptr<ScriptThread>> threads_;
  std::mutex ranges_mu_;
  std::map<std::string, nvtxRangeId_t> ranges_;
  std::map<std::string, uint64_t> graphs_, execs_, modules_;
};

}  // namespace
}  // namespace fake_driver

int main(int argc, char** argv) {
  using namespace fake_driver;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fake_driver SCENARIO.scn\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "fake_driver: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Op> ops;
  std::string error;
  if (!ParseScenario(text.str(), &ops, &error)) {
    std::fprintf(stderr, "fake_driver: %s:%s\n", argv[1], error.c_str());
    return 2;
  }
  // Only CUDA work needs the fake's control API: an NVTX-only scenario also
  // runs against the real libcupti (the no-driver test).
  bool needs_control = false;
  for (const Op& op : ops) {
    const std::string& v = op.verb();
    needs_control |= v != "init" && v != "push" && v != "pop" && v != "start" && v != "end" &&
                     v != "mark" && v != "name" && v != "sleep" && v != "exit";
  }
  Control control;
  if (needs_control && !LoadControl(&control, &error)) {
    std::fprintf(stderr, "fake_driver: %s\n", error.c_str());
    return 2;
  }
  Driver driver(control);
  int code = 0;
  for (const Op& op : ops) {
    int r = driver.Execute(op, &error);
    if (r == 2 && !error.empty()) {
      std::fprintf(stderr, "fake_driver: %s:%d: %s\n", argv[1], op.line, error.c_str());
      driver.Finish();
      return 2;
    }
    if (r >= 0) {
      code = r;
      break;
    }
  }
  driver.Finish();
  return code;
}
