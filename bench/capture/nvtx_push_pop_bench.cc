// NVTX push+pop cost with libtracer.so against the floor of docs/design.md
// section 7 (floor_injection.cc: two reads of the tracer's own clock, the
// TSC where the tracer uses it, and two thread-local stores) and against no tool, at 1, 8, 16, 32
// and 64 threads. NVTX binds its tool once per process, so each measurement runs in a child process
// of this binary. Cost per push+pop = the threads' summed CPU time / pairs, which stays meaningful
// when 64 threads share 2 cores. Each cell is the best of several runs (shared, noisy machines).
// Prints ns per push+pop and the ratio tracer/floor (target <= 1.25, flat across thread counts).
//
// Name modes (--modes, each a table):
//   one          one name, the common case;
//   names:N      N distinct names cycling, like a large model's per-module
//                ranges (f_model.layers.17.self_attn.q_proj ...): far more
//                names than a thread's intern cache holds at first (1,024
//                slots; it grows to at most 16,384 when it keeps missing);
//   len:N:L      N distinct names of L characters each ("x17_aaa..."):
//                the name lookup's cost by text length (one 16-byte compare
//                up to 15 characters, three up to 47, then the rest against
//                the string table's copy), apart from the number of names;
//   collide:K    K names that share one set of the per-thread intern cache
//                at its initial size (InternCache::SetOf; two ways), pushed
//                in turn: 2 both stay cached, more evict each other until the
//                cache grows and spreads them.
// The floor stores the name pointer and never reads the text; the tracer
// interns it by content, so these modes charge the tracer for its whole name
// lookup.
//
// No event may drop: a dropped push skips its clock read, so a run with
// drops measures a cheaper path than tracing (measured: 1 to 16 threads with
// 4M rings all dropped, since one writer thread cannot drain producers that
// saturate both cores of a small machine, and read 38-46 ns against 57 ns
// without drops). Each thread's ring is therefore sized to hold its whole
// run, so nothing depends on the writer keeping up, and a run whose tracer
// reports a full ring anyway is flagged and fails the benchmark.
//
// Laps (--laps, each a table):
//   first   the measured pairs land in ring slots no event used before (the
//           rings' first lap: fresh pages, each faulted in once per thread);
//   steady  every slot the measured pairs land in was written before: each
//           thread first writes a whole lap of its ring, in quarters, each
//           drained (tracerFlush) before the next, so nothing drops and no
//           producer waits, then the rings are drained once more and the
//           measured pairs follow. A long run is in this state; the first
//           lap is a one-time cost per thread (and per ring size).
// Each table also gives every column's peak RSS (the child process's
// ru_maxrss: rings, name caches, the writer's buffers).
//
// usage: nvtx_push_pop_bench [--pairs N] [--repeats R] [--threads 1,8,16,32,64]
//                            [--modes one,names:5000,len:24:40,collide:2,collide:16]
//                            [--laps first,steady]
//                            [--prefault-floor 0|1|both] [--baseline-lib PATH]
// --prefault-floor 1: the floor touches its whole ring before measuring, so
// it pays no page faults (floor_injection.cc). The tracer's rings are faulted
// in ahead of the producer by its writer thread, which keeps up with one
// producer but not with 8 or more on a 2-core machine: there the tracer's
// producers pay about one fault per 64 pairs. Run both ways; `both` measures
// the two floors in the same run, interleaved, and prints a ratio to each.
// --baseline-lib PATH: also measures another build of libtracer.so (say, the
// one before a change), interleaved with the others, so before and after
// share the machine's state (columns "before" and its ratios).
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/cpu_time.h"
#include "libtracer/core/clock.h"
#include "libtracer/core/intern_cache.h"

namespace {

// Minor page faults the calling thread took so far (first touches of ring
// pages on the measured path).
long ThreadMinorFaults() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

double ThreadCpuNs() { return static_cast<double>(tracer::bench::ThreadCpuNs()); }

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  for (size_t p = 0; p < s.size();) {
    size_t c = s.find(',', p);
    if (c == std::string::npos) c = s.size();
    out.push_back(s.substr(p, c - p));
    p = c + 1;
  }
  return out;
}

// The names a mode pushes, in order (see the header comment).
std::vector<std::string> NamesFor(const std::string& mode) {
  std::vector<std::string> names;
  if (mode.rfind("names:", 0) == 0) {
    static const char* kParts[] = {"self_attn.q_proj",
                                   "self_attn.k_proj",
                                   "self_attn.v_proj",
                                   "self_attn.o_proj",
                                   "self_attn.q_proj.lora_A.default",
                                   "self_attn.q_proj.lora_B.default",
                                   "mlp.gate_proj",
                                   "mlp.up_proj",
                                   "mlp.down_proj",
                                   "input_layernorm",
                                   "post_attention_layernorm",
                                   "self_attn.rotary_emb"};
    const long n = atol(mode.c_str() + 6);
    for (long i = 0; static_cast<long>(names.size()) < n; ++i) {
      long layer = i / 24, part = i % 24;
      names.push_back(std::string(part < 12 ? "f_" : "b_") + "model.layers." +
                      std::to_string(layer) + "." + kParts[part % 12]);
    }
  } else if (mode.rfind("len:", 0) == 0) {
    const long n = atol(mode.c_str() + 4);
    const char* colon = strchr(mode.c_str() + 4, ':');
    const long l = colon ? atol(colon + 1) : 0;
    for (long i = 0; i < n; ++i) {
      std::string s = "x" + std::to_string(i) + "_";
      while (static_cast<long>(s.size()) < l) s += 'a';
      names.push_back(s);
    }
  } else if (mode.rfind("collide:", 0) == 0) {
    const long k = atol(mode.c_str() + 8);
    const size_t set = tracer::InternCache::SetOf("f_block_0");
    names.push_back("f_block_0");
    for (long i = 1; static_cast<long>(names.size()) < k; ++i) {
      std::string candidate = "f_block_" + std::to_string(i);
      if (tracer::InternCache::SetOf(candidate) == set) names.push_back(candidate);
    }
  } else {
    names.push_back("forward_layer");
  }
  return names;
}

// Pairs each thread pushes before measuring (see Measure).
long WarmPairs(size_t names) { return std::max<long>(1000, 4 * static_cast<long>(names)); }

// Ring slots (events) a run's rings have: TRACER_BUFFER_SIZE / 32 (see
// RingBytesFor).
uint64_t RingEventsFor(long pairs_per_thread, size_t names, bool steady);

// The injected tool's tracerFlush (a drain of every ring, waited for), or
// nullptr for a tool without one (the floor).
using FlushFn = int (*)();
FlushFn ToolFlush() {
  const char* lib = getenv("NVTX_INJECTION64_PATH");
  if (!lib) return nullptr;
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  return h ? reinterpret_cast<FlushFn>(dlsym(h, "tracerFlush")) : nullptr;
}

// The pool's threads meet here; the last to arrive runs `at_meet` (with the
// others waiting) before releasing them.
class Meeting {
 public:
  explicit Meeting(int threads) : threads_(threads) {}
  template <typename Fn>
  void Meet(Fn&& at_meet) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t gen = gen_;
    if (++arrived_ == threads_) {
      at_meet();
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen_ != gen; });
  }

 private:
  const int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t gen_ = 0;
};

// Child: threads x pairs push+pop cycling through the mode's names; prints ns
// per pair, the measured threads' minor page faults per 1,000 pairs and the
// process's peak RSS in KiB. steady: the measured pairs go to ring slots
// written before (see the header comment).
int Measure(int threads, long pairs_per_thread, const std::string& mode, bool steady) {
  const std::vector<std::string> storage = NamesFor(mode);
  std::vector<const char*> names;
  for (const auto& n : storage) names.push_back(n.c_str());
  const size_t count = names.size();
  nvtxRangePushA("warmup");  // binds the tool (first call initializes NVTX)
  nvtxRangePop();
  std::atomic<int> ready{0};
  const FlushFn flush = ToolFlush();
  Meeting meeting(threads);
  const uint64_t ring_events = RingEventsFor(pairs_per_thread, count, steady);
  std::vector<double> cpu(threads);
  std::vector<long> faults(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // Warm-up: thread state, every name interned, and the name caches
      // at the size they settle at (they grow while a thread keeps missing:
      // a few passes over thousands of names, once per thread in a run of
      // thousands of steps).
      const long warm = WarmPairs(count);
      for (long i = 0; i < warm; ++i) {
        nvtxRangePushA(names[static_cast<size_t>(i) % count]);
        nvtxRangePop();
      }
      size_t k = 0;
      if (steady) {
        // A whole lap (and the warm-up's events) in quarters of the ring,
        // each drained before the next: no quarter passes the fill mark.
        const auto drain = [&] {
          if (flush) flush();
        };
        meeting.Meet(drain);
        const long quarter = static_cast<long>(ring_events / 8);
        for (uint64_t written = 2 * static_cast<uint64_t>(warm); written < ring_events;
             written += 2 * static_cast<uint64_t>(quarter)) {
          for (long i = 0; i < quarter; ++i) {
            nvtxRangePushA(names[k]);
            nvtxRangePop();
            if (++k == count) k = 0;
          }
          meeting.Meet(drain);
        }
      }
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      const long faults_before = ThreadMinorFaults();
      double start = ThreadCpuNs();
      for (long i = 0; i < pairs_per_thread; ++i) {
        nvtxRangePushA(names[k]);
        nvtxRangePop();
        if (++k == count) k = 0;
      }
      cpu[t] = ThreadCpuNs() - start;
      faults[t] = ThreadMinorFaults() - faults_before;
    });
  }
  for (auto& th : pool) th.join();
  double total = 0;
  long total_faults = 0;
  for (int t = 0; t < threads; ++t) {
    total += cpu[t];
    total_faults += faults[t];
  }
  const double all_pairs = static_cast<double>(pairs_per_thread) * threads;
  rusage self;
  getrusage(RUSAGE_SELF, &self);
  std::printf("%.3f %.3f %ld\n", total / all_pairs,
              1000.0 * static_cast<double>(total_faults) / all_pairs, self.ru_maxrss);
  return 0;
}

// Ring bytes (TRACER_BUFFER_SIZE, also read by the floor for a like-for-like
// footprint) that hold one thread's warm-up and measured pairs with no drain:
// a power of two of 32-byte events, at least 4M (128M for 2M pairs on one
// thread; 128M to 256M in all at any thread count). steady: the measured
// pairs alone, twice over (they start on an empty ring and stay below its
// fill mark, half of it, so the producer never yields).
uint64_t RingBytesFor(long pairs_per_thread, size_t names, bool steady) {
  uint64_t events =
      steady ? 4 * static_cast<uint64_t>(pairs_per_thread) + 64
             : 2 * static_cast<uint64_t>(pairs_per_thread + WarmPairs(names)) + 2 * 1001 + 64;
  uint64_t bytes = 4u << 20;
  while (bytes / 32 < events) bytes *= 2;
  return bytes;
}

uint64_t RingEventsFor(long pairs_per_thread, size_t names, bool steady) {
  return RingBytesFor(pairs_per_thread, names, steady) / 32;
}

// Child stderr goes to err_path; *dropped is set when the tracer logged that
// a ring was full (its one-time warning at TRACER_LOG_LEVEL=warn).
double RunChild(const char* self, const char* lib, bool prefault, int threads, long pairs,
                const std::string& mode, size_t names, bool steady, const std::string& trace,
                bool* dropped, double* faults_per_k, long* rss_kib) {
  *dropped = false;
  std::string err_path = trace + ".stderr";
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    FILE* err = fopen(err_path.c_str(), "w");
    if (err) dup2(fileno(err), 2);
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("LD_PRELOAD");
    if (lib) setenv("NVTX_INJECTION64_PATH", lib, 1);
    setenv("NVTX_FLOOR_PREFAULT", prefault ? "1" : "0", 1);
    setenv("TRACER_OUTPUT", trace.c_str(), 1);
    setenv("TRACER_LOG_LEVEL", "warn", 1);
    setenv("TRACER_CUDA", "0", 1);
    setenv("TRACER_BUFFER_SIZE", std::to_string(RingBytesFor(pairs, names, steady)).c_str(), 1);
    setenv("TRACER_FLUSH_INTERVAL_MS", "2", 1);
    std::string t = std::to_string(threads), p = std::to_string(pairs);
    execl(self, self, "--child", t.c_str(), p.c_str(), mode.c_str(), steady ? "steady" : "first",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {0};
  ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  unlink(trace.c_str());
  if (FILE* err = fopen(err_path.c_str(), "r")) {
    char line[512];
    while (fgets(line, sizeof(line), err)) {
      if (strstr(line, "buffer was full"))
        *dropped = true;
      else
        std::fputs(line, stderr);  // anything else the child said
    }
    fclose(err);
  }
  unlink(err_path.c_str());
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  double ns = -1;
  if (std::sscanf(buf, "%lf %lf %ld", &ns, faults_per_k, rss_kib) != 3) return -1;
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && !strcmp(argv[1], "--child")) {
    return Measure(atoi(argv[2]), atol(argv[3]), argv[4], !strcmp(argv[5], "steady"));
  }
  long total_pairs = 2000000;
  int repeats = 5;
  std::vector<int> thread_counts = {1, 8, 16, 32, 64};
  std::vector<std::string> modes = {"one", "names:5000", "collide:2", "collide:16"};
  std::string floors = "0";
  std::vector<std::string> laps = {"first"};
  const char* baseline = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--pairs")) total_pairs = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--threads")) {
      thread_counts.clear();
      for (const auto& t : SplitCommas(argv[i + 1])) thread_counts.push_back(atoi(t.c_str()));
    }
    if (!strcmp(argv[i], "--modes")) modes = SplitCommas(argv[i + 1]);
    if (!strcmp(argv[i], "--laps")) laps = SplitCommas(argv[i + 1]);
    if (!strcmp(argv[i], "--prefault-floor")) floors = argv[i + 1];
    if (!strcmp(argv[i], "--baseline-lib")) baseline = argv[i + 1];
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  std::string trace = std::string(tmp) + "/nvtx_bench_" + std::to_string(getpid()) + ".trace";

  {
    // What both the floor and the tracer read (each chooses it the same way,
    // from TRACER_CLOCK, in its child).
    std::string note;
    const char* c = getenv("TRACER_CLOCK");
    tracer::InitTraceClock(c && !strcmp(c, "monotonic") ? tracer::ClockMode::kMonotonic
                           : c && !strcmp(c, "tsc")     ? tracer::ClockMode::kTsc
                                                        : tracer::ClockMode::kAuto,
                           &note);
    std::printf("trace clock: %s%s%s\n", tracer::ClockDescription(), note.empty() ? "" : "; ",
                note.c_str());
  }
  // What each run measures, interleaved per repeat.
  struct Variant {
    const char* column;
    const char* lib;
    bool prefault;
  };
  std::vector<Variant> variants = {{"no tool", nullptr, false}};
  if (floors == "both") {
    variants.push_back({"floor pf", FLOOR_LIB, true});
    variants.push_back({"floor flt", FLOOR_LIB, false});
  } else {
    variants.push_back({floors == "1" ? "floor pf" : "floor flt", FLOOR_LIB, floors == "1"});
  }
  const size_t n_floors = variants.size() - 1;
  const size_t tracer_at = variants.size();
  variants.push_back({"tracer", TRACER_LIB, false});
  if (baseline) variants.push_back({"before", baseline, false});
  int status = 0;
  for (const std::string& lap : laps) {
    const bool steady = lap == "steady";
    for (const std::string& mode : modes) {
      const size_t names = NamesFor(mode).size();
      std::printf(
          "NVTX push+pop, %s (%zu name%s), %s lap, ns per pair (summed thread CPU time / pairs, "
          "best of %d)\n",
          mode.c_str(), names, names == 1 ? "" : "s", steady ? "steady" : "first", repeats);
      std::printf("%8s", "threads");
      for (const Variant& v : variants) std::printf(" %10s", v.column);
      for (size_t t = tracer_at; t < variants.size(); ++t) {
        for (size_t f = 1; f <= n_floors; ++f) {
          std::printf(" %16s",
                      (std::string(variants[t].column) + "/" + variants[f].column).c_str());
        }
      }
      std::printf("   faults/1k pairs per column   peak RSS MiB per column\n");
      for (int threads : thread_counts) {
        long pairs = std::max(1000L, total_pairs / threads);
        std::vector<double> best(variants.size(), 1e18), best_faults(variants.size(), 0);
        std::vector<long> max_rss(variants.size(), 0);
        int drop_runs = 0;
        // Interleave them so drift on a shared machine hits them alike.
        for (int r = 0; r < repeats; ++r) {
          for (size_t m = 0; m < variants.size(); ++m) {
            bool dropped = false;
            double faults = 0;
            long rss = 0;
            double v = RunChild(self, variants[m].lib, variants[m].prefault, threads, pairs, mode,
                                names, steady, trace, &dropped, &faults, &rss);
            if (v < 0) {
              std::fprintf(stderr, "nvtx_push_pop_bench: child run failed\n");
              return 1;
            }
            if (v < best[m]) {
              best[m] = v;
              best_faults[m] = faults;
            }
            max_rss[m] = std::max(max_rss[m], rss);
            drop_runs += dropped;
          }
        }
        std::printf("%8d", threads);
        for (double b : best) std::printf(" %10.1f", b);
        for (size_t t = tracer_at; t < variants.size(); ++t) {
          for (size_t f = 1; f <= n_floors; ++f) std::printf(" %15.2fx", best[t] / best[f]);
        }
        std::printf("  ");
        for (size_t m = 1; m < variants.size(); ++m) std::printf(" %5.2f", best_faults[m]);
        std::printf("  ");
        for (size_t m = 1; m < variants.size(); ++m) std::printf(" %5ld", max_rss[m] >> 10);
        if (drop_runs > 0) {
          std::printf("  INVALID: %d run(s) dropped events", drop_runs);
          status = 1;
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  return status;
}
