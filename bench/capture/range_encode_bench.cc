// Writer-side cost of one NVTX range record (docs/design.md section 3: one
// background writer encodes every thread's events). The writer must keep up
// with a thread that pushes and pops as fast as it can (about 55 ns per pair
// on the machines here, nvtx_push_pop_bench), or rings fill and events drop.
// Times, in one run, on the same generated ranges:
//   baseline: copying the records (the least any writer does with them),
//   encode:   ChunkBuilder::AddRange for each + FinishFrame whenever the
//             frame reaches the writer's size (kWriterFrameBytes, or
//             --frame-bytes) (RangeBatch columns with per-thread deltas,
//             framing, CRC-32),
// (thread CPU time, best of R) and prints ns per range, encode / baseline and bytes per range in
// the frames (on disk). Format version 1 wrote one Range message per record: 45.9 bytes and 42-71
// ns per range here (issue 13); target <= 10 ns.
//
//   range_encode_bench [--ranges N] [--repeats R] [--frame-bytes B]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "libtracer/core/chunk_builder.h"

namespace {

// Thread CPU time, not wall time: the machines here are shared, and a
// phase descheduled for a while would read as slow.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<tracer::RangeRecord> MakeRanges(size_t n) {
  std::vector<tracer::RangeRecord> v(n);
  uint64_t t = 1'700'000'000'000'000'000ull;  // trace clock values are large
  for (size_t i = 0; i < n; ++i) {
    tracer::RangeRecord& r = v[i];
    r.id = (uint64_t{3} << 40) | (i + 1);  // per-thread id space
    r.parent_id = i % 8 == 0 ? 0 : r.id - 1;
    r.thread = 3;
    r.name = 1 + static_cast<uint32_t>(i % 300);
    r.domain = i % 5 == 0 ? 2 : 0;
    r.start_ns = t;
    r.end_ns = t + 2'000 + (i % 97) * 31;
    r.depth = static_cast<uint32_t>(i % 8);
    r.end_thread = 3;
    r.color = i % 3 == 0 ? 0xff00ff00u : 0;
    t += 3'000;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 1'000'000;
  int repeats = 5;
  size_t frame_bytes = tracer::kWriterFrameBytes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranges" && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--frame-bytes" && i + 1 < argc) {
      frame_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: range_encode_bench [--ranges N] [--repeats R] [--frame-bytes B]\n");
      return 2;
    }
  }
  const std::vector<tracer::RangeRecord> ranges = MakeRanges(n);
  double best_copy = 1e30, best_encode = 1e30;
  size_t bytes = 0;
  uint64_t sink = 0;
  // One builder for every repeat, as the writer thread keeps one: its
  // buffers reach their steady-state size in the first repeat.
  tracer::ChunkBuilder b;
  std::string out;
  for (int rep = 0; rep < repeats; ++rep) {
    const double t0 = ThreadCpuSeconds();
    std::vector<tracer::RangeRecord> copy;
    copy.reserve(64 * 1024);
    for (size_t i = 0; i < n; ++i) {
      copy.push_back(ranges[i]);
      if (copy.size() == 64 * 1024) {
        sink += copy.back().end_ns;
        copy.clear();
      }
    }
    const double t1 = ThreadCpuSeconds();
    for (size_t i = 0; i < n; ++i) {
      b.AddRange(ranges[i]);
      // Checked every 2048 ranges, as the writer checks every 4096 events.
      if (i % 2048 == 2047 && b.ApproximateBytes() >= frame_bytes) {
        b.FinishFrame(&out);
        bytes += out.size();
        out.clear();
      }
    }
    b.FinishFrame(&out);
    bytes += out.size();
    out.clear();
    const double t2 = ThreadCpuSeconds();
    best_copy = std::min(best_copy, t1 - t0);
    best_encode = std::min(best_encode, t2 - t1);
  }
  std::printf("range_encode_bench: %zu ranges, best of %d, %.1f bytes/range\n", n, repeats,
              static_cast<double>(bytes) / repeats / n);
  std::printf("  baseline copy:  %6.1f ns/range\n", best_copy * 1e9 / n);
  std::printf("  encode+frame:   %6.1f ns/range  %5.1fx baseline\n", best_encode * 1e9 / n,
              best_encode / best_copy);
  return sink == 42 ? 3 : 0;
}
