// Ranges table (docs/design.md section 5): one row per range name (+ domain, +
// process with --by-process). The gpu table (gpu_projection_table.cc) reads
// the same rows.
#include <algorithm>
#include <cstdio>
#include <map>

#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {
namespace {

std::string TopKernels(const std::unordered_map<uint32_t, std::string>& labels, const RangeRow& g,
                       size_t n) {
  std::vector<std::pair<int64_t, uint32_t>> v;
  for (const auto& [name, ns] : g.kernel_time) v.emplace_back(ns, name);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    if (!out.empty()) out += ", ";
    out += labels.at(v[i].second);
    if (g.kernel_ns > 0) {
      char pct[16];
      std::snprintf(pct, sizeof(pct), " %.0f%%", 100.0 * v[i].first / g.kernel_ns);
      out += pct;
    }
  }
  if (v.size() > n) out += ", +" + std::to_string(v.size() - n);
  return out;
}

}  // namespace

Table RenderRangesTable(TableRows& rows, const ReportOptions& o) {
  Table table = NewTable(
      "ranges",
      "NVTX ranges (CPU time per instance; GPU work attributed to the range and its children)", o);
  const size_t first = table.columns.size();
  table.columns.insert(table.columns.end(), {{"domain", ColumnKind::kText, "Domain"},
                                             {"range", ColumnKind::kText, "Range"},
                                             {"instances", ColumnKind::kCount, "Inst"}});
  AddStatColumns(&table, "cpu_", "CPU", WithStddev::kYes);
  table.columns.insert(table.columns.end(),
                       {{"cpu_time_pct", ColumnKind::kPercent, "Time %"},
                        {"style", ColumnKind::kText, "Style"},
                        {"depth", ColumnKind::kText, "Depth"},
                        {"threads", ColumnKind::kText, "Thread(s)"},
                        {"gpu_instances", ColumnKind::kCount, "GPU inst"},
                        {"gpu_proj_total_ns", ColumnKind::kDuration, "GPU proj total"},
                        {"gpu_proj_avg_ns", ColumnKind::kDuration, "GPU proj avg"},
                        {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
                        {"kernels", ColumnKind::kCount, "Kernels"},
                        {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                        {"top_kernels", ColumnKind::kText, "Top kernels (share of kernel time)"}});
  // nsys nvtx_sum: a range's share of the summed time of all ranges (nested
  // ranges count in full, as in nsys).
  std::map<size_t, int64_t> all_ns;
  for (const auto& [key, g] : rows.ranges) {
    int64_t& t = all_ns[std::get<0>(key)];
    t = SaturatingAdd(t, g.cpu.total());
  }
  std::vector<uint32_t> ids;
  for (const auto& [key, g] : rows.ranges) {
    for (const auto& [kernel, ns] : g.kernel_time) ids.push_back(kernel);
  }
  const auto& labels = KernelLabelsOf(rows, std::move(ids));
  for (auto& [key, g] : rows.ranges) {
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[std::get<0>(key)]));
    const DurationStats cpu = g.cpu.Stats();
    // Count, total and avg only: the gpu table shows the rest.
    const DurationStats proj = g.proj.Totals();
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(cpu.count));
    AddStatCells(&row, cpu, WithStddev::kYes);
    row.push_back(SharePercent(cpu.total, all_ns[std::get<0>(key)]));
    row.push_back(Text(RangeStyle(g)));
    row.push_back(Text(g.min_depth == g.max_depth
                           ? std::to_string(g.min_depth)
                           : std::to_string(g.min_depth) + "-" + std::to_string(g.max_depth)));
    std::string threads;
    for (const auto& th : g.threads) threads += (threads.empty() ? "" : ", ") + th;
    row.push_back(Text(threads));
    row.push_back(Int(proj.count));
    // No GPU work: empty cells, not zeros (docs/design.md "Projection").
    const bool gpu = proj.count > 0;
    row.push_back(IntOrEmpty(gpu, proj.total));
    row.push_back(IntOrEmpty(gpu, proj.avg));
    row.push_back(IntOrEmpty(gpu && g.busy.has_value(), g.busy.value_or(0)));
    row.push_back(IntOrEmpty(gpu, g.kernel_count));
    row.push_back(IntOrEmpty(gpu, g.kernel_ns));
    row.push_back(Text(TopKernels(labels, g, o.top_kernels)));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, static_cast<int>(first + 3), static_cast<int>(first + 2),
              static_cast<int>(first + 4), static_cast<int>(first + 1));
  table.notes.push_back(
      "CPU = range end - start on its thread; GPU proj = last op end - first op start of the "
      "ops launched inside the range (children included), per instance; GPU busy = time at "
      "least one of them ran; '-' = no GPU work.");
  table.notes.insert(table.notes.end(), rows.notes.begin(), rows.notes.end());
  return table;
}

}  // namespace tracer::analysis
