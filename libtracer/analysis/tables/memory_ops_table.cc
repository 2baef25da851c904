// Memory operations: memcpy per copy kind, and memset.
#include <algorithm>
#include <map>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {
Table RenderMemoryOpsTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("memory", "Memory operations", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"operation", ColumnKind::kText, "Operation"},
                                             {"count", ColumnKind::kCount, "Count"},
                                             {"bytes", ColumnKind::kBytes, "Bytes"},
                                             {"total_ns", ColumnKind::kDuration, "Total"},
                                             {"avg_ns", ColumnKind::kDuration, "Avg"},
                                             {"min_ns", ColumnKind::kDuration, "Min"},
                                             {"max_ns", ColumnKind::kDuration, "Max"},
                                             {"bandwidth_gbps", ColumnKind::kNumber, "GB/s"}});
  for (auto& [key, g] : rows.memory) {
    const DurationStats s = g.durations.Stats();
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[key.first]));
    row.push_back(Text(key.second));
    row.push_back(Int(s.count));
    row.push_back(Int(g.bytes));
    row.push_back(Int(s.total));
    row.push_back(Int(s.avg));
    row.push_back(Int(s.min));
    row.push_back(Int(s.max));
    // bytes per ns = GB/s (10^9 bytes per second).
    row.push_back(DoubleOrEmpty(
        s.total > 0,
        static_cast<double>(g.bytes) / static_cast<double>(std::max<int64_t>(s.total, 1))));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 3, first + 1, first + 4, first);
  table.notes.push_back("GB/s = bytes / summed duration (10^9 bytes per second).");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
