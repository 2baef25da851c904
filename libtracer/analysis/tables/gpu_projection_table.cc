// GPU projection per range name (nsys nvtx_gpu_proj_sum): statistics over the
// instances that have GPU work; instances without any are not counted.
#include <algorithm>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

Table RenderGpuProjectionTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("gpu", "GPU projection of ranges (nsys nvtx_gpu_proj_sum semantics)", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(),
                       {{"domain", ColumnKind::kText, "Domain"},
                        {"range", ColumnKind::kText, "Range"},
                        {"instances", ColumnKind::kCount, "Inst"},
                        {"proj_instances", ColumnKind::kCount, "Inst with GPU"}});
  AddStatColumns(&table, "proj_", "Proj", WithStddev::kYes);
  table.columns.insert(table.columns.end(), {{"style", ColumnKind::kText, "Style"},
                                             {"busy_ns", ColumnKind::kDuration, "Busy total"},
                                             {"ops", ColumnKind::kCount, "GPU ops"},
                                             {"avg_ops", ColumnKind::kNumber, "Avg GPU ops"},
                                             {"kernels", ColumnKind::kCount, "Kernels"},
                                             {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                                             {"max_streams", ColumnKind::kCount, "Streams"}});
  for (auto& [key, g] : rows.ranges) {
    const DurationStats s = g.proj.Stats();
    const bool gpu = s.count > 0;
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[std::get<0>(key)]));
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(g.cpu.count()));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kYes, gpu);
    row.push_back(Text(RangeStyle(g)));
    row.push_back(IntOrEmpty(gpu && g.busy.has_value(), g.busy.value_or(0)));
    row.push_back(IntOrEmpty(gpu, g.ops));
    // nsys "Avg GPU Ops": ops per instance with GPU work.
    row.push_back(DoubleOrEmpty(
        gpu, static_cast<double>(g.ops) / static_cast<double>(std::max<int64_t>(s.count, 1))));
    for (int64_t v : {g.kernel_count, g.kernel_ns, static_cast<int64_t>(g.max_streams)}) {
      row.push_back(IntOrEmpty(gpu, v));
    }
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 4, first + 3, first + 5, first + 1);
  table.notes.push_back(
      "Proj = last op end - first op start of an instance's ops over all its streams; Busy = "
      "union of its op intervals; children are not subtracted; '-' = no GPU work.");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
