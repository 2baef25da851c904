// Kernels table: one row per kernel name (mangled name as captured; shown
// demangled and shortened).
#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

Table RenderKernelsTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("kernels", "GPU kernels", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"kernel", ColumnKind::kText, "Kernel"},
                                             {"count", ColumnKind::kCount, "Count"}});
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.insert(table.columns.end(),
                       {{"share_pct", ColumnKind::kPercent, "Share of GPU kernel time"},
                        {"full_name", ColumnKind::kText, "Full name"}});
  std::vector<uint32_t> ids;
  for (const auto& [key, durations] : rows.kernels) ids.push_back(key.second);
  const auto& labels = KernelLabelsOf(rows, std::move(ids));
  for (auto& [key, durations] : rows.kernels) {
    const DurationStats s = durations.Stats();
    const std::string_view raw = rows.strings->Get(key.second);
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[key.first]));
    row.push_back(Text(labels.at(key.second)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kYes);
    row.push_back(SharePercent(s.total, rows.all_kernel_ns));
    row.push_back(Text(Demangle(raw)));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 2, first + 1, first + 3, first);
  table.notes.push_back("Share = kernel time / all kernel time (" +
                        std::to_string(rows.all_kernel_ns) +
                        " ns); overlapping kernels are summed.");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
