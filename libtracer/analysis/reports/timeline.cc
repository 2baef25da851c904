#include "libtracer/analysis/reports/timeline.h"

#include <algorithm>
#include <string>
#include <vector>

#include "libtracer/analysis/reports/steps.h"

namespace tracer::analysis::reports {

StatusOr<Table> TimelineTable(const ReportModel& model, const TimelineOptions& options) {
  const auto found = FindSteps(model, options.step_range);
  if (!found.ok()) return found.status();
  const Steps& steps = *found;
  // Iteration N of every process (rank) that has it.
  std::vector<uint32_t> chosen;
  uint64_t lowest = UINT64_MAX, highest = 0, shown = 0;
  for (const Steps::OfProcess& proc : steps.by_process) {
    if (proc.numbers.empty()) continue;
    lowest = std::min(lowest, proc.numbers.front());
    highest = std::max(highest, proc.numbers.back());
    for (size_t i = 0; i < proc.instances.size(); ++i) {
      if (options.iteration < 0 ? i == 0
                                : proc.numbers[i] == static_cast<uint64_t>(options.iteration)) {
        if (chosen.empty()) shown = proc.numbers[i];
        chosen.push_back(proc.instances[i]);
        break;
      }
    }
  }
  if (chosen.empty()) {
    return Status::Error("--iteration " + std::to_string(options.iteration) +
                         " is out of range: the trace holds steps " + std::to_string(lowest) +
                         ".." + std::to_string(highest) + " of '" + steps.name + "'");
  }
  const bool by_process = steps.by_process.size() > 1;
  const auto& ranges = model.ranges();
  Table t;
  t.name = "timeline";
  t.title = "Timeline of " + steps.name + " #" + std::to_string(shown);
  if (by_process) t.columns.push_back({"process", ColumnKind::kText, "Process"});
  const std::vector<Column> columns = {{"index", ColumnKind::kCount, "#"},
                                       {"depth", ColumnKind::kCount, "Depth"},
                                       {"range", ColumnKind::kText, "Range"},
                                       {"thread", ColumnKind::kText, "Thread"},
                                       {"start_offset_ns", ColumnKind::kDuration, "Start"},
                                       {"cpu_ns", ColumnKind::kDuration, "CPU"},
                                       {"gpu_proj_ns", ColumnKind::kDuration, "GPU projected"},
                                       {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
                                       {"kernels", ColumnKind::kCount, "Kernels"}};
  t.columns.insert(t.columns.end(), columns.begin(), columns.end());
  uint32_t s = 0;
  size_t index = 0;
  auto add = [&](uint32_t r, uint32_t depth) {
    const RangeFact& f = ranges[r];
    std::vector<Cell> row;
    if (by_process) {
      row.emplace_back(std::in_place_type<std::string>,
                       ProcessLabelOf(model.trace().processes[f.process]));
    }
    std::vector<Cell> cells = {static_cast<int64_t>(index++),
                               static_cast<int64_t>(depth),
                               std::string(2 * depth, ' ') + std::string(model.Name(f.name)),
                               ThreadLabel(model, f.process, f.thread),
                               static_cast<int64_t>(f.start_ns - ranges[s].start_ns),
                               static_cast<int64_t>(f.cpu_ns()),
                               f.has_gpu ? Cell(static_cast<int64_t>(f.gpu_span_ns())) : Cell(),
                               f.has_gpu ? Cell(static_cast<int64_t>(f.busy_ns)) : Cell(),
                               static_cast<int64_t>(f.kernel_count)};
    for (Cell& c : cells) row.push_back(std::move(c));
    t.rows.push_back(std::move(row));
  };
  for (uint32_t step : chosen) {
    s = step;
    index = 0;
    add(s, 0);
    for (uint32_t r : StepMembers(model, s)) add(r, DepthInStep(model, s, r));
  }
  t.notes = {"Step: " + steps.how + ", step " +
                 (options.iteration < 0 ? std::to_string(shown) + " (the first recorded)"
                                        : std::to_string(options.iteration)) +
                 " of steps " + std::to_string(lowest) + ".." + std::to_string(highest) +
                 " (--iteration N; the program's own step numbers" +
                 (by_process ? (options.iteration < 0 ? "; each process's first step"
                                                      : "; that step of every process")
                             : "") +
                 ").",
             "Start: offset from the step's start. Ranges of other threads inside the step "
             "window (worker threads) are listed at their own depth below the step.",
             "GPU projected: first to last attributed op; empty: no GPU work."};
  return t;
}

}  // namespace tracer::analysis::reports
