// The cross-rank table (`tracer report --table ranks`): the straggler in one
// command. For each step iteration and each range name, every process's
// (rank's) time, then over the processes that have it: min, median, max,
// the slowest one and the spread (max - min, in % of the median). CPU time
// is the range's summed end - start; GPU time its summed projected span
// (tables.h definitions), each per process.
#pragma once

#include <string>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis::reports {

struct CrossRankOptions {
  std::string step_range;  // "" = chosen as steps.h FindSteps says
  ReportOptions ranges;    // --filter, --domain, --top for the range rows
};

// Rows: one per step iteration (when the trace has steps), "all steps",
// then one per range name, largest max CPU time first. Throws nothing: a
// trace without steps simply has no step rows (said in a note).
Table CrossRankTable(const AnalyzedTrace& analyzed, const ReportModel& model,
                     const CrossRankOptions& options);

}  // namespace tracer::analysis::reports
