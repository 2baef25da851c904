// Per-thread cache in front of the process-wide StringTable: a fixed-size,
// direct-mapped table, so a hit costs one strlen, a few word loads and
// compares, and no lock, allocation or call into the table. Keyed by content,
// not by pointer: NVTX clients (Python, PyTorch) pass freshly built strings
// at reused addresses (text_hash.h: short texts need no memcmp on a hit).
// A miss (more distinct names than slots, or two names sharing a slot) goes
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
  static constexpr size_t kSlots = 1024;
  static constexpr size_t kShort = TextKey::kShort;

  explicit InternCache(StringTable* table = &GlobalStrings()) : table_(table) {}

  // Inlined into the NVTX entry points (the push hot path).
  __attribute__((always_inline)) uint32_t Lookup(const char* text) {
    return text ? Lookup(std::string_view(text, std::strlen(text))) : 0;
  }

  __attribute__((always_inline)) uint32_t Lookup(std::string_view text) {
    const char* s = text.data();
    size_t n = text.size();
    const TextKey key(s, n);
    Slot& slot = slots_[SlotOf(key.hash)];
    if (slot.len == n && slot.w[0] == key.w[0] && slot.w[1] == key.w[1] && slot.w[2] == key.w[2] &&
        slot.w[3] == key.w[3] && (n <= kShort || SameBytes(slot.text, s, n))) {
      return slot.id;
    }
    return Miss(text, key, slot);
  }

  // The slot a text occupies (tests and the benchmark build colliding names).
  static size_t SlotOf(std::string_view text) { return SlotOf(TextKey(text).hash); }

  uint64_t misses() const { return misses_; }

 private:
  struct Slot {
    uint64_t w[4] = {0, 0, 0, 0};
    uint32_t len = ~0u;  // matches no text: empty slot
    uint32_t id = 0;
    const char* text = nullptr;  // the table's copy (long texts)
  };

  static size_t SlotOf(uint64_t h) { return (h ^ (h >> 17)) & (kSlots - 1); }

  __attribute__((noinline)) uint32_t Miss(std::string_view text, const TextKey& key, Slot& slot) {
    ++misses_;
    StringTable::Entry e = table_->Intern(text, key.hash);
    for (int i = 0; i < 4; ++i) slot.w[i] = key.w[i];
    slot.len = static_cast<uint32_t>(text.size());
    slot.id = e.id;
    slot.text = e.text.data();
    return e.id;
  }

  StringTable* table_;
  uint64_t misses_ = 0;
  Slot slots_[kSlots];
};

}  // namespace tracer
