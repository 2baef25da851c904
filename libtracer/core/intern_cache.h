// Per-thread cache in front of the process-wide StringTable: a fixed-size,
// two-way set-associative table (two names sharing a set both stay), so a
// hit costs one strlen, a few word loads and compares, and no lock,
// allocation or call into the table. Keyed by content,
// not by pointer: NVTX clients (Python, PyTorch) pass freshly built strings
// at reused addresses (text_hash.h: short texts need no memcmp on a hit).
// A miss (more distinct names than slots, or more than two sharing a set) goes
// to the table's lock-free index, which takes no lock for a text interned
// before: only a text new to the process takes the table's lock, once.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "libtracer/core/string_table.h"
#include "libtracer/core/text_hash.h"

namespace tracer {

class InternCache {
 public:
  static constexpr size_t kSlots = 1024;  // 512 sets of two
  static constexpr size_t kShort = TextKey::kShort;

  explicit InternCache(StringTable* table = &GlobalStrings()) : table_(table) {}

  // Inlined into the NVTX entry points (the push hot path).
  __attribute__((always_inline)) uint32_t Lookup(const char* text) {
    return text ? Lookup(std::string_view(text, std::strlen(text))) : 0;
  }

  __attribute__((always_inline)) uint32_t Lookup(std::string_view text) {
    const TextKey key(text.data(), text.size());
    Slot* set = &slots_[2 * SetOf(key.hash)];
    if (Matches(set[0], text, key)) return set[0].id;
    if (Matches(set[1], text, key)) return set[1].id;
    return Miss(text, key, set);
  }

  // The set a text maps to (tests and the benchmark build colliding names).
  static size_t SetOf(std::string_view text) { return SetOf(TextKey(text).hash); }

  uint64_t misses() const { return misses_; }

 private:
  struct Slot {
    uint64_t w[4] = {0, 0, 0, 0};
    uint32_t len = ~0u;  // matches no text: empty slot
    uint32_t id = 0;
    const char* text = nullptr;  // the table's copy (long texts)
  };

  static size_t SetOf(uint64_t h) { return (h ^ (h >> 17)) & (kSlots / 2 - 1); }

  static __attribute__((always_inline)) bool Matches(const Slot& slot, std::string_view text,
                                                     const TextKey& key) {
    return slot.len == text.size() && slot.w[0] == key.w[0] && slot.w[1] == key.w[1] &&
           slot.w[2] == key.w[2] && slot.w[3] == key.w[3] &&
           (text.size() <= kShort || SameBytes(slot.text, text.data(), text.size()));
  }

  // The new name takes way 0; the one it displaces moves to way 1, evicting
  // the least recently filled.
  __attribute__((noinline)) uint32_t Miss(std::string_view text, const TextKey& key, Slot* set) {
    ++misses_;
    StringTable::Entry e = table_->Intern(text, key.hash);
    set[1] = set[0];
    for (int i = 0; i < 4; ++i) set[0].w[i] = key.w[i];
    set[0].len = static_cast<uint32_t>(text.size());
    set[0].id = e.id;
    set[0].text = e.text.data();
    return e.id;
  }

  StringTable* table_;
  uint64_t misses_ = 0;
  Slot slots_[kSlots];
};

}  // namespace tracer
