// Unions of time intervals [start, end): GPU busy time of a range's subtree
// (stream_aggregator.h) and the comm / compute breakdown (comm_compute.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace tracer::analysis {

using Interval = std::pair<uint64_t, uint64_t>;

// Sorts and merges overlapping or touching intervals in place; returns the
// length of their union.
inline uint64_t MergeIntervals(std::vector<Interval>* v) {
  // Ops of one stream mostly arrive in start order: skip the sort then.
  if (!std::is_sorted(v->begin(), v->end())) std::sort(v->begin(), v->end());
  size_t out = 0;
  for (const Interval& cur : *v) {
    if (out > 0 && cur.first <= (*v)[out - 1].second) {
      (*v)[out - 1].second = std::max((*v)[out - 1].second, cur.second);
    } else {
      (*v)[out++] = cur;
    }
  }
  v->resize(out);
  uint64_t total = 0;
  for (const auto& [s, e] : *v) total += e - s;
  return total;
}

}  // namespace tracer::analysis
