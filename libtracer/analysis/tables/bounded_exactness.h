// Whether the bounded-memory aggregation of one process (stream_aggregator.h)
// gives exactly the numbers of the whole-trace attribution (attribution.h).
//
// The bounded path folds each range instance as soon as nothing can change
// it, so it cannot look back. Rules of the whole-trace attribution that can
// need to: start/end ranges (which cover every launch inside [start, end],
// on any thread), the choice of the main thread itself (the earliest thread
// to open a range when the pid's thread opened none), and main-thread
// inheritance for a worker launch that reaches the file after the main
// thread's range covering it was folded (the aggregator holds closed
// main-thread ranges for a while, and asks CoveredByReleased). This class
// watches for each and names the first rule the input actually needed.
// Choosing the bounded path is then a performance decision only: when a
// reason is given, the caller computes the tables the slow way instead of
// printing different numbers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "libtracer/analysis/model/attribution.h"
#include "libtracer/core/records.h"

namespace tracer::analysis {

class BoundedExactness {
 public:
  explicit BoundedExactness(const AttributionOptions& options) : options_(options) {}

  // The thread the whole-trace path would take as the main thread if it
  // opened a push/pop range: OS id == pid (auto) or == --main-thread.
  void SetCandidate(uint32_t thread) { candidate_ = thread; }

  void AddRange(const RangeRecord& r);
  // An op attributed to a launch on `thread` at `launch_ns` (0 = unknown).
  void AddLaunchedOp(uint32_t thread, uint64_t launch_ns);
  // A reason found elsewhere (evictions, records out of order, ...); the
  // first one is kept.
  void Fail(std::string reason);

  // After the last record: "" when the bounded numbers are exact, else why
  // not. *main_thread: the main thread the whole-trace path picks (0: none).
  std::string Finish(uint32_t* main_thread);

  // A main-thread range the aggregator folded: [start, end) can no longer
  // take inherited work.
  void AddReleasedSpan(uint64_t start, uint64_t end);
  // True when a folded main-thread range was open at t.
  bool CoveredByReleased(uint64_t t) const;

 private:
  static constexpr size_t kMaxStartEnd = 1u << 16;

  AttributionOptions options_;
  uint32_t candidate_ = 0;
  std::string reason_;
  // Disjoint, sorted [start, end) of the folded main-thread ranges (one
  // entry per top-level range once its children merged in).
  std::vector<std::pair<uint64_t, uint64_t>> spans_;
  std::map<uint32_t, uint64_t> first_range_;      // thread -> earliest push/pop start
  std::map<uint32_t, uint64_t> last_root_start_;  // thread -> latest start of a parentless range
  std::vector<uint32_t> launch_threads_;          // distinct, small
  uint32_t last_thread_ = UINT32_MAX;             // consecutive launches mostly share one
  uint64_t min_launch_ = UINT64_MAX, max_launch_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> start_end_;
  bool start_end_overflow_ = false;
};

}  // namespace tracer::analysis
