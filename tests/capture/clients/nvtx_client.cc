// A real NVTX client (the toolkit's nvtx3 headers) for the end-to-end tests.
// Each mode exercises one behaviour; the tests run it under the tracer and
// check the trace against what the mode did (the expectations are spelled
// out in capture_e2e_test.cc next to each mode).
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <deque>
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

// Whether every thread of this process but the caller is asleep (state S
// in /proc/self/task/*/stat): none is inside malloc or free.
bool OtherThreadsAsleep() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return true;
  const long self = syscall(SYS_gettid);
  bool asleep = true;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
    char path[300], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    const int fd = open(path, O_RDONLY);
    if (fd < 0) continue;  // exited meanwhile
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    const char* paren = strrchr(buf, ')');  // "tid (comm) S ..."
    if (paren && paren[1] == ' ' && paren[2] != 'S') asleep = false;
  }
  closedir(dir);
  return asleep;
}

// fork() once every other thread sleeps (at most 10 s), for a child that
// records after a traced call started the session (and its writer thread).
// A sanitizer's allocator without fork handlers (GCC 12's ASan) leaves a
// lock that a thread held at fork() (the parent's writer, allocating as it
// starts or drains) locked forever in the child, whose own writer thread
// then blocks on its first malloc and never writes: the child's ranges are
// lost. glibc's malloc is fork-safe: the tracer needs nothing of this. A
// writer asleep stays so until its next flush (TRACER_FLUSH_INTERVAL_MS).
pid_t QuietFork() {
  for (int i = 0; i < 5000; ++i) {  // asleep twice, 1 ms apart: parked
    if (OtherThreadsAsleep() && (usleep(1000), OtherThreadsAsleep())) break;
    usleep(1000);
  }
  return fork();
}

// fork: parent opens "parent_before", forks; the child records "child_range"
// and exits 0; the parent waits, records "parent_after".
int Fork() {
  nvtxRangePushA("parent_before");
  pid_t pid = QuietFork();
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

// This process's trace file: TRACER_OUTPUT with %p replaced by its pid.
std::string OwnTracePath() {
  const char* t = getenv("TRACER_OUTPUT");
  std::string path = t ? t : "";
  size_t p = path.find("%p");
  if (p != std::string::npos) path.replace(p, 2, std::to_string(getpid()));
  return path;
}

long FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

// Waits up to timeout_ms for the file to grow past `size` (the writer
// thread appended a frame); stat and nanosleep only.
bool WaitForGrowth(const std::string& path, long size, int timeout_ms = 10000) {
  for (int i = 0; i < timeout_ms / 10; ++i) {
    if (FileSize(path) > size) return true;
    usleep(10000);
  }
  return false;
}

// From here on the calling thread (only: no TSYNC, and threads started
// before keep their filters) is killed if it calls write, writev, pwrite or
// pwritev: proof that what it calls never writes on its behalf.
bool ForbidWritesOnThisThread() {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_writev, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwrite64, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwritev, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Runs child() in a forked child inside a "parent_range"; returns the
// child's exit code, or 100 + the signal that killed it.
int InForkedChild(int (*child)()) {
  nvtxRangePushA("parent_range");
  pid_t pid = QuietFork();
  if (pid == 0) _exit(child());
  int status = 0;
  waitpid(pid, &status, 0);
  nvtxRangePop();
  if (WIFSIGNALED(status)) return 100 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

// fork_exit: like a DataLoader worker, the child records "child_quick" and
// leaves with _exit(0), which runs no atexit handler. As a worker waits for
// its next batch, it lingers after the pop, here until its file grew (the
// writer thread wrote the range; at most 10 s, or NVTX_CLIENT_LINGER_MS: the
// allocation-failure sweep, whose failures may leave nothing to wait for), and
// not at all when it has no file (tracing is off in it).
int ForkExit() {
  return InForkedChild([] {
    const std::string path = OwnTracePath();
    nvtxRangePushA("child_quick");  // starts the child's session (its header)
    const long size = FileSize(path);
    nvtxRangePop();
    const char* linger = getenv("NVTX_CLIENT_LINGER_MS");
    if (size >= 0) WaitForGrowth(path, size, linger ? atoi(linger) : 10000);
    return 0;
  });
}

// fork_nonblocking: a forked child's top-level pop never drains the writer
// on the application thread. The child ends "child_first" and waits until it
// is written, then forbids write() on its main thread (seccomp: the process
// is killed on a write there), ends "child_no_write" and waits until that is
// written too. Exit codes: 0 ok, 3/5 not written within 10 s, 4 seccomp
// unavailable; killed (SIGSYS) when the pop wrote on the application thread.
int ForkNonBlocking() {
  return InForkedChild([] {
    const std::string path = OwnTracePath();
    nvtxRangePushA("child_first");
    long size = FileSize(path);
    nvtxRangePop();
    if (!WaitForGrowth(path, size)) return 3;
    size = FileSize(path);
    if (!ForbidWritesOnThisThread()) return 4;
    nvtxRangePushA("child_no_write");
    nvtxRangePop();
    if (!WaitForGrowth(path, size)) return 5;
    return 0;
  });
}

// multi_init LIB K: K NVTX instances initialize at once. LIB bundles its own
// NVTX instance (nvtx_instance.cc); K copies of it under distinct names are
// K instances. K threads, released together, each make their instance's
// first call (which runs its InitializeInjectionNvtx2) and record
// "instance_<i>"; then the client's own instance records "main_after".
int MultiInit(const char* lib, int k) {
  char dir[] = "/tmp/nvtx_instances_XXXXXX";
  if (!mkdtemp(dir)) return 3;
  using RangeFn = void (*)(const char*);
  std::vector<RangeFn> fns;
  std::vector<std::string> paths;
  for (int i = 0; i < k; ++i) {
    paths.push_back(std::string(dir) + "/libinstance" + std::to_string(i) + ".so");
    std::string cmd = std::string("cp '") + lib + "' '" + paths.back() + "'";
    if (system(cmd.c_str()) != 0) return 4;
    void* h = dlopen(paths.back().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return 5;
    auto fn = reinterpret_cast<RangeFn>(dlsym(h, "NvtxInstanceRange"));
    if (!fn) return 6;
    fns.push_back(fn);
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  std::vector<std::string> names;
  for (int i = 0; i < k; ++i) names.push_back("instance_" + std::to_string(i));
  for (int i = 0; i < k; ++i) {
    pool.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < k) {
      }
      fns[i](names[i].c_str());
    });
  }
  for (auto& t : pool) t.join();
  nvtxRangePushA("main_after");
  nvtxRangePop();
  for (const auto& p : paths) unlink(p.c_str());
  rmdir(dir);
  return 0;
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

// entry_points CODE [PAD]: calls every NVTX entry point, each with a text
// nothing else uses, then the tracer's control API (tracer_control.h);
// prints "entry_points done" to stderr and returns CODE. The names each call
// records are listed next to the test (tests/capture/faults/
// entry_guard_test.cc). With PAD > 0 every text gets PAD '+' appended: a text
// longer than the string table's arena block (64 KiB) makes each call that
// interns it allocate (a short new text is interned without allocating).
std::string g_pad;

const char* Padded(const char* text) {
  static auto* kept = new std::deque<std::string>();  // the texts handed out stay
  kept->push_back(std::string(text) + g_pad);
  return kept->back().c_str();
}

const wchar_t* Padded(const wchar_t* text) {
  static auto* kept = new std::deque<std::wstring>();
  kept->push_back(std::wstring(text) + std::wstring(g_pad.begin(), g_pad.end()));
  return kept->back().c_str();
}

int EntryPoints(int code, size_t pad) {
  g_pad.assign(pad, '+');
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  nvtxInitialize(nullptr);
  nvtxMarkA(Padded("first"));  // creates this thread's state
  nvtxNameOsThreadA(tid, Padded("thread_a"));
  nvtxNameOsThreadW(tid, Padded(L"thread_w"));
  nvtxNameCategoryA(1, Padded("cat_a"));
  nvtxNameCategoryW(2, Padded(L"cat_w"));
  nvtxRangePushA(Padded("push_a"));
  nvtxRangePushW(Padded(L"push_w"));
  nvtxEventAttributes_t push_ex = Attr(Padded("push_ex"));
  nvtxRangePushEx(&push_ex);
  nvtxMarkA(Padded("mark_a"));
  nvtxMarkW(Padded(L"mark_w"));
  nvtxEventAttributes_t mark_ex = Attr(Padded("mark_ex"));
  nvtxMarkEx(&mark_ex);
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangePop();
  nvtxRangeEnd(nvtxRangeStartA(Padded("start_a")));
  nvtxRangeEnd(nvtxRangeStartW(Padded(L"start_w")));
  nvtxEventAttributes_t start_ex = Attr(Padded("start_ex"));
  nvtxRangeEnd(nvtxRangeStartEx(&start_ex));

  nvtxDomainHandle_t dom_a = nvtxDomainCreateA(Padded("domain_a"));
  nvtxDomainHandle_t dom_w = nvtxDomainCreateW(Padded(L"domain_w"));
  nvtxDomainNameCategoryA(dom_a, 3, Padded("dcat_a"));
  nvtxDomainNameCategoryW(dom_w, 4, Padded(L"dcat_w"));
  nvtxStringHandle_t reg_a = nvtxDomainRegisterStringA(dom_a, Padded("registered_a"));
  nvtxStringHandle_t reg_w = nvtxDomainRegisterStringW(dom_w, Padded(L"registered_w"));
  nvtxEventAttributes_t dpush = Attr(Padded("dpush"));
  nvtxDomainRangePushEx(dom_a, &dpush);
  nvtxEventAttributes_t dmark = Attr(Padded("dmark"));
  nvtxDomainMarkEx(dom_a, &dmark);
  nvtxEventAttributes_t dstart = Attr(Padded("dstart"));
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
      nvtxMarkA(Padded("while_stopped"));
      start();
      if (active() == 1) nvtxMarkA(Padded("active_again"));
      flush();
    }
  }
  // Another thread, after all of the above: tracing goes on.
  const char* last = Padded("last");
  std::thread([last] {
    nvtxRangePushA(last);
    nvtxRangePop();
  }).join();
  fprintf(stderr, "entry_points done\n");
  return code;
}

// burst T N [NS]: T threads, released together, each push/pop N ranges "q"
// back to back, one every NS nanoseconds of wall time (0 or absent: as fast
// as it can).
int Burst(int threads, long n, long ns_per_range) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      // The first range registers the thread; all are registered (and
      // alive) before any goes on.
      nvtxRangePushA("q");
      nvtxRangePop();
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      timespec start;
      clock_gettime(CLOCK_MONOTONIC, &start);
      const long long t0 = start.tv_sec * 1000000000ll + start.tv_nsec;
      for (long i = 1; i < n; ++i) {
        nvtxRangePushA("q");
        nvtxRangePop();
        if (ns_per_range <= 0) continue;
        for (;;) {
          timespec now;
          clock_gettime(CLOCK_MONOTONIC, &now);
          if (now.tv_sec * 1000000000ll + now.tv_nsec - t0 >= (i + 1) * ns_per_range) break;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

// fresh_ring_faults B P S: a new thread pushes B bursts of P ranges, S us
// apart, through its fresh ring, and says on stderr how many minor page
// faults it took meanwhile ("faults N"): the pages it writes are to be faulted
// in ahead of it by the writer thread, not by it.
int FreshRingFaults(long bursts, long pairs, long sleep_us) {
  long faults = -1;
  std::thread producer([&] {
    nvtxRangePushA("f");  // registers the thread: its ring
    nvtxRangePop();
    rusage before;
    getrusage(RUSAGE_THREAD, &before);
    for (long b = 0; b < bursts; ++b) {
      for (long i = 0; i < pairs; ++i) {
        nvtxRangePushA("f");
        nvtxRangePop();
      }
      usleep(static_cast<useconds_t>(sleep_us));
    }
    rusage after;
    getrusage(RUSAGE_THREAD, &after);
    faults = after.ru_minflt - before.ru_minflt;
  });
  producer.join();
  fprintf(stderr, "faults %ld\n", faults);
  return 0;
}

// names: pushes from reused buffers whose text changes under one address
// (as Python and PyTorch build names), of every length class the tracer's
// name caches treat apart (under 8 bytes, inline, longer, longer than a
// page), non-ASCII bytes, wide names, and 8 threads doing the same at once.
// The expected names and counts are spelled out in nvtx_e2e_test.cc
// (ReusedBuffersNameEveryRangeByItsText).
std::vector<std::string> ReusedBufferTexts() {
  return {"fwd",
          "fwd.",
          "",
          "layer_1.attention",
          "layer_2.attention",
          "layer_1",
          "model.layers.17.self_attn.q_proj.lora_A.default",
          std::string(300, 'n'),
          std::string(300, 'n') + "m",
          std::string(5000, 'h'),
          "na\xc3\xafve_\xce\xbb",
          "na\xc3\xafve_\xce\xbc",
          "layer_1.attention"};
}

int Names() {
  static char buf[8192];
  for (const std::string& text : ReusedBufferTexts()) {
    std::memcpy(buf, text.c_str(), text.size() + 1);
    for (int i = 0; i < 3; ++i) {
      nvtxRangePushA(buf);
      nvtxRangePop();
    }
    nvtxEventAttributes_t a = Attr(buf);
    nvtxRangePushEx(&a);
    nvtxRangePop();
  }
  wchar_t wide[32];
  for (int i = 0; i < 3; ++i) {
    std::swprintf(wide, 32, L"wide_\u03bb_%d", i);
    nvtxRangePushW(wide);
    nvtxRangePop();
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([t] {
      char name[64];
      for (int i = 0; i < 200; ++i) {
        std::snprintf(name, sizeof(name), "t%d_i%d", t, i % 17);
        nvtxRangePushA(name);
        nvtxRangePushA("shared_literal");
        nvtxRangePop();
        nvtxRangePop();
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "basic";
  if (mode == "basic") return Basic();
  if (mode == "names") return Names();
  if (mode == "stress")
    return Stress(argc > 2 ? atoi(argv[2]) : 16, argc > 3 ? atoi(argv[3]) : 1000);
  if (mode == "burst" && argc > 3) {
    return Burst(atoi(argv[2]), atol(argv[3]), argc > 4 ? atol(argv[4]) : 0);
  }
  if (mode == "fresh_ring_faults" && argc > 4) {
    return FreshRingFaults(atol(argv[2]), atol(argv[3]), atol(argv[4]));
  }
  if (mode == "fork") return Fork();
  if (mode == "exit_open") return ExitOpen();
  if (mode == "fork_exit") return ForkExit();
  if (mode == "fork_nonblocking") return ForkNonBlocking();
  if (mode == "multi_init" && argc > 3) return MultiInit(argv[2], atoi(argv[3]));
  if (mode == "fork_early") return ForkEarly();
  if (mode == "window") return Window(argc > 2 ? atoi(argv[2]) : 5);
  if (mode == "entry_points") {
    return EntryPoints(argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? strtoul(argv[3], nullptr, 10) : 0);
  }
  if (mode == "slow") {  // slow N: N ranges "tick", 5 ms apart
    // After each range, until the writer appended a frame (at most 10 s):
    // one frame a range however late a loaded machine runs the writer.
    const std::string path = OwnTracePath();
    for (int i = 0, n = argc > 2 ? atoi(argv[2]) : 5; i < n; ++i) {
      const long size = FileSize(path);
      nvtxRangePushA("tick");
      usleep(5000);
      nvtxRangePop();
      if (size >= 0) WaitForGrowth(path, size);
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
