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

Table PhasesTable(const ReportModel& model, const std::vector<RegexRule>& rules,
                  const PhasesOptions& options) {
  const Steps steps = FindSteps(model, options.step_range);
  const auto& ranges = model.ranges();
  // Phase names in order of first appearance; rule -> phase index.
  std::vector<std::string> phases;
  std::vector<size_t> rule_phase;
  for (const auto& r : rules) {
    auto it = std::find(phases.begin(), phases.end(), r.target);
    if (it == phases.end()) {
      phases.push_back(r.target);
      it = phases.end() - 1;
    }
    rule_phase.push_back(it - phases.begin());
  }
  const size_t n = phases.size();
  // Phase of each range name, computed once per name.
  std::vector<int32_t> phase_of(model.name_count(), -2);  // -2 unknown, -1 none
  auto phase = [&](uint32_t name) {
    int32_t& p = phase_of[name];
    if (p == -2) {
      auto m = FirstMatch(rules, model.Name(name));
      p = m ? static_cast<int32_t>(rule_phase[*m]) : -1;
    }
    return p;
  };

  Table t;
  t.name = "phases";
  t.title = "Step phases of '" + steps.name + "'";
  // Several processes (ranks): each has its own steps and its own "all" row.
  const bool by_process = steps.by_process.size() > 1;
  if (by_process) t.columns.push_back({"process", ColumnKind::kText, "Process"});
  t.columns.push_back({"step", ColumnKind::kText, "Step"});
  // Text and md show each block's step time and the phases' shares (titled
  // by the phase alone, to stay within 80-120 characters); each phase's time
  // is a detail column (csv, json, --columns).
  auto add_block = [&](const std::string& suffix, const std::string& title_suffix,
                       const std::string& step_title) {
    t.columns.push_back({"step" + suffix + "_ns", ColumnKind::kDuration, step_title});
    for (const auto& p : phases) {
      t.columns.push_back({p + suffix + "_ns", ColumnKind::kDuration, p + title_suffix, true});
    }
    t.columns.push_back(
        {"other" + suffix + "_ns", ColumnKind::kDuration, "other" + title_suffix, true});
    for (const auto& p : phases) {
      t.columns.push_back({p + suffix + "_pct", ColumnKind::kPercent, p + " %"});
    }
    t.columns.push_back({"other" + suffix + "_pct", ColumnKind::kPercent, "other %"});
  };
  // "CPU" / "GPU", not "CPU step": the header also names the unit
  // ("CPU (ms)") and the line must stay within 120 characters.
  add_block("_cpu", "", "CPU");
  add_block("_gpu", " (GPU)", "GPU");

  auto append_block = [&](std::vector<Cell>* cells, std::optional<uint64_t> step,
                          const std::vector<uint64_t>& split) {
    if (!step) {
      cells->insert(cells->end(), 2 * (n + 1) + 1, Cell());
      return;
    }
    // emplace_back(in_place_type): GCC 12 warns (falsely) on variant moves.
    cells->emplace_back(std::in_place_type<int64_t>, static_cast<int64_t>(*step));
    for (uint64_t v : split)
      cells->emplace_back(std::in_place_type<int64_t>, static_cast<int64_t>(v));
    for (uint64_t v : split) {
      cells->emplace_back(std::in_place_type<double>, *step ? 100.0 * v / *step : 0.0);
    }
  };
  for (const Steps::OfProcess& proc : steps.by_process) {
    const std::string label = ProcessLabelOf(model.trace().processes[proc.process]);
    std::vector<uint64_t> all_cpu(n + 1, 0), all_gpu(n + 1, 0);
    uint64_t all_cpu_step = 0, all_gpu_step = 0;
    bool any_gpu = false;
    for (size_t i = 0; i < proc.instances.size(); ++i) {
      const uint32_t s = proc.instances[i];
      std::vector<PhaseInterval> cpu, gpu;
      for (uint32_t r : StepMembers(model, s)) {
        const int32_t p = phase(ranges[r].name);
        if (p < 0) continue;
        // Top-most only: an ancestor below the step with a phase decides.
        bool covered = false;
        for (int32_t a = ranges[r].parent; a >= 0 && static_cast<uint32_t>(a) != s;
             a = ranges[a].parent) {
          if (phase(ranges[a].name) >= 0) {
            covered = true;
            break;
          }
        }
        if (covered) continue;
        cpu.push_back({static_cast<size_t>(p), ranges[r].start_ns, ranges[r].end_ns});
        if (ranges[r].has_gpu) {
          gpu.push_back({static_cast<size_t>(p), ranges[r].gpu_start_ns, ranges[r].gpu_end_ns});
        }
      }
      const RangeFact& step = ranges[s];
      const auto cpu_split = SplitPhases(step.start_ns, step.end_ns, cpu, n);
      std::vector<Cell> cells;
      if (by_process) cells.emplace_back(std::in_place_type<std::string>, label);
      cells.emplace_back(std::in_place_type<std::string>, std::to_string(proc.numbers[i]));
      append_block(&cells, step.cpu_ns(), cpu_split);
      all_cpu_step += step.cpu_ns();
      for (size_t p = 0; p <= n; ++p) all_cpu[p] += cpu_split[p];
      if (step.has_gpu) {
        any_gpu = true;
        const auto gpu_split = SplitPhases(step.gpu_start_ns, step.gpu_end_ns, gpu, n);
        append_block(&cells, step.gpu_span_ns(), gpu_split);
        all_gpu_step += step.gpu_span_ns();
        for (size_t p = 0; p <= n; ++p) all_gpu[p] += gpu_split[p];
      } else {
        append_block(&cells, std::nullopt, {});
      }
      t.rows.push_back(std::move(cells));
    }
    std::vector<Cell> all;
    if (by_process) all.emplace_back(std::in_place_type<std::string>, label);
    all.emplace_back(std::in_place_type<std::string>, "all");
    append_block(&all, all_cpu_step, all_cpu);
    append_block(&all, any_gpu ? std::optional<uint64_t>(all_gpu_step) : std::nullopt, all_gpu);
    t.rows.push_back(std::move(all));
  }
  t.notes = {
      "Step: " + steps.how + ".",
      "A phase's time is the union of the intervals of the top-most ranges of the step whose "
      "name matches a phase rule (CPU: start to end; GPU: projected span); overlaps go to the "
      "phase listed first; other = step - all phases. Shares add up to 100 % by construction.",
      "CPU: the step's CPU time, whose shares follow it; GPU: the step's projected GPU span "
      "(first to last op of the step), split by the shares right of it; each phase's time: "
      "--format csv or json, or --columns (e.g. "
      "step,forward_cpu_ns,forward_gpu_ns)."};
  if (by_process) {
    t.notes.push_back(
        "Each process (rank) has its own steps, numbered from 0, and its own 'all' row; "
        "--table ranks compares them.");
  }
  return t;
}

}  // namespace tracer::analysis::reports
