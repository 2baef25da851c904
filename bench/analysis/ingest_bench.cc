// Reporter ingest rate (design.md section 7: at least 20 M records/s):
// generates a stream with N kernels (default 1 M), each with its launch
// record, inside nested ranges on 4 threads, then times in one run
//   baseline: a plain read of the same file bytes plus a CRC-32 pass (what any
//             reader of the format must do at least),
//   read:     ReadTraceFile (frames, protobuf parse, columnar decode),
//   analyze:  range index + attribution + projection,
//   tables:   ranges + kernels + range-kernels + gpu tables,
// and prints records/s and each stage's time as a ratio of the baseline.
//
//   ingest_bench [--kernels N] [--iterations K] [--keep PATH]
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "libtracer/analysis/analyzed_trace.h"
#include "libtracer/analysis/reader.h"
#include "libtracer/analysis/tables.h"
#include "libtracer/core/chunk_builder.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A training-step-like stream: per thread, steps containing layers
// containing ops; every kernel launched from the innermost layer range.
size_t Generate(const std::string& path, size_t kernels) {
  using namespace tracer;
  std::string out;
  AppendFileMagic(&out);
  ChunkBuilder b;
  HeaderInfo h;
  h.pid = 1000;
  b.SetHeader(h);
  const char* names[] = {"ampere_sgemm_128x64_nn",
                         "_ZN2at6native29vectorized_elementwise_kernelILi4EfEEviPf",
                         "flash_fwd_kernel", "layer_norm_kernel"};
  for (uint32_t i = 0; i < 4; ++i) b.AddString(i + 1, names[i]);
  b.AddString(5, "step");
  b.AddString(6, "layer");
  for (uint32_t t = 1; t <= 4; ++t) b.AddThread({t, 1000 + t - 1, 0, 0});
  for (uint32_t s = 1; s <= 4; ++s) b.AddStream({s, 0, 1, s + 6});
  constexpr size_t kKernelsPerLayer = 50;
  constexpr size_t kLayersPerStep = 20;
  uint64_t t = 1000, corr = 0, range_id = 0;
  size_t records = 0, k = 0;
  while (k < kernels) {
    const uint32_t thread =
        1 + static_cast<uint32_t>((k / (kKernelsPerLayer * kLayersPerStep)) % 4);
    RangeRecord step;
    step.id = ++range_id;
    step.thread = thread;
    step.name = 5;
    step.start_ns = t;
    for (size_t l = 0; l < kLayersPerStep && k < kernels; ++l) {
      RangeRecord layer;
      layer.id = ++range_id;
      layer.parent_id = step.id;
      layer.thread = thread;
      layer.name = 6;
      layer.depth = 1;
      layer.start_ns = t + 10;
      for (size_t i = 0; i < kKernelsPerLayer && k < kernels; ++i, ++k) {
        LaunchRecord lr;
        lr.correlation_id = ++corr;
        lr.time_ns = t + 20 + i * 100;
        lr.thread = thread;
        lr.range_id = layer.id;
        b.AddLaunch(lr);
        KernelRecord kr;
        kr.start_ns = lr.time_ns + 5000;
        kr.end_ns = kr.start_ns + 40 + (k % 7) * 10;
        kr.name = 1 + static_cast<uint32_t>(k % 4);
        kr.stream = 1 + static_cast<uint32_t>(k % 4);
        kr.correlation_id = corr;
        b.AddKernel(kr);
        records += 2;
      }
      t += kKernelsPerLayer * 100 + 50;
      layer.end_ns = t;
      b.AddRange(layer);
      ++records;
      if (b.pending_items() >= 64 * 1024) b.FinishFrame(&out);
    }
    step.end_ns = t + 10;
    t += 100;
    b.AddRange(step);
    ++records;
  }
  b.FinishFrame(&out);
  std::ofstream(path, std::ios::binary) << out;
  return records;
}

uint64_t PlainRead(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  return crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  size_t kernels = 1'000'000;
  int iterations = 3;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--kernels" && i + 1 < argc)
      kernels = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (a == "--keep" && i + 1 < argc)
      keep = argv[++i];
    else {
      std::fprintf(stderr, "usage: ingest_bench [--kernels N] [--iterations K] [--keep PATH]\n");
      return 2;
    }
  }
  const std::string path =
      keep.empty() ? "/tmp/tracer_ingest_bench_" + std::to_string(getpid()) + ".trace" : keep;
  const size_t records = Generate(path, kernels);
  std::ifstream sz(path, std::ios::binary | std::ios::ate);
  const double mb = static_cast<double>(sz.tellg()) / 1e6;

  double best_plain = 1e30, best_read = 1e30, best_analyze = 1e30, best_tables = 1e30;
  uint64_t sink = 0;
  for (int it = 0; it < iterations; ++it) {
    auto t0 = Clock::now();
    sink += PlainRead(path);
    auto t1 = Clock::now();
    tracer::analysis::Trace trace;
    std::string error;
    if (!tracer::analysis::ReadTraceFile(path, &trace, &error)) {
      std::fprintf(stderr, "ingest_bench: %s\n", error.c_str());
      return 1;
    }
    auto t2 = Clock::now();
    tracer::analysis::AnalyzedTrace analyzed(trace, {});
    auto t3 = Clock::now();
    tracer::analysis::ReportOptions o;
    sink += tracer::analysis::RangesTable(analyzed, o).rows.size();
    sink += tracer::analysis::KernelsTable(analyzed, o).rows.size();
    sink += tracer::analysis::RangeKernelsTable(analyzed, o).rows.size();
    sink += tracer::analysis::GpuProjectionTable(analyzed, o).rows.size();
    auto t4 = Clock::now();
    best_plain = std::min(best_plain, Seconds(t0, t1));
    best_read = std::min(best_read, Seconds(t1, t2));
    best_analyze = std::min(best_analyze, Seconds(t2, t3));
    best_tables = std::min(best_tables, Seconds(t3, t4));
  }
  if (keep.empty()) std::remove(path.c_str());
  const double r = static_cast<double>(records);
  std::printf("ingest_bench: %zu kernels, %zu records, %.1f MB (%.2f bytes/record), best of %d\n",
              kernels, records, mb, mb * 1e6 / r, iterations);
  std::printf("  baseline plain read+crc32: %8.3f s  %7.1f M records/s\n", best_plain,
              r / best_plain / 1e6);
  std::printf("  ReadTraceFile:             %8.3f s  %7.1f M records/s  %6.1fx baseline\n",
              best_read, r / best_read / 1e6, best_read / best_plain);
  std::printf("  + attribution/projection:  %8.3f s  %7.1f M records/s  %6.1fx baseline\n",
              best_analyze, r / best_analyze / 1e6, best_analyze / best_plain);
  std::printf("  + 4 tables:                %8.3f s  %7.1f M records/s  %6.1fx baseline\n",
              best_tables, r / best_tables / 1e6, best_tables / best_plain);
  const double total = best_read + best_analyze + best_tables;
  std::printf("  end to end (read+analyze+tables): %.3f s, %.1f M records/s, %.1fx baseline\n",
              total, r / total / 1e6, total / best_plain);
  return sink == 42 ? 3 : 0;  // keep the work observable
}
