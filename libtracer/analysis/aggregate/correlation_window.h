// A map from correlation id to a value for ids that arrive roughly in
// increasing order (CUPTI correlation ids do, per process): a sliding window
// of slots indexed by id - base, so insert, find and erase are array
// accesses with no allocation per entry. Ids far outside the window go to a
// small hash map. The oldest entries can be evicted to bound memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

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
    if (slots_.empty() && live_ == 0) base_ = id;
    if (id >= base_ && id - base_ < kMaxSpan) {
      const uint64_t at = id - base_;
      if (at >= slots_.size()) slots_.resize(at + 1);
      if (slots_[at]) return false;
      slots_[at] = value;
      ++live_;
      return true;
    }
    return overflow_.emplace(id, value).second;
  }

  T* Find(uint64_t id) {
    if (id >= base_ && id - base_ < slots_.size()) {
      auto& s = slots_[id - base_];
      return s ? &*s : nullptr;
    }
    auto it = overflow_.find(id);
    return it == overflow_.end() ? nullptr : &it->second;
  }

  void Erase(uint64_t id) {
    if (id >= base_ && id - base_ < slots_.size()) {
      auto& s = slots_[id - base_];
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
      auto& s = slots_.front();
      T value = *s;
      const uint64_t id = base_;
      s.reset();
      --live_;
      evicted(id, value);
      Trim();
    }
  }

 private:
  // Drops empty slots at the front so the window follows the live ids.
  void Trim() {
    while (!slots_.empty() && !slots_.front()) {
      slots_.pop_front();
      ++base_;
    }
    if (slots_.empty()) base_ = 0;
  }

  uint64_t base_ = 0;
  std::deque<std::optional<T>> slots_;
  size_t live_ = 0;
  std::unordered_map<uint64_t, T> overflow_;
};

}  // namespace tracer::analysis
