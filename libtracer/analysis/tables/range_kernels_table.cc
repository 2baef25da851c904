// Range x kernel table (nsys nvtx_kern_sum semantics): a kernel counts toward
// every range instance on its stack, so a kernel inside "layer" inside "step"
// appears under both.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

Table RenderRangeKernelsTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("range-kernels",
                         "Kernels per range (a kernel counts toward every range on its stack)", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"range", ColumnKind::kText, "Range"},
                                             {"kernel", ColumnKind::kText, "Kernel"},
                                             {"range_instances", ColumnKind::kCount, "Range inst"},
                                             {"count", ColumnKind::kCount, "Kernel inst"}});
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.push_back({"range_share_pct", ColumnKind::kPercent, "Share of range kernel time"});
  std::vector<uint32_t> ids;
  for (const auto& [range_key, kernels] : rows.range_kernels) {
    for (const auto& [kernel, g] : kernels) ids.push_back(kernel);
  }
  const auto& labels = KernelLabelsOf(rows, std::move(ids));
  for (auto& [range_key, kernels] : rows.range_kernels) {
    int64_t range_total = 0;
    for (const auto& [kernel, g] : kernels) range_total += g.durations.total();
    for (auto& [kernel, g] : kernels) {
      const DurationStats s = g.durations.Stats();
      std::vector<Cell> row;
      if (o.by_process) row.push_back(Text(rows.process_labels[range_key.first]));
      row.push_back(Text(range_key.second));
      row.push_back(Text(labels.at(kernel)));
      row.push_back(Int(g.instances));
      row.push_back(Int(s.count));
      AddStatCells(&row, s, WithStddev::kYes);
      row.push_back(SharePercent(s.total, range_total));
      table.rows.push_back(std::move(row));
    }
  }
  SortAndTrim(&table, o, first + 4, first + 3, first + 5, first);
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
