// Cost of range-name normalization (importers/range_names.h) on a name-heavy
// trace: PyTorch emit_nvtx's per-call names make almost every range name
// unique ("aten::mm, seq = 812, op_id = 40921, sizes = [[8, 512], [512, 512]]").
// Generates a stream of N such op ranges (default 100 k, one distinct name
// each, 24 ops, every op launching one kernel, 50 ops per "step" range), or
// takes --input PATH (any input `tracer report` reads, e.g. an nsys export),
// then times in one run, best of K iterations:
//   load:       reading the input (ReadTraceFile / LoadInput),
//   normalize:  NormalizeRangeNames over the loaded trace,
//   tables:     ranges + kernels + range-kernels + gpu tables, on the names
//               as recorded (--raw-names) and on the normalized ones,
//   stream:     the bounded path (StreamingTables) without and with the rules
//               (stream inputs only),
// and prints the end-to-end ratio of the default (load + normalize + tables)
// to --raw-names (load + tables), and normalize's share of load.
//
//   range_names_bench [--ops N] [--iterations K] [--input PATH]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "libtracer/analysis/importers/load_input.h"
#include "libtracer/analysis/importers/range_names.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/streaming_report.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/core/chunk_builder.h"

namespace {

using Clock = std::chrono::steady_clock;
using tracer::analysis::Trace;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Best wall time of fn over k runs, in seconds.
double Best(size_t k, const std::function<void()>& fn) {
  double best = 1e30;
  for (size_t i = 0; i < k; ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, Seconds(t0, Clock::now()));
  }
  return best;
}

// per_call false: the same program with the names already normalized (one
// string per op name), the baseline of what normalization costs.
void Generate(const std::string& path, size_t ops, bool per_call = true) {
  using namespace tracer;
  static const char* kOps[] = {"aten::mm",         "aten::addmm",
                               "aten::add",        "aten::mul",
                               "aten::to",         "aten::_to_copy",
                               "aten::copy_",      "aten::empty_strided",
                               "aten::layer_norm", "aten::native_layer_norm",
                               "aten::linear",     "aten::view",
                               "aten::transpose",  "aten::reshape",
                               "aten::softmax",    "aten::_softmax",
                               "aten::silu",       "aten::cat",
                               "aten::slice",      "aten::matmul",
                               "MulBackward0",     "AddmmBackward0",
                               "aten::detach_",    "record_param_comms"};
  constexpr size_t kNames = sizeof(kOps) / sizeof(kOps[0]);
  constexpr size_t kOpsPerStep = 50;
  std::string out;
  AppendFileMagic(&out);
  ChunkBuilder b;
  HeaderInfo h;
  h.pid = 1000;
  b.SetHeader(h);
  b.AddThread({1, 1000, 0, 0});
  b.AddStream({1, 0, 1, 7});
  b.AddString(1, "gemm_kernel");
  b.AddString(2, "step");
  uint32_t next_string = 3 + kNames;
  uint64_t t = 1000, range_id = 0, corr = 0;
  size_t done = 0;
  while (done < ops) {
    RangeRecord step;
    step.id = ++range_id;
    step.thread = 1;
    step.name = 2;
    step.start_ns = t;
    for (size_t i = 0; i < kOpsPerStep && done < ops; ++i, ++done) {
      // getNvtxStr's format: name, seq, op_id, sizes.
      std::string name = std::string(kOps[done % kNames]) + ", seq = " + std::to_string(done / 3) +
                         ", op_id = " + std::to_string(990000 + done);
      if (done % 2 == 0) name += ", sizes = [[8, 512], [512, " + std::to_string(done % 64) + "]]";
      uint32_t sid = 3 + static_cast<uint32_t>(done % kNames);
      if (per_call) {
        sid = next_string++;
        b.AddString(sid, name);
      } else if (done < kNames) {
        b.AddString(sid, kOps[done]);
      }
      RangeRecord op;
      op.id = ++range_id;
      op.parent_id = step.id;
      op.thread = 1;
      op.name = sid;
      op.depth = 1;
      op.start_ns = t + 10;
      op.end_ns = t + 90;
      LaunchRecord lr;
      lr.correlation_id = ++corr;
      lr.time_ns = t + 20;
      lr.thread = 1;
      lr.range_id = op.id;
      b.AddLaunch(lr);
      KernelRecord kr;
      kr.start_ns = t + 2000;
      kr.end_ns = kr.start_ns + 40 + (done % 7) * 10;
      kr.name = 1;
      kr.stream = 1;
      kr.correlation_id = corr;
      b.AddKernel(kr);
      b.AddRange(op);
      t += 100;
      if (b.pending_items() >= 64 * 1024) b.FinishFrame(&out);
    }
    step.end_ns = t + 10;
    t += 100;
    b.AddRange(step);
  }
  b.FinishFrame(&out);
  std::ofstream(path, std::ios::binary) << out;
}

Trace Load(const std::string& path) {
  Trace trace;
  std::string error;
  if (!tracer::analysis::LoadInput(path, &trace, &error)) {
    std::fprintf(stderr, "range_names_bench: %s\n", error.c_str());
    std::exit(1);
  }
  return trace;
}

size_t Tables(const Trace& trace) {
  tracer::analysis::AnalyzedTrace analyzed(trace, {});
  tracer::analysis::ReportOptions o;
  return tracer::analysis::RangesTable(analyzed, o).rows.size() +
         tracer::analysis::KernelsTable(analyzed, o).rows.size() +
         tracer::analysis::RangeKernelsTable(analyzed, o).rows.size() +
         tracer::analysis::GpuProjectionTable(analyzed, o).rows.size();
}

size_t DistinctRangeNames(const Trace& t) {
  std::set<uint32_t> names;
  for (const auto& p : t.processes) {
    for (const auto& r : p.ranges) names.insert(r.name);
  }
  return names.size();
}

size_t Stream(const std::string& path, const tracer::analysis::RangeNameRules* rules) {
  const auto result = tracer::analysis::StreamingTables(
      {{path, {}}}, {"ranges", "kernels", "range-kernels", "gpu"}, {}, {}, rules);
  if (!result.inexact.empty() || result.files_read == 0) {
    std::fprintf(stderr, "range_names_bench: the bounded path declined the input\n");
    std::exit(1);
  }
  size_t rows = 0;
  for (const auto& t : result.tables) rows += t.rows.size();
  return rows;
}

// The bounded path's reading alone, with the per-frame work StreamingTables
// adds for the rules (the frame copied when a name changes, then renamed) or
// without it: the difference is what normalization costs there.
double StreamRead(const std::string& path, const tracer::analysis::RangeNameRules* rules,
                  size_t iterations) {
  return Best(iterations, [&] {
    tracer::analysis::StringTable strings;
    tracer::analysis::ProcessTrace process, renamed;
    std::optional<tracer::analysis::RangeNameMapper> mapper;
    if (rules != nullptr) mapper.emplace(*rules, &strings);
    std::vector<std::string> warnings;
    std::string error;
    size_t ranges = 0;
    tracer::analysis::StreamTraceFile(
        path, &strings, &process,
        [&](const tracer::analysis::ProcessTrace& batch) {
          if (mapper) {
            renamed = batch;
            mapper->Apply(&renamed.ranges);
            ranges += renamed.ranges.size();
          } else {
            ranges += batch.ranges.size();
          }
        },
        &warnings, &error);
    if (ranges == 0) std::exit(1);
  });
}

}  // namespace

int main(int argc, char** argv) {
  size_t ops = 100000, iterations = 3;
  std::string input;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ops") && i + 1 < argc) {
      ops = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--input") && i + 1 < argc) {
      input = argv[++i];
    } else {
      std::fprintf(stderr, "usage: range_names_bench [--ops N] [--iterations K] [--input PATH]\n");
      return 2;
    }
  }
  const bool generated = input.empty();
  if (generated) {
    const char* dir = std::getenv("TMPDIR");
    input = std::string(dir ? dir : "/tmp") + "/range_names_bench_" + std::to_string(getpid()) +
            ".trace";
    Generate(input, ops);
  }
  const tracer::analysis::RangeNameRules rules;  // the default: built-in rules
  const Trace raw = Load(input);
  // Loaded again rather than copied: a copied StringTable's index would
  // point into the original's strings.
  Trace normalized = Load(input);
  tracer::analysis::NormalizeRangeNames(&normalized, rules);
  size_t ranges = 0;
  for (const auto& p : raw.processes) ranges += p.ranges.size();

  const double load = Best(iterations, [&] { Load(input); });
  double normalize = 1e30;
  for (size_t i = 0; i < iterations; ++i) {
    Trace t = Load(input);
    const auto t0 = Clock::now();
    tracer::analysis::NormalizeRangeNames(&t, rules);
    normalize = std::min(normalize, Seconds(t0, Clock::now()));
  }
  size_t raw_rows = 0, rows = 0;
  const double tables_raw = Best(iterations, [&] { raw_rows = Tables(raw); });
  const double tables_norm = Best(iterations, [&] { rows = Tables(normalized); });

  std::printf("input: %s (%zu ranges; %zu distinct range names as recorded, %zu normalized)\n",
              generated ? "generated emit_nvtx-style stream" : input.c_str(), ranges,
              DistinctRangeNames(raw), DistinctRangeNames(normalized));
  std::printf("load                 %9.2f ms\n", load * 1e3);
  std::printf("normalize            %9.2f ms  (%.1f%% of load)\n", normalize * 1e3,
              100.0 * normalize / load);
  std::printf("tables, raw names    %9.2f ms  (%zu rows)\n", tables_raw * 1e3, raw_rows);
  std::printf("tables, normalized   %9.2f ms  (%zu rows)\n", tables_norm * 1e3, rows);
  const double base = load + tables_raw, with = load + normalize + tables_norm;
  std::printf("end to end: --raw-names %.2f ms, default %.2f ms: ratio %.3f (default / raw)\n",
              base * 1e3, with * 1e3, with / base);
  if (generated) {
    // The cost of normalizing itself: the same program recorded with the
    // normalized names, read without rules.
    const std::string plain = input + ".plain";
    Generate(plain, ops, /*per_call=*/false);
    const Trace plain_trace = Load(plain);
    const double load_plain = Best(iterations, [&] { Load(plain); });
    const double tables_plain = Best(iterations, [&] { Tables(plain_trace); });
    std::printf(
        "same program recorded with normalized names: load %.2f ms + tables %.2f ms; "
        "default on the per-call names / that: %.3f\n",
        load_plain * 1e3, tables_plain * 1e3, with / (load_plain + tables_plain));
    size_t s_plain = 0;
    const double stream_plain = Best(iterations, [&] { s_plain = Stream(plain, nullptr); });
    std::remove(plain.c_str());
    size_t s_raw = 0, s_norm = 0;
    const double stream_raw = Best(iterations, [&] { s_raw = Stream(input, nullptr); });
    const double stream_norm = Best(iterations, [&] { s_norm = Stream(input, &rules); });
    std::printf("stream, raw names    %9.2f ms  (%zu rows)\n", stream_raw * 1e3, s_raw);
    std::printf("stream, normalized   %9.2f ms  (%zu rows): ratio %.3f (normalized / raw)\n",
                stream_norm * 1e3, s_norm, stream_norm / stream_raw);
    const double read_only = StreamRead(input, nullptr, iterations);
    const double read_norm = StreamRead(input, &rules, iterations);
    std::printf(
        "stream reading alone %9.2f ms, with frame copy + renaming %.2f ms: "
        "normalization adds %.1f%%\n",
        read_only * 1e3, read_norm * 1e3, 100.0 * (read_norm - read_only) / read_only);
    std::printf("stream, names recorded normalized %9.2f ms  (%zu rows): normalized / that %.3f\n",
                stream_plain * 1e3, s_plain, stream_norm / stream_plain);
    std::remove(input.c_str());
  }
  return 0;
}
