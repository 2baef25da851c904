// A real NVTX client (the toolkit's nvtx3 headers) for the end-to-end tests.
// Each mode exercises one behaviour; the tests run it under the tracer and
// check the trace against what the mode did (the expectations are spelled
// out in capture_e2e_test.cc next to each mode).
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void Spin(int n) {
  volatile int x = 0;
  for (int i = 0; i < n; ++i) x = x + i;
}

nvtxEventAttributes_t Attr(const char* msg) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  return a;
}

// basic: push/pop nesting (A, W, Ex), start/end across threads, marks,
// domains, registered strings, categories, colors, payloads, thread names.
int Basic() {
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "main_thread");
  nvtxNameCategoryA(7, "cat_seven");
  nvtxRangePushA("outer");
  Spin(1000);
  nvtxRangePushW(L"wide_\u00e9");
  Spin(1000);
  nvtxRangePop();
  nvtxEventAttributes_t a = Attr("ex_colored");
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00u;
  a.category = 7;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  a.payload.llValue = -42;
  nvtxRangePushEx(&a);
  nvtxMarkA("mark_a");
  nvtxRangePop();
  nvtxRangePop();  // outer

  nvtxRangeId_t cross = nvtxRangeStartA("cross_thread");
  std::thread t([cross] {
    nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "ender");
    Spin(1000);
    nvtxRangeEnd(cross);
  });
  t.join();

  nvtxDomainHandle_t dom = nvtxDomainCreateA("my_domain");
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered_name");
  nvtxDomainNameCategoryA(dom, 3, "dom_cat");
  nvtxEventAttributes_t r = {};
  r.version = NVTX_VERSION;
  r.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  r.message.registered = reg;
  r.category = 3;
  r.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  r.payload.dValue = 2.5;
  nvtxDomainRangePushEx(dom, &r);
  nvtxEventAttributes_t m = Attr("domain_mark");
  m.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  m.payload.ullValue = 99;
  nvtxDomainMarkEx(dom, &m);
  nvtxEventAttributes_t s = Attr("domain_start");
  nvtxRangeId_t id = nvtxDomainRangeStartEx(dom, &s);
  nvtxDomainRangeEnd(dom, id);
  nvtxDomainRangePop(dom);

  nvtxDomainHandle_t other = nvtxDomainCreateA("other_domain");
  nvtxEventAttributes_t o = Attr("other_range");
  nvtxDomainRangePushEx(other, &o);
  nvtxDomainRangePop(other);
  nvtxRangeId_t w = nvtxRangeStartW(L"wide_start");
  nvtxRangeEnd(w);
  nvtxMarkW(L"wide_mark");
  return 0;
}

// stress T N: T threads, each N times: push outer_<t%4>, push inner, pop,
// pop; plus one start/end per iteration.
int Stress(int threads, int iters) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([t, iters, threads, &ready] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      std::string outer = "outer_" + std::to_string(t % 4);
      for (int i = 0; i < iters; ++i) {
        nvtxRangePushA(outer.c_str());
        nvtxRangePushA("inner");
        nvtxRangePop();
        nvtxRangePop();
        nvtxRangeEnd(nvtxRangeStartA("se"));
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

// fork: parent opens "parent_before", forks; the child records "child_range"
// and exits 0; the parent waits, records "parent_after".
int Fork() {
  nvtxRangePushA("parent_before");
  pid_t pid = fork();
  if (pid == 0) {
    nvtxRangePushA("child_range");
    Spin(1000);
    nvtxRangePop();
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  nvtxRangePop();
  nvtxRangePushA("parent_after");
  nvtxRangePop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// fork_exit: like a DataLoader worker, the child records "child_quick" and
// leaves with _exit(0), which runs no atexit handler.
int ForkExit() {
  nvtxRangePushA("parent_range");
  pid_t pid = fork();
  if (pid == 0) {
    nvtxRangePushA("child_quick");
    nvtxRangePop();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  nvtxRangePop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// fork_early: forks BEFORE any NVTX call (as a DataLoader forks its workers
// before the first step range), so the child inherits no session; then each
// side records one range.
int ForkEarly() {
  pid_t pid = fork();
  if (pid == 0) {
    nvtxRangePushA("child_work");
    nvtxRangePop();
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  nvtxRangePushA("parent_work");
  nvtxRangePop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// exit_open: exit(3) with two pushes and a start still open.
int ExitOpen() {
  nvtxRangePushA("closed_one");
  nvtxRangePop();
  nvtxRangePushA("open_a");
  nvtxRangePushA("open_b");
  nvtxRangeStartA("open_start");
  exit(3);
}

// window N: ranges "step" x N each containing "work"; used with
// TRACER_CAPTURE_RANGE=step.
int Window(int n) {
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("step");
    nvtxRangePushA("work");
    nvtxRangePop();
    nvtxRangePop();
  }
  return 0;
}

nvtxEventAttributes_t Registered(nvtxStringHandle_t name) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  return a;
}

// entry_points CODE: calls every NVTX entry point, each with a text nothing
// else uses (so each interns, that is allocates, on its own), then the
// tracer's control API (tracer_control.h); prints "entry_points done" to
// stderr and returns CODE. The names each call records are listed next to
// the test (tests/capture/faults/entry_guard_test.cc).
int EntryPoints(int code) {
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  nvtxInitialize(nullptr);
  nvtxMarkA("first");  // creates this thread's state
  nvtxNameOsThreadA(tid, "thread_a");
  nvtxNameOsThreadW(tid, L"thread_w");
  nvtxNameCategoryA(1, "cat_a");
  nvtxNameCategoryW(2, L"cat_w");
  nvtxRangePushA("push_a");
  nvtxRangePushW(L"push_w");
  nvtxEventAttributes_t push_ex = Attr("push_ex");
  nvtxRangePushEx(&push_ex);
  nvtxMarkA("mark_a");
  nvtxMarkW(L"mark_w");
  nvtxEventAttributes_t mark_ex = Attr("mark_ex");
  nvtxMarkEx(&mark_ex);
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangeEnd(nvtxRangeStartA("start_a"));
  nvtxRangeEnd(nvtxRangeStartW(L"start_w"));
  nvtxEventAttributes_t start_ex = Attr("start_ex");
  nvtxRangeEnd(nvtxRangeStartEx(&start_ex));

  nvtxDomainHandle_t dom_a = nvtxDomainCreateA("domain_a");
  nvtxDomainHandle_t dom_w = nvtxDomainCreateW(L"domain_w");
  nvtxDomainNameCategoryA(dom_a, 3, "dcat_a");
  nvtxDomainNameCategoryW(dom_w, 4, L"dcat_w");
  nvtxStringHandle_t reg_a = nvtxDomainRegisterStringA(dom_a, "registered_a");
  nvtxStringHandle_t reg_w = nvtxDomainRegisterStringW(dom_w, L"registered_w");
  nvtxEventAttributes_t dpush = Attr("dpush");
  nvtxDomainRangePushEx(dom_a, &dpush);
  nvtxEventAttributes_t dmark = Attr("dmark");
  nvtxDomainMarkEx(dom_a, &dmark);
  nvtxEventAttributes_t dstart = Attr("dstart");
  nvtxDomainRangeEnd(dom_w, nvtxDomainRangeStartEx(dom_w, &dstart));
  nvtxDomainRangePop(dom_a);
  // Registered names: these calls intern nothing.
  nvtxEventAttributes_t by_reg_a = Registered(reg_a);
  nvtxDomainMarkEx(dom_a, &by_reg_a);
  nvtxEventAttributes_t by_reg_w = Registered(reg_w);
  nvtxDomainMarkEx(dom_w, &by_reg_w);
  nvtxDomainDestroy(dom_w);

  // The control API, found the way tracer_control.h says.
  const char* lib = getenv("NVTX_INJECTION64_PATH");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (h != nullptr) {
    auto stop = reinterpret_cast<void (*)()>(dlsym(h, "tracerStop"));
    auto start = reinterpret_cast<void (*)()>(dlsym(h, "tracerStart"));
    auto active = reinterpret_cast<int (*)()>(dlsym(h, "tracerIsActive"));
    auto flush = reinterpret_cast<int (*)()>(dlsym(h, "tracerFlush"));
    if (stop && start && active && flush) {
      stop();
      nvtxMarkA("while_stopped");
      start();
      if (active() == 1) nvtxMarkA("active_again");
      flush();
    }
  }
  // Another thread, after all of the above: tracing goes on.
  std::thread([] {
    nvtxRangePushA("last");
    nvtxRangePop();
  }).join();
  fprintf(stderr, "entry_points done\n");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "basic";
  if (mode == "basic") return Basic();
  if (mode == "stress")
    return Stress(argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1000);
  if (mode == "fork") return Fork();
  if (mode == "exit_open") return ExitOpen();
  if (mode == "fork_exit") return ForkExit();
  if (mode == "fork_early") return ForkEarly();
  if (mode == "window") return Window(argc > 2 ? atoi(argv[2]) : 5);
  if (mode == "entry_points") return EntryPoints(argc > 2 ? atoi(argv[2]) : 0);
  if (mode == "slow") {  // slow N: N ranges "tick", 5 ms apart
    for (int i = 0, n = argc > 2 ? atoi(argv[2]) : 5; i < n; ++i) {
      nvtxRangePushA("tick");
      usleep(5000);
      nvtxRangePop();
    }
    return 0;
  }
  if (mode == "exitcode") {
    nvtxRangePushA("before_exit");
    nvtxRangePop();
    return argc > 2 ? atoi(argv[2]) : 0;
  }
  if (mode == "signal") {
    nvtxRangePushA("before_signal");
    nvtxRangePop();
    raise(argc > 2 ? atoi(argv[2]) : SIGTERM);
    return 0;
  }
  fprintf(stderr, "nvtx_client: unknown mode '%s'\n", mode.c_str());
  return 2;
}
