// A real NVTX client that creates threads quickly and ends the way servers
// and training jobs do (exit() while threads run, a SIGTERM handler calling
// exit()), for the thread-churn end-to-end tests (churn_e2e_test.cc says
// what each mode must leave in the trace). Figures for the test go to stderr
// as "key=value" lines.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t NowUs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// One range named `name` carrying `payload` (which range of which thread).
void Range(const char* name, uint64_t payload) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = payload;
  nvtxRangePushEx(&a);
  nvtxRangePop();
}

// churn W N K: W workers each start N threads one after another (start,
// join); each thread records K ranges "churn" (payload = its global index
// * K + range index), then exits. Prints maxrss_kb=<peak RSS>, then exit(0)
// with every thread joined.
int Churn(int workers, int threads, int ranges) {
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([=] {
      for (int i = 0; i < threads; ++i) {
        const uint64_t index = static_cast<uint64_t>(w) * threads + i;
        std::thread([=] {
          for (int k = 0; k < ranges; ++k) Range("churn", index * ranges + k);
        }).join();
      }
    });
  }
  for (auto& t : pool) t.join();
  rusage ru = {};
  getrusage(RUSAGE_SELF, &ru);
  fprintf(stderr, "maxrss_kb=%ld\n", ru.ru_maxrss);
  fflush(stderr);
  exit(0);
}

// churn_exit W MS: W workers start threads one after another (each records
// one range "c", payload = worker << 32 | thread index) for MS ms; then the
// main thread calls exit(0) while they go on. Prints done_<w>=<threads
// worker w joined before exit()> and exit_us=<time exit() took, from an
// atexit handler registered before the tracer's, so it runs after the
// tracer's shutdown>.
constexpr int kMaxWorkers = 64;
std::atomic<uint64_t> g_exit_start_us{0};
std::atomic<uint64_t> g_done[kMaxWorkers];

void PrintExitTime() {
  fprintf(stderr, "exit_us=%llu\n",
          static_cast<unsigned long long>(NowUs() - g_exit_start_us.load()));
}

int ChurnExit(int workers, int ms) {
  if (workers > kMaxWorkers) workers = kMaxWorkers;
  atexit(PrintExitTime);  // before the first NVTX call: runs after the tracer's handler
  Range("main_start", 0);
  for (int w = 0; w < workers; ++w) {
    std::thread([w] {
      for (uint64_t i = 0;; ++i) {
        std::thread([=] { Range("c", (static_cast<uint64_t>(w) << 32) | i); }).join();
        g_done[w].store(i + 1);
      }
    }).detach();
  }
  usleep(static_cast<useconds_t>(ms) * 1000);
  uint64_t done[kMaxWorkers];
  for (int w = 0; w < workers; ++w) done[w] = g_done[w].load();
  for (int w = 0; w < workers; ++w) {
    fprintf(stderr, "done_%d=%llu\n", w, static_cast<unsigned long long>(done[w]));
  }
  g_exit_start_us.store(NowUs());
  exit(0);
}

// sigterm_exit W N US: W workers record ranges "w" (payload = worker << 32
// | sequence), one every US us of busy work (so the test can size rings that
// never fill), each counting the ranges it ended; a SIGTERM
// handler calls exit(0), as servers and launchers do; the main thread sends
// the signal once every worker ended N ranges (a count, not a time: the
// rings then hold the same amount for the final drain however loaded the
// machine is). Prints, per worker, before_<w>=<ranges ended
// before the handler ran> and after_<w>=<ranges ended by the time the
// tracer's atexit handler returned> (from an atexit handler registered
// before the tracer's, which runs after it).
//
// Under the test variant of the library (libtracer_test.so, which exports
// tracerTestAddShutdownHook) the session's shutdown waits, once it stopped
// recording and before its final drain, until every worker ended two more
// ranges: each worker then certainly recorded (was refused) a range after
// the session closed and before the drain that counts refusals, which the
// scheduler alone does not ensure (on a loaded machine no worker may run in
// that window). Prints shutdown_hook=<1 when it waited, 0 without the hook,
// 2 when it gave up after 60 s, 3 when registered but never run>.
std::atomic<uint64_t> g_ended[kMaxWorkers];
uint64_t g_before[kMaxWorkers];
int g_workers = 0;
uint64_t g_pace_us = 0;

void OnTerm(int) {
  for (int w = 0; w < g_workers; ++w) g_before[w] = g_ended[w].load();
  exit(0);
}

int g_shutdown_hook = 0;

// Runs inside the tracer's shutdown, the session closed: waits until each
// worker ended two more ranges (the second one began after this started).
void WaitForEveryWorkerPastTheClose() {
  uint64_t seen[kMaxWorkers];
  for (int w = 0; w < g_workers; ++w) seen[w] = g_ended[w].load();
  const uint64_t deadline = NowUs() + 60 * 1000000ull;
  for (int w = 0; w < g_workers; ++w) {
    while (g_ended[w].load() < seen[w] + 2) {
      if (NowUs() > deadline) {
        g_shutdown_hook = 2;
        return;
      }
      usleep(100);
    }
  }
  g_shutdown_hook = 1;
}

// Registers WaitForEveryWorkerPastTheClose with the test variant of the
// library, when that is the one loaded (NVTX_INJECTION64_PATH).
void AddShutdownHookIfTestLibrary() {
  const char* lib = getenv("NVTX_INJECTION64_PATH");
  if (!lib) return;
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return;
  using AddHook = int (*)(void (*)());
  auto add = reinterpret_cast<AddHook>(dlsym(h, "tracerTestAddShutdownHook"));
  if (add && add(&WaitForEveryWorkerPastTheClose) == 0) g_shutdown_hook = 3;
  dlclose(h);
}

void PrintCounts() {
  uint64_t after[kMaxWorkers];
  for (int w = 0; w < g_workers; ++w) after[w] = g_ended[w].load();
  for (int w = 0; w < g_workers; ++w) {
    fprintf(stderr, "before_%d=%llu\nafter_%d=%llu\n", w,
            static_cast<unsigned long long>(g_before[w]), w,
            static_cast<unsigned long long>(after[w]));
  }
  fprintf(stderr, "shutdown_hook=%d\n", g_shutdown_hook);
  fflush(stderr);
}

int SigtermExit(int workers, int ranges, int pace_us) {
  g_workers = workers < kMaxWorkers ? workers : kMaxWorkers;
  g_pace_us = static_cast<uint64_t>(pace_us);
  atexit(PrintCounts);
  struct sigaction sa = {};
  sa.sa_handler = OnTerm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  // The workers block SIGTERM: the handler runs on the main thread.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::atomic<int> started{0};
  for (int w = 0; w < g_workers; ++w) {
    std::thread([w, &started] {
      started.fetch_add(1);
      for (uint64_t i = 0;; ++i) {
        Range("w", (static_cast<uint64_t>(w) << 32) | i);
        g_ended[w].store(i + 1);
        const uint64_t until = NowUs() + g_pace_us;
        while (NowUs() < until) {
        }
      }
    }).detach();
  }
  pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
  while (started.load() < g_workers) usleep(1000);
  for (int w = 0; w < g_workers; ++w) {
    while (g_ended[w].load() < static_cast<uint64_t>(ranges)) usleep(1000);
  }
  AddShutdownHookIfTestLibrary();  // the workers recorded: the session runs
  kill(getpid(), SIGTERM);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, int def) { return argc > i ? atoi(argv[i]) : def; };
  if (mode == "churn") return Churn(arg(2, 8), arg(3, 100), arg(4, 3));
  if (mode == "churn_exit") return ChurnExit(arg(2, 8), arg(3, 300));
  if (mode == "sigterm_exit") return SigtermExit(arg(2, 4), arg(3, 20000), arg(4, 20));
  fprintf(stderr, "churn_client: unknown mode '%s'\n", mode.c_str());
  return 2;
}
