// Kernels table: one row per kernel name (mangled name as captured; shown
// demangled and shortened).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "libtracer/analysis/demangle.h"
#include "libtracer/analysis/table_util.h"
#include "libtracer/analysis/tables.h"

namespace tracer::analysis {

Table KernelsTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const Trace& trace = t.trace();
  std::map<std::pair<size_t, uint32_t>, std::vector<int64_t>> groups;  // (process, name)
  int64_t all = 0;
  for (size_t pi = 0; pi < t.size(); ++pi) {
    for (const KernelRecord& k : t.process(pi).process->kernels) {
      const int64_t d = static_cast<int64_t>(k.end_ns - k.start_ns);
      groups[{o.by_process ? pi : 0, k.name}].push_back(d);
      all += d;
    }
  }
  Table table = NewTable("kernels", "GPU kernels", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"kernel", ColumnKind::kText, "Kernel"},
                                             {"count", ColumnKind::kCount, "Count"}});
  AddStatColumns(&table, "", "", WithStddev::kNo);
  table.columns.insert(table.columns.end(),
                       {{"share_pct", ColumnKind::kPercent, "Share of GPU kernel time"},
                        {"full_name", ColumnKind::kText, "Full name"}});
  for (auto& [key, durations] : groups) {
    const DurationStats s = ComputeStats(&durations);
    const std::string_view raw = trace.strings.Get(key.second);
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(key.first)));
    row.push_back(Text(KernelLabel(raw)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kNo);
    row.push_back(SharePercent(s.total, all));
    row.push_back(Text(Demangle(raw)));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 2, first + 1, first + 3, first);
  table.notes.push_back("Share = kernel time / all kernel time (" + std::to_string(all) +
                        " ns); overlapping kernels are summed.");
  return table;
}

}  // namespace tracer::analysis
