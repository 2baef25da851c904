// An NVTX client that misuses the API the way a buggy or hostile program
// may (issue 12): made-up handles and ids, control calls before the first
// NVTX call, huge buffers, many threads, early forks and execs. Real NVTX
// (the toolkit's nvtx3 headers); the tests (tests/capture/e2e/
// hostile_e2e_test.cc) run it under libtracer.so and check what each mode
// says it does. Modes that report memory print "maxrss_kb N" on stderr.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// This program's own peak resident memory (VmHWM). Not getrusage's
// ru_maxrss: Linux carries that across fork and exec, so it also counts the
// test process that started us (its RSS at fork grows with the traces its
// earlier tests read) and made the bounds below depend on test order.
long MaxRssKb() {
  long kb = -1;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f)) {
      if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::atol(line + 6);
    }
    std::fclose(f);
  }
  if (kb > 0) return kb;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// The tracer's control API (injection/tracer_control.h). The library is
// loaded here when NVTX has not loaded it yet (no NVTX call so far), as a
// program that links or dlopens it would.
template <typename Fn>
Fn Control(const char* name) {
  const char* lib = getenv("NVTX_INJECTION64_PATH");
  void* h = lib ? dlopen(lib, RTLD_NOW) : nullptr;
  return h ? reinterpret_cast<Fn>(dlsym(h, name)) : nullptr;
}

nvtxEventAttributes_t Registered(nvtxStringHandle_t handle) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = handle;
  return a;
}

// bad_handle H: one push/pop and one mark named by the registered-string
// handle H (a number, any base), then a push/pop "after" named by a real
// registered handle; flushes and prints its peak RSS.
int BadHandle(const char* text) {
  auto handle = reinterpret_cast<nvtxStringHandle_t>(strtoull(text, nullptr, 0));
  nvtxDomainHandle_t dom = nvtxDomainCreateA("hostile");
  nvtxStringHandle_t good = nvtxDomainRegisterStringA(dom, "after");
  nvtxEventAttributes_t bad = Registered(handle);
  nvtxDomainRangePushEx(dom, &bad);
  nvtxDomainMarkEx(dom, &bad);
  nvtxDomainRangePop(dom);
  nvtxEventAttributes_t ok = Registered(good);
  nvtxDomainRangePushEx(dom, &ok);
  nvtxDomainRangePop(dom);
  if (auto flush = Control<int (*)()>("tracerFlush")) flush();
  fprintf(stderr, "maxrss_kb %ld\n", MaxRssKb());
  return 0;
}

nvtxEventAttributes_t Named(const char* name) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  return a;
}

// bad_domain KIND: every domain entry point that takes a handle, called once
// with a handle the tracer never handed out: KIND "freed" is a pointer to
// freed memory (another tool's stale handle; ASan reports any read of it),
// "destroyed" the handle of domain "doomed" after nvtxDomainDestroy (one
// push/pop "before" recorded first, and "revived" after creating it again),
// anything else a number (any base). The five calls that need the domain
// (push, mark, pop, start, name category) are dropped; register-string does
// not need it, and its handle names a push "reg" in a real domain; then one
// push/pop "after".
int BadDomain(const std::string& kind) {
  nvtxDomainHandle_t good = nvtxDomainCreateA("good");
  nvtxDomainHandle_t bad = nullptr;
  if (kind == "freed") {
    auto* other = static_cast<uint64_t*>(malloc(64));
    other[0] = 1;
    free(other);
    bad = reinterpret_cast<nvtxDomainHandle_t>(other);
  } else if (kind == "destroyed") {
    bad = nvtxDomainCreateA("doomed");
    nvtxEventAttributes_t before = Named("before");
    nvtxDomainRangePushEx(bad, &before);
    nvtxDomainRangePop(bad);
    nvtxDomainDestroy(bad);
  } else {
    bad = reinterpret_cast<nvtxDomainHandle_t>(strtoull(kind.c_str(), nullptr, 0));
  }
  nvtxEventAttributes_t push = Named("bad_push"), mark = Named("bad_mark"),
                        start = Named("bad_start");
  nvtxDomainRangePushEx(bad, &push);
  nvtxDomainMarkEx(bad, &mark);
  nvtxDomainRangePop(bad);
  nvtxDomainRangeEnd(bad, nvtxDomainRangeStartEx(bad, &start));
  nvtxDomainNameCategoryA(bad, 7, "bad_category");
  nvtxEventAttributes_t reg = Registered(nvtxDomainRegisterStringA(bad, "reg"));
  nvtxDomainRangePushEx(good, &reg);
  nvtxDomainRangePop(good);
  if (kind == "destroyed") {
    nvtxDomainHandle_t again = nvtxDomainCreateA("doomed");
    nvtxEventAttributes_t revived = Named("revived");
    nvtxDomainRangePushEx(again, &revived);
    nvtxDomainRangePop(again);
  }
  nvtxEventAttributes_t after = Named("after");
  nvtxDomainRangePushEx(good, &after);
  nvtxDomainRangePop(good);
  return 0;
}

// The four made-up ids bogus_end passes to nvtxRangeEnd: all ones, bit 62
// alone, a capture-instance id of thread 1 that no start returned, and bit
// 62 clear with a thread index no thread has.
void EndBogusIds() {
  nvtxRangeEnd(~0ull);
  nvtxRangeEnd(1ull << 62);
  nvtxRangeEnd((1ull << 62) | (1ull << 40) | 1);
  nvtxRangeEnd(0x3fffffffffffffffull);
}

// bogus_end: a start/end range "first", then the four bogus ends, then
// "first" ended a second time, then 100 push/pop "after" and 3 start/end
// "se".
int BogusEnd() {
  nvtxRangeId_t first = nvtxRangeStartA("first");
  nvtxRangeEnd(first);
  EndBogusIds();
  nvtxRangeEnd(first);
  for (int i = 0; i < 100; ++i) {
    nvtxRangePushA("after");
    nvtxRangePop();
  }
  for (int i = 0; i < 3; ++i) nvtxRangeEnd(nvtxRangeStartA("se"));
  return 0;
}

// bogus_end_window N: N start/end ranges "step", each around a push/pop
// "work"; the four bogus ends come after the first step (run with
// TRACER_CAPTURE_RANGE=step).
int BogusEndWindow(int n) {
  for (int i = 0; i < n; ++i) {
    if (i == 1) EndBogusIds();
    nvtxRangeId_t step = nvtxRangeStartA("step");
    nvtxRangePushA("work");
    nvtxRangePop();
    nvtxRangeEnd(step);
  }
  return 0;
}

// stop_first: tracerStop() before any NVTX call, 100 ranges "warmup",
// tracerStart(), 5 ranges "measured". Exit 3 when the control API is not
// found; 4 when tracerIsActive() disagrees with the calls.
int StopFirst() {
  auto stop = Control<void (*)()>("tracerStop");
  auto start = Control<void (*)()>("tracerStart");
  auto active = Control<int (*)()>("tracerIsActive");
  if (!stop || !start || !active) return 3;
  stop();
  for (int i = 0; i < 100; ++i) {
    nvtxRangePushA("warmup");
    nvtxRangePop();
  }
  if (active() != 0) return 4;
  start();
  if (active() != 1) return 4;
  for (int i = 0; i < 5; ++i) {
    nvtxRangePushA("measured");
    nvtxRangePop();
  }
  return 0;
}

// threads T N: T threads started together, each N push/pop "busy"; prints
// the peak RSS once they are done (before exit drains the rings).
int Threads(int threads, long iters) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      nvtxRangePushA("busy");  // registers the thread before the start line
      nvtxRangePop();
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      for (long i = 1; i < iters; ++i) {
        nvtxRangePushA("busy");
        nvtxRangePop();
      }
    });
  }
  for (auto& th : pool) th.join();
  fprintf(stderr, "maxrss_kb %ld\n", MaxRssKb());
  return 0;
}

// fork_early: forks before any NVTX call (the library is not even loaded);
// the child records "child_work" and exits; then the parent records
// "parent_work" (its session starts after the child's ended).
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

// fork_early_overlap: forks before any NVTX call; both record while the
// other runs ("child_work" / "parent_work", 50 ms each), the parent waits.
int ForkEarlyOverlap() {
  pid_t pid = fork();
  const char* name = pid == 0 ? "child_work" : "parent_work";
  nvtxRangePushA(name);
  usleep(50000);
  nvtxRangePop();
  if (pid == 0) exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// exec SELF: records "before_exec", then runs `SELF exec_child` in a forked
// child (which records "exec_child_work") and waits for it, then records
// "after_exec". With exec_direct, execs itself in place instead, after
// "before_exec" (its session's file must survive the exec).
int Exec(const char* self, bool in_place) {
  nvtxRangePushA("before_exec");
  nvtxRangePop();
  if (in_place) {
    execl(self, self, "exec_child", static_cast<char*>(nullptr));
    return 5;
  }
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "exec_child", static_cast<char*>(nullptr));
    _exit(5);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  nvtxRangePushA("after_exec");
  nvtxRangePop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

// plant_link TARGET: as another user could, before the first NVTX call,
// links the default output name (tracer-<pid>.trace in the current
// directory) to TARGET; then records "after_plant". Exit 3 if it cannot.
int PlantLink(const char* target) {
  const std::string name = "tracer-" + std::to_string(getpid()) + ".trace";
  if (symlink(target, name.c_str()) != 0) return 3;
  nvtxRangePushA("after_plant");
  nvtxRangePop();
  return 0;
}

int ExecChild() {
  nvtxRangePushA("exec_child_work");
  nvtxRangePop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "bad_handle" && argc > 2) return BadHandle(argv[2]);
  if (mode == "bad_domain" && argc > 2) return BadDomain(argv[2]);
  if (mode == "bogus_end") return BogusEnd();
  if (mode == "bogus_end_window") return BogusEndWindow(argc > 2 ? atoi(argv[2]) : 5);
  if (mode == "stop_first") return StopFirst();
  if (mode == "threads" && argc > 3) return Threads(atoi(argv[2]), atol(argv[3]));
  if (mode == "fork_early") return ForkEarly();
  if (mode == "fork_early_overlap") return ForkEarlyOverlap();
  if (mode == "exec") return Exec(argv[0], false);
  if (mode == "exec_direct") return Exec(argv[0], true);
  if (mode == "exec_child") return ExecChild();
  if (mode == "plant_link" && argc > 2) return PlantLink(argv[2]);
  if (mode == "exitcode") {
    nvtxRangePushA("before_exit");
    nvtxRangePop();
    return argc > 2 ? atoi(argv[2]) : 0;
  }
  fprintf(stderr, "hostile_client: unknown mode '%s'\n", mode.c_str());
  return 2;
}
