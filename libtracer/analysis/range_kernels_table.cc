// Range x kernel table (nsys nvtx_kern_sum semantics): a kernel counts toward
// every range instance on its stack, so a kernel inside "layer" inside "step"
// appears under both.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "libtracer/analysis/table_util.h"
#include "libtracer/analysis/tables.h"

namespace tracer::analysis {
namespace {

struct Group {
  std::vector<int64_t> durations;
  std::vector<uint64_t> instances;  // (process << 32 | range index), repeats allowed
};

}  // namespace

Table RangeKernelsTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const Trace& trace = t.trace();
  const RangeFilter filter(o);
  // Range names are resolved once per range instance into a dense name-group
  // id; the per-kernel loop then only touches integers.
  std::map<std::pair<size_t, std::string>, uint32_t> name_group_ids;
  std::vector<std::pair<size_t, std::string>> name_groups;
  std::unordered_map<uint64_t, Group> groups;  // name group << 32 | kernel name id
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    std::vector<int64_t> group_of(p.ranges.size(), -1);
    for (uint32_t r = 0; r < p.ranges.size(); ++r) {
      if (!filter.Accepts(t, pi, p.ranges[r])) continue;
      std::pair<size_t, std::string> key(o.by_process ? pi : 0,
                                         std::string(t.RangeName(p.ranges[r])));
      auto [it, inserted] = name_group_ids.emplace(key, static_cast<uint32_t>(name_groups.size()));
      if (inserted) name_groups.push_back(std::move(key));
      group_of[r] = it->second;
    }
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const KernelRecord& kr = p.kernels[k];
      const int64_t d = static_cast<int64_t>(kr.end_ns - kr.start_ns);
      for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) {
        if (group_of[r] < 0) continue;
        Group& g = groups[(static_cast<uint64_t>(group_of[r]) << 32) | kr.name];
        g.durations.push_back(d);
        g.instances.push_back((static_cast<uint64_t>(pi) << 32) | r);
      }
    }
  }
  std::vector<int64_t> range_kernel_total(name_groups.size(), 0);
  for (const auto& [key, g] : groups) {
    for (int64_t d : g.durations) range_kernel_total[key >> 32] += d;
  }
  Table table = NewTable("range-kernels",
                         "Kernels per range (a kernel counts toward every range on its stack)", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"range", ColumnKind::kText, "Range"},
                                             {"kernel", ColumnKind::kText, "Kernel"},
                                             {"range_instances", ColumnKind::kCount, "Range inst"},
                                             {"count", ColumnKind::kCount, "Kernel inst"}});
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.push_back({"range_share_pct", ColumnKind::kPercent, "Share of range kernel time"});
  for (auto& [key, g] : groups) {
    const auto& [proc, range] = name_groups[key >> 32];
    const uint32_t kernel = static_cast<uint32_t>(key & 0xffffffffu);
    const DurationStats s = ComputeStats(&g.durations);
    const int64_t range_total = range_kernel_total[key >> 32];
    std::sort(g.instances.begin(), g.instances.end());
    const auto distinct = std::unique(g.instances.begin(), g.instances.end()) - g.instances.begin();
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(proc)));
    row.push_back(Text(range));
    const std::string_view raw = trace.strings.Get(kernel);
    row.push_back(Text(KernelLabel(raw)));
    row.push_back(Int(static_cast<int64_t>(distinct)));
    row.push_back(Int(s.count));
    AddStatCells(&row, s, WithStddev::kYes);
    row.push_back(SharePercent(s.total, range_total));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, first + 4, first + 3, first + 5, first);
  return table;
}

}  // namespace tracer::analysis
