// Thread churn under libtracer.so against no tool: W spawner threads each
// start short-lived threads one after another (start, K NVTX push+pops,
// exit, join) for D ms, then the process calls exit(). Each measurement runs
// in a child process of this binary (NVTX binds its tool once per process),
// the two interleaved so drift on a shared machine hits both alike; each
// cell is the best of R runs. Prints threads started per second, the ratio
// traced/untraced (1.0 = churn costs nothing extra), the child's peak RSS
// and how long its exit() took (the tracer's final drain and footer).
//
// usage: thread_churn_bench [--ms D] [--repeats R] [--spawners 1,8] [--pairs K]
#include <nvtx3/nvToolsExt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> SplitInts(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(atoi(p));
    const char* c = strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return out;
}

struct Result {
  double threads_per_s = 0;
  long maxrss_kb = 0;
  double exit_ms = 0;
};

// The child: prints "<threads per second> <peak RSS KiB> <exit start, s>",
// then exits with exit() (the traced program's usual end).
int Child(int spawners, int ms, int pairs) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> started{0};
  std::vector<std::thread> pool;
  const double begin = NowS();
  for (int s = 0; s < spawners; ++s) {
    pool.emplace_back([&] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::thread([pairs] {
          for (int i = 0; i < pairs; ++i) {
            nvtxRangePushA("churn");
            nvtxRangePop();
          }
        }).join();
        ++n;
      }
      started.fetch_add(n);
    });
  }
  usleep(static_cast<useconds_t>(ms) * 1000);
  stop.store(true);
  for (auto& t : pool) t.join();
  const double elapsed = NowS() - begin;
  rusage ru = {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("%.1f %ld %.6f\n", static_cast<double>(started.load()) / elapsed, ru.ru_maxrss,
              NowS());
  std::fflush(stdout);
  exit(0);
}

bool RunChild(const char* self, const char* lib, int spawners, int ms, int pairs,
              const std::string& trace, Result* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("LD_PRELOAD");
    if (lib) setenv("NVTX_INJECTION64_PATH", lib, 1);
    setenv("TRACER_OUTPUT", trace.c_str(), 1);
    setenv("TRACER_LOG_LEVEL", "warn", 1);
    setenv("TRACER_CUDA", "0", 1);
    std::string s = std::to_string(spawners), m = std::to_string(ms), p = std::to_string(pairs);
    execl(self, self, "--child", s.c_str(), m.c_str(), p.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[256] = {0};
  size_t got = 0;
  ssize_t n;
  while (got + 1 < sizeof(buf) && (n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0) {
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const double ended = NowS();
  unlink(trace.c_str());
  double exit_start = 0;
  if (got == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      sscanf(buf, "%lf %ld %lf", &out->threads_per_s, &out->maxrss_kb, &exit_start) != 3) {
    return false;
  }
  out->exit_ms = (ended - exit_start) * 1000;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && !strcmp(argv[1], "--child")) {
    return Child(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  }
  int ms = 2000, repeats = 3, pairs = 3;
  std::vector<int> spawner_counts = {1, 8};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--ms")) ms = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--pairs")) pairs = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--spawners")) spawner_counts = SplitInts(argv[i + 1]);
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  std::string trace = std::string(tmp) + "/churn_bench_" + std::to_string(getpid()) + ".trace";

  std::printf(
      "Thread churn: threads started per second for %d ms, each doing %d push+pop "
      "(best of %d), peak RSS and exit() time of the child\n",
      ms, pairs, repeats);
  std::printf("%9s %12s %12s %8s %12s %12s %12s %12s\n", "spawners", "untraced/s", "traced/s",
              "ratio", "rss untr KiB", "rss tr KiB", "exit untr ms", "exit tr ms");
  for (int spawners : spawner_counts) {
    Result best[2];
    for (int r = 0; r < repeats; ++r) {
      for (int m = 0; m < 2; ++m) {
        Result res;
        if (!RunChild(self, m ? TRACER_LIB : nullptr, spawners, ms, pairs, trace, &res)) {
          std::fprintf(stderr, "thread_churn_bench: child run failed\n");
          return 1;
        }
        if (res.threads_per_s > best[m].threads_per_s) best[m].threads_per_s = res.threads_per_s;
        // Worst RSS and exit time: the bounds are what matters.
        best[m].maxrss_kb = std::max(best[m].maxrss_kb, res.maxrss_kb);
        best[m].exit_ms = std::max(best[m].exit_ms, res.exit_ms);
      }
    }
    std::printf("%9d %12.0f %12.0f %7.2fx %12ld %12ld %12.1f %12.1f\n", spawners,
                best[0].threads_per_s, best[1].threads_per_s,
                best[1].threads_per_s / best[0].threads_per_s, best[0].maxrss_kb, best[1].maxrss_kb,
                best[0].exit_ms, best[1].exit_ms);
    std::fflush(stdout);
  }
  return 0;
}
