// Ranges table (docs/design.md section 5): one row per range name (+ domain, +
// process with --by-process). The gpu table (gpu_projection_table.cc) reads
// the same rows.
#include <algorithm>
#include <cstdio>

#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/range_rows_collect.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/table_util.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {
namespace {

std::string TopKernels(const StringTable& strings, const RangeRow& g, size_t n) {
  std::vector<std::pair<int64_t, uint32_t>> v;
  for (const auto& [name, ns] : g.kernel_time) v.emplace_back(ns, name);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    if (!out.empty()) out += ", ";
    out += ShortKernelName(strings.Get(v[i].second));
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

void CollectRangeRows(const AnalyzedTrace& t, const ReportOptions& o, bool kernel_time,
                      TableRows* rows) {
  const Trace& trace = t.trace();
  const RangeFilter filter(o);
  rows->strings = &trace.strings;
  for (size_t pi = 0; pi < t.size(); ++pi) rows->process_labels.push_back(t.ProcessLabel(pi));
  for (size_t pi = 0; pi < t.size(); ++pi) {
    const ProcessAnalysis& pa = t.process(pi);
    const ProcessTrace& p = *pa.process;
    std::vector<RangeRow*> row_of(kernel_time ? p.ranges.size() : 0, nullptr);
    for (uint32_t r = 0; r < p.ranges.size(); ++r) {
      const RangeRecord& rec = p.ranges[r];
      if (!filter.Accepts(t, pi, rec)) continue;
      RangeRow& g =
          rows->ranges[RangeRowKey(o.by_process ? pi : 0, std::string(t.DomainName(pi, rec.domain)),
                                   std::string(t.RangeName(rec)))];
      if (kernel_time) row_of[r] = &g;
      g.cpu.Add(static_cast<int64_t>(rec.end_ns - rec.start_ns));
      const uint32_t depth = pa.ranges.Depth(r);
      g.min_depth = std::min(g.min_depth, depth);
      g.max_depth = std::max(g.max_depth, depth);
      if (g.threads.size() < 8) g.threads.insert(ThreadLabel(trace, p, rec.thread));
      if (const InstanceProjection* proj = pa.projection().Of(r)) {
        g.proj.Add(static_cast<int64_t>(proj->total.span_ns()));
        *g.busy += static_cast<int64_t>(proj->total.busy_ns);
        g.ops += static_cast<int64_t>(proj->total.op_count);
        g.kernel_count += static_cast<int64_t>(proj->total.kernel_count);
        g.kernel_ns += static_cast<int64_t>(proj->total.kernel_ns);
        g.max_streams = std::max(g.max_streams, proj->streams.size());
      }
    }
    if (!kernel_time) continue;
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      const int64_t d = static_cast<int64_t>(p.kernels[k].end_ns - p.kernels[k].start_ns);
      for (uint32_t r : pa.attribution.Stack(OpKind::kKernel, k)) {
        if (row_of[r] != nullptr) row_of[r]->kernel_time[p.kernels[k].name] += d;
      }
    }
  }
}

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
                       {{"depth", ColumnKind::kText, "Depth"},
                        {"threads", ColumnKind::kText, "Thread(s)"},
                        {"gpu_instances", ColumnKind::kCount, "GPU inst"},
                        {"gpu_proj_total_ns", ColumnKind::kDuration, "GPU proj total"},
                        {"gpu_proj_avg_ns", ColumnKind::kDuration, "GPU proj avg"},
                        {"gpu_busy_ns", ColumnKind::kDuration, "GPU busy"},
                        {"kernels", ColumnKind::kCount, "Kernels"},
                        {"kernel_ns", ColumnKind::kDuration, "Kernel time"},
                        {"top_kernels", ColumnKind::kText, "Top kernels (share of kernel time)"}});
  for (auto& [key, g] : rows.ranges) {
    std::vector<Cell> row;
    if (o.by_process) row.push_back(Text(rows.process_labels[std::get<0>(key)]));
    const DurationStats cpu = g.cpu.Stats();
    const DurationStats proj = g.proj.Stats();
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
    // No GPU work: empty cells, not zeros (docs/design.md "Projection").
    const bool gpu = proj.count > 0;
    row.push_back(IntOrEmpty(gpu, proj.total));
    row.push_back(IntOrEmpty(gpu, proj.avg));
    row.push_back(IntOrEmpty(gpu && g.busy.has_value(), g.busy.value_or(0)));
    row.push_back(IntOrEmpty(gpu, g.kernel_count));
    row.push_back(IntOrEmpty(gpu, g.kernel_ns));
    row.push_back(Text(TopKernels(*rows.strings, g, o.top_kernels)));
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

Table RangesTable(const AnalyzedTrace& t, const ReportOptions& o) {
  TableRows rows;
  CollectRangeRows(t, o, /*kernel_time=*/true, &rows);
  return RenderRangesTable(rows, o);
}

}  // namespace tracer::analysis
