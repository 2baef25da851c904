// Range x metric and kernel x metric (metrics_table.h). The attribute stage
// is model/pm_samples.h (which samples overlap which span, by how much); the
// aggregate stage MetricAccumulator; this file keys rows and renders.
#include "libtracer/analysis/tables/metrics_table.h"

#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "libtracer/analysis/aggregate/metric_accumulator.h"
#include "libtracer/analysis/model/pm_samples.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis {
namespace {

struct MetricRow {
  int64_t instances = 0;  // spans' owners: range instances or kernel executions
  MetricAccumulator acc;
};

// One name's accumulators in one process, by the process's metric slot.
struct LocalRow {
  int64_t instances = 0;
  std::vector<MetricAccumulator> by_slot;
};

// Folds one span into a name's accumulators.
void FoldSpan(const PmSampleIndex& index, uint32_t device, uint64_t start, uint64_t end,
              LocalRow* row) {
  for (MetricAccumulator& a : row->by_slot) a.AddSpan(end - start);
  index.ForEachOverlap(device, start, end, [&](uint32_t slot, double value, uint64_t overlap) {
    row->by_slot[slot].AddSample(value, overlap);
  });
}

void AddMetricColumns(Table* t) {
  t->columns.insert(t->columns.end(), {{"span_ns", ColumnKind::kDuration, "GPU span"},
                                       {"samples", ColumnKind::kCount, "Samples"},
                                       {"mean", ColumnKind::kNumber, "Mean (time-weighted)"},
                                       {"min", ColumnKind::kNumber, "Min"},
                                       {"max", ColumnKind::kNumber, "Max"},
                                       {"coverage_pct", ColumnKind::kPercent, "Coverage"}});
}

void AddMetricCells(std::vector<Cell>* row, const MetricRow& m) {
  const bool any = m.acc.samples() > 0;
  row->push_back(Int(m.acc.span_ns()));
  row->push_back(Int(m.acc.samples()));
  row->push_back(DoubleOrEmpty(any, m.acc.mean()));
  row->push_back(DoubleOrEmpty(any, m.acc.min()));
  row->push_back(DoubleOrEmpty(any, m.acc.max()));
  row->push_back(DoubleOrEmpty(m.acc.span_ns() > 0, m.acc.coverage_pct()));
}

void AddNotes(const Trace& trace, size_t skipped, Table* t) {
  if (!HasPmSamples(trace)) {
    t->notes.push_back(
        "no PM samples in this trace: record them with `tracer run --pm-metrics LIST` "
        "(TRACER_PM_METRICS)");
    return;
  }
  t->notes = MetricsDefinitions();
  if (skipped > 0) {
    t->notes.push_back(std::to_string(skipped) +
                       " PM sample(s) left out: zero length or a value that is not a number");
  }
}

}  // namespace

const std::vector<std::string>& MetricsDefinitions() {
  static const std::vector<std::string> kLines = {
      "GPU span: per range instance and device, first op start to last op end over its ops on "
      "that device's streams (overlapping streams merged, children included); per kernel, each "
      "execution; summed over instances and devices.",
      "Mean: time-weighted, sum(value x overlap) / sum(overlap) over the samples of the span's "
      "device; a sample straddling a span edge counts by its overlap. Min/Max: over the "
      "overlapping samples; '-' = none.",
      "Coverage: overlap / GPU span, the share of the span that samples of the metric covered "
      "(a span on a device without that metric counts as uncovered). Samples: (span, sample) "
      "pairs that overlap.",
  };
  return kLines;
}

bool HasPmSamples(const Trace& trace) {
  for (const ProcessTrace& p : trace.processes) {
    if (!p.pm_samples.empty()) return true;
  }
  return false;
}

std::vector<Table> MetricsTables(const AnalyzedTrace& t, const ReportOptions& o) {
  const Trace& trace = t.trace();
  // (process key, domain, range, metric) and (process key, kernel id, metric).
  std::map<std::tuple<size_t, std::string, std::string, std::string>, MetricRow> ranges;
  std::map<std::tuple<size_t, uint32_t, std::string>, MetricRow> kernels;
  const RangeFilter filter(o);
  size_t skipped = 0;
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    const PmSampleIndex index(p);
    skipped += index.skipped();
    if (index.empty()) continue;
    const size_t key = o.by_process ? pi : 0;
    const size_t slots = index.metrics().size();
    auto merge = [&](const LocalRow& local, auto make_key, auto& rows) {
      for (size_t s = 0; s < slots; ++s) {
        MetricRow& row = rows[make_key(trace.strings.Get(index.metrics()[s]))];
        row.instances += local.instances;
        row.acc.Merge(local.by_slot[s]);
      }
    };
    // Range instances: each projected span per device.
    std::unordered_map<uint64_t, LocalRow> local;  // domain << 32 | name
    const Projection& projection = pa.projection();
    for (uint32_t ri = 0; ri < p.ranges.size(); ++ri) {
      const InstanceProjection* proj = projection.Of(ri);
      if (proj == nullptr || !filter.Accepts(t, pi, p.ranges[ri])) continue;
      LocalRow& row = local[(uint64_t{p.ranges[ri].domain} << 32) | p.ranges[ri].name];
      if (row.by_slot.empty()) row.by_slot.resize(slots);
      ++row.instances;
      for (const DeviceSpan& d : DeviceSpansOf(p, *proj)) {
        FoldSpan(index, d.device, d.start_ns, d.end_ns, &row);
      }
    }
    for (const auto& [id, row] : local) {
      const std::string domain(t.DomainName(pi, static_cast<uint32_t>(id >> 32)));
      std::string_view name = trace.strings.Get(static_cast<uint32_t>(id));
      if (name.empty()) name = "(unnamed)";
      merge(
          row,
          [&](std::string_view metric) {
            return std::make_tuple(key, domain, std::string(name), std::string(metric));
          },
          ranges);
    }
    // Kernel executions.
    std::unordered_map<uint32_t, LocalRow> by_kernel;
    for (const KernelRecord& k : p.kernels) {
      if (k.end_ns <= k.start_ns) continue;
      LocalRow& row = by_kernel[k.name];
      if (row.by_slot.empty()) row.by_slot.resize(slots);
      ++row.instances;
      FoldSpan(index, DeviceOfStream(p, k.stream), k.start_ns, k.end_ns, &row);
    }
    for (const auto& entry : by_kernel) {
      // A named copy: a lambda may not capture a structured binding before C++20
      // compilers caught up (clang 14, the fuzz build's compiler).
      const uint32_t name = entry.first;
      merge(
          entry.second,
          [&](std::string_view metric) { return std::make_tuple(key, name, std::string(metric)); },
          kernels);
    }
  }

  std::vector<Table> out;
  Table rt = NewTable("metrics", "PM metrics per range (time-weighted over the GPU span)", o);
  const int first = static_cast<int>(rt.columns.size());
  rt.columns.insert(rt.columns.end(), {{"domain", ColumnKind::kText, "Domain"},
                                       {"range", ColumnKind::kText, "Range"},
                                       {"metric", ColumnKind::kText, "Metric"},
                                       {"instances", ColumnKind::kCount, "Inst with GPU"}});
  AddMetricColumns(&rt);
  for (const auto& [k, m] : ranges) {
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(std::get<0>(k))));
    row.insert(row.end(), {Text(std::get<1>(k)), Text(std::get<2>(k)), Text(std::get<3>(k)),
                           Int(m.instances)});
    AddMetricCells(&row, m);
    rt.rows.push_back(std::move(row));
  }
  // total: GPU span, count: samples, avg: mean, name: range.
  SortAndTrim(&rt, o, first + 4, first + 5, first + 6, first + 1);
  AddNotes(trace, skipped, &rt);
  out.push_back(std::move(rt));

  Table kt = NewTable("kernel-metrics", "PM metrics per kernel (time-weighted over executions)", o);
  const int kfirst = static_cast<int>(kt.columns.size());
  kt.columns.insert(kt.columns.end(), {{"kernel", ColumnKind::kText, "Kernel"},
                                       {"metric", ColumnKind::kText, "Metric"},
                                       {"executions", ColumnKind::kCount, "Executions"}});
  AddMetricColumns(&kt);
  kt.columns.push_back({"full_name", ColumnKind::kText, "Full name"});
  for (const auto& [k, m] : kernels) {
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(std::get<0>(k))));
    const std::string_view raw = trace.strings.Get(std::get<1>(k));
    row.insert(row.end(), {Text(KernelLabel(raw)), Text(std::get<2>(k)), Int(m.instances)});
    AddMetricCells(&row, m);
    row.push_back(Text(raw));
    kt.rows.push_back(std::move(row));
  }
  SortAndTrim(&kt, o, kfirst + 3, kfirst + 4, kfirst + 5, kfirst);
  AddNotes(trace, skipped, &kt);
  if (HasPmSamples(trace)) {
    kt.notes.push_back(
        "A sample holds for the whole device: kernels running at once on one device each take "
        "its full value.");
  }
  out.push_back(std::move(kt));
  return out;
}

}  // namespace tracer::analysis
