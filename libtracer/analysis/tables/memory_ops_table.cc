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
                                             {"bytes", ColumnKind::kBytes, "Bytes"}});
  // Time: nsys cuda_gpu_mem_time_sum; sizes: cuda_gpu_mem_size_sum.
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.insert(table.columns.end(), {{"time_pct", ColumnKind::kPercent, "Time %"},
                                             {"bytes_avg", ColumnKind::kBytes, "Bytes avg"},
                                             {"bytes_med", ColumnKind::kBytes, "Bytes med"},
                                             {"bytes_min", ColumnKind::kBytes, "Bytes min"},
                                             {"bytes_max", ColumnKind::kBytes, "Bytes max"},
                                             {"bytes_stddev", ColumnKind::kBytes, "Bytes stddev"},
                                             {"bandwidth_gbps", ColumnKind::kNumber, "GB/s"}});
  std::map<size_t, int64_t> all_ns;  // per process key, as the rows
  for (const auto& [key, g] : rows.memory) {
    int64_t& t = all_ns[key.first];
    t = SaturatingAdd(t, g.durations.total());
  }
  for (auto& [key, g] : rows.memory) {
    const DurationStats s = g.durations.Stats();
    const DurationStats size = g.sizes.Stats();
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[key.first]));
    row.push_back(Text(key.second));
    row.push_back(Int(s.count));
    row.push_back(Int(g.bytes));
    AddStatCells(&row, s, WithStddev::kYes);
    row.push_back(SharePercent(s.total, all_ns[key.first]));
    for (int64_t v : {size.avg, size.median, size.min, size.max, size.stddev}) {
      row.push_back(Int(v));
    }
    // bytes per ns = GB/s (10^9 bytes per second).
    row.push_back(DoubleOrEmpty(
        s.total > 0,
        static_cast<double>(g.bytes) / static_cast<double>(std::max<int64_t>(s.total, 1))));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 3, first + 1, first + 4, first);
  table.notes.push_back(
      "Time % = share of all memory-operation time; Bytes avg .. stddev = per operation; GB/s = "
      "bytes / summed duration (10^9 bytes per second).");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
