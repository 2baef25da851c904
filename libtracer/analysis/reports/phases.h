// The phases table (computed, not estimated from kernel names): forward / backward /
// optimizer / other share of each training step, from ordered regex rules
// over range names (data/phases.rules is the built-in set). Shares add up to
// 100 % by construction: overlapping phases are resolved in rule order and
// "other" is the rest of the step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/reports/regex_rules.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

// Text of the built-in rules; identical to data/phases.rules.
std::string_view DefaultPhaseRulesText();

struct PhaseInterval {
  size_t phase = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Splits [start, end) among phases (the pure rule of this table): each
// instant goes to the lowest-numbered phase with an interval covering it,
// or to "other" (the last element of the result, index num_phases) when
// none does. Intervals are clipped to [start, end). The result sums to
// end - start exactly.
std::vector<uint64_t> SplitPhases(uint64_t start, uint64_t end,
                                  const std::vector<PhaseInterval>& intervals, size_t num_phases);

struct PhasesOptions {
  std::string step_range;  // "" = chosen as steps.h FindSteps says
};

// One row per step instance and an "all" row: step CPU time and each
// phase's CPU time and share; the same over the step's projected GPU span
// (empty when the step has no GPU work). Phase names come from the rules,
// in their order of first appearance. An error when there is no step.
StatusOr<Table> PhasesTable(const ReportModel& model, const std::vector<RegexRule>& rules,
                            const PhasesOptions& options);

}  // namespace tracer::analysis::reports
