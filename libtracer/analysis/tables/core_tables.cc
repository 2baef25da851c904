#include "libtracer/analysis/tables/core_tables.h"

namespace tracer::analysis {

const std::vector<CoreTable>& CoreTableList() {
  // RowNeeds: range_cpu, range_gpu, range_kernels, kernels, api, memory, summary.
  static const std::vector<CoreTable> kTables = {
      {"summary", {.summary = true}, RenderSummaryTable},
      {"ranges", {.range_cpu = true, .range_gpu = true, .range_kernels = true}, RenderRangesTable},
      {"kernels", {.kernels = true}, RenderKernelsTable},
      {"range-kernels", {.range_kernels = true}, RenderRangeKernelsTable},
      {"gpu", {.range_cpu = true, .range_gpu = true}, RenderGpuProjectionTable},
      {"memory", {.memory = true}, RenderMemoryOpsTable},
      {"api", {.api = true}, RenderApiTable},
  };
  return kTables;
}

const CoreTable* FindCoreTable(std::string_view name) {
  for (const CoreTable& t : CoreTableList()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<Table> RenderCoreTables(TableRows& rows, const std::vector<std::string>& names,
                                    const ReportOptions& o) {
  std::vector<Table> out;
  for (const std::string& name : names) {
    if (const CoreTable* t = FindCoreTable(name)) out.push_back(t->render(rows, o));
  }
  return out;
}

std::vector<Table> CoreTables(const AnalyzedTrace& t, const std::vector<std::string>& names,
                              const ReportOptions& o) {
  RowNeeds needs;
  for (const std::string& name : names) {
    if (const CoreTable* table = FindCoreTable(name)) needs |= table->needs;
  }
  TableRows rows = WholeTraceRows(t, o, needs);
  return RenderCoreTables(rows, names, o);
}

namespace {
Table One(const AnalyzedTrace& t, const char* name, const ReportOptions& o) {
  return std::move(CoreTables(t, {name}, o).front());
}
}  // namespace

Table SummaryTable(const AnalyzedTrace& t, const ReportOptions& o) { return One(t, "summary", o); }
Table RangesTable(const AnalyzedTrace& t, const ReportOptions& o) { return One(t, "ranges", o); }
Table KernelsTable(const AnalyzedTrace& t, const ReportOptions& o) { return One(t, "kernels", o); }
Table RangeKernelsTable(const AnalyzedTrace& t, const ReportOptions& o) {
  return One(t, "range-kernels", o);
}
Table GpuProjectionTable(const AnalyzedTrace& t, const ReportOptions& o) {
  return One(t, "gpu", o);
}
Table MemoryOpsTable(const AnalyzedTrace& t, const ReportOptions& o) { return One(t, "memory", o); }
Table ApiTable(const AnalyzedTrace& t, const ReportOptions& o) { return One(t, "api", o); }

}  // namespace tracer::analysis
