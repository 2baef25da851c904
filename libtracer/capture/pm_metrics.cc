#include "libtracer/capture/pm_metrics.h"

#include <algorithm>

namespace tracer {

const std::vector<PmPreset>& PmPresets() {
  // sm__throughput (the SOL "SM throughput") needs 15 passes on GA102, so it
  // cannot be PM-sampled; SM active cycles as a share of elapsed cycles is
  // the one-pass SM figure (what Nsight Systems' GPU metrics call SM Active).
  static const std::vector<PmPreset> presets = {
      {"basic",
       "SM active, DRAM throughput, tensor pipe active (% of peak)",
       {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
      {"compute",
       "GR engine active, SM active, IPC, tensor pipe active",
       {"gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__inst_executed_realtime.avg.per_cycle_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
      {"memory",
       "DRAM throughput (% of peak), DRAM and L2 bytes per second",
       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum.per_second",
        "lts__t_bytes.sum.per_second"}},
  };
  return presets;
}

const PmPreset* FindPmPreset(std::string_view name) {
  for (const PmPreset& p : PmPresets()) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

namespace {

// CUPTI metric names are unit__counter[.rollup[.submetric]]: the "__" tells
// a misspelt preset ("basci") from a metric.
bool MetricShaped(std::string_view s) {
  if (s.find("__") == std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  });
}

}  // namespace

bool ExpandPmMetrics(const std::vector<std::string>& entries, std::vector<std::string>* out,
                     std::string* error) {
  out->clear();
  auto add = [out](std::string name) {
    if (std::find(out->begin(), out->end(), name) == out->end()) out->push_back(std::move(name));
  };
  for (const std::string& e : entries) {
    if (const PmPreset* p = FindPmPreset(e)) {
      for (const char* m : p->metrics) add(m);
    } else if (MetricShaped(e)) {
      add(e);
    } else {
      std::string presets;
      for (const PmPreset& p : PmPresets())
        presets += (presets.empty() ? "" : ", ") + std::string(p.name);
      *error = "has '" + e + "', neither a metric name (unit__counter.rollup...) nor a preset (" +
               presets + ")";
      return false;
    }
  }
  return true;
}

}  // namespace tracer
