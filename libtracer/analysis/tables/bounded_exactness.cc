#include "libtracer/analysis/tables/bounded_exactness.h"

#include <algorithm>

namespace tracer::analysis {

void BoundedExactness::Fail(std::string reason) {
  if (reason_.empty()) reason_ = std::move(reason);
}

void BoundedExactness::AddRange(const RangeRecord& r) {
  if (r.kind == RangeKind::kStartEnd) {
    if (start_end_.size() < kMaxStartEnd) {
      start_end_.emplace_back(r.start_ns, r.end_ns);
    } else {
      start_end_overflow_ = true;
    }
    return;
  }
  auto [it, added] = first_range_.emplace(r.thread, r.start_ns);
  if (!added) it->second = std::min(it->second, r.start_ns);
  // A range without a parent id that an earlier-closed parentless range of
  // its thread lies inside: in memory that one's parent is this one (the
  // enclosing range by time), which the tree reduction never learns.
  if (r.parent_id != 0) return;
  if (r.depth > 0) Fail("nested ranges without a parent id");
  auto [root, first] = last_root_start_.emplace(r.thread, r.start_ns);
  if (!first) {
    if (r.start_ns <= root->second && r.end_ns > r.start_ns)
      Fail("ranges without a parent id nest inside one another");
    root->second = std::max(root->second, r.start_ns);
  }
}

void BoundedExactness::AddReleasedSpan(uint64_t start, uint64_t end) {
  if (end <= start) return;  // covers no instant (start <= t < end)
  // First span that ends at or after start: it and the following ones that
  // start at or before end merge with the new one. Ranges close children
  // first, so this is nearly always the tail of the vector.
  auto first = std::partition_point(spans_.begin(), spans_.end(),
                                    [&](const auto& s) { return s.second < start; });
  auto last = first;
  while (last != spans_.end() && last->first <= end) {
    start = std::min(start, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  first = spans_.erase(first, last);
  spans_.insert(first, {start, end});
}

bool BoundedExactness::CoveredByReleased(uint64_t t) const {
  // Launches come mostly after every folded range: spans are sorted and
  // disjoint, so none covers a time at or past the last one's end.
  if (spans_.empty() || t >= spans_.back().second) return false;
  auto it = std::partition_point(spans_.begin(), spans_.end(),
                                 [&](const auto& s) { return s.second <= t; });
  return it != spans_.end() && it->first <= t;
}

void BoundedExactness::AddLaunchedOp(uint32_t thread, uint64_t launch_ns) {
  min_launch_ = std::min(min_launch_, launch_ns);
  max_launch_ = std::max(max_launch_, launch_ns);
  if (thread == last_thread_) return;
  last_thread_ = thread;
  if (thread != 0 && launch_threads_.size() < 64 &&
      std::find(launch_threads_.begin(), launch_threads_.end(), thread) == launch_threads_.end()) {
    launch_threads_.push_back(thread);
  }
}

std::string BoundedExactness::Finish(uint32_t* main_thread) {
  *main_thread = 0;
  uint32_t main = 0;
  if (options_.main_thread == MainThreadMode::kThread) {
    main = candidate_;
  } else if (options_.main_thread == MainThreadMode::kAuto) {
    if (candidate_ != 0 && first_range_.count(candidate_) > 0) {
      main = candidate_;
    } else {
      uint64_t best = UINT64_MAX;
      for (const auto& [thread, start] : first_range_) {
        if (start < best) {
          best = start;
          main = thread;
        }
      }
    }
  }
  *main_thread = main;
  if (main != 0 && main != candidate_) {
    // The main thread is only known now (the earliest to open a range):
    // its ranges were not followed while reading.
    for (uint32_t t : launch_threads_) {
      if (t != main)
        Fail("the main thread is not the pid's thread and other threads launch GPU work");
    }
    if (launch_threads_.size() >= 64) Fail("GPU work launched on too many threads to check");
  }
  if (max_launch_ >= min_launch_) {
    if (start_end_overflow_) Fail("too many start/end ranges to check");
    for (const auto& [s, e] : start_end_) {
      if (s <= max_launch_ && e >= min_launch_) {
        Fail("start/end ranges cover GPU launches");
        break;
      }
    }
  }
  return reason_;
}

}  // namespace tracer::analysis
