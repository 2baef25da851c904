#include "libtracer/analysis/reports/cross_rank.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "libtracer/analysis/reports/steps.h"
#include "libtracer/analysis/tables/whole_trace_rows.h"

namespace tracer::analysis::reports {
namespace {

// One row's per-process values (absent: the process has none).
using PerProcess = std::vector<std::optional<int64_t>>;

struct Spread {
  int64_t present = 0, min = 0, median = 0, max = 0;
  size_t slowest = 0;  // process index
};

std::optional<Spread> SpreadOf(const PerProcess& v) {
  std::vector<std::pair<int64_t, size_t>> xs;
  for (size_t p = 0; p < v.size(); ++p) {
    if (v[p]) xs.emplace_back(*v[p], p);
  }
  if (xs.empty()) return std::nullopt;
  // Ties: the lower process index is "slowest", so the column is stable.
  std::sort(xs.begin(), xs.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  Spread s;
  s.present = static_cast<int64_t>(xs.size());
  s.min = xs.front().first;
  s.max = xs.back().first;
  s.slowest = xs.back().second;
  const size_t n = xs.size();
  // The median of an even count is the mean of the middle two, rounded half
  // away from zero as every table rounds it (SQLite's round, as nsys).
  s.median = n % 2 ? xs[n / 2].first : (xs[n / 2 - 1].first + xs[n / 2].first + 1) / 2;
  return s;
}

void AddSpreadCells(std::vector<Cell>* row, const PerProcess& v,
                    const std::vector<std::string>& labels) {
  const std::optional<Spread> s = SpreadOf(v);
  if (!s) {
    row->insert(row->end(), 5, Cell());
    return;
  }
  for (int64_t x : {s->min, s->median, s->max}) row->emplace_back(std::in_place_type<int64_t>, x);
  row->emplace_back(std::in_place_type<std::string>, labels[s->slowest]);
  if (s->median > 0) {
    row->emplace_back(std::in_place_type<double>, 100.0 * (s->max - s->min) / s->median);
  } else {
    row->emplace_back();
  }
}

}  // namespace

Table CrossRankTable(const AnalyzedTrace& analyzed, const ReportModel& model,
                     const CrossRankOptions& options) {
  const size_t processes = analyzed.size();
  std::vector<std::string> labels;
  for (size_t p = 0; p < processes; ++p) labels.push_back(analyzed.ProcessLabel(p));

  Table t;
  t.name = "ranks";
  t.title = "Across processes (ranks): min / median / max per step and per range";
  t.columns = {{"kind", ColumnKind::kText, "Kind"},
               {"name", ColumnKind::kText, "Step or range"},
               {"ranks", ColumnKind::kCount, "Ranks"}};
  for (const char* side : {"cpu", "gpu"}) {
    const std::string s(side), title = s == "cpu" ? "CPU" : "GPU";
    t.columns.push_back({s + "_min_ns", ColumnKind::kDuration, title + " min"});
    t.columns.push_back({s + "_median_ns", ColumnKind::kDuration, title + " med"});
    t.columns.push_back({s + "_max_ns", ColumnKind::kDuration, title + " max"});
    t.columns.push_back({s + "_slowest", ColumnKind::kText, title + " slowest"});
    t.columns.push_back({s + "_spread_pct", ColumnKind::kPercent, title + " spread"});
  }
  auto add_row = [&](const std::string& kind, const std::string& name, const PerProcess& cpu,
                     const PerProcess& gpu) {
    int64_t ranks = 0;
    for (size_t p = 0; p < processes; ++p) ranks += cpu[p] || gpu[p] ? 1 : 0;
    std::vector<Cell> row = {Cell(kind), Cell(name), Cell(ranks)};
    AddSpreadCells(&row, cpu, labels);
    AddSpreadCells(&row, gpu, labels);
    t.rows.push_back(std::move(row));
  };

  // Steps: iteration i of every process that has it.
  std::string step_note;
  try {
    const Steps steps = FindSteps(model, options.step_range);
    const auto& ranges = model.ranges();
    // Step number -> each process's instance of it (the program's numbers:
    // ranks captured from different steps line up by step).
    std::map<uint64_t, std::vector<uint32_t>> by_number;
    for (const auto& proc : steps.by_process) {
      for (size_t i = 0; i < proc.instances.size(); ++i) {
        by_number[proc.numbers[i]].push_back(proc.instances[i]);
      }
    }
    PerProcess all_cpu(processes), all_gpu(processes);
    for (const auto& [number, instances] : by_number) {
      PerProcess cpu(processes), gpu(processes);
      for (const uint32_t s : instances) {
        const RangeFact& f = ranges[s];
        cpu[f.process] = static_cast<int64_t>(f.cpu_ns());
        all_cpu[f.process] = all_cpu[f.process].value_or(0) + *cpu[f.process];
        if (f.has_gpu) {
          gpu[f.process] = static_cast<int64_t>(f.gpu_span_ns());
          all_gpu[f.process] = all_gpu[f.process].value_or(0) + *gpu[f.process];
        }
      }
      add_row("step", steps.name + " #" + std::to_string(number), cpu, gpu);
    }
    add_row("steps", steps.name + " (all)", all_cpu, all_gpu);
    step_note = "Steps: " + steps.how + "; step N of each process (the program's own numbers).";
  } catch (const std::exception& e) {
    step_note = std::string("No step rows: ") + e.what() + ".";
  }

  // Ranges: the core tables' rows per process (row_builder.h), so the
  // numbers are the ranges table's with --by-process.
  ReportOptions o = options.ranges;
  o.by_process = true;
  o.top = 0;
  RowNeeds needs;
  needs.range_cpu = needs.range_gpu = true;
  TableRows rows = WholeTraceRows(analyzed, o, needs);
  std::map<std::pair<std::string, std::string>, std::pair<PerProcess, PerProcess>> by_name;
  for (auto& [key, row] : rows.ranges) {
    auto& [cpu, gpu] = by_name
                           .try_emplace({std::get<1>(key), std::get<2>(key)}, PerProcess(processes),
                                        PerProcess(processes))
                           .first->second;
    const size_t p = std::get<0>(key);
    cpu[p] = row.cpu.total();
    if (row.proj.count() > 0) gpu[p] = row.proj.total();
  }
  std::vector<std::tuple<int64_t, std::string, const PerProcess*, const PerProcess*>> order;
  for (const auto& [key, v] : by_name) {
    const std::optional<Spread> s = SpreadOf(v.first);
    const std::string name = key.first.empty() ? key.second : key.first + ":" + key.second;
    order.emplace_back(s ? s->max : 0, name, &v.first, &v.second);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) > std::get<0>(b)
                                            : std::get<1>(a) < std::get<1>(b);
  });
  const size_t keep =
      options.ranges.top > 0 ? std::min(options.ranges.top, order.size()) : order.size();
  for (size_t i = 0; i < keep; ++i) {
    add_row("range", std::get<1>(order[i]), *std::get<2>(order[i]), *std::get<3>(order[i]));
  }
  t.notes = {step_note,
             "Per process: CPU = summed end - start of the range's instances (or the step "
             "instance's own); GPU = summed projected span (first to last op); '-' = none.",
             "Spread = (max - min) / median; slowest = the process with the max. Ranges: largest "
             "max CPU first" +
                 std::string(keep < order.size() ? " (--top " + std::to_string(keep) + " of " +
                                                       std::to_string(order.size()) + ")"
                                                 : "") +
                 "."};
  return t;
}

}  // namespace tracer::analysis::reports
