#include "libtracer/analysis/model/range_index.h"

#include <algorithm>

namespace tracer::analysis {

RangeIndex::RangeIndex(const ProcessTrace& process) : process_(&process) {
  const auto& ranges = process.ranges;
  const uint32_t n = static_cast<uint32_t>(ranges.size());
  // Instance ids: importers number ranges consecutively in record order, so
  // an id is usually its index plus the first id; otherwise (recorded
  // streams) a sorted table. Either is a fraction of a node-based hash map.
  dense_ids_ = n > 0;
  for (uint32_t i = 0; i < n && dense_ids_; ++i) dense_ids_ = ranges[i].id == ranges[0].id + i;
  if (dense_ids_) {
    first_id_ = ranges[0].id;
  } else {
    by_id_.reserve(n);
    for (uint32_t i = 0; i < n; ++i) by_id_.emplace_back(ranges[i].id, i);
    // Stable: with repeated ids the first record wins.
    std::stable_sort(by_id_.begin(), by_id_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  // Per-thread push/pop lists, sorted so that an enclosing range comes before
  // the ranges it contains (same start: the longer one first).
  // Consecutive ranges are mostly of one thread: its list is looked up once
  // a run (the map's nodes never move).
  ThreadList* list = nullptr;
  uint32_t list_thread = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (ranges[i].kind == RangeKind::kStartEnd) {
      start_end_.push_back(i);
      continue;
    }
    if (list == nullptr || ranges[i].thread != list_thread) {
      list_thread = ranges[i].thread;
      list = &by_thread_[list_thread];
    }
    list->ranges.push_back(i);
  }
  auto by_start = [&](uint32_t a, uint32_t b) {
    const RangeRecord& x = ranges[a];
    const RangeRecord& y = ranges[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
    return a < b;
  };
  // by_start is a total order: a list already in it (an importer's ranges
  // are by start) is left as it is, without a sort's n log n comparisons.
  auto sort = [&](std::vector<uint32_t>* list) {
    if (!std::is_sorted(list->begin(), list->end(), by_start))
      std::sort(list->begin(), list->end(), by_start);
  };
  sort(&start_end_);

  // Parents: the named parent_id when it exists and is a push/pop range, else
  // the enclosing push/pop range on the same thread by time.
  parent_.assign(n, kNoRange);
  std::vector<uint32_t> open;
  for (auto& [thread, lists] : by_thread_) {
    std::vector<uint32_t>& list = lists.ranges;
    sort(&list);
    lists.starts.reserve(list.size());
    for (uint32_t i : list) lists.starts.push_back(ranges[i].start_ns);
    open.clear();
    for (uint32_t i : list) {
      const RangeRecord& r = ranges[i];
      while (!open.empty() && ranges[open.back()].end_ns <= r.start_ns) {
        open.pop_back();
      }
      uint32_t parent = kNoRange;
      if (r.parent_id != 0) {
        const uint32_t named = Find(r.parent_id);
        if (named != kNoRange && named != i && ranges[named].kind == RangeKind::kPushPop) {
          parent = named;
        }
      }
      if (parent == kNoRange && !open.empty()) parent = open.back();
      parent_[i] = parent;
      open.push_back(i);
    }
  }

  // Depths from the parent chain; a cycle (corrupt parent ids) is cut where
  // it is found so every chain ends.
  depth_.assign(n, 0);
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the current path, 2 done
  std::vector<uint32_t> path;
  for (uint32_t i = 0; i < n; ++i) {
    if (state[i] == 2) continue;
    path.clear();
    uint32_t cur = i;
    while (cur != kNoRange && state[cur] == 0) {
      state[cur] = 1;
      path.push_back(cur);
      cur = parent_[cur];
    }
    if (cur != kNoRange && state[cur] == 1) {
      parent_[path.back()] = kNoRange;  // cycle: cut the last link
      cur = kNoRange;
    }
    uint32_t depth = cur == kNoRange ? 0 : depth_[cur] + 1;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (parent_[*it] == kNoRange) {
        depth = 0;
      } else if (depth >= kMaxNestingDepth) {
        // The parent is at the last level: attach to the grandparent (one
        // step, since the chain above is already capped).
        parent_[*it] = parent_[parent_[*it]];
        depth = kMaxNestingDepth - 1;
        ++flattened_;
      }
      depth_[*it] = depth++;
      state[*it] = 2;
    }
  }

  // Children as CSR, in start order.
  child_offsets_.assign(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (parent_[i] != kNoRange) ++child_offsets_[parent_[i] + 1];
  }
  for (uint32_t i = 0; i < n; ++i) child_offsets_[i + 1] += child_offsets_[i];
  children_.resize(child_offsets_[n]);
  std::vector<uint32_t> fill(child_offsets_.begin(), child_offsets_.end() - 1);
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  sort(&order);  // importers' ranges are in start order already
  for (uint32_t i : order) {
    if (parent_[i] != kNoRange) children_[fill[parent_[i]]++] = i;
  }
}

uint32_t RangeIndex::Find(uint64_t instance_id) const {
  if (dense_ids_) {
    const uint64_t i = instance_id - first_id_;
    return instance_id >= first_id_ && i < parent_.size() ? static_cast<uint32_t>(i) : kNoRange;
  }
  auto it = std::lower_bound(by_id_.begin(), by_id_.end(), instance_id,
                             [](const auto& e, uint64_t id) { return e.first < id; });
  return it != by_id_.end() && it->first == instance_id ? it->second : kNoRange;
}

std::span<const uint32_t> RangeIndex::Children(uint32_t index) const {
  if (index >= parent_.size()) return {};
  return std::span<const uint32_t>(children_).subspan(
      child_offsets_[index], child_offsets_[index + 1] - child_offsets_[index]);
}

void RangeIndex::AppendChain(uint32_t index, std::vector<uint32_t>* out) const {
  // Depth bounds the walk; parents were made acyclic in the constructor.
  for (uint32_t cur = index; cur != kNoRange && cur < parent_.size(); cur = parent_[cur]) {
    out->push_back(cur);
  }
}

uint32_t RangeIndex::InnermostOpenAt(uint32_t thread, uint64_t t) const {
  auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return kNoRange;
  const std::vector<uint64_t>& starts = it->second.starts;
  const auto& ranges = process_->ranges;
  // Last range started at or before t. With proper nesting, the innermost
  // range open at t is that range or one of its ancestors.
  const auto pos = std::upper_bound(starts.begin(), starts.end(), t);
  if (pos == starts.begin()) return kNoRange;
  for (uint32_t cur = it->second.ranges[pos - starts.begin() - 1]; cur != kNoRange;
       cur = parent_[cur]) {
    if (ranges[cur].start_ns <= t && t < ranges[cur].end_ns) return cur;
    // A zero-length range at exactly t still counts as open at t.
    if (ranges[cur].start_ns == t && ranges[cur].end_ns == t) return cur;
  }
  return kNoRange;
}

void RangeIndex::AppendCoveringStartEnd(uint64_t t, std::vector<uint32_t>* out) const {
  const auto& ranges = process_->ranges;
  for (uint32_t i : start_end_) {
    if (ranges[i].start_ns > t) break;
    if (t <= ranges[i].end_ns) out->push_back(i);
  }
}

std::vector<uint32_t> RangeIndex::ThreadsWithRanges() const {
  std::vector<uint32_t> out;
  for (const auto& [thread, lists] : by_thread_) out.push_back(thread);
  std::sort(out.begin(), out.end());
  return out;
}

std::span<const uint32_t> RangeIndex::ThreadRanges(uint32_t thread) const {
  auto it = by_thread_.find(thread);
  if (it == by_thread_.end()) return {};
  return it->second.ranges;
}

}  // namespace tracer::analysis
