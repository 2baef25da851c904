#include "libtracer/analysis/reports/cross_rank.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
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

// One process's instances of the step range, in start order (Steps).
struct ProcessSteps {
  size_t process = 0;  // index in the report
  std::vector<uint64_t> numbers;
  std::vector<int64_t> cpu;
  std::vector<std::optional<int64_t>> gpu;  // absent: no GPU work
};

// steps' instances as values, process indexes offset by `offset`.
std::vector<ProcessSteps> StepValues(const ReportModel& model, const Steps& steps, size_t offset) {
  std::vector<ProcessSteps> out;
  const auto& ranges = model.ranges();
  for (const auto& proc : steps.by_process) {
    ProcessSteps& v = out.emplace_back();
    v.process = proc.process + offset;
    v.numbers = proc.numbers;
    for (const uint32_t s : proc.instances) {
      const RangeFact& f = ranges[s];
      v.cpu.push_back(static_cast<int64_t>(f.cpu_ns()));
      v.gpu.push_back(f.has_gpu ? std::optional<int64_t>(static_cast<int64_t>(f.gpu_span_ns()))
                                : std::nullopt);
    }
  }
  return out;
}

// Per range row (domain, name): each process's CPU and GPU totals.
using RangeTotals = std::map<std::pair<std::string, std::string>,
                             std::vector<std::tuple<size_t, int64_t, std::optional<int64_t>>>>;

// The core tables' range rows per process (row_builder.h), so the numbers
// are the ranges table's with --by-process; process indexes offset.
void AddRangeTotals(const AnalyzedTrace& analyzed, const ReportOptions& options, size_t offset,
                    RangeTotals* out) {
  ReportOptions o = options;
  o.by_process = true;
  o.top = 0;
  RowNeeds needs;
  needs.range_cpu = needs.range_gpu = true;
  TableRows rows = WholeTraceRows(analyzed, o, needs);
  for (auto& [key, row] : rows.ranges) {
    std::optional<int64_t> gpu;
    if (row.proj.count() > 0) gpu = row.proj.total();
    (*out)[{std::get<1>(key), std::get<2>(key)}].emplace_back(std::get<0>(key) + offset,
                                                              row.cpu.total(), gpu);
  }
}

// The table from the facts of every process (labels: one per process).
// steps: the step range's name and instances; absent: no step rows, said
// by step_note.
Table RenderCrossRank(const std::vector<std::string>& labels, const std::string& step_name,
                      const std::vector<ProcessSteps>* steps, const std::string& step_note,
                      const RangeTotals& range_totals, const CrossRankOptions& options) {
  const size_t processes = labels.size();
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

  if (steps != nullptr) {
    // Step number -> each process's instance of it (the program's numbers:
    // ranks captured from different steps line up by step).
    std::map<uint64_t, std::vector<std::pair<const ProcessSteps*, size_t>>> by_number;
    for (const ProcessSteps& proc : *steps) {
      for (size_t i = 0; i < proc.numbers.size(); ++i) {
        by_number[proc.numbers[i]].emplace_back(&proc, i);
      }
    }
    PerProcess all_cpu(processes), all_gpu(processes);
    for (const auto& [number, instances] : by_number) {
      PerProcess cpu(processes), gpu(processes);
      for (const auto& [proc, i] : instances) {
        const size_t p = proc->process;
        cpu[p] = proc->cpu[i];
        all_cpu[p] = all_cpu[p].value_or(0) + *cpu[p];
        if (proc->gpu[i]) {
          gpu[p] = *proc->gpu[i];
          all_gpu[p] = all_gpu[p].value_or(0) + *gpu[p];
        }
      }
      add_row("step", step_name + " #" + std::to_string(number), cpu, gpu);
    }
    add_row("steps", step_name + " (all)", all_cpu, all_gpu);
  }

  std::map<std::pair<std::string, std::string>, std::pair<PerProcess, PerProcess>> by_name;
  for (const auto& [key, values] : range_totals) {
    auto& [cpu, gpu] =
        by_name.try_emplace(key, PerProcess(processes), PerProcess(processes)).first->second;
    for (const auto& [p, c, g] : values) {
      cpu[p] = c;
      if (g) gpu[p] = *g;
    }
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

std::string StepNote(const Steps& steps) {
  return "Steps: " + steps.how + "; step N of each process (the program's own numbers).";
}

}  // namespace

Table CrossRankTable(const AnalyzedTrace& analyzed, const ReportModel& model,
                     const CrossRankOptions& options) {
  std::vector<std::string> labels;
  for (size_t p = 0; p < analyzed.size(); ++p) labels.push_back(analyzed.ProcessLabel(p));
  // Steps: iteration i of every process that has it.
  std::string step_note, step_name;
  std::optional<std::vector<ProcessSteps>> steps;
  if (const auto found = FindSteps(model, options.step_range); found.ok()) {
    steps = StepValues(model, *found, 0);
    step_name = found->name;
    step_note = StepNote(*found);
  } else {
    step_note = "No step rows: " + found.status().message() + ".";
  }
  RangeTotals ranges;
  AddRangeTotals(analyzed, options.ranges, 0, &ranges);
  return RenderCrossRank(labels, step_name, steps ? &*steps : nullptr, step_note, ranges, options);
}

struct CrossRankBuilder::State {
  std::vector<std::string> labels;
  RangeTotals ranges;
  StepCandidates candidates;  // without --step-range
  // --step-range NAME: some range is named NAME; the StepRangeKeys present.
  bool has_name = false;
  std::set<std::string> keys_present;
  // (step range, exact) -> the instances of every trace's processes.
  std::map<std::pair<std::string, bool>, std::vector<ProcessSteps>> lists;
  // Keys some trace has ranges of but no list for: their steps are not
  // known (a trace's lists are those of its own candidates).
  std::set<std::string> unlisted;
};

CrossRankBuilder::CrossRankBuilder(CrossRankOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}
CrossRankBuilder::~CrossRankBuilder() = default;

void CrossRankBuilder::Add(const AnalyzedTrace& analyzed, const ReportModel& model) {
  State& s = *state_;
  const size_t offset = s.labels.size();
  for (size_t p = 0; p < analyzed.size(); ++p) s.labels.push_back(analyzed.ProcessLabel(p));
  AddRangeTotals(analyzed, options_.ranges, offset, &s.ranges);
  std::set<uint32_t> ids;
  for (const RangeFact& r : model.ranges()) ids.insert(r.name);
  auto add_list = [&](const std::string& name, bool exact) {
    std::vector<ProcessSteps> v = StepValues(model, StepsOf(model, {name, exact, ""}), offset);
    auto& list = s.lists[{name, exact}];
    for (ProcessSteps& p : v) list.push_back(std::move(p));
  };
  if (!options_.step_range.empty()) {
    // Every name --step-range may turn out to mean, listed: which one it
    // means depends on all traces.
    const std::vector<std::string> keys = StepRangeKeys(options_.step_range);
    bool has_name = false;
    std::set<std::string> present;
    for (uint32_t id : ids) {
      const std::string_view name = model.Name(id);
      has_name = has_name || name == options_.step_range;
      const std::string key = StepKey(name);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) present.insert(key);
    }
    if (has_name) add_list(options_.step_range, true);
    for (const std::string& key : present) add_list(key, false);
    s.has_name = s.has_name || has_name;
    s.keys_present.insert(present.begin(), present.end());
    return;
  }
  // Without --step-range: the lists of this trace's own candidates (the
  // chosen key is one of some trace's candidates; in the traces where it is
  // none, its instances are not listed, and Finish says so when there are).
  const StepCandidates candidates = FindStepCandidates(model);
  std::set<std::string> keys;
  for (const auto& [name, c] : candidates) {
    StepCandidate& merged = s.candidates[name];
    merged.n += c.n;
    merged.total += c.total;
    merged.op = merged.op || c.op;
    if (!c.op) keys.insert(StepKey(name));
  }
  for (const std::string& key : keys) add_list(key, false);
  for (uint32_t id : ids) {
    std::string key = StepKey(model.Name(id));
    if (keys.count(key) == 0) s.unlisted.insert(std::move(key));
  }
}

Table CrossRankBuilder::Finish(std::string* inexact) {
  State& s = *state_;
  inexact->clear();
  std::string step_note, step_name;
  const std::vector<ProcessSteps>* steps = nullptr;
  const StatusOr<StepChoice> chosen =
      options_.step_range.empty()
          ? ChooseStepRange(s.candidates)
          : ResolveStepRange(options_.step_range, s.has_name,
                             [&](const std::string& key) { return s.keys_present.count(key) > 0; });
  if (chosen.ok()) {
    const StepChoice& choice = *chosen;
    if (options_.step_range.empty() && s.unlisted.count(choice.name) > 0) {
      *inexact = "the step range '" + choice.name +
                 "' has instances in a file where it is not a top-level range";
    }
    auto it = s.lists.find({choice.name, choice.exact});
    std::vector<ProcessSteps>& list = it != s.lists.end() ? it->second : s.lists[{}];
    std::stable_sort(list.begin(), list.end(), [](const ProcessSteps& a, const ProcessSteps& b) {
      return a.process < b.process;
    });
    steps = &list;
    step_name = choice.name;
    Steps described;
    described.how = choice.how;
    step_note = StepNote(described);
  } else {
    step_note = "No step rows: " + chosen.status().message() + ".";
  }
  return RenderCrossRank(s.labels, step_name, steps, step_note, s.ranges, options_);
}

}  // namespace tracer::analysis::reports
