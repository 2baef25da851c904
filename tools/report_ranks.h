// `tracer report --table ranks` over inputs too large to read at once: one
// file read whole at a time (reports/cross_rank.h CrossRankBuilder), so the
// memory is that of the largest single file, not of all of them.
#pragma once

#include <string>
#include <vector>

#include "libtracer/analysis/importers/range_names.h"
#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::cli {

struct BoundedRanks {
  analysis::Table table;
  // "" when the table is the one of all files read at once; else why not
  // (the caller then must not show it).
  std::string inexact;
  std::string error;  // nothing read, or no process selected
};

// files in order; options: --rank / --pid, --filter, --domain, --top;
// step_range: --step-range ("" = chosen as the whole-trace table chooses).
BoundedRanks BoundedRanksTable(const std::vector<std::string>& files,
                               const analysis::ReportOptions& options,
                               const analysis::AttributionOptions& attribution,
                               const analysis::RangeNameRules& names,
                               const std::string& step_range);

}  // namespace tracer::cli
