#include "libtracer/analysis/reports/timeline.h"

#include <stdexcept>

#include "libtracer/analysis/reports/steps.h"

namespace tracer::analysis::reports {

Table TimelineTable(const ReportModel& model, const TimelineOptions& options) {
  const Steps steps = FindSteps(model, options.step_range);
  if (options.iteration >= steps.instances.size()) {
    throw std::runtime_error("--iteration " + std::to_string(options.iteration) +
                             " is out of range: '" + steps.name + "' has " +
                             std::to_string(steps.instances.size()) + " instances (0.." +
                             std::to_string(steps.instances.size() - 1) + ")");
  }
  const uint32_t s = steps.instances[options.iteration];
  const auto& ranges = model.ranges();
  Table t;
  t.name = "timeline";
  t.title = "Timeline of " + steps.name + " #" + std::to_string(options.iteration);
  t.columns = {{"index", ColumnKind::kCount, "#"},
               {"depth", ColumnKind::kCount, "Depth"},
               {"range", ColumnKind::kText, "Range"},
               {"thread", ColumnKind::kText, "Thread"},
               {"start_offset_ns", ColumnKind::kDuration, "Start"},
               {"cpu_ns", ColumnKind::kDuration, "CPU"},
               {"gpu_proj_ns", ColumnKind::kDuration, "GPU projected"},
               {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
               {"kernels", ColumnKind::kCount, "Kernels"}};
  auto add = [&](uint32_t r, uint32_t depth) {
    const RangeFact& f = ranges[r];
    t.rows.push_back({static_cast<int64_t>(t.rows.size()), static_cast<int64_t>(depth),
                      std::string(2 * depth, ' ') + std::string(model.Name(f.name)),
                      ThreadLabel(model, f.process, f.thread),
                      static_cast<int64_t>(f.start_ns - ranges[s].start_ns),
                      static_cast<int64_t>(f.cpu_ns()),
                      f.has_gpu ? Cell(static_cast<int64_t>(f.gpu_span_ns())) : Cell(),
                      f.has_gpu ? Cell(static_cast<int64_t>(f.busy_ns)) : Cell(),
                      static_cast<int64_t>(f.kernel_count)});
  };
  add(s, 0);
  for (uint32_t r : StepMembers(model, s)) add(r, DepthInStep(model, s, r));
  t.notes = {"Step: " + steps.how + ", iteration " + std::to_string(options.iteration) + " of " +
                 std::to_string(steps.instances.size()) + " (--iteration N, 0-based).",
             "Start: offset from the step's start. Ranges of other threads inside the step "
             "window (worker threads) are listed at their own depth below the step.",
             "GPU projected: first to last attributed op; empty: no GPU work."};
  return t;
}

}  // namespace tracer::analysis::reports
