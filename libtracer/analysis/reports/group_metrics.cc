#include "libtracer/analysis/reports/group_metrics.h"

#include <map>
#include <memory>
#include <string>

#include "libtracer/analysis/aggregate/metric_accumulator.h"
#include "libtracer/analysis/model/pm_samples.h"
#include "libtracer/analysis/tables/metrics_table.h"

namespace tracer::analysis::reports {

StatusOr<Table> GroupMetricsTable(const AnalyzedTrace& analyzed, const ReportModel& model,
                                  const std::vector<GroupRule>& rules,
                                  const GroupsOptions& options) {
  auto members = GroupRowMembers(model, rules, options);
  if (!members.ok()) return members.status();
  Table t;
  t.name = "group-metrics";
  t.title = "PM metrics per group (time-weighted over the GPU span)";
  t.columns = {{"group", ColumnKind::kText, "Group"}};
  for (const auto& b : options.by) t.columns.push_back({b, ColumnKind::kText, b});
  t.columns.insert(t.columns.end(), {{"metric", ColumnKind::kText, "Metric"},
                                     {"instances", ColumnKind::kCount, "Inst with GPU"},
                                     {"span_ns", ColumnKind::kDuration, "GPU span"},
                                     {"samples", ColumnKind::kCount, "Samples"},
                                     {"mean", ColumnKind::kNumber, "Mean (time-weighted)"},
                                     {"min", ColumnKind::kNumber, "Min"},
                                     {"max", ColumnKind::kNumber, "Max"},
                                     {"coverage_pct", ColumnKind::kPercent, "Coverage"}});
  const Trace& trace = analyzed.trace();
  if (!HasPmSamples(trace)) {
    t.notes.push_back(
        "no PM samples in this trace: record them with `tracer run --pm-metrics LIST` "
        "(TRACER_PM_METRICS)");
    return t;
  }
  std::vector<std::unique_ptr<PmSampleIndex>> indexes(analyzed.size());
  auto index_of = [&](size_t process) -> const PmSampleIndex& {
    if (!indexes[process]) {
      indexes[process] = std::make_unique<PmSampleIndex>(*analyzed.process(process).process);
    }
    return *indexes[process];
  };
  const auto& ranges = model.ranges();
  for (const GroupMembers& g : *members) {
    std::map<std::string, MetricAccumulator> acc;  // by metric name
    std::map<std::string, int64_t> instances;
    for (uint32_t r : g.instances) {
      const RangeFact& f = ranges[r];
      if (!f.has_gpu) continue;
      const ProcessAnalysis& pa = analyzed.process(f.process);
      const InstanceProjection* proj = pa.projection().Of(f.local);
      const PmSampleIndex& index = index_of(f.process);
      if (proj == nullptr || index.empty()) continue;
      std::vector<MetricAccumulator*> slots;
      for (uint32_t m : index.metrics()) {
        const std::string name(trace.strings.Get(m));
        slots.push_back(&acc[name]);
        ++instances[name];
      }
      for (const DeviceSpan& d : DeviceSpansOf(*pa.process, *proj)) {
        for (MetricAccumulator* a : slots) a->AddSpan(d.ns());
        index.ForEachOverlap(
            d.device, d.start_ns, d.end_ns,
            [&](uint32_t slot, double v, uint64_t w) { slots[slot]->AddSample(v, w); });
      }
    }
    for (const auto& [metric, a] : acc) {
      std::vector<Cell> row = {g.group};
      for (const auto& v : g.by) row.push_back(v);
      const bool any = a.samples() > 0;
      row.insert(row.end(),
                 {Cell(metric), Cell(instances[metric]), Cell(static_cast<int64_t>(a.span_ns())),
                  Cell(a.samples()), any ? Cell(a.mean()) : Cell(), any ? Cell(a.min()) : Cell(),
                  any ? Cell(a.max()) : Cell(), a.span_ns() > 0 ? Cell(a.coverage_pct()) : Cell()});
      t.rows.push_back(std::move(row));
    }
  }
  t.notes = MetricsDefinitions();
  t.notes.push_back(
      "A member instance nested in another member of the same group counts once, through its "
      "ancestor's span.");
  return t;
}

}  // namespace tracer::analysis::reports
