// The core tables (summary, ranges, kernels, range-kernels, gpu, memory,
// api): each is one entry here, saying which facts it reads (RowNeeds) and
// how it renders from the shared rows (table_rows.h). Both the whole-trace
// report and the bounded-memory one (streaming_report.h) go through this
// list, so a new core table is added once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/analysis/tables/whole_trace_rows.h"

namespace tracer::analysis {

struct CoreTable {
  std::string_view name;
  RowNeeds needs;
  Table (*render)(TableRows& rows, const ReportOptions& o);
};

// In the order `--table all` prints them.
const std::vector<CoreTable>& CoreTableList();
// nullptr when name is not a core table.
const CoreTable* FindCoreTable(std::string_view name);

// The named core tables (unknown names skipped), rendered from rows.
std::vector<Table> RenderCoreTables(TableRows& rows, const std::vector<std::string>& names,
                                    const ReportOptions& o);
// The named core tables of a whole trace; the rows are built once for all.
std::vector<Table> CoreTables(const AnalyzedTrace& t, const std::vector<std::string>& names,
                              const ReportOptions& o);

}  // namespace tracer::analysis
