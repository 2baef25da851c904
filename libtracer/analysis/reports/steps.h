// Training steps: the instances of a named step range, and the ranges that
// make up one step (shared by the timeline and phases tables).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/reports/report_model.h"

namespace tracer::analysis::reports {

struct Steps {
  std::string name;                 // step range name; "ProfilerStep#*" for numbered ones
  std::vector<uint32_t> instances;  // range indexes, in start order (one process)
  std::string how;                  // how the step range was chosen, for notes
};

// Step names may carry the step number ("ProfilerStep#12", "step_3"): a
// trailing "#<digits>" or "_<digits>" is ignored when naming
// steps ("ProfilerStep#*").
std::string StepKey(std::string_view range_name);

// The instances of range `step_range` (by exact name, else by StepKey), or,
// when empty, of the top-level push/pop range key with at least two
// instances that covers the most CPU time (the training loop's step; a key
// with one instance only when there is no other). Only the first process
// that has such a range (several ranks: one per process). Throws
// std::runtime_error when there is none.
Steps FindSteps(const ReportModel& model, std::string_view step_range);

// The ranges inside step instance s, excluding s itself: its descendants and
// the ranges of other threads of its process lying within [s.start, s.end]
// (worker threads, e.g. autograd). Sorted by start, then depth.
std::vector<uint32_t> StepMembers(const ReportModel& model, uint32_t s);

// Depth of member r below step s: 1 for a child of s; ranges on other
// threads count as children of s at their own depth + 1.
uint32_t DepthInStep(const ReportModel& model, uint32_t s, uint32_t r);

// "main", or "tid 1234" when the thread is unnamed.
std::string ThreadLabel(const ReportModel& model, uint32_t process, uint32_t thread);

}  // namespace tracer::analysis::reports
