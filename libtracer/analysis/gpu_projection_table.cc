// GPU projection per range name (nsys nvtx_gpu_proj_sum): statistics over the
// instances that have GPU work; instances without any are not counted.
#include <algorithm>
#include <map>
#include <tuple>

#include "libtracer/analysis/table_util.h"
#include "libtracer/analysis/tables.h"

namespace tracer::analysis {
namespace {

struct Group {
  int64_t instances = 0;
  std::vector<int64_t> proj;
  int64_t busy = 0, ops = 0, kernels = 0, kernel_ns = 0;
  size_t max_streams = 0;
};

}  // namespace

Table GpuProjectionTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const RangeFilter filter(o);
  std::map<std::tuple<size_t, std::string, std::string>, Group> groups;
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    for (uint32_t r = 0; r < p.ranges.size(); ++r) {
      const RangeRecord& rec = p.ranges[r];
      if (!filter.Accepts(t, pi, rec)) continue;
      Group& g = groups[{o.by_process ? pi : 0, std::string(t.DomainName(pi, rec.domain)),
                         std::string(t.RangeName(rec))}];
      ++g.instances;
      const InstanceProjection* proj = pa.projection.Of(r);
      if (proj == nullptr) continue;
      g.proj.push_back(static_cast<int64_t>(proj->total.span_ns()));
      g.busy += static_cast<int64_t>(proj->total.busy_ns);
      g.ops += static_cast<int64_t>(proj->total.op_count);
      g.kernels += static_cast<int64_t>(proj->total.kernel_count);
      g.kernel_ns += static_cast<int64_t>(proj->total.kernel_ns);
      g.max_streams = std::max(g.max_streams, proj->streams.size());
    }
  }
  Table table = NewTable("gpu", "GPU projection of ranges (nsys nvtx_gpu_proj_sum semantics)", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(),
                       {{"domain", ColumnKind::kText, "Domain"},
                        {"range", ColumnKind::kText, "Range"},
                        {"instances", ColumnKind::kCount, "Inst"},
                        {"proj_instances", ColumnKind::kCount, "Inst with GPU"}});
  AddStatColumns(&table, "proj_", "Proj", WithStddev::kNo);
  table.columns.insert(table.columns.end(), {{"busy_ns", ColumnKind::kDuration, "Busy total"},
                                             {"ops", ColumnKind::kCount, "GPU ops"},
                                             {"kernels", ColumnKind::kCount, "Kernels"},
                                             {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                                             {"max_streams", ColumnKind::kCount, "Streams"}});
  for (auto& [key, g] : groups) {
    const DurationStats s = ComputeStats(&g.proj);
    const bool gpu = s.count > 0;
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(std::get<0>(key))));
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(g.instances));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kNo, gpu);
    for (int64_t v : {g.busy, g.ops, g.kernels, g.kernel_ns, static_cast<int64_t>(g.max_streams)}) {
      row.push_back(IntOrEmpty(gpu, v));
    }
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 4, first + 3, first + 5, first + 1);
  table.notes.push_back(
      "Proj = last op end - first op start of an instance's ops over all its streams; Busy = "
      "union of its op intervals; children are not subtracted; '-' = no GPU work.");
  return table;
}

}  // namespace tracer::analysis
