// CUDA runtime / driver API calls per function name.
#include <map>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

Table RenderApiTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("api", "CUDA API calls", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"function", ColumnKind::kText, "Function"},
                                             {"api", ColumnKind::kText, "API"},
                                             {"calls", ColumnKind::kCount, "Calls"}});
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.push_back({"time_pct", ColumnKind::kPercent, "Time %"});
  // nsys cuda_api_sum: a function's share of the time of every API call
  // (of its process with --by-process).
  std::map<size_t, int64_t> all_ns;
  for (const auto& [key, durations] : rows.api) {
    int64_t& t = all_ns[std::get<0>(key)];
    t = SaturatingAdd(t, durations.total());
  }
  for (auto& [key, durations] : rows.api) {
    const DurationStats s = durations.Stats();
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[std::get<0>(key)]));
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kYes);
    row.push_back(SharePercent(s.total, all_ns[std::get<0>(key)]));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 3, first + 2, first + 4, first);
  table.notes.push_back(
      "Time % = the function's share of all CUDA API time (as nsys cuda_api_sum).");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
