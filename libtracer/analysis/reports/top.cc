#include "libtracer/analysis/reports/top.h"

#include <algorithm>
#include <unordered_map>

#include "libtracer/analysis/reports/by_name.h"
#include "libtracer/analysis/tables/demangle.h"

namespace tracer::analysis::reports {

Table TopKernelsTable(const ReportModel& model, size_t n, bool by_process) {
  const auto& ops = model.ops();
  struct KernelSum {
    uint32_t name;
    int64_t count = 0;
    uint64_t total = 0;
  };
  struct RangeRows {
    uint32_t name;
    uint32_t process = 0;
    uint64_t total = 0;
    std::vector<KernelSum> kernels;
  };
  std::vector<RangeRows> ranges;
  std::vector<uint32_t> stamp(ops.size(), 0);
  const auto by_name = GroupByName(model, by_process);
  for (size_t i = 0; i < by_name.size(); ++i) {
    std::unordered_map<uint32_t, size_t> slot;
    RangeRows rr;
    rr.name = by_name[i].name;
    rr.process = by_name[i].process;
    ForEachOpOnce(model, by_name[i].instances, &stamp, static_cast<uint32_t>(i + 1),
                  [&](uint32_t op) {
                    if (ops[op].kind != OpKind::kKernel) return;
                    auto [it, inserted] = slot.emplace(ops[op].name, rr.kernels.size());
                    if (inserted) rr.kernels.push_back({ops[op].name});
                    ++rr.kernels[it->second].count;
                    rr.kernels[it->second].total += ops[op].duration();
                    rr.total += ops[op].duration();
                  });
    if (rr.kernels.empty()) continue;
    std::stable_sort(rr.kernels.begin(), rr.kernels.end(),
                     [](const KernelSum& a, const KernelSum& b) { return a.total > b.total; });
    if (n > 0 && rr.kernels.size() > n) rr.kernels.resize(n);
    ranges.push_back(std::move(rr));
  }
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const RangeRows& a, const RangeRows& b) { return a.total > b.total; });
  Table t;
  t.name = "top";
  t.title = "Top " + std::to_string(n) + " kernels per range";
  t.columns = {{"range", ColumnKind::kText, "Range"},
               {"rank", ColumnKind::kCount, "#"},
               {"kernel", ColumnKind::kText, "Kernel"},
               {"count", ColumnKind::kCount, "Count"},
               {"total_ns", ColumnKind::kDuration, "Total"},
               {"avg_ns", ColumnKind::kDuration, "Avg"},
               {"range_pct", ColumnKind::kPercent, "% of range"},
               {"kernel_name", ColumnKind::kText, "Full name"}};
  AddProcessColumn(by_process, &t);
  for (const auto& rr : ranges) {
    for (size_t k = 0; k < rr.kernels.size(); ++k) {
      const KernelSum& ks = rr.kernels[k];
      const std::string_view full = model.Name(ks.name);
      std::vector<Cell> cells = {std::string(model.Name(rr.name)),
                                 static_cast<int64_t>(k + 1),
                                 ShortKernelName(full),
                                 ks.count,
                                 static_cast<int64_t>(ks.total),
                                 static_cast<int64_t>(ks.total / ks.count),
                                 rr.total ? 100.0 * ks.total / rr.total : 0.0,
                                 std::string(full)};
      if (by_process) cells.insert(cells.begin(), ProcessCell(model, rr.process));
      t.rows.push_back(std::move(cells));
    }
  }
  t.notes = {
      "Kernels attributed to the range (incl. its children and inherited worker-thread "
      "launches), each once per range name; % of range: of the range's kernel time."};
  return t;
}

}  // namespace tracer::analysis::reports
