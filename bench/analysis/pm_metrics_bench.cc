// Cost of the PM metrics tables (tables/metrics_table.h) per sample, on a
// training-run shape: --samples N PM samples (default 1 M) of 3 metrics on
// one device, back to back, over a run of --leaves L leaf ranges (default
// 200 k) drawn from --names D distinct names (default 10 k), 50 per "step"
// range, each launching two kernels on two streams. Times in one run, best
// of K iterations:
//   baseline:  a plain pass over the samples (time-weighted sum per metric:
//              the least any metrics table must do),
//   gpu:       the gpu projection table (the range table a report prints
//              anyway; the projection it builds is warm for both),
//   metrics:   MetricsTables (range x metric and kernel x metric),
// and prints ns per sample and the ratios metrics / baseline and
// metrics / gpu. Times are the thread's CPU time (best of K).
//
//   pm_metrics_bench [--samples N] [--leaves L] [--names D] [--iterations K]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "bench/common/cpu_time.h"
#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/metrics_table.h"
#include "libtracer/analysis/tables/tables.h"

namespace {

using namespace tracer;
using namespace tracer::analysis;

using tracer::bench::ThreadCpuSeconds;

// Best CPU time of fn over k runs, in seconds.
double Best(size_t k, const std::function<void()>& fn) {
  double best = 1e30;
  for (size_t i = 0; i < k; ++i) {
    const double t0 = ThreadCpuSeconds();
    fn();
    best = std::min(best, ThreadCpuSeconds() - t0);
  }
  return best;
}

void Build(Trace* trace, size_t samples, size_t leaves, size_t names) {
  trace->processes.emplace_back();
  ProcessTrace& p = trace->processes.back();
  p.header.pid = 1000;
  p.threads.resize(2);
  p.threads[1] = {true, 1000, 0, trace->strings.Intern("main")};
  p.streams.resize(3);
  p.streams[1] = {true, 0, 1, 7};
  p.streams[2] = {true, 0, 1, 8};
  std::vector<uint32_t> name_ids;
  for (size_t i = 0; i < names; ++i) {
    name_ids.push_back(trace->strings.Intern("layer_op_" + std::to_string(i)));
  }
  const uint32_t step_name = trace->strings.Intern("step");
  const uint32_t kernels[2] = {trace->strings.Intern("gemm"), trace->strings.Intern("relu")};
  constexpr uint64_t kLeafNs = 10'000, kPerStep = 50;
  uint64_t id = 0, corr = 0;
  uint64_t step_id = 0;
  for (size_t i = 0; i < leaves; ++i) {
    const uint64_t t = 1'000 + i * kLeafNs;
    if (i % kPerStep == 0) {
      RangeRecord s;
      s.id = step_id = ++id;
      s.thread = 1;
      s.name = step_name;
      s.start_ns = t;
      s.end_ns = t + kPerStep * kLeafNs - 1;
      p.ranges.push_back(s);
    }
    RangeRecord r;
    r.id = ++id;
    r.parent_id = step_id;
    r.thread = 1;
    r.depth = 1;
    r.name = name_ids[i % names];
    r.start_ns = t;
    r.end_ns = t + kLeafNs - 100;
    p.ranges.push_back(r);
    for (int k = 0; k < 2; ++k) {
      LaunchRecord l;
      l.correlation_id = ++corr;
      l.thread = 1;
      l.time_ns = t + 100 + k * 100;
      l.range_id = r.id;
      p.launches.push_back(l);
      KernelRecord kr;
      kr.correlation_id = corr;
      kr.name = kernels[k];
      kr.stream = 1 + k;
      kr.start_ns = t + 5'000 + k * 4'000;
      kr.end_ns = kr.start_ns + 4'000 + k * 1'000;
      p.kernels.push_back(kr);
    }
  }
  // Back-to-back samples of 3 metrics over the whole run.
  const uint32_t metrics[3] = {trace->strings.Intern("sm__throughput.avg.pct_of_peak"),
                               trace->strings.Intern("dram__throughput.avg.pct_of_peak"),
                               trace->strings.Intern("sm__pipe_tensor_cycles_active.avg.pct")};
  const size_t per_metric = samples / 3;
  const uint64_t span = leaves * kLeafNs + 20'000;
  const uint64_t interval = std::max<uint64_t>(1, span / std::max<size_t>(1, per_metric));
  for (size_t m = 0; m < 3; ++m) {
    for (size_t i = 0; i < per_metric; ++i) {
      PmSampleRecord s;
      s.start_ns = i * interval;
      s.end_ns = s.start_ns + interval;
      s.metric = metrics[m];
      s.value = static_cast<double>((i * 7919 + m * 13) % 100);
      p.pm_samples.push_back(s);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t samples = 1'000'000, leaves = 200'000, names = 10'000, iterations = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const size_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--samples"))
      samples = v;
    else if (!std::strcmp(argv[i], "--leaves"))
      leaves = v;
    else if (!std::strcmp(argv[i], "--names"))
      names = v;
    else if (!std::strcmp(argv[i], "--iterations"))
      iterations = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  Trace trace;
  Build(&trace, samples, leaves, std::max<size_t>(1, names));
  const ProcessTrace& p = trace.processes.front();
  const AnalyzedTrace analyzed(trace, AttributionOptions{});
  analyzed.process(0).projection();  // shared by both tables; built once
  volatile double sink = 0;
  const double baseline = Best(iterations, [&] {
    double sum[3] = {0, 0, 0};
    uint64_t weight = 0;
    for (const PmSampleRecord& s : p.pm_samples) {
      sum[s.metric % 3] += s.value * static_cast<double>(s.end_ns - s.start_ns);
      weight += s.end_ns - s.start_ns;
    }
    sink = sum[0] + sum[1] + sum[2] + static_cast<double>(weight);
  });
  size_t rows = 0;
  const double gpu = Best(iterations, [&] { rows = GpuProjectionTable(analyzed, {}).rows.size(); });
  size_t metric_rows = 0;
  const double metrics = Best(iterations, [&] {
    metric_rows = 0;
    for (const Table& t : MetricsTables(analyzed, {})) metric_rows += t.rows.size();
  });
  const double n = static_cast<double>(p.pm_samples.size());
  std::printf(
      "pm_metrics_bench: %zu samples, %zu range instances (%zu names), %zu kernels; "
      "%zu gpu rows, %zu metric rows\n",
      p.pm_samples.size(), p.ranges.size(), names, p.kernels.size(), rows, metric_rows);
  std::printf("  baseline (plain pass over samples): %8.2f ms  %6.2f ns/sample\n", baseline * 1e3,
              baseline * 1e9 / n);
  std::printf("  gpu projection table:               %8.2f ms\n", gpu * 1e3);
  std::printf("  metrics tables:                     %8.2f ms  %6.2f ns/sample\n", metrics * 1e3,
              metrics * 1e9 / n);
  std::printf("  ratio metrics / baseline: %.1fx   metrics / gpu table: %.2fx\n",
              metrics / baseline, metrics / gpu);
  return sink < 0 ? 1 : 0;
}
