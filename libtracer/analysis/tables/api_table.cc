// CUDA runtime / driver API calls per function name.
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
  AddStatColumns(&table, "", "", WithStddev::kNo);
  for (auto& [key, durations] : rows.api) {
    const DurationStats s = durations.Stats();
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[std::get<0>(key)]));
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kNo);
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 3, first + 2, first + 4, first);
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
