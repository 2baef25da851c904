// The cross-rank table (`tracer report --table ranks`): the straggler in one
// command. For each step iteration and each range name, every process's
// (rank's) time, then over the processes that have it: min, median, max,
// the slowest one and the spread (max - min, in % of the median). CPU time
// is the range's summed end - start; GPU time its summed projected span
// (tables.h definitions), each per process.
#pragma once

#include <memory>
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

// The same table over traces read one at a time (tracer report over more
// files than fit memory at once: one file whole at a time). Each trace's
// processes leave their facts (label, per range name CPU and GPU totals,
// the step-range candidates and the step instances of each candidate) and
// the trace can go; Finish renders what CrossRankTable renders for all of
// them read at once. Memory: per process, one value per range name and per
// instance of its top-level candidate step ranges.
class CrossRankBuilder {
 public:
  explicit CrossRankBuilder(CrossRankOptions options);
  ~CrossRankBuilder();
  CrossRankBuilder(const CrossRankBuilder&) = delete;
  CrossRankBuilder& operator=(const CrossRankBuilder&) = delete;

  // The processes of one trace, after those already added.
  void Add(const AnalyzedTrace& analyzed, const ReportModel& model);
  // inexact: "" when the table is CrossRankTable's over all the traces,
  // else why it may not be (the step range chosen over all of them has
  // instances in a trace where it was no candidate, so they were not kept):
  // the caller must not show it then.
  Table Finish(std::string* inexact);

 private:
  struct State;
  CrossRankOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace tracer::analysis::reports
