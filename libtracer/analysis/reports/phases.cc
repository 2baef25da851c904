#include "libtracer/analysis/reports/phases.h"

#include <algorithm>
#include <optional>

#include "libtracer/analysis/reports/steps.h"

namespace tracer::analysis::reports {

std::vector<uint64_t> SplitPhases(uint64_t start, uint64_t end,
                                  const std::vector<PhaseInterval>& intervals, size_t num_phases) {
  std::vector<uint64_t> out(num_phases + 1, 0);
  if (end <= start) return out;
  struct Event {
    uint64_t t;
    int delta;
    size_t phase;
  };
  std::vector<Event> events;
  for (const auto& iv : intervals) {
    const uint64_t s = std::max(iv.start_ns, start), e = std::min(iv.end_ns, end);
    if (s >= e || iv.phase >= num_phases) continue;
    events.push_back({s, +1, iv.phase});
    events.push_back({e, -1, iv.phase});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
  std::vector<int> active(num_phases, 0);
  uint64_t t = start;
  size_t i = 0;
  while (t < end) {
    while (i < events.size() && events[i].t <= t) {
      active[events[i].phase] += events[i].delta;
      ++i;
    }
    const uint64_t next = i < events.size() ? std::min(events[i].t, end) : end;
    size_t owner = num_phases;
    for (size_t p = 0; p < num_phases; ++p) {
      if (active[p] > 0) {
        owner = p;
        break;
      }
    }
    out[owner] += next - t;
    t = next;
  }
  return out;
}

namespace {

// The phase of each range name by the rules: phases in order of first
// appearance, each name matched once.
class PhaseOfName {
 public:
  PhaseOfName(const ReportModel& model, const std::vector<RegexRule>& rules)
      : model_(model), rules_(rules), phase_of_(model.name_count(), kUnknown) {
    for (const auto& r : rules) {
      auto it = std::find(phases_.begin(), phases_.end(), r.target);
      if (it == phases_.end()) {
        phases_.push_back(r.target);
        it = phases_.end() - 1;
      }
      rule_phase_.push_back(it - phases_.begin());
    }
  }

  const std::vector<std::string>& phases() const { return phases_; }

  // The phase index of range name `name`, or -1 for none.
  int32_t operator()(uint32_t name) {
    int32_t& p = phase_of_[name];
    if (p == kUnknown) {
      auto m = FirstMatch(rules_, model_.Name(name));
      p = m ? static_cast<int32_t>(rule_phase_[*m]) : -1;
    }
    return p;
  }

 private:
  static constexpr int32_t kUnknown = -2;
  const ReportModel& model_;
  const std::vector<RegexRule>& rules_;
  std::vector<std::string> phases_;
  std::vector<size_t> rule_phase_;  // rule -> phase index
  std::vector<int32_t> phase_of_;
};

// Text and md show each block's step time and the phases' shares (titled
// by the phase alone, to stay within 80-120 characters); each phase's time
// is a detail column (csv, json, --columns).
void AddBlockColumns(const std::vector<std::string>& phases, const std::string& suffix,
                     const std::string& title_suffix, const std::string& step_title, Table* t) {
  t->columns.push_back({"step" + suffix + "_ns", ColumnKind::kDuration, step_title});
  for (const auto& p : phases) {
    t->columns.push_back({p + suffix + "_ns", ColumnKind::kDuration, p + title_suffix, true});
  }
  t->columns.push_back(
      {"other" + suffix + "_ns", ColumnKind::kDuration, "other" + title_suffix, true});
  for (const auto& p : phases) {
    t->columns.push_back({p + suffix + "_pct", ColumnKind::kPercent, p + " %"});
  }
  t->columns.push_back({"other" + suffix + "_pct", ColumnKind::kPercent, "other %"});
}

// One block's cells: the step time, each phase's time, each phase's share;
// empty cells when there is no step time (no GPU work).
void AppendBlock(size_t num_phases, std::optional<uint64_t> step,
                 const std::vector<uint64_t>& split, std::vector<Cell>* cells) {
  if (!step) {
    cells->insert(cells->end(), 2 * (num_phases + 1) + 1, Cell());
    return;
  }
  // emplace_back(in_place_type): GCC 12 warns (falsely) on variant moves.
  cells->emplace_back(std::in_place_type<int64_t>, static_cast<int64_t>(*step));
  for (uint64_t v : split)
    cells->emplace_back(std::in_place_type<int64_t>, static_cast<int64_t>(v));
  for (uint64_t v : split) {
    cells->emplace_back(std::in_place_type<double>, *step ? 100.0 * v / *step : 0.0);
  }
}

// The CPU and GPU intervals of the top-most ranges of step s that have a
// phase: an ancestor below the step with a phase decides.
void PhaseIntervalsOfStep(const ReportModel& model, uint32_t s, PhaseOfName& phase,
                          std::vector<PhaseInterval>* cpu, std::vector<PhaseInterval>* gpu) {
  const auto& ranges = model.ranges();
  for (uint32_t r : StepMembers(model, s)) {
    const int32_t p = phase(ranges[r].name);
    if (p < 0) continue;
    bool covered = false;
    for (int32_t a = ranges[r].parent; a >= 0 && static_cast<uint32_t>(a) != s;
         a = ranges[a].parent) {
      if (phase(ranges[a].name) >= 0) {
        covered = true;
        break;
      }
    }
    if (covered) continue;
    cpu->push_back({static_cast<size_t>(p), ranges[r].start_ns, ranges[r].end_ns});
    if (ranges[r].has_gpu) {
      gpu->push_back({static_cast<size_t>(p), ranges[r].gpu_start_ns, ranges[r].gpu_end_ns});
    }
  }
}

// One process's rows: one per step instance, then its "all" row.
void AddProcessRows(const ReportModel& model, const Steps::OfProcess& proc, bool by_process,
                    PhaseOfName& phase, Table* t) {
  const auto& ranges = model.ranges();
  const size_t n = phase.phases().size();
  const std::string label = ProcessLabelOf(model.trace().processes[proc.process]);
  std::vector<uint64_t> all_cpu(n + 1, 0), all_gpu(n + 1, 0);
  uint64_t all_cpu_step = 0, all_gpu_step = 0;
  bool any_gpu = false;
  for (size_t i = 0; i < proc.instances.size(); ++i) {
    const uint32_t s = proc.instances[i];
    std::vector<PhaseInterval> cpu, gpu;
    PhaseIntervalsOfStep(model, s, phase, &cpu, &gpu);
    const RangeFact& step = ranges[s];
    const auto cpu_split = SplitPhases(step.start_ns, step.end_ns, cpu, n);
    std::vector<Cell> cells;
    if (by_process) cells.emplace_back(std::in_place_type<std::string>, label);
    cells.emplace_back(std::in_place_type<std::string>, std::to_string(proc.numbers[i]));
    AppendBlock(n, step.cpu_ns(), cpu_split, &cells);
    all_cpu_step += step.cpu_ns();
    for (size_t p = 0; p <= n; ++p) all_cpu[p] += cpu_split[p];
    if (step.has_gpu) {
      any_gpu = true;
      const auto gpu_split = SplitPhases(step.gpu_start_ns, step.gpu_end_ns, gpu, n);
      AppendBlock(n, step.gpu_span_ns(), gpu_split, &cells);
      all_gpu_step += step.gpu_span_ns();
      for (size_t p = 0; p <= n; ++p) all_gpu[p] += gpu_split[p];
    } else {
      AppendBlock(n, std::nullopt, {}, &cells);
    }
    t->rows.push_back(std::move(cells));
  }
  std::vector<Cell> all;
  if (by_process) all.emplace_back(std::in_place_type<std::string>, label);
  all.emplace_back(std::in_place_type<std::string>, "all");
  AppendBlock(n, all_cpu_step, all_cpu, &all);
  AppendBlock(n, any_gpu ? std::optional<uint64_t>(all_gpu_step) : std::nullopt, all_gpu, &all);
  t->rows.push_back(std::move(all));
}

std::vector<std::string> PhasesNotes(const Steps& steps, bool by_process) {
  std::vector<std::string> notes = {
      "Step: " + steps.how + ".",
      "A phase's time is the union of the intervals of the top-most ranges of the step whose "
      "name matches a phase rule (CPU: start to end; GPU: projected span); overlaps go to the "
      "phase listed first; other = step - all phases. Shares add up to 100 % by construction.",
      "CPU: the step's CPU time, whose shares follow it; GPU: the step's projected GPU span "
      "(first to last op of the step), split by the shares right of it; each phase's time: "
      "--format csv or json, or --columns (e.g. "
      "step,forward_cpu_ns,forward_gpu_ns)."};
  if (by_process) {
    notes.push_back(
        "Each process (rank) has its own steps, numbered from 0, and its own 'all' row; "
        "--table ranks compares them.");
  }
  return notes;
}

}  // namespace

StatusOr<Table> PhasesTable(const ReportModel& model, const std::vector<RegexRule>& rules,
                            const PhasesOptions& options) {
  const auto found = FindSteps(model, options.step_range);
  if (!found.ok()) return found.status();
  const Steps& steps = *found;
  PhaseOfName phase(model, rules);
  Table t;
  t.name = "phases";
  t.title = "Step phases of '" + steps.name + "'";
  // Several processes (ranks): each has its own steps and its own "all" row.
  const bool by_process = steps.by_process.size() > 1;
  if (by_process) t.columns.push_back({"process", ColumnKind::kText, "Process"});
  t.columns.push_back({"step", ColumnKind::kText, "Step"});
  // "CPU" / "GPU", not "CPU step": the header also names the unit
  // ("CPU (ms)") and the line must stay within 120 characters.
  AddBlockColumns(phase.phases(), "_cpu", "", "CPU", &t);
  AddBlockColumns(phase.phases(), "_gpu", " (GPU)", "GPU", &t);
  for (const Steps::OfProcess& proc : steps.by_process) {
    AddProcessRows(model, proc, by_process, phase, &t);
  }
  t.notes = PhasesNotes(steps, by_process);
  return t;
}

}  // namespace tracer::analysis::reports
