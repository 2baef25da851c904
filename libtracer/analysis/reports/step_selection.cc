#include "libtracer/analysis/reports/step_selection.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/reports/steps.h"

namespace tracer::analysis::reports {
namespace {

bool ParseIndex(const std::string& s, size_t* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = static_cast<size_t>(v);
  return true;
}

template <typename T>
void EraseUnkept(const std::vector<bool>& keep, std::vector<T>* v) {
  if (keep.size() != v->size()) return;
  size_t out = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    if (keep[i]) (*v)[out++] = std::move((*v)[i]);
  }
  v->resize(out);
}

}  // namespace

bool StepSelection::Contains(size_t step) const {
  for (const auto& [lo, hi] : intervals) {
    if (step >= lo && step <= hi) return true;
  }
  return false;
}

StatusOr<StepSelection> ParseStepSelection(const std::string& spec) {
  StepSelection out;
  for (const std::string& part : SplitComma(spec)) {
    const size_t dash = part.find('-');
    size_t lo = 0, hi = SIZE_MAX;
    bool ok = true;
    if (dash == std::string::npos) {
      ok = ParseIndex(part, &lo);
      hi = lo;
    } else {
      const std::string a = part.substr(0, dash), b = part.substr(dash + 1);
      if (!a.empty()) ok &= ParseIndex(a, &lo);
      if (!b.empty()) ok &= ParseIndex(b, &hi);
      ok &= !(a.empty() && b.empty()) && lo <= hi;
    }
    if (!ok) {
      return Status::Error(
          "--steps: '" + part +
          "' is not a step number or range (e.g. 5, 10-20, 3-, -4; steps "
          "are the program's own numbers: the number in the step's name, else from 0)");
    }
    out.intervals.emplace_back(lo, hi);
  }
  if (out.intervals.empty()) return Status::Error("--steps: no step given (e.g. --steps 10-20)");
  return out;
}

StatusOr<StepPlan> PlanStepSelection(const ReportModel& model, const std::string& step_range,
                                     const StepSelection& selection) {
  const auto found = FindSteps(model, step_range);
  if (!found.ok()) return found.status().WithPrefix("--steps");
  const Steps& steps = *found;
  const Trace& trace = model.trace();
  StepPlan plan;
  plan.processes.resize(trace.processes.size());
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    const ProcessTrace& pt = trace.processes[p];
    StepPlan::Keep& k = plan.processes[p];
    k.ranges.assign(pt.ranges.size(), false);
    k.marks.assign(pt.marks.size(), false);
    k.kernels.assign(pt.kernels.size(), false);
    k.memcpys.assign(pt.memcpys.size(), false);
    k.memsets.assign(pt.memsets.size(), false);
    k.api_calls.assign(pt.api_calls.size(), false);
    k.launches.assign(pt.launches.size(), false);
  }
  uint64_t lowest = UINT64_MAX, highest = 0;
  for (const Steps::OfProcess& proc : steps.by_process) {
    if (!proc.numbers.empty()) {
      lowest = std::min(lowest, proc.numbers.front());
      highest = std::max(highest, proc.numbers.back());
    }
    const ProcessTrace& pt = trace.processes[proc.process];
    StepPlan::Keep& k = plan.processes[proc.process];
    // Windows of the selected steps, in start order.
    std::vector<std::pair<uint64_t, uint64_t>> windows;
    for (size_t i = 0; i < proc.instances.size(); ++i) {
      if (!selection.Contains(proc.numbers[i])) continue;
      ++plan.steps_selected;
      const uint32_t s = proc.instances[i];
      const RangeFact& f = model.ranges()[s];
      windows.emplace_back(f.start_ns, f.end_ns);
      for (uint32_t op : model.OpsOf(s)) {
        const OpFact& o = model.ops()[op];
        std::vector<bool>& keep = o.kind == OpKind::kKernel   ? k.kernels
                                  : o.kind == OpKind::kMemcpy ? k.memcpys
                                                              : k.memsets;
        keep[o.record] = true;
      }
    }
    auto inside = [&](uint64_t start, uint64_t end) {
      auto it = std::upper_bound(windows.begin(), windows.end(), start,
                                 [](uint64_t t, const auto& w) { return t < w.first; });
      if (it == windows.begin()) return false;
      --it;
      return start >= it->first && end <= it->second;
    };
    std::sort(windows.begin(), windows.end());
    for (size_t r = 0; r < pt.ranges.size(); ++r)
      k.ranges[r] = inside(pt.ranges[r].start_ns, pt.ranges[r].end_ns);
    for (size_t m = 0; m < pt.marks.size(); ++m)
      k.marks[m] = inside(pt.marks[m].time_ns, pt.marks[m].time_ns);
    for (size_t a = 0; a < pt.api_calls.size(); ++a)
      k.api_calls[a] = inside(pt.api_calls[a].start_ns, pt.api_calls[a].start_ns);
    for (size_t l = 0; l < pt.launches.size(); ++l)
      k.launches[l] = inside(pt.launches[l].time_ns, pt.launches[l].time_ns);
  }
  if (plan.steps_selected == 0) {
    return Status::Error("--steps: no step in the selection (the trace holds steps " +
                         std::to_string(lowest) + " to " + std::to_string(highest) + " of '" +
                         steps.name + "', the program's own numbers)");
  }
  plan.note = "--steps: " + std::to_string(plan.steps_selected) + " step(s) of '" + steps.name +
              "' selected; records outside them are left out of every table";
  return plan;
}

void ApplyStepPlan(const StepPlan& plan, Trace* trace) {
  for (size_t p = 0; p < trace->processes.size() && p < plan.processes.size(); ++p) {
    ProcessTrace& pt = trace->processes[p];
    const StepPlan::Keep& k = plan.processes[p];
    EraseUnkept(k.ranges, &pt.ranges);
    EraseUnkept(k.marks, &pt.marks);
    KeepRows(k.kernels, &pt.kernels);
    EraseUnkept(k.memcpys, &pt.memcpys);
    EraseUnkept(k.memsets, &pt.memsets);
    EraseUnkept(k.api_calls, &pt.api_calls);
    KeepRows(k.launches, &pt.launches);
  }
}

}  // namespace tracer::analysis::reports
