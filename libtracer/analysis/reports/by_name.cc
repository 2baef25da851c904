#include "libtracer/analysis/reports/by_name.h"

#include <unordered_map>

namespace tracer::analysis::reports {

std::vector<NameInstances> GroupByName(const ReportModel& model) {
  std::vector<NameInstances> out;
  std::unordered_map<uint32_t, size_t> slot;
  const auto& ranges = model.ranges();
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    auto [it, inserted] = slot.emplace(ranges[r].name, out.size());
    if (inserted) out.push_back({ranges[r].name, {}});
    out[it->second].instances.push_back(r);
  }
  return out;
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
