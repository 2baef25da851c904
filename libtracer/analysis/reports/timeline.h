// The timeline table (the per-step sequence a profiling study lists by hand): the ordered ranges of
// one training step, with their depth, start offset from the step's start, CPU duration and GPU
// projection.
#pragma once

#include <cstddef>
#include <string>

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct TimelineOptions {
  std::string step_range;  // "" = chosen as steps.h FindSteps says
  // The step numbered so (steps.h: the program's own number); -1 = each
  // process's first recorded step.
  int64_t iteration = -1;
};

// Rows: the step itself (depth 0) then every range inside it (steps.h
// StepMembers) in start order; the name is indented two spaces per depth.
// An error when there is no step or the iteration is out of range.
StatusOr<Table> TimelineTable(const ReportModel& model, const TimelineOptions& options);

}  // namespace tracer::analysis::reports
