// Per-thread cache in front of the process-wide StringTable: a two-way
// set-associative table (two names sharing a set both stay), so a hit costs
// one strlen, a few word loads and compares, and no lock, allocation or call
// into the table. Keyed by content, not by pointer: NVTX clients (Python,
// PyTorch) pass freshly built strings at reused addresses (text_hash.h: short
// texts need no memcmp on a hit).
// A miss (more distinct names than slots, or more than two sharing a set) goes
// to the table's lock-free index, which takes no lock for a text interned
// before: only a text new to the process takes the table's lock, once.
//
// Growable, bounded: it starts at 1,024 slots (48 KiB) and doubles, up to
// kMaxSlots (768 KiB), when its misses since the last resize exceed twice
// its slots, i.e. when the thread keeps cycling through more names than it
// holds (per-module ranges of a large model: thousands of names each step).
// A miss costs a random probe of the global index plus a node compare (two
// cache misses, ~25 ns measured); a hit in a larger table costs one. Growing
// rather than starting large keeps the common thread (a few names) at 48 KiB
// and keeps a thread's L1/L2 footprint small. Growing allocates on the
// application thread, at most six times per thread and never under a lock;
// a failed allocation keeps the current size (nothrow).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

#include "libtracer/core/string_table.h"
#include "libtracer/core/text_hash.h"

namespace tracer {

class InternCache {
 public:
  static constexpr size_t kSlots = 1024;  // initially: 512 sets of two
  static constexpr size_t kMaxSlots = 16384;
  static constexpr size_t kShort = TextKey::kShort;

  explicit InternCache(StringTable* table = &GlobalStrings())
      : table_(table), slots_(new Slot[kSlots]), set_mask_(kSlots / 2 - 1) {}

  // Inlined into the NVTX entry points (the push hot path).
  __attribute__((always_inline)) uint32_t Lookup(const char* text) {
    return text ? Lookup(std::string_view(text, std::strlen(text))) : 0;
  }

  __attribute__((always_inline)) uint32_t Lookup(std::string_view text) {
    const TextKey key(text.data(), text.size());
    Slot* set = &slots_[2 * (Mix(key.hash) & set_mask_)];
    if (Matches(set[0], text, key)) return set[0].id;
    if (Matches(set[1], text, key)) return set[1].id;
    return Miss(text, key, set)->id;
  }

  // As Lookup, with the string table's copy of the text (PointerNameCache's
  // misses: it keeps that copy to check its hits against).
  StringTable::Entry LookupEntry(std::string_view text) {
    const TextKey key(text.data(), text.size());
    Slot* set = &slots_[2 * (Mix(key.hash) & set_mask_)];
    const Slot* hit = Matches(set[0], text, key)   ? &set[0]
                      : Matches(set[1], text, key) ? &set[1]
                                                   : Miss(text, key, set);
    return {hit->id, std::string_view(hit->text, text.size())};
  }

  // The set a text maps to at the initial size (tests and the benchmark
  // build colliding names).
  static size_t SetOf(std::string_view text) { return Mix(TextKey(text).hash) & (kSlots / 2 - 1); }

  uint64_t misses() const { return misses_; }
  size_t slots() const { return (set_mask_ + 1) * 2; }

 private:
  struct Slot {
    uint64_t w[4] = {0, 0, 0, 0};
    uint32_t len = ~0u;  // matches no text: empty slot
    uint32_t id = 0;
    const char* text = nullptr;  // the table's copy (long texts)
  };

  static size_t Mix(uint64_t h) { return static_cast<size_t>(h ^ (h >> 17)); }

  static __attribute__((always_inline)) bool Matches(const Slot& slot, std::string_view text,
                                                     const TextKey& key) {
    return slot.len == text.size() && slot.w[0] == key.w[0] && slot.w[1] == key.w[1] &&
           slot.w[2] == key.w[2] && slot.w[3] == key.w[3] &&
           (text.size() <= kShort || SameBytes(slot.text, text.data(), text.size()));
  }

  // The new name takes way 0; the one it displaces moves to way 1, evicting
  // the least recently filled. Returns the new name's slot.
  __attribute__((noinline)) const Slot* Miss(std::string_view text, const TextKey& key, Slot* set) {
    ++misses_;
    StringTable::Entry e = table_->Intern(text, key.hash);
    if (__builtin_expect(++misses_since_resize_ > 2 * slots(), 0) && slots() < kMaxSlots) {
      Grow();
      set = &slots_[2 * (Mix(key.hash) & set_mask_)];
    }
    set[1] = set[0];
    for (int i = 0; i < 4; ++i) set[0].w[i] = key.w[i];
    set[0].len = static_cast<uint32_t>(text.size());
    set[0].id = e.id;
    set[0].text = e.text.data();
    return &set[0];
  }

  // Twice the sets, refilled from the old table's entries (each rehashed by
  // its stored key: w[0] is the hash for a long text, and a short text's
  // hash is recomputed from its words).
  __attribute__((noinline)) void Grow() noexcept {
    misses_since_resize_ = 0;
    const size_t old_slots = slots();
    const size_t new_sets = (set_mask_ + 1) * 2;
    std::unique_ptr<Slot[]> bigger(new (std::nothrow) Slot[2 * new_sets]);
    if (!bigger) return;  // stays as it is; tried again after as many misses
    for (size_t i = 0; i < old_slots; ++i) {
      const Slot& s = slots_[i];
      if (s.len == ~0u) continue;
      const uint64_t hash = s.len <= kShort ? TextKey::HashOfWords(s.w, s.len) : s.w[0];
      Slot* set = &bigger[2 * (Mix(hash) & (new_sets - 1))];
      if (set[0].len == ~0u) {
        set[0] = s;
      } else if (set[1].len == ~0u) {
        set[1] = s;
      }
    }
    slots_ = std::move(bigger);
    set_mask_ = new_sets - 1;
  }

  StringTable* table_;
  std::unique_ptr<Slot[]> slots_;
  size_t set_mask_;
  uint64_t misses_ = 0;
  uint64_t misses_since_resize_ = 0;
};

}  // namespace tracer
