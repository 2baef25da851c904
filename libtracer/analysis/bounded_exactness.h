// Whether the bounded-memory aggregation of one process (stream_aggregator.h)
// gives exactly the numbers of the whole-trace attribution (attribution.h).
//
// The bounded path folds each range instance as soon as nothing can change
// it, so it cannot look back. Three rules of the whole-trace attribution can
// need to: main-thread inheritance (a worker-thread launch also counts toward
// the ranges open on the main thread at that moment), start/end ranges
// (which cover every launch inside [start, end], on any thread) and the
// choice of the main thread itself (the earliest thread to open a range when
// no thread has the pid's id). This class watches for each with memory
// bounded by the main thread's top-level ranges and the launches since its
// last one closed, and names the first rule the input actually needed.
// Choosing the bounded path is then a performance decision only: when a
// reason is given, the caller computes the tables the slow way instead of
// printing different numbers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/attribution.h"
#include "libtracer/core/records.h"

namespace tracer::analysis {

class BoundedExactness {
 public:
  explicit BoundedExactness(const AttributionOptions& options) : options_(options) {}

  // The thread the whole-trace path would take as the main thread if it
  // opened a push/pop range: OS id == pid (auto) or == --main-thread.
  void SetCandidate(uint32_t thread) { candidate_ = thread; }
  uint32_t candidate() const { return candidate_; }

  void AddRange(const RangeRecord& r);
  // An op attributed to a launch on `thread` at `launch_ns` (0 = unknown).
  void AddLaunchedOp(uint32_t thread, uint64_t launch_ns);
  // A reason found elsewhere (evictions, records out of order, ...); the
  // first one is kept.
  void Fail(std::string reason);

  // After the last record: "" when the bounded numbers are exact, else why
  // not. *main_thread: the main thread the whole-trace path picks (0: none).
  std::string Finish(uint32_t* main_thread);

  // Held entries, for the memory tests.
  size_t held() const { return spans_.size() + pending_.size() + start_end_.size(); }

 private:
  // True when the candidate had a push/pop range open at t.
  bool Covered(uint64_t t) const;
  void AddSpan(uint64_t start, uint64_t end);
  // Checks pending launch times below `upto` and forgets them.
  void CheckPending(uint64_t upto);

  static constexpr size_t kMaxPending = 1u << 22;
  static constexpr size_t kMaxStartEnd = 1u << 16;

  AttributionOptions options_;
  uint32_t candidate_ = 0;
  std::string reason_;
  // Disjoint, sorted [start, end) of the candidate's push/pop ranges.
  std::vector<std::pair<uint64_t, uint64_t>> spans_;
  // Everything before this time is final in spans_: a top-level range of the
  // candidate closed there, so nothing was open on it at that moment.
  uint64_t final_before_ = 0;
  std::vector<uint64_t> pending_;  // off-candidate launch times at or after final_before_
  std::map<uint32_t, uint64_t> first_range_;  // thread -> earliest push/pop start
  std::vector<uint32_t> launch_threads_;      // distinct, small
  uint64_t min_launch_ = UINT64_MAX, max_launch_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> start_end_;
  bool start_end_overflow_ = false;
};

}  // namespace tracer::analysis
