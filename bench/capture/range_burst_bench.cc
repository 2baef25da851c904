// One thread pushing and popping NVTX ranges flat out with the tracer's
// default settings (only the output path and TRACER_CUDA=0 are set): does
// the writer keep up, or do ranges drop? Runs the same loop in a child
// process without a tool (the baseline) and with libtracer.so, then reads
// the trace the tracer wrote and prints, for the traced run:
//   ns per push+pop (the pushing thread's CPU time) and the ratio to the
//   baseline,
//   ranges written, ranges dropped (the file's drop counters, by cause),
//   bytes per range on disk (file size / ranges written).
// Target (issue 13): 10 M ranges, 0 dropped.
//
//   range_burst_bench [--ranges N] [--keep PATH] [--env TRACER_X=V]...
//                     [--lib libtracer.so]
// (--env: a setting in place of its default, --lib: another build of the
// tracer, to compare; the target's figures are without them).
#include <nvtx3/nvToolsExt.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/cpu_time.h"
#include "proto/trace.pb.h"

namespace {

// Thread CPU time of the pushing thread.
double NowNs() { return static_cast<double>(tracer::bench::ThreadCpuNs()); }

// Child: the loop. Prints ns per push+pop on its stdout pipe.
// The first pair loads and starts the tool (not a per-range cost): it is
// one of the n ranges but not timed.
int Child(uint64_t n, int fd) {
  nvtxRangePushA("burst");
  nvtxRangePop();
  const double t0 = NowNs();
  for (uint64_t i = 1; i < n; ++i) {
    nvtxRangePushA("burst");
    nvtxRangePop();
  }
  const double ns = n > 1 ? (NowNs() - t0) / static_cast<double>(n - 1) : 0;
  dprintf(fd, "%.3f\n", ns);
  return 0;
}

// Runs the loop in a child, with the tracer when lib is set. Returns ns per
// pair (negative on failure).
double RunChild(const char* self, const char* lib, uint64_t n, const std::string& trace,
                const std::vector<std::string>& env) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("LD_PRELOAD");
    for (char** e = environ; *e != nullptr;) {  // defaults: no TRACER_* but ours
      if (std::strncmp(*e, "TRACER_", 7) == 0) {
        const std::string name(*e, std::strchr(*e, '=') - *e);
        unsetenv(name.c_str());
      } else {
        ++e;
      }
    }
    if (lib != nullptr) {
      setenv("NVTX_INJECTION64_PATH", lib, 1);
      setenv("TRACER_OUTPUT", trace.c_str(), 1);
      setenv("TRACER_CUDA", "0", 1);
      for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    }
    const std::string count = std::to_string(n), fd = std::to_string(pipefd[1]);
    execl(self, self, "--child", count.c_str(), fd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipefd[1]);
  char buf[64] = {};
  const ssize_t got = read(pipefd[0], buf, sizeof(buf) - 1);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::atof(buf);
}

struct TraceFacts {
  uint64_t ranges = 0;  // rows written (both forms)
  uint64_t bytes = 0;
  bool footer = false;
  std::map<std::string, uint64_t> dropped;  // footer, else summed deltas
};

bool ReadFacts(const std::string& path, TraceFacts* f) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  f->bytes = bytes.size();
  if (bytes.size() < 8) return false;
  std::map<std::string, uint64_t> deltas;
  tracer::proto::Chunk c;
  for (size_t at = 8; bytes.size() - at >= 8;) {
    uint32_t len;
    std::memcpy(&len, bytes.data() + at, 4);
    if (bytes.size() - at - 8 < len) break;
    if (!c.ParseFromArray(bytes.data() + at + 8, static_cast<int>(len))) return false;
    f->ranges += static_cast<uint64_t>(c.ranges_size() + c.range_batch().thread_size());
    for (const auto& d : c.counter_deltas()) deltas[d.name()] += d.value();
    if (c.has_footer()) {
      f->footer = true;
      for (const auto& d : c.footer().dropped_by_cause()) f->dropped[d.name()] = d.value();
    }
    at += 8 + len;
  }
  if (!f->footer) {
    for (const auto& [name, v] : deltas) {
      if (name.find("drop") != std::string::npos || name.find("full") != std::string::npos) {
        f->dropped[name] = v;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--child") == 0) {
    return Child(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
  }
  uint64_t n = 10'000'000;
  std::string keep;
  std::vector<std::string> env;  // TRACER_X=V settings instead of defaults
  const char* lib = TRACER_LIB;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranges" && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else if (a == "--lib" && i + 1 < argc) {
      lib = argv[++i];
    } else if (a == "--env" && i + 1 < argc) {
      env.emplace_back(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: range_burst_bench [--ranges N] [--keep PATH] [--env TRACER_X=V]... "
                   "[--lib libtracer.so]\n");
      return 2;
    }
  }
  const char* self = "/proc/self/exe";
  char exe[4096];
  const ssize_t len = readlink(self, exe, sizeof(exe) - 1);
  if (len <= 0) return 1;
  exe[len] = '\0';
  const char* tmp = std::getenv("TMPDIR");
  const std::string trace = keep.empty() ? std::string(tmp ? tmp : "/tmp") + "/range_burst_" +
                                               std::to_string(getpid()) + ".trace"
                                         : keep;
  const double base = RunChild(exe, nullptr, n, trace, env);
  const double traced = RunChild(exe, lib, n, trace, env);
  TraceFacts f;
  if (base < 0 || traced < 0 || !ReadFacts(trace, &f)) {
    std::fprintf(stderr, "range_burst_bench: a child failed or the trace is unreadable\n");
    return 1;
  }
  if (keep.empty()) unlink(trace.c_str());
  uint64_t dropped = 0;
  for (const auto& [name, v] : f.dropped) dropped += v;
  std::printf("range_burst_bench: 1 thread, %llu push+pop, %s\n",
              static_cast<unsigned long long>(n), env.empty() ? "default settings" : "settings:");
  for (const std::string& kv : env) std::printf("    %s\n", kv.c_str());
  std::printf("  no tool:  %7.1f ns/push+pop\n", base);
  std::printf("  tracer:   %7.1f ns/push+pop  %6.1fx no tool\n", traced,
              base > 0 ? traced / base : 0.0);
  std::printf("  ranges written %llu, dropped %llu%s, %.1f bytes/range on disk (file %llu B)\n",
              static_cast<unsigned long long>(f.ranges), static_cast<unsigned long long>(dropped),
              f.footer ? "" : " (no footer)",
              f.ranges > 0 ? static_cast<double>(f.bytes) / static_cast<double>(f.ranges) : 0.0,
              static_cast<unsigned long long>(f.bytes));
  for (const auto& [name, v] : f.dropped) {
    if (v > 0)
      std::printf("    dropped %-32s %llu\n", name.c_str(), static_cast<unsigned long long>(v));
  }
  return 0;
}
