// The lookup side of StringTable (trace_model.h): string -> id by open
// addressing over a power-of-two array of (hash tag, id) slots. Strings are
// compared against the table's own storage, so the index holds no pointers
// and copies with it. std::unordered_map took a third of an nsys import with
// per-op range names (tens of thousands of distinct names): a node per
// string and a division per probed node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tracer::analysis {

class StringIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>()(s); }

  // Id of the string s (hash h = Hash(s)); get(id) returns an indexed
  // string. kNone when s is not indexed.
  template <typename GetFn>
  uint32_t Find(std::string_view s, uint64_t h, const GetFn& get) const {
    if (slots_.empty()) return kNone;
    const uint32_t tag = Tag(h);
    for (size_t i = tag & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id == kNone) return kNone;
      if (slot.tag == tag && get(slot.id) == s) return slot.id;
    }
  }

  // Indexes id under hash h; the string must not be indexed yet.
  void Insert(uint64_t h, uint32_t id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place({Tag(h), id});
    ++size_;
  }

 private:
  struct Slot {
    uint32_t tag = 0;  // the folded hash: most mismatches cost no compare
    uint32_t id = kNone;
  };
  // The slot is picked from the tag too, so growing needs no string.
  static uint32_t Tag(uint64_t h) { return static_cast<uint32_t>(h ^ (h >> 32)); }

  void Place(Slot s) {
    for (size_t i = s.tag & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].id == kNone) {
        slots_[i] = s;
        return;
      }
    }
  }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.id != kNone) Place(s);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace tracer::analysis
