#include "libtracer/analysis/importers/range_nesting.h"

#include <algorithm>
#include <unordered_map>

namespace tracer::analysis::importers {

NestingResult AssignRangeIdsAndNesting(std::vector<RangeRecord>* ranges, uint64_t first_id) {
  NestingResult result;
  auto before = [](const RangeRecord& a, const RangeRecord& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;  // the enclosing one first
    if (a.thread != b.thread) return a.thread < b.thread;
    return a.name < b.name;
  };
  // Exports usually list ranges in this order already; a stable sort would
  // still move every record.
  if (!std::is_sorted(ranges->begin(), ranges->end(), before)) {
    std::stable_sort(ranges->begin(), ranges->end(), before);
  }
  // Per thread: indexes of the open push/pop ranges, outermost first.
  std::unordered_map<uint32_t, std::vector<size_t>> stacks;
  uint64_t next_id = first_id;
  for (size_t i = 0; i < ranges->size(); ++i) {
    RangeRecord& r = (*ranges)[i];
    r.id = next_id++;
    r.parent_id = 0;
    r.depth = 0;
    if (r.kind != RangeKind::kPushPop) continue;
    std::vector<size_t>& stack = stacks[r.thread];
    // Ranges that ended at or before this start are closed. A range that
    // partially overlaps its parent can sit above a range that already
    // ended; drop those too.
    while (!stack.empty() && (*ranges)[stack.back()].end_ns <= r.start_ns) stack.pop_back();
    if (!stack.empty()) {
      const RangeRecord& parent = (*ranges)[stack.back()];
      if (parent.end_ns < r.end_ns) ++result.partial_overlaps;
      r.parent_id = parent.id;
      r.depth = parent.depth + 1;
    }
    stack.push_back(i);
  }
  return result;
}

}  // namespace tracer::analysis::importers
