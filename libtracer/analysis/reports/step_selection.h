// `--steps`: a report over some training steps only (warm-up left out), like
// nsys's --filter-nvtx. Steps carry the program's own numbers, per process
// (steps.h: from 0, or from where capture began). What a selected step
// holds, per process:
//   - range instances lying inside its [start, end], on any thread;
//   - GPU ops counted toward the step instance (its launches, its
//     children's, worker-thread launches it inherits, graph kernels);
//   - API calls, launch records and marks inside its [start, end].
// Everything else is removed from the trace before the tables are computed,
// so every table, groups, phases and diff see the selection only
// (record_selection.h combines it with --time).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

// Inclusive iteration intervals; an open end is SIZE_MAX.
struct StepSelection {
  std::vector<std::pair<size_t, size_t>> intervals;
  bool Contains(size_t step) const;
};

// "10-20", "5", "3-" (3 and later), "-4" (up to 4), or a comma-separated
// list of those; an error names the bad part.
StatusOr<StepSelection> ParseStepSelection(const std::string& spec);

// Which records of each process to keep (indexes into a ProcessTrace's
// vectors), computed on the whole trace's model.
struct StepPlan {
  struct Keep {
    std::vector<bool> ranges, marks, kernels, memcpys, memsets, api_calls, launches;
  };
  std::vector<Keep> processes;
  size_t steps_selected = 0;
  std::string note;  // for the tables' notes: which steps of which range
};

// Errors: no step range, or no step of any process in the selection.
StatusOr<StepPlan> PlanStepSelection(const ReportModel& model, const std::string& step_range,
                                     const StepSelection& selection);

// Removes from trace what the plan does not keep (the model it was computed
// on must be gone: record indexes change).
void ApplyStepPlan(const StepPlan& plan, Trace* trace);

}  // namespace tracer::analysis::reports
