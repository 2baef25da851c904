// A map from correlation id to a value for ids that arrive roughly in
// increasing order (CUPTI correlation ids do, per process): a sliding window
// of slots (a ring) indexed by id - base, so insert, find and erase are array
// accesses with no allocation per entry. Ids far outside the window go to a
// small hash map. The oldest entries can be evicted to bound memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tracer::analysis {

template <typename T>
class CorrelationWindow {
 public:
  // Ids more than this beyond the window's start are kept aside, so a stray
  // id cannot make the window allocate gigabytes of empty slots.
  static constexpr uint64_t kMaxSpan = 1u << 22;

  size_t size() const { return live_ + overflow_.size(); }

  // False when id is already present.
  bool Insert(uint64_t id, const T& value) {
    if (span_ == 0 && live_ == 0) base_ = id;
    if (id >= base_ && id - base_ < kMaxSpan) {
      const uint64_t at = id - base_;
      if (at >= span_) {
        Reserve(at + 1);
        span_ = at + 1;
      }
      std::optional<T>& s = Slot(at);
      if (s) return false;
      s = value;
      ++live_;
      return true;
    }
    return overflow_.emplace(id, value).second;
  }

  T* Find(uint64_t id) {
    if (id >= base_ && id - base_ < span_) {
      auto& s = Slot(id - base_);
      return s ? &*s : nullptr;
    }
    if (overflow_.empty()) return nullptr;
    auto it = overflow_.find(id);
    return it == overflow_.end() ? nullptr : &it->second;
  }

  void Erase(uint64_t id) {
    if (id >= base_ && id - base_ < span_) {
      auto& s = Slot(id - base_);
      if (s) {
        s.reset();
        --live_;
        Trim();
      }
      return;
    }
    overflow_.erase(id);
  }

  // Removes the oldest entries (lowest ids; the set-aside ones first) until
  // size() <= keep, calling evicted(id, value) for each before removal.
  template <typename F>
  void EvictTo(size_t keep, F&& evicted) {
    while (!overflow_.empty() && size() > keep) {
      auto it = overflow_.begin();
      const uint64_t id = it->first;
      T value = it->second;
      overflow_.erase(it);
      evicted(id, value);
    }
    while (live_ > 0 && size() > keep) {
      Trim();
      auto& s = Slot(0);
      T value = *s;
      const uint64_t id = base_;
      s.reset();
      --live_;
      evicted(id, value);
      Trim();
    }
  }

 private:
  // A ring of slots: ids base_ .. base_ + span_ - 1 at head_ onwards. Sliding
  // the window moves head_; nothing is allocated per entry.
  std::optional<T>& Slot(uint64_t at) { return ring_[(head_ + at) & (ring_.size() - 1)]; }

  void Reserve(uint64_t n) {
    if (n <= ring_.size()) return;
    size_t cap = ring_.empty() ? 64 : ring_.size();
    while (cap < n) cap *= 2;
    std::vector<std::optional<T>> grown(cap);
    for (uint64_t i = 0; i < span_; ++i) grown[i] = std::move(Slot(i));
    ring_ = std::move(grown);
    head_ = 0;
  }

  // Drops empty slots at the front so the window follows the live ids.
  void Trim() {
    while (span_ > 0 && !Slot(0)) {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --span_;
      ++base_;
    }
    if (span_ == 0) base_ = 0;
  }

  uint64_t base_ = 0;
  uint64_t span_ = 0;  // slots in use, from base_
  size_t head_ = 0;
  std::vector<std::optional<T>> ring_;  // size: a power of two, or empty
  size_t live_ = 0;
  std::unordered_map<uint64_t, T> overflow_;
};

}  // namespace tracer::analysis
