// The lookup side of StringTable (trace_model.h): string -> id by open
// addressing over a power-of-two array of (hash tag, id) slots. Strings are
// compared against the table's own storage, so the index holds no pointers
// and copies with it. std::unordered_map took a third of an nsys import with
// per-op range names (tens of thousands of distinct names): a node per
// string and a division per probed node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tracer::analysis {

class StringIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Eight bytes a step, each folded in by one 64x64->128 multiply, inline:
  // std::hash (an out-of-line MurmurHash, three dependent multiplies per
  // eight bytes) was a fifth of interning a name-heavy export's range names.
  static uint64_t Hash(std::string_view s) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    uint64_t h = kSeed ^ n;
    if (n >= 8) {
      // Whole words, then the last eight bytes (overlapping when n is not a
      // multiple of eight).
      const unsigned char* last = p + n - 8;
      for (; p < last; p += 8) h = Fold(h ^ Load64(p), kMul1);
      h = Fold(h ^ Load64(last), kMul2);
    } else if (n >= 4) {
      h = Fold(h ^ ((uint64_t{Load32(p)} << 32) | Load32(p + n - 4)), kMul2);
    } else if (n > 0) {
      h = Fold(h ^ ((uint64_t{p[0]} << 16) | (uint64_t{p[n / 2]} << 8) | p[n - 1]), kMul2);
    }
    return Fold(h, kMul1);
  }

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

  // Makes room for n strings in all, so that indexing up to n rehashes
  // nothing (each doubling rehashes every slot and touches fresh memory).
  void Reserve(size_t n) {
    size_t want = 64;
    while (n * 4 > want * 3) want *= 2;
    if (want > slots_.size()) Rehash(want);
  }

  // Indexes id under hash h; the string must not be indexed yet.
  void Insert(uint64_t h, uint32_t id) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    Place({Tag(h), id});
    ++size_;
  }

 private:
  static constexpr uint64_t kSeed = 0x243f6a8885a308d3ULL;
  static constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ULL;
  static constexpr uint64_t kMul2 = 0xbf58476d1ce4e5b9ULL;
  static uint64_t Fold(uint64_t a, uint64_t b) {
    const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
  }
  static uint64_t Load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static uint32_t Load32(const unsigned char* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

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

  void Grow() { Rehash(slots_.empty() ? 64 : slots_.size() * 2); }

  void Rehash(size_t slots) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(slots, Slot{});
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
