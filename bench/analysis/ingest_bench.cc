// Reporter ingest rate (docs/design.md section 7: at least 20 M records/s):
// generates a stream with N kernels (default 1 M), each with its launch
// record, inside nested ranges on 4 threads, then times in one run
//   baseline: a plain read of the same file bytes plus a CRC-32 pass (what any
//             reader of the format must do at least),
//   read:     ReadTraceFile (frames, protobuf parse, columnar decode),
//   analyze:  range index + attribution (the GPU projection is computed on
//             first use, by the ranges and gpu tables),
//   tables:   ranges + kernels + range-kernels + gpu tables,
//   stream:   the streaming path (StreamingTables: read + aggregate + the
//             same tables in bounded memory, `tracer report --stream`),
// and prints records/s and each stage's time as a ratio of the baseline.
// With --rss it also generates streams of N and 10 N kernels and measures the
// peak resident memory of each path in a forked child (docs/design.md section 7:
// "peak memory independent of the record count on a 10 M-kernel stream").
// With --nsys it writes the same program as an nsys SQLite export (N and
// 10 N kernels; each launch record becomes the cudaLaunchKernel API call an
// nsys export holds) and times `tracer report --stream` (the streaming nsys
// importer + aggregation) against the whole import (--no-stream), each in a
// fresh process that reports its time and VmHWM.
//
// With --kineto it does the same for the program written as a gzipped Kineto
// (PyTorch profiler) JSON trace: step and layer ranges as user_annotation and
// cpu_op events, each launch as a cudaLaunchKernel cuda_runtime event, the
// kernels last (Kineto's order: CPU events, then GPU activities), so that the
// bounded importer has to sort it.
//
//   ingest_bench [--kernels N] [--iterations K] [--keep PATH] [--rss] [--nsys] [--kineto]
//   ingest_bench --kernels N --generate PREFIX   (only writes PREFIX.trace and the same
//                program as PREFIX.pt.trace.json.gz, for bench/python/bench_load.py)
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>

#include "bench/common/cpu_time.h"
#include "libtracer/analysis/export/sqlite_export.h"
#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/streaming_report.h"
#include "libtracer/analysis/tables/tables.h"
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

size_t StreamTables(const std::string& path) {
  tracer::analysis::ReportOptions o;
  const auto result = tracer::analysis::StreamingTables(
      {{path, {}}}, {"ranges", "kernels", "range-kernels", "gpu"}, o);
  // The bounded path gives the whole-trace numbers or declines; a declined
  // run would time a path the report does not use.
  for (const auto& why : result.inexact)
    std::fprintf(stderr, "stream: declined: %s\n", why.c_str());
  if (!result.inexact.empty()) std::exit(1);
  size_t rows = 0;
  for (const auto& t : result.tables) rows += t.rows.size();
  return rows;
}

// The four tables of the streaming runs, from a trace held whole.
size_t WholeTables(const tracer::analysis::Trace& trace) {
  tracer::analysis::AnalyzedTrace analyzed(trace, {});
  tracer::analysis::ReportOptions o;
  return tracer::analysis::RangesTable(analyzed, o).rows.size() +
         tracer::analysis::KernelsTable(analyzed, o).rows.size() +
         tracer::analysis::RangeKernelsTable(analyzed, o).rows.size() +
         tracer::analysis::GpuProjectionTable(analyzed, o).rows.size();
}

size_t MemoryTables(const std::string& path) {
  tracer::analysis::Trace trace;
  std::string error;
  if (!tracer::analysis::ReadTraceFile(path, &trace, &error)) return 0;
  return WholeTables(trace);
}

// The program of Generate as an nsys SQLite export; returns its records
// (ranges + kernels + API calls).
size_t GenerateNsys(const std::string& path, size_t kernels) {
  const std::string stream = path + ".trace";
  Generate(stream, kernels);
  tracer::analysis::Trace trace;
  std::string error;
  if (!tracer::analysis::ReadTraceFile(stream, &trace, &error)) {
    std::fprintf(stderr, "ingest_bench: %s\n", error.c_str());
    std::exit(1);
  }
  std::remove(stream.c_str());
  const uint32_t launch = trace.strings.Intern("cudaLaunchKernel");
  size_t records = 0;
  for (auto& p : trace.processes) {
    for (const tracer::LaunchRecord& l : p.launches) {
      tracer::ApiRecord a;
      a.start_ns = l.time_ns;
      a.end_ns = l.time_ns + 10;
      a.thread = l.thread;
      a.correlation_id = l.correlation_id;
      a.name = launch;
      p.api_calls.push_back(a);
    }
    p.launches.clear();
    records += p.ranges.size() + p.kernels.size() + p.api_calls.size();
  }
  std::remove(path.c_str());
  if (!tracer::analysis::exporters::WriteSqlite(trace, path, &error)) {
    std::fprintf(stderr, "ingest_bench: %s\n", error.c_str());
    std::exit(1);
  }
  return records;
}

// Records of Generate(kernels) (ranges + kernels + launches), which the nsys
// and Kineto forms keep (launches become API calls).
size_t RecordsOf(size_t kernels) {
  return 2 * kernels + (kernels + 49) / 50 + (kernels + 999) / 1000;
}

// Microseconds with 3 decimals, as Kineto's ns-resolution traces write them.
void AppendMicros(std::string* out, uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  *out += buf;
}

// The program of Generate as a gzipped Kineto trace; returns its records.
size_t GenerateKineto(const std::string& path, size_t kernels) {
  const std::string stream = path + ".trace";
  Generate(stream, kernels);
  tracer::analysis::Trace trace;
  std::string error;
  if (!tracer::analysis::ReadTraceFile(stream, &trace, &error)) {
    std::fprintf(stderr, "ingest_bench: %s\n", error.c_str());
    std::exit(1);
  }
  std::remove(stream.c_str());
  gzFile gz = gzopen(path.c_str(), "wb1");
  if (gz == nullptr) std::exit(1);
  gzbuffer(gz, 1 << 20);
  std::string out = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  size_t records = 0;
  bool first = true;
  auto flush = [&](bool force) {
    if (force || out.size() >= (1u << 20)) {
      gzwrite(gz, out.data(), static_cast<unsigned>(out.size()));
      out.clear();
    }
  };
  auto begin = [&](const char* ph, const char* cat, std::string_view name, uint64_t pid,
                   uint64_t tid, uint64_t ts) {
    if (!first) out += ",\n";
    first = false;
    out += "{\"ph\": \"";
    out += ph;
    out += "\", \"cat\": \"";
    out += cat;
    out += "\", \"name\": \"";
    out += name;
    out +=
        "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": ";
    AppendMicros(&out, ts);
  };
  for (const auto& p : trace.processes) {
    const uint64_t pid = p.header.pid;
    auto tid = [&](uint32_t t) { return p.threads[t].os_tid; };
    for (const tracer::RangeRecord& r : p.ranges) {
      begin("X", r.depth == 0 ? "user_annotation" : "cpu_op", trace.strings.Get(r.name), pid,
            tid(r.thread), r.start_ns);
      out += ", \"dur\": ";
      AppendMicros(&out, r.end_ns - r.start_ns);
      out += "}";
      flush(false);
    }
    for (const tracer::LaunchRecord& l : p.launches) {
      begin("X", "cuda_runtime", "cudaLaunchKernel", pid, tid(l.thread), l.time_ns);
      out += ", \"dur\": 4.000, \"args\": {\"cbid\": 211, \"correlation\": " +
             std::to_string(l.correlation_id) + "}}";
      flush(false);
    }
    for (const tracer::KernelRecord& k : p.kernels) {
      const auto& s = p.streams[k.stream];
      begin("X", "kernel", trace.strings.Get(k.name), s.device, s.stream, k.start_ns);
      out += ", \"dur\": ";
      AppendMicros(&out, k.end_ns - k.start_ns);
      out += ", \"args\": {\"device\": " + std::to_string(s.device) +
             ", \"stream\": " + std::to_string(s.stream) +
             ", \"correlation\": " + std::to_string(k.correlation_id) +
             ", \"grid\": [1024, 1, 1], \"block\": [256, 1, 1]}}";
      flush(false);
    }
    records += p.ranges.size() + p.launches.size() + p.kernels.size();
  }
  out += "\n], \"displayTimeUnit\": \"ms\"}\n";
  flush(true);
  gzclose(gz);
  return records;
}

size_t NsysMemoryTables(const std::string& path) {
  tracer::analysis::Trace trace;
  std::string error;
  if (!tracer::analysis::LoadInput(path, &trace, &error)) return 0;
  return WholeTables(trace);
}

// What SQLite itself delivers on the export: a bare prepared SELECT of the
// columns the streaming importer reads, stepped in table order and every
// column read with sqlite3_column_int64 (no ORDER BY, no conversion). The
// floor of any importer that reads these rows through SQLite.
size_t RawSqliteScan(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return 0;
  const char* queries[] = {
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
      "graphId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL",
      "SELECT start, end, globalTid, correlationId, nameId, eventClass, returnValue FROM "
      "CUPTI_ACTIVITY_KIND_RUNTIME",
      "SELECT start, end, eventType, globalTid, textId, domainId, category, color FROM "
      "NVTX_EVENTS"};
  size_t rows = 0;
  int64_t sum = 0;
  for (const char* q : queries) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, q, -1, &st, nullptr) != SQLITE_OK) continue;
    const int n = sqlite3_column_count(st);
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < n; ++c) sum += sqlite3_column_int64(st, c);
      ++rows;
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return rows + (sum == 42 ? 1 : 0);
}

// User + system CPU seconds of this process (all its threads).
double OwnCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// VmHWM of this process (peak resident set of its address space), MiB.
double OwnPeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return -1;
}

// Peak resident set (MiB) of a fresh process (this program re-executed with
// --run MODE PATH), which reports its own VmHWM: nothing of this process's
// heap is counted (a forked child's ru_maxrss would include it).
double PeakRssMiB(const char* mode, const std::string& path, double* seconds = nullptr,
                  double* cpu_seconds = nullptr, double* main_cpu_seconds = nullptr) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  const std::string cmd = std::string("'") + self + "' --run " + mode + " '" + path + "'";
  FILE* child = popen(cmd.c_str(), "r");
  if (child == nullptr) return -1;
  double mib = -1, secs = -1, cpu = -1, main_cpu = -1;
  if (std::fscanf(child, "%lf %lf %lf %lf", &mib, &secs, &cpu, &main_cpu) < 1) mib = -1;
  if (seconds != nullptr) *seconds = secs;
  if (cpu_seconds != nullptr) *cpu_seconds = cpu;
  if (main_cpu_seconds != nullptr) *main_cpu_seconds = main_cpu;
  return pclose(child) == 0 ? mib : -1;
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
  std::string keep, generate;
  bool rss = false, nsys = false, kineto = false;
  if (argc == 4 && std::string(argv[1]) == "--run") {
    const std::string mode = argv[2];
    const auto t0 = Clock::now();
    const size_t rows = mode == "stream"          ? StreamTables(argv[3])
                        : mode == "import-memory" ? NsysMemoryTables(argv[3])
                        : mode == "nsys-raw"      ? RawSqliteScan(argv[3])
                                                  : MemoryTables(argv[3]);
    const double secs = Seconds(t0, Clock::now());
    std::printf("%.1f %.3f %.3f %.3f\n", OwnPeakRssMiB(), secs, OwnCpuSeconds(),
                tracer::bench::ThreadCpuSeconds());
    return rows > 0 ? 0 : 1;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--kernels" && i + 1 < argc)
      kernels = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--iterations" && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (a == "--keep" && i + 1 < argc)
      keep = argv[++i];
    else if (a == "--generate" && i + 1 < argc)
      generate = argv[++i];
    else if (a == "--rss")
      rss = true;
    else if (a == "--nsys")
      nsys = true;
    else if (a == "--kineto")
      kineto = true;
    else {
      std::fprintf(
          stderr,
          "usage: ingest_bench [--kernels N] [--iterations K] [--keep PATH] [--rss] [--nsys] "
          "[--kineto]\n");
      return 2;
    }
  }
  if (!generate.empty()) {
    const size_t records = Generate(generate + ".trace", kernels);
    GenerateKineto(generate + ".pt.trace.json.gz", kernels);
    std::printf("%zu records: %s.trace, %s.pt.trace.json.gz\n", records, generate.c_str(),
                generate.c_str());
    return 0;
  }
  if (nsys || kineto) {
    // The bounded import path against the whole import, each in a fresh
    // process; for nsys also a bare SQLite scan of the same rows (the floor).
    const char* ext = nsys ? ".sqlite" : ".pt.trace.json.gz";
    const std::string tmp = "/tmp/tracer_ingest_bench_" + std::to_string(getpid()) + ext;
    std::printf(
        "%s, `tracer report` tables (ranges, kernels, range-kernels, gpu): wall seconds and M "
        "records/s of the wall time (what the user waits for; on a loaded machine it includes "
        "waiting for a core), CPU seconds (user+sys, all threads) and M records/s of that CPU "
        "time; main: the stream's main thread alone (other threads step SQLite or inflate gzip "
        "beside it), whose rate bounds the wall rate on idle cores:\n",
        nsys ? "nsys SQLite export" : "Kineto JSON trace (gzip)");
    std::printf("  %9s %9s %7s | %7s %7s %7s %7s %7s %7s %7s | %7s %7s %7s %7s", "kernels",
                "records", "MB", "stream", "Mrec/s", "cpu s", "Mrec/s", "main s", "Mrec/s",
                "peakMiB", "whole", "cpu s", "Mrec/s", "peakMiB");
    std::printf(nsys ? " | %7s %7s %7s\n" : "\n", "raw sql", "cpu s", "Mrec/s");
    for (size_t n : {kernels, kernels * 10}) {
      // --keep PATH: only the N-kernel file, left there (for a profiler) and
      // reused when it is already there.
      const std::string p = keep.empty() ? tmp : keep;
      size_t recs = 0;
      if (!keep.empty() && std::ifstream(p).good()) {
        recs = RecordsOf(n);
      } else {
        recs = nsys ? GenerateNsys(p, n) : GenerateKineto(p, n);
      }
      std::ifstream f(p, std::ios::binary | std::ios::ate);
      const double file_mb = static_cast<double>(f.tellg()) / 1e6;
      double s_secs = 0, m_secs = 0, s_cpu = 0, m_cpu = 0, raw_secs = 0, raw_cpu = 0, s_main = 0;
      const double s_mib = PeakRssMiB("stream", p, &s_secs, &s_cpu, &s_main);
      const double m_mib = PeakRssMiB("import-memory", p, &m_secs, &m_cpu);
      if (nsys) PeakRssMiB("nsys-raw", p, &raw_secs, &raw_cpu);
      if (keep.empty()) std::remove(p.c_str());
      const double r = static_cast<double>(recs) / 1e6;
      std::printf(
          "  %9zu %9zu %7.1f | %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.1f | %7.2f %7.2f %7.2f %7.1f",
          n, recs, file_mb, s_secs, r / s_secs, s_cpu, r / s_cpu, s_main, r / s_main, s_mib, m_secs,
          m_cpu, r / m_cpu, m_mib);
      if (nsys) {
        std::printf(" | %7.2f %7.2f %7.2f\n", raw_secs, raw_cpu, r / raw_cpu);
      } else {
        std::printf("\n");
      }
      std::fflush(stdout);
      if (!keep.empty()) break;
    }
    return 0;
  }
  const std::string path =
      keep.empty() ? "/tmp/tracer_ingest_bench_" + std::to_string(getpid()) + ".trace" : keep;
  const size_t records = Generate(path, kernels);
  std::ifstream sz(path, std::ios::binary | std::ios::ate);
  const double mb = static_cast<double>(sz.tellg()) / 1e6;

  double best_plain = 1e30, best_read = 1e30, best_analyze = 1e30, best_tables = 1e30,
         best_stream = 1e30;
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
    sink += StreamTables(path);
    auto t5 = Clock::now();
    best_stream = std::min(best_stream, Seconds(t4, t5));
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
  std::printf("  + attribution:             %8.3f s  %7.1f M records/s  %6.1fx baseline\n",
              best_analyze, r / best_analyze / 1e6, best_analyze / best_plain);
  std::printf("  + projection + 4 tables:  %8.3f s  %7.1f M records/s  %6.1fx baseline\n",
              best_tables, r / best_tables / 1e6, best_tables / best_plain);
  const double total = best_read + best_analyze + best_tables;
  std::printf("  end to end (read+analyze+tables): %.3f s, %.1f M records/s, %.1fx baseline\n",
              total, r / total / 1e6, total / best_plain);
  std::printf(
      "  streaming (read+aggregate+4 tables, bounded memory): %.3f s, %.1f M records/s, "
      "%.1fx baseline\n",
      best_stream, r / best_stream / 1e6, best_stream / best_plain);
  if (rss) {
    std::printf("peak resident memory (VmHWM, each path in a fresh process):\n");
    std::printf("  %12s %12s %14s %14s %16s\n", "kernels", "records", "streaming MiB",
                "in-memory MiB", "in-memory B/rec");
    double first_stream = 0, first_memory = 0, last_stream = 0, last_memory = 0;
    for (size_t n : {kernels, kernels * 10}) {
      const std::string p = path + ".rss";
      const size_t recs = Generate(p, n);
      const double s_mib = PeakRssMiB("stream", p);
      const double m_mib = PeakRssMiB("memory", p);
      std::remove(p.c_str());
      // Peak resident bytes per record when the trace is held whole
      // (`tracer report --no-stream`): what bounds the trace size that fits.
      std::printf("  %12zu %12zu %14.1f %14.1f %16.1f\n", n, recs, s_mib, m_mib,
                  m_mib * 1024 * 1024 / static_cast<double>(recs));
      if (n == kernels) {
        first_stream = s_mib;
        first_memory = m_mib;
      }
      last_stream = s_mib;
      last_memory = m_mib;
    }
    std::printf("  10x the records: streaming peak %.2fx, in-memory peak %.2fx\n",
                last_stream / first_stream, last_memory / first_memory);
  }
  return sink == 42 ? 3 : 0;  // keep the work observable
}
