#include "libtracer/analysis/reports/steps.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "libtracer/analysis/importers/range_names.h"

namespace tracer::analysis::reports {
namespace {

bool IsDescendant(const std::vector<RangeFact>& ranges, uint32_t r, uint32_t s) {
  for (int32_t a = ranges[r].parent; a >= 0; a = ranges[a].parent) {
    if (static_cast<uint32_t>(a) == s) return true;
  }
  return false;
}

// Top-level push/pop ranges lying inside a top-level range of another
// thread of their process (an autograd worker's backward ranges inside the
// main thread's step): part of that range's work, never a step of their own.
// A sweep in start order keeps the two latest ends seen on distinct threads.
std::vector<bool> InsideAnotherThreadsRange(const std::vector<RangeFact>& ranges) {
  std::vector<uint32_t> top;
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    if (ranges[r].parent < 0 && ranges[r].push_pop) top.push_back(r);
  }
  std::sort(top.begin(), top.end(), [&](uint32_t a, uint32_t b) {
    const RangeFact &x = ranges[a], &y = ranges[b];
    if (x.process != y.process) return x.process < y.process;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.end_ns > y.end_ns;  // the enclosing one first
  });
  struct Latest {
    uint64_t end = 0;
    uint32_t thread = 0;
    bool set = false;
  };
  std::vector<bool> inside(ranges.size(), false);
  Latest first, second;  // second: the latest end on a thread other than first's
  uint32_t process = UINT32_MAX;
  for (uint32_t r : top) {
    const RangeFact& f = ranges[r];
    if (f.process != process) {
      process = f.process;
      first = second = Latest{};
    }
    const Latest& other = first.set && first.thread != f.thread ? first : second;
    inside[r] = other.set && other.end >= f.end_ns;
    if (!first.set || f.end_ns > first.end) {
      if (first.set && first.thread != f.thread) second = first;
      first = {f.end_ns, f.thread, true};
    } else if (f.thread != first.thread && (!second.set || f.end_ns > second.end)) {
      second = {f.end_ns, f.thread, true};
    }
  }
  return inside;
}

}  // namespace

std::optional<uint64_t> StepNumberInName(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  const size_t digits = name.size() - i;
  // 19 digits always fit in 64 bits; a longer run is not a step count.
  if (digits == 0 || digits > 19 || i < 2 || (name[i - 1] != '#' && name[i - 1] != '_')) {
    return std::nullopt;
  }
  uint64_t n = 0;
  for (size_t k = i; k < name.size(); ++k) n = n * 10 + static_cast<uint64_t>(name[k] - '0');
  return n;
}

std::string StepKey(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i < name.size() && i >= 2 && (name[i - 1] == '#' || name[i - 1] == '_')) {
    return std::string(name.substr(0, i)) + "*";
  }
  return std::string(name);
}

StepCandidates FindStepCandidates(const ReportModel& model) {
  const auto& ranges = model.ranges();
  // Operator ranges (Trace::op_range_names, IsBuiltinOpRangeName: aten::to,
  // emit_nvtx's per-call names, ...) are never the step: they repeat
  // at top level too, but a step is the program's own range.
  const auto& op_names = model.trace().op_range_names;
  std::unordered_map<uint32_t, StepCandidate*> by_id;
  StepCandidates out;
  const std::vector<bool> inside = InsideAnotherThreadsRange(ranges);
  for (uint32_t i = 0; i < ranges.size(); ++i) {
    const RangeFact& r = ranges[i];
    if (r.parent >= 0 || !r.push_pop || inside[i]) continue;
    auto it = by_id.find(r.name);
    if (it == by_id.end()) {
      StepCandidate& c = out[std::string(model.Name(r.name))];
      c.op = c.op || op_names.count(r.name) > 0 || IsBuiltinOpRangeName(model.Name(r.name));
      it = by_id.emplace(r.name, &c).first;
    }
    ++it->second->n;
    it->second->total += r.cpu_ns();
  }
  return out;
}

StatusOr<StepChoice> ChooseStepRange(const StepCandidates& candidates) {
  struct Count {
    size_t n = 0;
    uint64_t total = 0;
  };
  std::map<std::string, Count> counts;
  size_t op_ranges = 0;
  for (const auto& [name, c] : candidates) {
    if (c.op) {
      op_ranges += c.n;
      continue;
    }
    Count& k = counts[StepKey(name)];
    k.n += c.n;
    k.total += c.total;
  }
  StepChoice choice;
  const Count* best = nullptr;
  for (const auto& [key, c] : counts) {
    const bool better = !best || (c.n >= 2) > (best->n >= 2) ||
                        ((c.n >= 2) == (best->n >= 2) &&
                         (c.total > best->total || (c.total == best->total && key < choice.name)));
    if (better) {
      best = &c;
      choice.name = key;
    }
  }
  if (!best && op_ranges > 0) {
    return Status::Error(
        "no step range: every top-level range is an operator range (aten::, emit_nvtx "
        "per-call names, ...); --step-range NAME picks one");
  }
  if (!best) return Status::Error("the trace has no top-level range to use as a step");
  choice.how = "step range '" + choice.name + "' (" +
               (best->n >= 2 ? "the repeated top-level range covering the most time"
                             : "no top-level range repeats; the one covering the most time") +
               "; --step-range NAME picks another)";
  return choice;
}

std::vector<std::string> StepRangeKeys(std::string_view step_range) {
  const std::string base(step_range);
  return {StepKey(step_range), base + "#*", base + "_*"};
}

StatusOr<StepChoice> ResolveStepRange(std::string_view step_range, bool has_name,
                                      const std::function<bool(const std::string&)>& has_key) {
  StepChoice choice;
  choice.exact = has_name;
  if (has_name) {
    choice.name = std::string(step_range);
  } else {
    // "ProfilerStep" also names the numbered ProfilerStep#<n> ranges.
    for (const std::string& candidate : StepRangeKeys(step_range)) {
      if (has_key(candidate)) {
        choice.name = candidate;
        break;
      }
    }
    if (choice.name.empty()) {
      return Status::Error("no range named '" + std::string(step_range) +
                           "' in the trace (--step-range)");
    }
  }
  choice.how = "step range '" + choice.name + "' (--step-range)";
  return choice;
}

StatusOr<Steps> FindSteps(const ReportModel& model, std::string_view step_range) {
  if (step_range.empty()) {
    const auto choice = ChooseStepRange(FindStepCandidates(model));
    if (!choice.ok()) return choice.status();
    return StepsOf(model, *choice);
  }
  const auto& ranges = model.ranges();
  bool has_name = false;
  std::unordered_set<uint32_t> names;
  for (const auto& r : ranges) names.insert(r.name);
  for (uint32_t n : names) has_name = has_name || model.Name(n) == step_range;
  auto has_key = [&](const std::string& key) {
    for (uint32_t n : names) {
      if (StepKey(model.Name(n)) == key) return true;
    }
    return false;
  };
  const auto choice = ResolveStepRange(step_range, has_name, has_key);
  if (!choice.ok()) return choice.status();
  return StepsOf(model, *choice);
}

Steps StepsOf(const ReportModel& model, const StepChoice& choice) {
  const auto& ranges = model.ranges();
  Steps steps;
  steps.name = choice.name;
  steps.how = choice.how;
  const bool exact = choice.exact;
  // Key of each range name id, computed once.
  std::unordered_map<uint32_t, std::string> keys;
  auto key_of = [&](uint32_t name) -> const std::string& {
    auto it = keys.find(name);
    if (it == keys.end()) it = keys.emplace(name, StepKey(model.Name(name))).first;
    return it->second;
  };
  auto is_step = [&](uint32_t name) {
    return exact ? model.Name(name) == steps.name : key_of(name) == steps.name;
  };
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    if (is_step(ranges[r].name)) steps.instances.push_back(r);
  }
  // A step inside a step (nested instances of the name) is not a step of
  // its own.
  std::erase_if(steps.instances, [&](uint32_t r) {
    for (int32_t a = ranges[r].parent; a >= 0; a = ranges[a].parent) {
      if (is_step(ranges[a].name)) return true;
    }
    return false;
  });
  std::stable_sort(steps.instances.begin(), steps.instances.end(), [&](uint32_t a, uint32_t b) {
    return ranges[a].process != ranges[b].process ? ranges[a].process < ranges[b].process
                                                  : ranges[a].start_ns < ranges[b].start_ns;
  });
  for (uint32_t r : steps.instances) {
    if (steps.by_process.empty() || steps.by_process.back().process != ranges[r].process) {
      steps.by_process.push_back({ranges[r].process, {}, {}});
    }
    steps.by_process.back().instances.push_back(r);
  }
  for (Steps::OfProcess& proc : steps.by_process) {
    const ProcessTrace& pt = model.trace().processes[proc.process];
    // Numbered step names (ProfilerStep#12) are the program's own count, so
    // they win over counting from the capture start, as long as they rise
    // with time (a profiler restarted mid-run numbers from 0 again: then
    // counting is the only consistent order).
    std::vector<uint64_t> named;
    for (uint32_t r : proc.instances) {
      const std::optional<uint64_t> n = StepNumberInName(model.Name(ranges[r].name));
      if (!n || (!named.empty() && *n <= named.back())) {
        named.clear();
        break;
      }
      named.push_back(*n);
    }
    const uint64_t base = CaptureStepBase(pt, steps.name);
    for (size_t i = 0; i < proc.instances.size(); ++i) {
      const RangeFact& f = ranges[proc.instances[i]];
      const auto known = pt.step_numbers.find({pt.ranges[f.local].thread, f.start_ns});
      proc.numbers.push_back(known != pt.step_numbers.end() ? known->second
                             : !named.empty()               ? named[i]
                                                            : base + i);
    }
  }
  return steps;
}

uint64_t CaptureStepBase(const ProcessTrace& p, std::string_view step_name) {
  std::string_view range, start;
  for (const auto& [key, value] : p.header.config) {
    if (key == "TRACER_CAPTURE_RANGE") range = value;
    if (key == "TRACER_CAPTURE_START") start = value;
  }
  if (range.empty() || range != step_name) return 0;
  uint64_t first = 0;
  if (auto it = p.counters.find("capture_range_first_occurrence"); it != p.counters.end()) {
    first = it->second;
  } else {
    for (char c : start) {
      if (c < '0' || c > '9' || first > UINT64_MAX / 10 - 9) return 0;
      first = first * 10 + static_cast<uint64_t>(c - '0');
    }
  }
  return first > 0 ? first - 1 : 0;
}

std::vector<uint32_t> StepMembers(const ReportModel& model, uint32_t s) {
  const auto& ranges = model.ranges();
  const RangeFact& step = ranges[s];
  std::vector<uint32_t> out;
  for (uint32_t r = 0; r < ranges.size(); ++r) {
    const RangeFact& f = ranges[r];
    if (r == s || f.process != step.process) continue;
    if (f.start_ns < step.start_ns || f.start_ns > step.end_ns) continue;
    if (f.thread == step.thread) {
      if (IsDescendant(ranges, r, s)) out.push_back(r);
    } else if (f.end_ns <= step.end_ns) {
      out.push_back(r);
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    if (ranges[a].start_ns != ranges[b].start_ns) return ranges[a].start_ns < ranges[b].start_ns;
    return DepthInStep(model, s, a) < DepthInStep(model, s, b);
  });
  return out;
}

uint32_t DepthInStep(const ReportModel& model, uint32_t s, uint32_t r) {
  const auto& ranges = model.ranges();
  if (ranges[r].thread == ranges[s].thread && ranges[r].depth > ranges[s].depth) {
    return ranges[r].depth - ranges[s].depth;
  }
  return ranges[r].depth + 1;
}

std::string ThreadLabel(const ReportModel& model, uint32_t process, uint32_t thread) {
  const auto& threads = model.trace().processes[process].threads;
  if (thread < threads.size() && threads[thread].defined) {
    std::string_view name = model.trace().strings.Get(threads[thread].name);
    if (!name.empty()) return std::string(name);
    return "tid " + std::to_string(threads[thread].os_tid);
  }
  return "thread " + std::to_string(thread);
}

}  // namespace tracer::analysis::reports
