// Per-thread cache in front of InternCache for ASCII NVTX names, keyed by the
// string's address: string literals and Python's interned strings pass the
// same pointer for the same name on every call, so a push finds its id
// without strlen or hashing the text (the content lookup cost 13 ns of a
// 49 ns push+pop). An address alone proves nothing (a buffer is reused with
// other text), so a hit still compares the text with the copy the entry
// keeps: len + 1 bytes, the NUL included, word by word, which is what the
// content key costs to build, minus the hash and the strlen.
//
// Two ways to a hit. The NVTX push first tries the entry predicted to be
// hit next (TryPredicted): names come back in the order they came (a
// model's modules, step after step; one name over and over), so each entry
// remembers the entry hit after it last time. That entry is checked by its
// text alone, whatever the address: no hashing, and the id is the text's
// either way. Its text (kInline = 48 bytes inline, the NUL included) is
// compared 16 bytes at a time, one load for texts of 16 bytes or fewer,
// else three, each byte past the cached NUL masked out: no loop and no
// branch on the length. Those loads read up to 48 bytes from the text,
// past its NUL when it is shorter: only when they lie on the text's page
// (so no fault is possible; checked on the address each time), by loads
// the sanitizers do not instrument (x86-64 asm). Otherwise, and for longer
// texts, the push looks at the address's home entry (TryHome, Lookup):
// its address must match, and its text is compared word by word up to
// the cached length (bytes under 8 byte by byte, stopping at the first
// difference, which never reads past the text's NUL). A text whose cached
// length crosses its page is not cached (it takes the content path every
// time, as does any text elsewhere than x86-64).
//
// Open addressing with linear probing, 64-byte entries (one cache line
// each), homed by a multiplicative hash of the address. A set-associative
// layout (two ways, before) thrashes when a thread cycles through thousands
// of names: every set that more names map to than it has ways misses on each
// of them, every pass (about one push in eight at 5,000 names in its largest
// size). Probing instead keeps every name that fits: an address lives within
// kMaxProbes entries of its home and entries are never emptied, so a lookup
// stops at the first empty entry or after kMaxProbes. A miss goes to the
// content cache (no lock for any text interned before: string_table.h) and
// fills the first empty entry of the run, or refills the entry of its
// address (its text changed); with no room within kMaxProbes it replaces
// one of them (it stays correct: every answer is checked against the text).
// The table starts at 128 entries (8 KiB) and grows fourfold, up to
// kMaxSlots (1 MiB), when more than half of it is in use, moving the
// entries it holds: 5,000 names cycling settle at 16,384 entries, under a
// third full, within one pass. Growing allocates on the application thread,
// at most four times per thread, never under a lock, and a failed
// allocation keeps the current size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "libtracer/core/intern_cache.h"

namespace tracer {

class PointerNameCache {
 public:
  static constexpr size_t kInitialSlots = 128;
  static constexpr size_t kMaxSlots = 16384;
  static_assert(kMaxSlots <= 65536, "Entry::next is 16 bits");
  // Entries a lookup looks at, from the address's home on.
  static constexpr size_t kMaxProbes = 8;
  // Bytes (the NUL included) an entry keeps inline; longer texts compare
  // against the string table's copy.
  static constexpr size_t kInline = 48;

  PointerNameCache()
      : entries_(new Entry[kInitialSlots]),
        mask_(kInitialSlots - 1),
        last_(&entries_[0]),
        predicted_(&entries_[0]) {}

  // The id of the NUL-terminated text at `s` (not null), as content->Lookup
  // gives it.
  __attribute__((always_inline)) uint32_t Lookup(const char* s, InternCache* content) {
#if !defined(__x86_64__)
    return content->Lookup(s);  // no unchecked loads here: by content only
#else
    const size_t home = SlotOf(s, slots());
    const Entry* e = &entries_[home];
    if (__builtin_expect(e->ptr == s, 1)) {
      if (__builtin_expect(Same(*e, s), 1)) return Hit(home);
      return Miss(s, content);
    }
    return Probe(s, content, home);
#endif
  }

  // Lookup's hits alone, for the NVTX push hot path: nothing called,
  // allocated or thrown. The id when `s` holds the text of the entry
  // predicted to be hit next; else kNoId (then TryHome or Lookup).
  //
  // The predicted entry (the one hit after the last hit's entry, the last
  // time it was hit) is checked by content only, with no hashing: the id is
  // the text's, whatever its address. Its text is compared 16 bytes at a
  // time, as many as it has (one for 16 bytes or fewer, else three), each
  // byte past its NUL masked out; a text kept inline only (kInline) and
  // not within kInline bytes of its page's end (the loads read past it).
  static constexpr uint64_t kNoId = uint64_t{1} << 32;  // TryPredicted, TryHome: not found
  __attribute__((always_inline)) uint64_t TryPredicted(const char* s) noexcept {
#if !defined(__x86_64__)
    return kNoId;
#else
    const Entry* e = predicted_;
    const size_t n = e->n;
    if (__builtin_expect((reinterpret_cast<uintptr_t>(s) & 4095) <= 4096 - kInline, 1)) {
      uint64_t equal = Equal16(s, e->head);
      if (n > 16) {
        equal |= Equal16(s + 16, e->head + 16) << 16 | Equal16(s + 32, e->head + 32) << 32;
      }
      // Bits 0..n-1 all set: the text and its NUL (n = 0: an empty entry;
      // n > kInline: not inline).
      if (__builtin_expect((~equal << ((64 - n) & 63)) == 0 && n - 1 < kInline, 1)) {
        last_ = const_cast<Entry*>(e);
        predicted_ = &entries_[e->next];
        __builtin_prefetch(predicted_);
        return e->id;
      }
    }
    return kNoId;
#endif
  }

  // The second chance: the id when `s` is cached at its address's home
  // entry with its current text (Lookup's common case), else kNoId.
  __attribute__((noinline)) uint64_t TryHome(const char* s) noexcept {
#if !defined(__x86_64__)
    return kNoId;
#else
    const size_t home = SlotOf(s, slots());
    const Entry& e = entries_[home];
    if (e.ptr != s || !Same(e, s)) return kNoId;
    return Hit(home);
#endif
  }

  // The home entry of an address in a table of `slots` entries (tests build
  // colliding addresses with it).
  static size_t SlotOf(const char* s, size_t slots) {
    const uint64_t h = reinterpret_cast<uintptr_t>(s) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 40) & (slots - 1);
  }

  uint64_t misses() const { return misses_; }
  size_t slots() const { return mask_ + 1; }
  size_t used() const { return used_; }

 private:
  // head first, 16-byte aligned: TryPredicted compares it with aligned loads.
  struct alignas(64) Entry {
    // The text with its NUL when n <= kInline; else its first kLongHead
    // bytes, then the string table's copy of it (LongText).
    alignas(16) char head[kInline] = {};
    const char* ptr = nullptr;  // the address this entry answers for
    uint32_t id = 0;
    uint16_t n = 0;     // bytes compared: the length plus the NUL
    uint16_t next = 0;  // the entry hit after this one last time (Hit)
  };
  static_assert(sizeof(Entry) == 64 && offsetof(Entry, head) == 0);
  static constexpr size_t kLongHead = kInline - sizeof(const char*);

  static const char* LongText(const Entry& e) {
    const char* text;
    std::memcpy(&text, e.head + kLongHead, sizeof(text));
    return text;
  }

#if defined(__x86_64__)
  // An 8-byte load the compiler and the sanitizers see no bounds for: only
  // where the bytes are known to lie on a mapped page (see the header).
  static __attribute__((always_inline)) uint64_t LoadUnchecked8(const char* p) {
    uint64_t v;
    asm("movq (%1), %0" : "=r"(v) : "r"(p));
    return v;
  }

  // Bit i set: byte i of s equals byte i of want (16 bytes; want aligned).
  // s's bytes are loaded unchecked: only where they lie on s's page.
  static __attribute__((always_inline)) uint64_t Equal16(const char* s, const char* want) {
    __m128i v;
    asm("movdqu (%1), %0" : "=x"(v) : "r"(s));
    const __m128i w = _mm_load_si128(reinterpret_cast<const __m128i*>(want));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, w)));
  }

  static __attribute__((always_inline)) bool Same(const Entry& e, const char* s) {
    const size_t n = e.n;
    const char* want = n <= kInline ? e.head : LongText(e);
    if (n >= 8) {  // s's first n bytes lie on one page (Miss)
      size_t i = 0;
      for (; i + 8 < n; i += 8) {
        if (LoadUnchecked8(s + i) != Load8(want + i)) return false;
      }
      return LoadUnchecked8(s + n - 8) == Load8(want + n - 8);
    }
    for (size_t i = 0; i < n; ++i) {
      if (s[i] != want[i]) return false;  // stops at s's NUL at the latest
    }
    return true;
  }

  // A hit at entry i. Entries lie where their addresses hash, so a thread
  // cycling through thousands of names finds each entry out of its caches
  // (the hardware prefetcher cannot guess a hashed address): that load was
  // half the push's time at 5,000 names. Names come back in the same order
  // (a model's modules, step after step), so each entry remembers the one
  // hit after it last time and a hit prefetches that one, a push ahead.
  __attribute__((always_inline)) uint32_t Hit(size_t i) {
    Link(i);
    const Entry& e = entries_[i];
    predicted_ = &entries_[e.next];
    __builtin_prefetch(predicted_);
    return e.id;
  }
  // Entry i comes after the last one hit (or filled).
  void Link(size_t i) noexcept {
    if (__builtin_expect(last_->next != i, 0)) last_->next = static_cast<uint16_t>(i);
    last_ = &entries_[i];
  }

  // The address is not at its home: the rest of its run (out of line, so
  // the one-name case stays short).
  __attribute__((noinline)) uint32_t Probe(const char* s, InternCache* content, size_t home) {
    for (size_t p = 1; p < kMaxProbes; ++p) {
      const size_t i = (home + p) & mask_;
      const Entry& e = entries_[i];
      if (e.ptr == s) {
        if (Same(e, s)) return Hit(i);
        break;
      }
      if (e.ptr == nullptr) break;
    }
    return Miss(s, content);
  }
#endif

  __attribute__((noinline)) uint32_t Miss(const char* s, InternCache* content) {
    ++misses_;
    const size_t len = std::strlen(s);
    const StringTable::Entry found = content->LookupEntry(std::string_view(s, len));
    // Not cached (no entry answers for it): a text whose bytes cross a page
    // (see the header).
    if ((reinterpret_cast<uintptr_t>(s) & 4095) + len + 1 > 4096) return found.id;
    if (__builtin_expect(2 * (used_ + 1) > slots(), 0) && slots() < kMaxSlots) Grow();
    const size_t i = Place(s);
    Entry* e = &entries_[i];
    e->ptr = s;
    e->n = static_cast<uint16_t>(len + 1);
    e->id = found.id;
    if (len + 1 <= kInline) {
      std::memcpy(e->head, found.text.data(), len + 1);
    } else {
      std::memcpy(e->head, found.text.data(), kLongHead);
      const char* text = found.text.data();
      std::memcpy(e->head + kLongHead, &text, sizeof(text));
    }
    // Predicted after the entry hit before it, from the next pass on.
    Link(i);
    predicted_ = &entries_[e->next];
    return found.id;
  }

  // The index of the entry `s` is to be written to: its own (a text changed
  // under a cached address), else the first empty one of its run, else (the
  // run is full for kMaxProbes) one of them in turn.
  size_t Place(const char* s) {
    const size_t home = SlotOf(s, slots());
    for (size_t p = 0; p < kMaxProbes; ++p) {
      const size_t i = (home + p) & mask_;
      if (entries_[i].ptr == s) return i;
      if (entries_[i].ptr == nullptr) {
        ++used_;
        return i;
      }
    }
    return (home + misses_ % kMaxProbes) & mask_;
  }

  // Four times the entries (at most kMaxSlots), the ones in use moved over.
  __attribute__((noinline)) void Grow() noexcept {
    const size_t new_slots = std::min(kMaxSlots, 4 * slots());
    std::unique_ptr<Entry[]> bigger(new (std::nothrow) Entry[new_slots]);
    if (!bigger) return;  // stays as it is; tried again on the next miss
    std::unique_ptr<Entry[]> old = std::move(entries_);
    const size_t old_slots = slots();
    entries_ = std::move(bigger);
    mask_ = new_slots - 1;
    used_ = 0;
    last_ = &entries_[0];
    predicted_ = &entries_[0];
    for (size_t i = 0; i < old_slots; ++i) {
      if (old[i].ptr == nullptr) continue;
      const size_t j = Place(old[i].ptr);
      if (entries_[j].ptr == nullptr) {
        entries_[j] = old[i];
        entries_[j].next = 0;  // old indices
      }                        // else a full run: back on a miss
    }
  }

  std::unique_ptr<Entry[]> entries_;
  size_t mask_;
  size_t used_ = 0;
  Entry* last_;       // the entry of the last hit
  Entry* predicted_;  // the entry hit after last_ last time (TryPredicted)
  uint64_t misses_ = 0;
};

}  // namespace tracer
