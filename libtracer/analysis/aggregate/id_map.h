// A map from a non-zero 64-bit id to a 32-bit value, for the stream
// aggregator's per-record lookups (range instance -> its node): one flat
// array probed linearly, so that inserting and erasing allocate nothing per
// entry (a std::unordered_map allocates a node per insert and frees it per
// erase, which costed the bounded report more than the lookups themselves).
// Erasing shifts the following entries back (no tombstones), so a long
// stream of inserts and erases never degrades the probes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tracer::analysis {

class IdMap {
 public:
  size_t size() const { return size_; }

  // The value of id (id != 0), or nullptr. Valid until the next Insert.
  uint32_t* Find(uint64_t id) {
    if (size_ == 0) return nullptr;
    for (size_t i = Home(id);; i = (i + 1) & mask_) {
      if (slots_[i].id == id) return &slots_[i].value;
      if (slots_[i].id == 0) return nullptr;
    }
  }

  // Adds id (id != 0, not present) with value.
  void Insert(uint64_t id, uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    size_t i = Home(id);
    while (slots_[i].id != 0) i = (i + 1) & mask_;
    slots_[i] = {id, value};
    ++size_;
  }

  // Removes id when present.
  void Erase(uint64_t id) {
    if (size_ == 0) return;
    size_t i = Home(id);
    while (slots_[i].id != id) {
      if (slots_[i].id == 0) return;
      i = (i + 1) & mask_;
    }
    // Backward shift: move each later entry of the run into the hole when
    // its home does not lie (cyclically) between the hole and it.
    for (size_t j = (i + 1) & mask_; slots_[j].id != 0; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j].id);
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
  }

  // Calls f(id, value) for every entry (no insert or erase meanwhile).
  template <typename F>
  void ForEach(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.id != 0) f(s.id, s.value);
    }
  }

  void Clear() {
    slots_.clear();
    mask_ = 0;
    size_ = 0;
  }

 private:
  struct Slot {
    uint64_t id = 0;
    uint32_t value = 0;
  };
  size_t Home(uint64_t id) const {
    return static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot());
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.id != 0) Insert(s.id, s.value);
    }
  }

  std::vector<Slot> slots_;  // a power of two in size, or empty
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace tracer::analysis
