// Entry point of the issue-4 tables for the CLI (`tracer report --table
// groups,timeline,phases,categories,gaps,top` and `tracer diff`): option
// values as the flags give them, files read and rules parsed here, so the
// commands stay thin.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct ExtraTableOptions {
  std::string groups_file;          // --groups FILE (required for "groups")
  std::string by;                   // --by KEY[,KEY]: placeholders kept apart
  std::string step_range;           // --step-range NAME ("" = steps.h FindSteps)
  int64_t iteration = -1;           // --iteration N (timeline); -1 = first step
  std::string phase_rules_file;     // --phase-rules FILE ("" = built-in)
  std::string category_rules_file;  // --category-rules FILE (tried before built-in)
  size_t top = 5;                   // kernels per range in "top"
  ReportOptions report;             // --filter, --domain, --top for "ranks"
};

// The non-empty items of a comma-separated flag value ("a,,b" -> a, b).
std::vector<std::string> SplitComma(const std::string& s);

// groups, timeline, phases, categories, gaps, top, ranks.
const std::vector<std::string>& ExtraTableNames();
bool IsExtraTable(std::string_view name);

// The tables for these names ("categories" gives two: range x category and
// kernels by category), or an error with a one-line message (file:line for
// rule files) on bad options or files.
StatusOr<std::vector<Table>> BuildExtraTables(const AnalyzedTrace& analyzed,
                                              const std::vector<std::string>& names,
                                              const ExtraTableOptions& options);

// Help text for the tables and flags above, for `tracer report --help`.
std::string_view ExtraTablesHelp();

}  // namespace tracer::analysis::reports
