#include "libtracer/analysis/reports/record_selection.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/reports/step_selection.h"
#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/reports/time_window.h"

namespace tracer::analysis::reports {
namespace {

void And(const std::vector<bool>& b, std::vector<bool>* a) {
  if (a->size() != b.size()) return;
  for (size_t i = 0; i < a->size(); ++i) (*a)[i] = (*a)[i] && b[i];
}

}  // namespace

StatusOr<std::string> SelectRecords(const RecordSelectionSpec& spec,
                                    const AttributionOptions& attribution, Trace* trace) {
  if (spec.empty()) return std::string();
  std::optional<StepPlan> plan;
  if (!spec.time.empty()) {
    auto window = ParseTimeWindow(spec.time);
    if (!window.ok()) return window.status();
    auto time_plan = PlanTimeWindow(*trace, *window);
    if (!time_plan.ok()) return time_plan.status();
    plan = std::move(*time_plan);
  }
  std::optional<StepSelection> selection;
  if (!spec.steps.empty()) {
    auto parsed = ParseStepSelection(spec.steps);
    if (!parsed.ok()) return parsed.status();
    selection = std::move(*parsed);
  }
  // The whole trace's step numbers, for the steps the cut leaves (a window
  // from 2 s on must not renumber its first step 0).
  using Numbers = std::map<std::pair<uint32_t, uint64_t>, uint64_t>;
  std::vector<Numbers> numbers(trace->processes.size());
  StatusOr<StepPlan> steps = Status::Error("");
  {
    const AnalyzedTrace whole(*trace, attribution);
    const ReportModel model(whole);
    // No steps: nothing to number (--steps says so below).
    if (const auto found = FindSteps(model, spec.step_range); found.ok()) {
      for (const Steps::OfProcess& proc : found->by_process) {
        const ProcessTrace& pt = trace->processes[proc.process];
        for (size_t i = 0; i < proc.instances.size(); ++i) {
          const RangeFact& f = model.ranges()[proc.instances[i]];
          numbers[proc.process][{pt.ranges[f.local].thread, f.start_ns}] = proc.numbers[i];
        }
      }
    }
    if (selection) steps = PlanStepSelection(model, spec.step_range, *selection);
  }
  if (selection) {
    if (!steps.ok()) return steps.status();
    if (!plan) {
      plan = std::move(*steps);
    } else {
      for (size_t p = 0; p < plan->processes.size() && p < steps->processes.size(); ++p) {
        StepPlan::Keep& a = plan->processes[p];
        const StepPlan::Keep& b = steps->processes[p];
        And(b.ranges, &a.ranges);
        And(b.marks, &a.marks);
        And(b.kernels, &a.kernels);
        And(b.memcpys, &a.memcpys);
        And(b.memsets, &a.memsets);
        And(b.api_calls, &a.api_calls);
        And(b.launches, &a.launches);
      }
      size_t kept = 0;
      for (const StepPlan::Keep& k : plan->processes) {
        for (const auto* v : {&k.ranges, &k.kernels, &k.memcpys, &k.memsets, &k.api_calls}) {
          for (bool x : *v) kept += x ? 1 : 0;
        }
      }
      if (kept == 0) {
        return Status::Error("--steps " + spec.steps + " and --time " + spec.time +
                             ": no record is in both (the selected steps lie outside the window)");
      }
      plan->note = steps->note + "; " + plan->note;
      plan->steps_selected = steps->steps_selected;
    }
  }
  ApplyStepPlan(*plan, trace);
  for (size_t p = 0; p < trace->processes.size(); ++p) {
    trace->processes[p].step_numbers = std::move(numbers[p]);
  }
  return plan->note;
}

}  // namespace tracer::analysis::reports
