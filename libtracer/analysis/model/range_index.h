// Structure of one process's ranges, built once and read by attribution,
// projection and the tables: instance id -> index, parent / children, the
// ancestor chain of an instance, and "which push/pop range was open on thread
// T at time t" (binary search per thread, used to attribute imported traces
// that have API records but no launch records, and for worker-thread
// inheritance).
//
// Range indexes are positions in ProcessTrace::ranges (uint32_t); kNoRange
// means none.
//
// Parents: a push/pop range's parent is the instance named by its parent_id
// when that instance exists in the file; otherwise (importers that leave
// parent_id at 0, or a parent lost before a capture window opened) the
// enclosing push/pop range on the same thread by time. Start/end ranges have
// no parent and are never parents.
//
// Depth: at most kMaxNestingDepth levels, the capture's own limit (its range
// stack holds 256). A deeper range (an import, or a crafted parent chain)
// is attached to its ancestor at level kMaxNestingDepth - 2, so it shows at
// the last level, kMaxNestingDepth - 1, and every ancestor chain, which
// attribution copies per GPU op, stays that short; flattened() counts them.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

inline constexpr uint32_t kNoRange = UINT32_MAX;
inline constexpr uint32_t kMaxNestingDepth = 256;

class RangeIndex {
 public:
  explicit RangeIndex(const ProcessTrace& process);

  const ProcessTrace& process() const { return *process_; }
  size_t size() const { return parent_.size(); }
  // Ranges nested deeper than kMaxNestingDepth, shown at its last level.
  uint64_t flattened() const { return flattened_; }

  // Index of the range with this instance id, or kNoRange.
  uint32_t Find(uint64_t instance_id) const;
  // Parent index (see header comment), or kNoRange.
  uint32_t Parent(uint32_t index) const {
    return index < parent_.size() ? parent_[index] : kNoRange;
  }
  // Nesting depth derived from the parent chain: 0 = top level.
  uint32_t Depth(uint32_t index) const { return index < depth_.size() ? depth_[index] : 0; }
  // Direct children, in start order.
  std::span<const uint32_t> Children(uint32_t index) const;
  // index, then its parent, grandparent, ... (innermost first). Appends to out.
  void AppendChain(uint32_t index, std::vector<uint32_t>* out) const;

  // Innermost push/pop range open on `thread` (ThreadDef id) at time t
  // (start <= t < end; an unclosed range counts as open until its end), or
  // kNoRange. O(log n + depth).
  uint32_t InnermostOpenAt(uint32_t thread, uint64_t t) const;

  // Start/end ranges, sorted by start time.
  std::span<const uint32_t> StartEndRanges() const { return start_end_; }
  // Start/end ranges whose [start, end] contains t; appends to out.
  void AppendCoveringStartEnd(uint64_t t, std::vector<uint32_t>* out) const;

  // Threads (ThreadDef ids) that opened at least one push/pop range.
  std::vector<uint32_t> ThreadsWithRanges() const;
  // Push/pop ranges opened by thread, sorted by start.
  std::span<const uint32_t> ThreadRanges(uint32_t thread) const;

 private:
  const ProcessTrace* process_;
  // Find(): ids first_id_, first_id_ + 1, ... in record order, else by_id_
  // (id, index) sorted by id.
  bool dense_ids_ = false;
  uint64_t first_id_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> by_id_;
  std::vector<uint32_t> parent_, depth_;
  std::vector<uint32_t> child_offsets_, children_;  // CSR
  // A thread's push/pop ranges sorted by start, and their start times: the
  // binary search of InnermostOpenAt (once per API call and launch) reads a
  // dense array instead of an 88-byte record through an index at each step.
  struct ThreadList {
    std::vector<uint32_t> ranges;
    std::vector<uint64_t> starts;
  };
  std::unordered_map<uint32_t, ThreadList> by_thread_;
  std::vector<uint32_t> start_end_;
  uint64_t flattened_ = 0;
};

}  // namespace tracer::analysis
