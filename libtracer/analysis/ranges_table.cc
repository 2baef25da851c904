// Ranges table (design.md section 5): one row per range name (+ domain, +
// process with --by-process).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "libtracer/analysis/demangle.h"
#include "libtracer/analysis/table_util.h"
#include "libtracer/analysis/tables.h"

namespace tracer::analysis {
namespace {

struct Group {
  std::vector<int64_t> cpu;
  uint32_t min_depth = UINT32_MAX, max_depth = 0;
  std::set<std::string> threads;
  std::vector<int64_t> proj;
  int64_t busy = 0, kernel_count = 0, kernel_ns = 0;
  std::unordered_map<uint32_t, int64_t> kernel_time;  // kernel name id -> ns
};

using Key = std::tuple<size_t, std::string, std::string>;  // process, domain, name

std::string TopKernels(const Trace& trace, const Group& g, size_t n) {
  std::vector<std::pair<int64_t, uint32_t>> v;
  for (const auto& [name, ns] : g.kernel_time) v.emplace_back(ns, name);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    if (!out.empty()) out += ", ";
    out += ShortKernelName(trace.strings.Get(v[i].second));
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

Table RangesTable(const AnalyzedTrace& t, const ReportOptions& o) {
  const Trace& trace = t.trace();
  const RangeFilter filter(o);
  std::map<Key, Group> groups;
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    std::vector<Group*> group_of(p.ranges.size(), nullptr);
    for (uint32_t r = 0; r < p.ranges.size(); ++r) {
      const RangeRecord& rec = p.ranges[r];
      if (!filter.Accepts(t, pi, rec)) continue;
      Group& g = groups[Key(o.by_process ? pi : 0, std::string(t.DomainName(pi, rec.domain)),
                            std::string(t.RangeName(rec)))];
      group_of[r] = &g;
      g.cpu.push_back(static_cast<int64_t>(rec.end_ns - rec.start_ns));
      const uint32_t depth = pa.ranges.Depth(r);
      g.min_depth = std::min(g.min_depth, depth);
      g.max_depth = std::max(g.max_depth, depth);
      if (g.threads.size() < 8) g.threads.insert(ThreadLabel(trace, p, rec.thread));
      if (const InstanceProjection* proj = pa.projection.Of(r)) {
        g.proj.push_back(static_cast<int64_t>(proj->total.span_ns()));
        g.busy += static_cast<int64_t>(proj->total.busy_ns);
        g.kernel_count += static_cast<int64_t>(proj->total.kernel_count);
        g.kernel_ns += static_cast<int64_t>(proj->total.kernel_ns);
      }
    }
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const int64_t d = static_cast<int64_t>(p.kernels[k].end_ns - p.kernels[k].start_ns);
      for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) {
        if (group_of[r] != nullptr) group_of[r]->kernel_time[p.kernels[k].name] += d;
      }
    }
  }

  Table table = NewTable(
      "ranges",
      "NVTX ranges (CPU time per instance; GPU work attributed to the range and its children)", o);
  const size_t first = table.columns.size();
  table.columns.insert(table.columns.end(), {{"domain", ColumnKind::kText, "Domain"},
                                             {"range", ColumnKind::kText, "Range"},
                                             {"instances", ColumnKind::kCount, "Inst"}});
  AddStatColumns(&table, "cpu_", "CPU", WithStddev::kYes);
  table.columns.insert(table.columns.end(),
                       {{"depth", ColumnKind::kText, "Depth"},
                        {"threads", ColumnKind::kText, "Thread(s)"},
                        {"gpu_instances", ColumnKind::kCount, "GPU inst"},
                        {"gpu_proj_total_ns", ColumnKind::kDuration, "GPU proj total"},
                        {"gpu_proj_avg_ns", ColumnKind::kDuration, "GPU proj avg"},
                        {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
                        {"kernels", ColumnKind::kCount, "Kernels"},
                        {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                        {"top_kernels", ColumnKind::kText, "Top kernels (share of kernel time)"}});
  for (auto& [key, g] : groups) {
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(t.ProcessLabel(std::get<0>(key))));
    const DurationStats cpu = ComputeStats(&g.cpu);
    const DurationStats proj = ComputeStats(&g.proj);
    row.push_back(Text(std::get<1>(key)));
    row.push_back(Text(std::get<2>(key)));
    row.push_back(Int(cpu.count));
    AddStatCells(&row, cpu, WithStddev::kYes);
    row.push_back(Text(g.min_depth == g.max_depth
                           ? std::to_string(g.min_depth)
                           : std::to_string(g.min_depth) + "-" + std::to_string(g.max_depth)));
    std::string threads;
    for (const auto& th : g.threads) threads += (threads.empty() ? "" : ", ") + th;
    row.push_back(Text(threads));
    row.push_back(Int(proj.count));
    // No GPU work: empty cells, not zeros (design.md "Projection").
    const bool gpu = proj.count > 0;
    row.push_back(IntOrEmpty(gpu, proj.total));
    row.push_back(IntOrEmpty(gpu, proj.avg));
    row.push_back(IntOrEmpty(gpu, g.busy));
    row.push_back(IntOrEmpty(gpu, g.kernel_count));
    row.push_back(IntOrEmpty(gpu, g.kernel_ns));
    row.push_back(Text(TopKernels(trace, g, o.top_kernels)));
    table.rows.push_back(std::move(row));
  }
  SortAndTrim(&table, o, static_cast<int>(first + 3), static_cast<int>(first + 2),
              static_cast<int>(first + 4), static_cast<int>(first + 1));
  table.notes.push_back(
      "CPU = range end - start on its thread; GPU proj = last op end - first op start of the "
      "ops launched inside the range (children included), per instance; GPU busy = time at "
      "least one of them ran; '-' = no GPU work.");
  return table;
}

}  // namespace tracer::analysis
