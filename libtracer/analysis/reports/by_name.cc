#include "libtracer/analysis/reports/by_name.h"

#include <unordered_map>

namespace tracer::analysis::reports {

std::vector<NameInstances> GroupByName(const ReportModel& model, bool by_process) {
  std::vector<NameInstances> out;
  std::unordered_map<uint64_t, size_t> slot;
  const auto& ranges = model.ranges();
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    const uint32_t process = by_process ? ranges[r].process : 0;
    const uint64_t key = (static_cast<uint64_t>(process) << 32) | ranges[r].name;
    auto [it, inserted] = slot.emplace(key, out.size());
    if (inserted) out.push_back({ranges[r].name, process, {}});
    out[it->second].instances.push_back(r);
  }
  return out;
}

void AddProcessColumn(bool by_process, Table* t) {
  if (by_process)
    t->columns.insert(t->columns.begin(), Column{"process", ColumnKind::kText, "Process"});
}

std::string ProcessCell(const ReportModel& model, uint32_t process) {
  return ProcessLabelOf(model.trace().processes[process]);
}

void ForEachOpOnce(const ReportModel& model, const std::vector<uint32_t>& instances,
                   std::vector<uint32_t>* stamp, uint32_t key,
                   const std::function<void(uint32_t)>& fn) {
  for (uint32_t r : instances) {
    for (uint32_t op : model.OpsOf(r)) {
      if ((*stamp)[op] == key) continue;
      (*stamp)[op] = key;
      fn(op);
    }
  }
}

}  // namespace tracer::analysis::reports
