// Gives imported ranges what our capture writes directly: instance ids and,
// for push/pop ranges, the parent instance and depth on the same thread.
// Imports only know start/end times, so nesting is recovered by time.
#pragma once

#include <cstdint>
#include <vector>

#include "libtracer/core/records.h"

namespace tracer::analysis::importers {

struct NestingResult {
  // Push/pop ranges that start inside an open range on their thread but end
  // after it (cannot happen with real push/pop, happens in Kineto cpu_op
  // traces and in time-windowed exports). The parent is still the innermost
  // range open at the start (what "the stack at that time" means), so the
  // result is deterministic; they are counted and reported.
  uint64_t partial_overlaps = 0;
};

// Sorts *ranges by (start, longer first, thread, name), assigns ids
// first_id, first_id + 1, ... in that order, and fills parent_id / depth of
// push/pop ranges. Start/end ranges get parent 0, depth 0.
NestingResult AssignRangeIdsAndNesting(std::vector<RangeRecord>* ranges, uint64_t first_id = 1);

}  // namespace tracer::analysis::importers
