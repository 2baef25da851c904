// The writer's whole cost per NVTX range, from ring to file: the writer
// thread must drain a thread's ring faster than the thread fills it (a
// push+pop costs 20-60 ns on the application thread, nvtx_push_pop_bench),
// or rings fill and events drop. range_encode_bench times the encoder
// alone; this times what DrainOnce does per range: read the push and pop
// events from the ring, pair them, define names and threads on first use,
// encode the RangeBatch columns, cut and write frames (to /dev/null).
// Times, in one run, on the same events:
//   baseline: copying the batch's events (the least a drain does),
//   drain:    Writer::DrainOnce over the same ring contents,
// (thread CPU time, best of R), as ns per range and drain / baseline.
// Batches of --batch ranges are appended to a 32 MiB ring (the default
// TRACER_BUFFER_SIZE) and drained, as the writer does when it wakes.
//
//   writer_drain_bench [--ranges N] [--batch B] [--repeats R]
//                      [--names K] [--depth D]
// --names: distinct range names cycled (default 1, the flat-out case);
// --depth: ranges nested this deep (default 1: push, pop, push, pop).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/common/cpu_time.h"
#include "libtracer/capture/event.h"
#include "libtracer/capture/thread_registry.h"
#include "libtracer/capture/thread_state.h"
#include "libtracer/capture/writer.h"
#include "libtracer/core/string_table.h"

namespace {

using tracer::bench::ThreadCpuSeconds;

// The events of `ranges` ranges as the NVTX handler writes them: a push
// (name, time, instance id) and its pop, nested `depth` deep.
std::vector<tracer::Event> MakeEvents(size_t ranges, size_t names, size_t depth,
                                      tracer::ThreadState* t) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < names; ++i) {
    ids.push_back(tracer::GlobalStrings().Intern("bench_range_" + std::to_string(i)).id);
  }
  std::vector<tracer::Event> v;
  v.reserve(2 * ranges);
  uint64_t time = 1'700'000'000'000'000'000ull;
  std::vector<uint64_t> open;
  size_t made = 0;
  while (made < ranges) {
    const size_t d = std::min(depth, ranges - made);
    for (size_t i = 0; i < d; ++i) {
      tracer::Event e;
      e.type = tracer::EventType::kPush;
      e.name = ids[(made + i) % names];
      e.a = t->NextInstanceId();
      e.time = time += 17 + (made + i) % 13;
      v.push_back(e);
      open.push_back(e.a);
    }
    for (size_t i = 0; i < d; ++i) {
      tracer::Event e;
      e.type = tracer::EventType::kPop;
      e.a = open.back();
      open.pop_back();
      e.time = time += 19 + (made + i) % 7;
      v.push_back(e);
    }
    made += d;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 2'000'000, batch = 250'000, names = 1, depth = 1;
  int repeats = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return std::strtoull(argv[++i], nullptr, 10); };
    if (a == "--ranges" && i + 1 < argc) {
      n = next();
    } else if (a == "--batch" && i + 1 < argc) {
      batch = next();
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = static_cast<int>(next());
    } else if (a == "--names" && i + 1 < argc) {
      names = std::max<size_t>(1, next());
    } else if (a == "--depth" && i + 1 < argc) {
      depth = std::max<size_t>(1, next());
    } else {
      std::fprintf(stderr,
                   "usage: writer_drain_bench [--ranges N] [--batch B] [--repeats R] "
                   "[--names K] [--depth D]\n");
      return 2;
    }
  }
  const uint64_t ring_bytes = uint64_t{32} << 20;
  batch = std::min<size_t>(batch, ring_bytes / sizeof(tracer::Event) / 2 - 64);
  tracer::ThreadRegistry registry(ring_bytes);
  tracer::ThreadState* t = registry.Register(/*os_tid=*/1, /*pthread_id=*/1);
  if (t == nullptr) return 1;
  const std::vector<tracer::Event> events = MakeEvents(n, names, depth, t);

  tracer::Writer writer(&registry, 1000);
  const int fd = open("/dev/null", O_WRONLY);
  if (fd < 0 || !writer.BeginOnFd(fd, tracer::HeaderInfo{})) return 1;

  std::vector<tracer::Event> copy(2 * batch);
  double best_copy = 1e30, best_drain = 1e30;
  uint64_t sink = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    double copy_s = 0, drain_s = 0;
    for (size_t at = 0; at < events.size(); at += 2 * batch) {
      const size_t m = std::min(2 * batch, events.size() - at);
      for (size_t i = 0; i < m; i += 64) {
        const int k = static_cast<int>(std::min<size_t>(64, m - i));
        if (!t->Append(events.data() + at + i, k)) return 1;
      }
      // Baseline: the same events copied once more, as fast as it goes.
      const double t0 = ThreadCpuSeconds();
      std::memcpy(copy.data(), events.data() + at, m * sizeof(tracer::Event));
      sink += copy[m - 1].time;
      const double t1 = ThreadCpuSeconds();
      writer.DrainOnce(false);
      const double t2 = ThreadCpuSeconds();
      copy_s += t1 - t0;
      drain_s += t2 - t1;
    }
    best_copy = std::min(best_copy, copy_s);
    best_drain = std::min(best_drain, drain_s);
  }
  writer.DrainOnce(true);
  std::printf(
      "writer_drain_bench: %zu ranges, batches of %zu, %zu name(s), depth %zu, best of %d\n", n,
      batch, names, depth, repeats);
  std::printf("  baseline copy:  %6.1f ns/range\n", best_copy * 1e9 / n);
  std::printf("  drain+encode:   %6.1f ns/range  %5.1fx baseline\n", best_drain * 1e9 / n,
              best_drain / best_copy);
  return sink == 42 ? 3 : 0;
}
