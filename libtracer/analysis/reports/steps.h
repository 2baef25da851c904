// Training steps: the instances of a named step range, and the ranges that
// make up one step (shared by the timeline and phases tables).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct Steps {
  std::string name;  // step range name; "ProfilerStep#*" for numbered ones
  // Range indexes of every process's step instances, by process then start.
  std::vector<uint32_t> instances;
  std::string how;  // how the step range was chosen, for notes
  // Per process that has steps (in process order): its instances in start
  // order and their numbers, the program's own count: the number in the
  // step's name when it has one (ProfilerStep#12), else from 0: a capture that
  // began at the step range's occurrence N (tracer run --capture-start N)
  // numbers its first step N-1 (CaptureStepBase); steps a --steps / --time
  // selection left keep their numbers (ProcessTrace::step_numbers).
  struct OfProcess {
    uint32_t process = 0;
    std::vector<uint32_t> instances;
    std::vector<uint64_t> numbers;  // parallel to instances
  };
  std::vector<OfProcess> by_process;
};

// Step names may carry the step number ("ProfilerStep#12", "step_3"): a
// trailing "#<digits>" or "_<digits>" is ignored when naming
// steps ("ProfilerStep#*").
std::string StepKey(std::string_view range_name);

// The number a step name carries ("ProfilerStep#12" -> 12, "step_3" -> 3),
// if any. FindSteps numbers steps by it when every instance of a process
// carries one and they rise with time.
std::optional<uint64_t> StepNumberInName(std::string_view range_name);

// The instances of range `step_range` (by exact name, else by StepKey), or,
// when empty, of the top-level push/pop range key with at least two
// instances that covers the most CPU time (the training loop's step; a key
// with one instance only when there is no other). A top-level range inside
// a top-level range of another thread (backward work on an autograd worker
// during the main thread's step) is not a candidate. Every process's instances
// (several ranks: each its own steps). An error saying why when there is
// none.
StatusOr<Steps> FindSteps(const ReportModel& model, std::string_view step_range);

// FindSteps in parts, so that a report reading one file at a time (the
// bounded ranks table, cross_rank.h) chooses the step range of all files
// the way FindSteps chooses it for them read at once.
//
// The candidates for the step range without --step-range: per range name,
// its top-level push/pop instances that lie inside no top-level range of
// another thread (count, summed CPU time), and whether the name is an
// operator range (never a step). Several traces' candidates merge by
// summing n and total, op when any trace says so.
struct StepCandidate {
  size_t n = 0;
  uint64_t total = 0;
  bool op = false;
};
using StepCandidates = std::map<std::string, StepCandidate>;
StepCandidates FindStepCandidates(const ReportModel& model);

// The step range: a name (exact) or a StepKey, and how it was chosen.
struct StepChoice {
  std::string name;
  bool exact = false;
  std::string how;
};
// Without --step-range: the repeated top-level key covering the most time.
// An error saying why when there is none.
StatusOr<StepChoice> ChooseStepRange(const StepCandidates& candidates);
// The keys --step-range NAME stands for when no range is named NAME, in
// the order they are tried: StepKey(NAME), NAME#*, NAME_*.
std::vector<std::string> StepRangeKeys(std::string_view step_range);
// --step-range NAME: has_name: some range is named NAME; has_key(k): some
// range's StepKey is k. An error when neither.
StatusOr<StepChoice> ResolveStepRange(std::string_view step_range, bool has_name,
                                      const std::function<bool(const std::string&)>& has_key);
// The instances of the chosen step range and their numbers (FindSteps'
// result for that choice).
Steps StepsOf(const ReportModel& model, const StepChoice& choice);

// The program's number of the first recorded instance of range `step_name`:
// the occurrence the capture window recorded first, less one (the counter
// capture_range_first_occurrence, written by the tracer when capture began),
// or for a file written before that counter existed, TRACER_CAPTURE_START
// less one; 0 when the capture was not gated by that range (or for imports).
uint64_t CaptureStepBase(const ProcessTrace& p, std::string_view step_name);

// The ranges inside step instance s, excluding s itself: its descendants and
// the ranges of other threads of its process lying within [s.start, s.end]
// (worker threads, e.g. autograd). Sorted by start, then depth.
std::vector<uint32_t> StepMembers(const ReportModel& model, uint32_t s);

// Depth of member r below step s: 1 for a child of s; ranges on other
// threads count as children of s at their own depth + 1.
uint32_t DepthInStep(const ReportModel& model, uint32_t s, uint32_t r);

// "main", or "tid 1234" when the thread is unnamed.
std::string ThreadLabel(const ReportModel& model, uint32_t process, uint32_t thread);

}  // namespace tracer::analysis::reports
