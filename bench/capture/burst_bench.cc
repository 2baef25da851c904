// Bursts of NVTX ranges at the tracer's default settings: how many events
// drop and how much memory the tracer adds, against the old default (a
// 1 MiB per-thread ring, TRACER_BUFFER_SIZE=1M) in the same run. Each
// measurement is a child process of this binary (NVTX binds its tool once
// per process): untraced (memory baseline), traced at the defaults, traced
// with the old ring size.
//
// The worst realistic rate (issue 11, section 4). A Llama-7B-sized model,
// annotated per module (forward and backward ranges, tracer.torch.annotate)
// and run under torch.autograd.profiler.emit_nvtx (one range per aten op,
// nested ops included, each named "aten::mm, seq = N, op_id = M": a new
// text for every op):
//   - modules per decoder layer: the layer, self_attn, q/k/v/o_proj,
//     rotary_emb, mlp, gate/up/down_proj, act_fn, input_layernorm,
//     post_attention_layernorm: 14; x 32 layers, plus embed, norm, lm_head.
//   - aten op ranges per layer forward: 7 linears x ~5 (linear > t >
//     transpose, matmul > mm), 2 RMSNorms x ~14 (to, pow, mean, add, rsqrt,
//     mul, with their nested copies), attention ~50 (views, transposes,
//     rotary mul/cat/neg/slice, sdpa and its kernel op), MLP 2, residual
//     adds 2: about 120. Backward runs about twice as many (one range per
//     autograd node plus the ops it calls): about 240.
//   - so one training step records about 32 x (14 x 2 + 120 + 240) = 12.4 k
//     ranges on its forward thread and its autograd thread.
//   - at full speed PyTorch's CPU side dispatches an op in a few
//     microseconds from Python and nested ops in well under one: the worst
//     realistic rate is one range per microsecond, 1 M ranges/s (2 M NVTX
//     events/s, 64 MB/s of ring) on each of the two busy threads (forward
//     and autograd; they overlap with pipelined micro-batches), with a few
//     more threads (data loader, pin memory, NCCL watchdog) recording about
//     1 k ranges/s each.
// The "llama-7B 2x" case runs twice that: 2 threads at 2 M ranges/s each
// (one range per 500 ns, paced to a wall-clock deadline; a thread that
// cannot keep the pace runs slower, and the rate it reached is printed)
// with emit_nvtx names and nesting, plus 6 threads at 2 k ranges/s, for
// --steps steps back to back (no GPU wait: a CPU-bound step, the worst
// case). The flat-out cases push and pop one name as fast as the threads
// can, which no real program does: with TRACER_BUFFER_FULL=drop (or a
// build before it existed, --base-lib) drops are then bounded by the ring
// and the writer's CPU share only; at the default (yield) a thread past
// three quarters full runs at the writer's pace, and Mrange/s shows it.
//
// Each traced case also prints the CPU the tracer's writer thread got
// during the workload (the process's CPU minus its recording threads'),
// as a share of the workload's wall time: on a machine whose cores are
// shared, flat-out producers take the cores and the writer drains only
// what its share allows, so drops there say as much about the share as
// about the writer.
//
// usage: burst_bench [--steps N] [--flat N] [--repeats R]
//                    [--cases burst,llama,flat1,flat4]
//                    [--threads 1,2,4,8] [--base-lib libtracer.so]
// --threads: the flat-out case at each of these thread counts (cases
//   flatT), N ranges in all split among them; the llama case with this
//   many threads at the 2x rate each (cases llamaT, 6 light threads too);
//   with --cases flat (or llama) only those.
// --base-lib: another build of the tracer at its defaults, run alternately
//   with this one (in place of the old-1M column), to compare.
#include <nvtx3/nvToolsExt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/cpu_time.h"
#include "tests/capture/trace_file_reader.h"

namespace {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// Waits (spinning) until `deadline`; a thread behind its pace does not wait.
void Pace(int64_t deadline) {
  while (NowNs() < deadline) {
  }
}

// Peak resident memory of this process (VmHWM), in KiB. Read by the child
// itself: a forked child's ru_maxrss counts the parent's pages it shared
// before exec.
long PeakRssKb() {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long kb = 0;
  while (fgets(line, sizeof(line), f)) {
    if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  }
  fclose(f);
  return kb;
}

using tracer::bench::ThreadCpuNs;

int64_t ProcessCpuNs() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ll +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ll;
}

// The CPU of the threads the workload started (each adds its own at its
// end), to tell the writer's CPU from the process's.
std::atomic<int64_t> g_recording_cpu_ns{0};

// The child's result line: ranges issued, wall ns, peak RSS, the CPU the
// recording threads used and what the rest of the process used (the tracer's
// writer: the main thread only waits), both during the workload.
void PrintChildResult(uint64_t ranges, int64_t ns) {
  const int64_t rec = g_recording_cpu_ns.load() + ThreadCpuNs();  // + the main thread
  const int64_t other = std::max<int64_t>(0, ProcessCpuNs() - rec);
  std::printf("ranges=%llu ns=%lld hwm=%ld pcpu=%lld wcpu=%lld\n",
              static_cast<unsigned long long>(ranges), static_cast<long long>(ns), PeakRssKb(),
              static_cast<long long>(rec), static_cast<long long>(other));
}

// ---- Child workloads ----

// One Llama-7B training step's ranges on one thread, emit_nvtx style, one
// range every ns_per_range. Returns the ranges recorded.
struct StepShape {
  const char* module;
  int fwd_ops;  // aten op ranges inside its forward (about half nested)
};
constexpr StepShape kLayer[] = {
    {"input_layernorm", 14},
    {"self_attn", 50},
    {"q_proj", 5},
    {"k_proj", 5},
    {"v_proj", 5},
    {"rotary_emb", 4},
    {"o_proj", 5},
    {"post_attention_layernorm", 14},
    {"mlp", 4},
    {"gate_proj", 5},
    {"up_proj", 5},
    {"act_fn", 2},
    {"down_proj", 5},
};
constexpr const char* kOps[] = {"aten::linear",
                                "aten::t",
                                "aten::transpose",
                                "aten::matmul",
                                "aten::mm",
                                "aten::to",
                                "aten::pow",
                                "aten::mean",
                                "aten::add",
                                "aten::rsqrt",
                                "aten::mul",
                                "aten::view",
                                "aten::cat",
                                "aten::neg",
                                "aten::slice",
                                "aten::silu",
                                "aten::_scaled_dot_product_flash_attention"};

struct Emitter {
  int64_t next_deadline;
  int64_t ns_per_range;
  uint64_t seq = 0;
  uint64_t ranges = 0;
  char name[160];

  void Push(const char* text) {
    Pace(next_deadline);
    next_deadline += ns_per_range;
    nvtxRangePushA(text);
    ++ranges;
  }
  // An op range named as emit_nvtx names it: a new text every time.
  void Op(int k, bool backward) {
    const char* op = kOps[k % (sizeof(kOps) / sizeof(kOps[0]))];
    ++seq;
    if (backward) {
      snprintf(name, sizeof(name), "%sBackward0, seq = %llu, op_id = %llu", op + 6,
               static_cast<unsigned long long>(seq / 2), static_cast<unsigned long long>(seq));
    } else {
      snprintf(name, sizeof(name), "%s, seq = %llu, op_id = %llu", op,
               static_cast<unsigned long long>(seq / 2), static_cast<unsigned long long>(seq));
    }
    Push(name);
    // Every other op calls one nested op (linear > matmul > mm, to > copy_).
    if (k % 2 == 0) {
      ++seq;
      snprintf(name, sizeof(name), "aten::mm, op_id = %llu", static_cast<unsigned long long>(seq));
      Push(name);
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  void Module(int layer, const StepShape& m, bool backward) {
    snprintf(name, sizeof(name), "%c_model.layers.%d.%s", backward ? 'b' : 'f', layer, m.module);
    Push(name);
    const int ops = backward ? 2 * m.fwd_ops : m.fwd_ops;
    for (int k = 0; k < ops;) {
      Op(k, backward);
      k += (k % 2 == 0) ? 2 : 1;  // an op with a nested one counts as two ranges
    }
    nvtxRangePop();
  }
  void Step(int step) {
    snprintf(name, sizeof(name), "step_%d", step);
    Push(name);
    for (int pass = 0; pass < 2; ++pass) {
      const bool backward = pass == 1;
      Push(backward ? "backward" : "forward");
      for (int l = 0; l < 32; ++l) {
        const int layer = backward ? 31 - l : l;
        snprintf(name, sizeof(name), "%c_model.layers.%d", backward ? 'b' : 'f', layer);
        Push(name);
        for (const StepShape& m : kLayer) Module(layer, m, backward);
        nvtxRangePop();
      }
      nvtxRangePop();
    }
    nvtxRangePop();
  }
};

// llama HEAVY STEPS NS LIGHT: HEAVY threads run STEPS steps each at one
// range per NS ns; LIGHT threads record "loader_batch" ranges at one per
// 500 us until the heavy ones finish. Prints "ranges=N ns=T".
int ChildLlama(int heavy, int steps, int64_t ns, int light) {
  std::atomic<int> ready{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> pool;
  const int64_t start = NowNs() + 20000000;  // all threads started by then
  for (int t = 0; t < heavy; ++t) {
    pool.emplace_back([&] {
      Emitter e{start, ns};
      Pace(start);
      for (int s = 0; s < steps; ++s) e.Step(s);
      total += e.ranges;
      g_recording_cpu_ns += ThreadCpuNs();
    });
  }
  std::vector<std::thread> lights;
  for (int t = 0; t < light; ++t) {
    lights.emplace_back([&] {
      uint64_t n = 0;
      while (!done.load(std::memory_order_relaxed)) {
        nvtxRangePushA("loader_batch");
        nvtxRangePop();
        ++n;
        usleep(500);
      }
      total += n;
      g_recording_cpu_ns += ThreadCpuNs();
    });
  }
  (void)ready;
  for (auto& th : pool) th.join();
  const int64_t end = NowNs();
  done = true;
  for (auto& th : lights) th.join();
  PrintChildResult(total.load(), end - start);
  return 0;
}

// flat THREADS N: THREADS threads push/pop "q" N times each, flat out.
int ChildFlat(int threads, long n) {
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  int64_t start = 0;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      for (long i = 0; i < n; ++i) {
        nvtxRangePushA("q");
        nvtxRangePop();
      }
      g_recording_cpu_ns += ThreadCpuNs();
    });
  }
  start = NowNs();
  for (auto& th : pool) th.join();
  const int64_t ns = NowNs() - start;
  PrintChildResult(static_cast<uint64_t>(threads) * n, ns);
  return 0;
}

// ---- Parent ----

struct Result {
  bool ok = false;
  uint64_t ranges_issued = 0;  // by the workload
  int64_t ns = 0;              // its wall time
  uint64_t ranges_written = 0;
  uint64_t dropped = 0;  // events (footer: nvtx_ring_full)
  long maxrss_kb = 0;    // the child's VmHWM at the end of its workload
  int64_t recording_cpu_ns = 0;
  int64_t writer_cpu_ns = 0;  // the process's CPU but the recording threads'
};

Result RunChild(const char* self, const char* lib, const char* buffer_size,
                const std::vector<std::string>& args, const std::string& trace) {
  Result res;
  int fds[2];
  if (pipe(fds) != 0) return res;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    unsetenv("NVTX_INJECTION64_PATH");
    unsetenv("LD_PRELOAD");
    for (const char* v : {"TRACER_BUFFER_SIZE", "TRACER_BUFFER_LIMIT", "TRACER_BUFFER_FULL",
                          "TRACER_FLUSH_INTERVAL_MS"}) {
      unsetenv(v);
    }
    if (lib) setenv("NVTX_INJECTION64_PATH", lib, 1);
    if (buffer_size) setenv("TRACER_BUFFER_SIZE", buffer_size, 1);
    setenv("TRACER_OUTPUT", trace.c_str(), 1);
    setenv("TRACER_LOG_LEVEL", "error", 1);  // the drop lines: counted from the footer
    setenv("TRACER_CUDA", "0", 1);
    std::vector<char*> argv = {const_cast<char*>(self), const_cast<char*>("--child")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(self, argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[256] = {0};
  size_t got = 0;
  ssize_t n;
  while (got < sizeof(buf) - 1 && (n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0) {
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return res;
  unsigned long long issued = 0;
  long long ns = 0;
  long hwm = 0;
  long long pcpu = 0, wcpu = 0;
  if (sscanf(buf, "ranges=%llu ns=%lld hwm=%ld pcpu=%lld wcpu=%lld", &issued, &ns, &hwm, &pcpu,
             &wcpu) != 5) {
    return res;
  }
  res.recording_cpu_ns = pcpu;
  res.writer_cpu_ns = wcpu;
  res.ranges_issued = issued;
  res.ns = ns;
  res.maxrss_kb = hwm;
  if (lib) {
    tracer::testing::ParsedTrace t = tracer::testing::ReadTraceFile(trace);
    unlink(trace.c_str());
    if (!t.has_footer) return res;
    res.ranges_written = t.ranges.size();
    for (const auto& d : t.footer.dropped_by_cause()) {
      if (d.name() == "nvtx_ring_full") res.dropped = d.value();
    }
  }
  res.ok = true;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && !strcmp(argv[1], "--child")) {
    const std::string w = argv[2];
    if (w == "llama" && argc == 7) {
      return ChildLlama(atoi(argv[3]), atoi(argv[4]), atoll(argv[5]), atoi(argv[6]));
    }
    if (w == "flat" && argc == 5) return ChildFlat(atoi(argv[3]), atol(argv[4]));
    return 2;
  }
  int steps = 40;
  long flat = 2000000;
  int repeats = 1;
  std::string only = "burst,llama,flat1,flat4";
  std::string thread_list;
  bool cases_given = false;
  const char* base_lib = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--cases")) {
      only = std::string(argv[i + 1]);
      cases_given = true;
    }
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--flat")) flat = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--repeats")) repeats = std::max(1, atoi(argv[i + 1]));
    if (!strcmp(argv[i], "--threads")) thread_list = argv[i + 1];
    if (!strcmp(argv[i], "--base-lib")) base_lib = argv[i + 1];
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  const std::string trace =
      std::string(tmp) + "/burst_bench_" + std::to_string(getpid()) + ".trace";

  struct Case {
    std::string key;
    std::string label;
    std::vector<std::string> args;
  };
  std::vector<Case> cases = {
      {"burst", "burst 200k quick ranges, 1 thread", {"flat", "1", "200000"}},
      {"llama",
       "llama-7B emit_nvtx 2x rate, 2+6 thr",
       {"llama", "2", std::to_string(steps), "500", "6"}},
      {"flat1", "flat out, 1 thread", {"flat", "1", std::to_string(flat)}},
      {"flat4", "flat out, 4 threads", {"flat", "4", std::to_string(flat / 4)}},
  };
  if (!thread_list.empty()) {
    const std::string given = only;
    only.clear();
    for (size_t at = 0; at < thread_list.size();) {
      size_t comma = thread_list.find(',', at);
      if (comma == std::string::npos) comma = thread_list.size();
      const int t = std::max(1, atoi(thread_list.substr(at, comma - at).c_str()));
      const std::string ts = std::to_string(t);
      cases.push_back({"llama" + ts,
                       "llama-7B 2x rate, " + ts + "+6 thr",
                       {"llama", ts, std::to_string(steps), "500", "6"}});
      cases.push_back({"flat" + ts,
                       "flat out, " + ts + " thread" + (t > 1 ? "s" : ""),
                       {"flat", ts, std::to_string(flat / t)}});
      only += (only.empty() ? "" : ",") + std::string("llama") + ts + ",flat" + ts;
      at = comma + 1;
    }
    // With --cases too: only its kinds (llama, flat) at these counts.
    if (cases_given) {
      std::string kept;
      for (const char* kind : {"llama", "flat"}) {
        if (("," + given + ",").find(std::string(",") + kind + ",") == std::string::npos) continue;
        for (size_t at = 0; at < only.size();) {
          size_t comma = only.find(',', at);
          if (comma == std::string::npos) comma = only.size();
          const std::string key = only.substr(at, comma - at);
          if (key.rfind(kind, 0) == 0) kept += (kept.empty() ? "" : ",") + key;
          at = comma + 1;
        }
      }
      only = kept;
    }
  }
  const std::string wanted = "," + only + ",";
  cases.erase(std::remove_if(cases.begin(), cases.end(),
                             [&](const Case& c) {
                               return wanted.find("," + c.key + ",") == std::string::npos;
                             }),
              cases.end());
  // Duplicates (flat1 both as a fixed case and from --threads): the first.
  for (size_t i = 0; i < cases.size(); ++i) {
    for (size_t j = i + 1; j < cases.size();) {
      if (cases[j].key == cases[i].key) {
        cases.erase(cases.begin() + static_cast<long>(j));
      } else {
        ++j;
      }
    }
  }
  const char* other = base_lib ? "base" : "1M";
  std::printf(
      "NVTX bursts at the default settings (32M ring, fill-mark wake-up) vs %s, same run, "
      "alternating; best of %d.\n"
      "dropped = NVTX events lost (footer nvtx_ring_full) / events issued; +MiB = peak RSS "
      "(VmHWM at the end of the workload) over the untraced run;\n"
      "wcpu = CPU the writer got during the workload / its wall time (rcpu: the recording "
      "threads').\n",
      base_lib ? base_lib : "the old default (TRACER_BUFFER_SIZE=1M)", repeats);
  std::printf("%-34s %9s %8s %9s %9s %7s %7s %7s %7s %6s %9s\n", "case", "ranges", "Mrange/s",
              "drop now", (std::string("drop ") + other).c_str(), "+MiB", "+MiB", "wcpu", "wcpu",
              "rcpu", "kept");
  std::printf("%-34s %9s %8s %9s %9s %7s %7s %7s %7s %6s %9s\n", "", "", "", "", "", "now", other,
              "now", other, "now", "now/oth");
  int status = 0;
  for (const Case& c : cases) {
    Result best[3];  // untraced, default, old 1M or the base library
    for (int r = 0; r < repeats; ++r) {
      const char* sizes[3] = {nullptr, nullptr, base_lib ? nullptr : "1M"};
      const char* libs[3] = {nullptr, TRACER_LIB, base_lib ? base_lib : TRACER_LIB};
      for (int m0 = 0; m0 < 3; ++m0) {
        // Alternating which traced build runs first.
        const int m = (r % 2 == 1 && m0 > 0) ? 3 - m0 : m0;
        Result x = RunChild(self, libs[m], sizes[m], c.args, trace);
        if (!x.ok) {
          std::fprintf(stderr, "burst_bench: child run failed (%s)\n", c.label.c_str());
          return 1;
        }
        // Best = fewest drops, then the lowest memory.
        if (!best[m].ok || x.dropped < best[m].dropped ||
            (x.dropped == best[m].dropped && x.maxrss_kb < best[m].maxrss_kb)) {
          best[m] = x;
        }
      }
    }
    const double events = 2.0 * static_cast<double>(best[1].ranges_issued);
    const double rate = best[1].ns > 0 ? best[1].ranges_issued * 1e3 / best[1].ns : 0;
    const double drop_now = 100.0 * best[1].dropped / events;
    const double drop_old = 100.0 * best[2].dropped / (2.0 * best[2].ranges_issued);
    const double mib_now = (best[1].maxrss_kb - best[0].maxrss_kb) / 1024.0;
    const double mib_old = (best[2].maxrss_kb - best[0].maxrss_kb) / 1024.0;
    auto share = [](const Result& x, int64_t cpu) {
      return x.ns > 0 ? 100.0 * static_cast<double>(cpu) / static_cast<double>(x.ns) : 0.0;
    };
    const double kept = best[2].ranges_written > 0
                            ? static_cast<double>(best[1].ranges_written) / best[2].ranges_written
                            : 0;
    std::printf("%-34s %9llu %8.2f %8.2f%% %8.2f%% %7.1f %7.1f %6.0f%% %6.0f%% %5.0f%% %8.2fx\n",
                c.label.c_str(), static_cast<unsigned long long>(best[1].ranges_issued), rate,
                drop_now, drop_old, mib_now, mib_old, share(best[1], best[1].writer_cpu_ns),
                share(best[2], best[2].writer_cpu_ns), share(best[1], best[1].recording_cpu_ns),
                kept);
    std::fflush(stdout);
    // The defaults must hold the burst and the realistic rate whole.
    if (c.key == "burst" || c.key == "llama" || c.key == "llama1" || c.key == "llama2") {
      if (best[1].dropped != 0) status = 1;
    }
  }
  return status;
}
