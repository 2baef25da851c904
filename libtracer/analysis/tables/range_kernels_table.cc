// Range x kernel table (nsys nvtx_kern_sum semantics): a kernel counts toward
// every range instance on its stack, so a kernel inside "layer" inside "step"
// appears under both.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

Table RenderRangeKernelsTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable("range-kernels",
                         "Kernels per range (a kernel counts toward every range on its stack)", o);
  const int first = static_cast<int>(table.columns.size());
  table.columns.insert(table.columns.end(), {{"range", ColumnKind::kText, "Range"},
                                             {"kernel", ColumnKind::kText, "Kernel"},
                                             {"range_instances", ColumnKind::kCount, "Range inst"},
                                             {"count", ColumnKind::kCount, "Kernel inst"}});
  AddStatColumns(&table, "", "", WithStddev::kYes);
  table.columns.push_back({"range_share_pct", ColumnKind::kPercent, "Share of range kernel time"});
  for (auto& [range_key, kernels] : rows.range_kernels) {
    int64_t range_total = 0;
    for (const auto& [kernel, g] : kernels) range_total += g.durations.total();
    for (auto& [kernel, g] : kernels) {
      const DurationStats s = g.durations.Stats();
      std::vector<Cell> row;
      if (o.by_process) row.push_back(Text(rows.process_labels[range_key.first]));
      row.push_back(Text(range_key.second));
      row.push_back(Text(KernelLabel(rows.strings->Get(kernel))));
      row.push_back(Int(g.instances));
      row.push_back(Int(s.count));
      AddStatCells(&row, s, WithStddev::kYes);
      row.push_back(SharePercent(s.total, range_total));
      table.rows.push_back(std::move(row));
    }
  }
  SortAndTrim(&table, o, first + 4, first + 3, first + 5, first);
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

Table RangeKernelsTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const RangeFilter filter(o);
  TableRows rows;
  rows.strings = &t.trace().strings;
  // Range names are resolved once per range instance into a dense group id;
  // the per-kernel loop then does one hash lookup per stack entry.
  std::map<std::pair<size_t, std::string>, uint32_t> group_ids;
  std::vector<std::pair<size_t, std::string>> groups;
  struct KernelCell {
    DurationAccumulator durations;
    // (process << 32 | range index); a repeat of the last one is skipped, so
    // kernels of one instance (mostly consecutive) are stored once.
    std::vector<uint64_t> instances;
  };
  std::unordered_map<uint64_t, KernelCell> cells;  // group << 32 | kernel name id
  // Consecutive kernels revisit a handful of cells: a direct-mapped cache in
  // front of the hash map (its element addresses are stable).
  struct CacheEntry {
    uint64_t key = UINT64_MAX;
    KernelCell* cell = nullptr;
  };
  std::array<CacheEntry, 256> cache{};
  for (size_t pi = 0; pi < t.size(); ++pi) {
    rows.process_labels.push_back(t.ProcessLabel(pi));
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    std::vector<int64_t> group_of(p.ranges.size(), -1);
    for (uint32_t r = 0; r < p.ranges.size(); ++r) {
      if (!filter.Accepts(t, pi, p.ranges[r])) continue;
      std::pair<size_t, std::string> key(o.by_process ? pi : 0,
                                         std::string(t.RangeName(p.ranges[r])));
      auto [it, inserted] = group_ids.emplace(key, static_cast<uint32_t>(groups.size()));
      if (inserted) groups.push_back(std::move(key));
      group_of[r] = it->second;
    }
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const KernelRecord& kr = p.kernels[k];
      const int64_t d = static_cast<int64_t>(kr.end_ns - kr.start_ns);
      for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) {
        if (group_of[r] < 0) continue;
        const uint64_t key = (static_cast<uint64_t>(group_of[r]) << 32) | kr.name;
        CacheEntry& e = cache[(key * 0x9E3779B97F4A7C15ull) >> 56];
        if (e.key != key) e = {key, &cells[key]};
        KernelCell& c = *e.cell;
        c.durations.Add(d);
        const uint64_t instance = (static_cast<uint64_t>(pi) << 32) | r;
        if (c.instances.empty() || c.instances.back() != instance) c.instances.push_back(instance);
      }
    }
  }
  for (auto& [key, c] : cells) {
    RangeKernelRow& row = rows.range_kernels[groups[key >> 32]][static_cast<uint32_t>(key)];
    std::sort(c.instances.begin(), c.instances.end());
    row.instances = std::unique(c.instances.begin(), c.instances.end()) - c.instances.begin();
    row.durations = std::move(c.durations);
  }
  return RenderRangeKernelsTable(rows, o);
}

}  // namespace tracer::analysis
