// CUDA runtime / driver API calls per function name.
#include <algorithm>
#include <map>
#include <tuple>

#include "libtracer/analysis/table_util.h"
#include "libtracer/analysis/tables.h"

namespace tracer::analysis {

Table ApiTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const Trace& trace = t.trace();
  std::map<std::tuple<size_t, std::string, std::string>, std::vector<int64_t>> groups;
  for (size_t pi = 0; pi < t.size(); ++pi) {
    for (const ApiRecord& a : t.process(pi).process->api_calls) {
      const char* domain = a.domain == ApiDomain::kDriver ? "driver" : "runtime";
      std::string name(trace.strings.Get(a.name));
      if (name.empty()) name = "cbid " + std::to_string(a.cbid);
      groups[{o.by_process ? pi : 0, std::move(name), domain}].push_back(
          static_cast<int64_t>(a.end_ns - a.start_ns));
    }
  }
  Table table = NewTable("api", "CUDA API calls", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"function", ColumnKind::kText, "Function"},
                                             {"api", ColumnKind::kText, "API"},
                                             {"calls", ColumnKind::kCount, "Calls"}});
  AddStatColumns(&table, "", "", WithStddev::kNo);
  for (auto& [key, durations] : groups) {
    const DurationStats s = ComputeStats(&durations);
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(std::get<0>(key))));
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kNo);
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 3, first + 2, first + 4, first);
  return table;
}

}  // namespace tracer::analysis
