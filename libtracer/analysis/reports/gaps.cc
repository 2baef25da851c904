#include "libtracer/analysis/reports/gaps.h"

#include <algorithm>
#include <utility>

#include "libtracer/analysis/reports/by_name.h"

namespace tracer::analysis::reports {

Table GapsTable(const ReportModel& model, bool by_process) {
  const auto& ranges = model.ranges();
  const auto& ops = model.ops();
  struct Row {
    uint32_t name;
    uint32_t process;
    int64_t instances = 0, with_gpu = 0, launches = 0;
    uint64_t proj = 0, busy = 0, api = 0, gap_sum = 0, gap_count = 0;
  };
  std::vector<Row> rows;
  std::vector<uint32_t> stamp(ops.size(), 0);
  const auto by_name = GroupByName(model, by_process);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  for (size_t i = 0; i < by_name.size(); ++i) {
    Row row{by_name[i].name, by_name[i].process};
    for (uint32_t r : by_name[i].instances) {
      ++row.instances;
      if (!ranges[r].has_gpu) continue;
      ++row.with_gpu;
      row.proj += ranges[r].gpu_span_ns();
      row.busy += ranges[r].busy_ns;
      calls.clear();
      for (uint32_t op : model.OpsOf(r)) {
        if (ops[op].launch_end_ns != 0)
          calls.emplace_back(ops[op].launch_start_ns, ops[op].launch_end_ns);
      }
      std::sort(calls.begin(), calls.end());
      for (size_t c = 1; c < calls.size(); ++c) {
        row.gap_sum +=
            calls[c].first > calls[c - 1].second ? calls[c].first - calls[c - 1].second : 0;
        ++row.gap_count;
      }
    }
    if (row.with_gpu == 0) continue;
    ForEachOpOnce(model, by_name[i].instances, &stamp, static_cast<uint32_t>(i + 1),
                  [&](uint32_t op) {
                    ++row.launches;
                    row.api += ops[op].launch_api_ns();
                  });
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.proj - a.busy > b.proj - b.busy; });
  Table t;
  t.name = "gaps";
  t.title = "GPU idle time and launches per range";
  t.columns = {{"range", ColumnKind::kText, "Range"},
               {"instances", ColumnKind::kCount, "Instances"},
               {"gpu_proj_ns", ColumnKind::kDuration, "GPU projected"},
               {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
               {"gpu_idle_ns", ColumnKind::kDuration, "GPU idle"},
               {"idle_pct", ColumnKind::kPercent, "Idle %"},
               {"launches", ColumnKind::kCount, "Launches"},
               {"launch_api_ns", ColumnKind::kDuration, "Launch API"},
               {"avg_launch_api_ns", ColumnKind::kDuration, "Avg launch API"},
               {"avg_launch_gap_ns", ColumnKind::kDuration, "Avg launch gap"}};
  AddProcessColumn(by_process, &t);
  for (const Row& r : rows) {
    const uint64_t idle = r.proj - r.busy;
    std::vector<Cell> cells = {
        std::string(model.Name(r.name)),
        r.instances,
        static_cast<int64_t>(r.proj),
        static_cast<int64_t>(r.busy),
        static_cast<int64_t>(idle),
        r.proj ? 100.0 * idle / r.proj : 0.0,
        r.launches,
        static_cast<int64_t>(r.api),
        r.launches ? Cell(static_cast<int64_t>(r.api / r.launches)) : Cell(),
        r.gap_count ? Cell(static_cast<int64_t>(r.gap_sum / r.gap_count)) : Cell()};
    if (by_process) cells.insert(cells.begin(), ProcessCell(model, r.process));
    t.rows.push_back(std::move(cells));
  }
  t.notes = {
      "GPU idle: projected span (first to last op of each instance) minus busy time (union of "
      "its op intervals), summed over instances.",
      "Launches: GPU ops attributed to the range (incl. children), each once per name; launch "
      "API: summed duration of their launching CUDA API calls; avg launch gap: mean CPU time "
      "between one launch call's end and the next one's start within an instance."};
  return t;
}

}  // namespace tracer::analysis::reports
