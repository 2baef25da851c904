#include "libtracer/analysis/export/csv_export.h"

#include <filesystem>
#include <fstream>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/tables/core_tables.h"
#include "libtracer/analysis/tables/render.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis::exporters {

std::vector<Table> AllTables(const Trace& trace) {
  const AnalyzedTrace analyzed(trace, {});
  const ReportOptions o;
  std::vector<std::string> core;
  for (const CoreTable& t : CoreTableList()) core.emplace_back(t.name);
  std::vector<Table> out = CoreTables(analyzed, core, o);
  // Built-in rules only: these cannot fail on the user's input.
  auto extra = reports::BuildExtraTables(analyzed, {"categories", "gaps", "top"}, {});
  if (extra.ok()) {
    for (auto& t : *extra) out.push_back(std::move(t));
  }
  // Step tables only when there is a step; no step is not an error here.
  auto steps = reports::BuildExtraTables(analyzed, {"phases", "timeline"}, {});
  if (steps.ok()) {
    for (auto& t : *steps) out.push_back(std::move(t));
  }
  return out;
}

bool WriteCsvTables(const std::vector<Table>& tables, const std::string& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec)) {
    *error = "cannot create directory " + dir + (ec ? ": " + ec.message() : "");
    return false;
  }
  for (const Table& t : tables) {
    const std::string path = (std::filesystem::path(dir) / (t.name + ".csv")).string();
    std::ofstream out(path, std::ios::binary);
    out << RenderTable(t, OutputFormat::kCsv);
    out.close();
    if (!out) {
      *error = "cannot write " + path;
      return false;
    }
  }
  return true;
}

bool WriteCsv(const Trace& trace, const std::string& dir, std::string* error,
              const std::vector<Table>& extra) {
  std::vector<Table> tables = AllTables(trace);
  tables.insert(tables.end(), extra.begin(), extra.end());
  return WriteCsvTables(tables, dir, error);
}

}  // namespace tracer::analysis::exporters
