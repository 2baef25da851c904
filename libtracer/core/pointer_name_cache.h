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
// the sanitizers do not instrument (x86-64 asm). A longer text's entry
// keeps its first kLongHead bytes inline (the same three loads compare
// them) and the rest is compared 16 bytes at a time with the string
// table's copy, when the text's bytes lie on its page: module names with
// adapters' suffixes run to 50-70 bytes, and the way round through TryHome
// cost them 3 ns a push+pop. Otherwise the push looks at the address's
// home entry (TryHome, Lookup):
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
//
// With a SharedNameCache (the NVTX entry points' caches have the process's
// one), names go there first: one copy for all threads, so thousands of
// names cycling on many threads stay in the CPU caches. Predictions then
// follow the shared entries (each thread keeps its own last and predicted
// entry; the links are shared, as threads running one model push its names
// in one order), TryHome looks there and then here, and a miss enters the
// name there. This table takes only what the shared one does not (an
// address reused for another text, the shared table full, or its lock busy
// as the miss came): it stays at its initial 8 KiB in the common case.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "libtracer/core/intern_cache.h"
#include "libtracer/core/name_cache_entry.h"
#include "libtracer/core/shared_name_cache.h"

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
  static constexpr size_t kInline = NameCacheEntry::kInline;

  // shared: looked at first, and names enter it (its ids must be those of
  // the content caches this one is used with); nullptr for none.
  explicit PointerNameCache(SharedNameCache* shared = nullptr)
      : entries_(new Entry[kInitialSlots]),
        mask_(kInitialSlots - 1),
        shared_(shared),
        linked_(shared ? shared->entries() : entries_.get()),
        last_(&linked_[0]),
        predicted_(&linked_[0]) {}

  // The id of the NUL-terminated text at `s` (not null), as content->Lookup
  // gives it.
  __attribute__((always_inline)) uint32_t Lookup(const char* s, InternCache* content) {
#if !defined(__x86_64__)
    return content->Lookup(s);  // no unchecked loads here: by content only
#else
    if (shared_) {
      const uint32_t i = shared_->Find(s);
      if (__builtin_expect(i != 0, 1)) return Hit(&linked_[i]);
    }
    const size_t home = SlotOf(s, slots());
    const Entry* e = &entries_[home];
    if (__builtin_expect(e->ptr == s, 1)) {
      if (__builtin_expect(e->Same(s), 1)) return HitOwn(home);
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
  // byte past its NUL masked out, not within kInline bytes of its page's
  // end (the loads read past it); a text longer than kInline only where all
  // its bytes lie on its page (LongSame).
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
      // The bytes equal from the first on: at most 16 or 48 (equal's bits
      // past the bytes compared are 0, so ~equal is never 0). All n of
      // them (the text and its NUL; n = 0: an empty entry, never) in one
      // compare; n > kInline: the first kLongHead here, the rest LongSame.
      const uint32_t same = static_cast<uint32_t>(__builtin_ctzll(~equal));
      if (__builtin_expect(static_cast<uint32_t>(n) - 1 < same, 1) ||
          (n > kInline && same >= kLongHead && LongSame(s, e))) {
        last_ = const_cast<Entry*>(e);
        predicted_ = &linked_[e->Next()];
        __builtin_prefetch(predicted_);
        return e->id;
      }
    }
    return kNoId;
#endif
  }

  // The second chance: the id when `s` is cached at its address with its
  // current text in the shared table, or at its home entry here (Lookup's
  // common cases), else kNoId.
  __attribute__((noinline)) uint64_t TryHome(const char* s) noexcept {
#if !defined(__x86_64__)
    return kNoId;
#else
    if (shared_) {
      const uint32_t i = shared_->Find(s);
      if (i != 0) return Hit(&linked_[i]);
    }
    const size_t home = SlotOf(s, slots());
    const Entry& e = entries_[home];
    if (e.ptr != s || !e.Same(s)) return kNoId;
    return HitOwn(home);
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
  using Entry = NameCacheEntry;
  static constexpr size_t kLongHead = NameCacheEntry::kLongHead;

#if defined(__x86_64__)
  static __attribute__((always_inline)) uint64_t Equal16(const char* s, const char* want) {
    return NameCacheEntry::Equal16(s, want);
  }

  // TryPredicted for a text longer than kInline (module names with
  // adapters' suffixes often are) whose first kLongHead bytes matched
  // e->head: the rest is compared with the string table's copy 16 bytes at
  // a time, the last 16 overlapping, when s's first n bytes lie on its page.
  static __attribute__((always_inline)) bool LongSame(const char* s, const Entry* e) {
    const size_t n = e->n;
    if ((reinterpret_cast<uintptr_t>(s) & 4095) + n > 4096) return false;
    const char* want = e->LongText();
    size_t i = kLongHead;
    for (; i + 16 < n; i += 16) {
      if (NameCacheEntry::Equal16Unaligned(s + i, want + i) != 0xFFFF) return false;
    }
    return NameCacheEntry::Equal16Unaligned(s + n - 16, want + n - 16) == 0xFFFF;
  }

  // A hit at entry i. Entries lie where their addresses hash, so a thread
  // cycling through thousands of names finds each entry out of its caches
  // (the hardware prefetcher cannot guess a hashed address): that load was
  // half the push's time at 5,000 names. Names come back in the same order
  // (a model's modules, step after step), so each entry remembers the one
  // hit after it last time and a hit prefetches that one, a push ahead.
  // e is one of the linked entries (linked_: the shared table's, or this
  // one's without it).
  __attribute__((always_inline)) uint32_t Hit(Entry* e) {
    Link(e);
    predicted_ = &linked_[e->Next()];
    __builtin_prefetch(predicted_);
    return e->id;
  }
  // A hit at entry i of this table: linked (and predicted) unless the
  // shared table is, which this one only backs up.
  __attribute__((always_inline)) uint32_t HitOwn(size_t i) {
    if (shared_) return entries_[i].id;
    return Hit(&entries_[i]);
  }
  // e (a linked entry) comes after the last one hit (or filled).
  void Link(Entry* e) noexcept {
    const uint16_t i = static_cast<uint16_t>(e - linked_);
    if (__builtin_expect(last_->Next() != i, 0)) last_->SetNext(i);
    last_ = e;
  }

  // The address is not at its home: the rest of its run (out of line, so
  // the one-name case stays short).
  __attribute__((noinline)) uint32_t Probe(const char* s, InternCache* content, size_t home) {
    for (size_t p = 1; p < kMaxProbes; ++p) {
      const size_t i = (home + p) & mask_;
      const Entry& e = entries_[i];
      if (e.ptr == s) {
        if (e.Same(s)) return HitOwn(i);
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
#if defined(__x86_64__)
    if (shared_) {
      const uint32_t entered = shared_->Insert(s, len, found.id, found.text.data());
      if (entered != 0) {
        Entry* e = &linked_[entered];
        Link(e);
        predicted_ = &linked_[e->Next()];
        return found.id;
      }
    }
#endif
    if (__builtin_expect(2 * (used_ + 1) > slots(), 0) && slots() < kMaxSlots) Grow();
    const size_t i = Place(s);
    Entry* e = &entries_[i];
    e->Fill(s, len, found.id, found.text.data());
    if (shared_) return found.id;  // not linked: see HitOwn
    // Predicted after the entry hit before it, from the next pass on.
    Link(e);
    predicted_ = &linked_[e->Next()];
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
    if (!shared_) {
      linked_ = entries_.get();
      last_ = &linked_[0];
      predicted_ = &linked_[0];
    }
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
  SharedNameCache* shared_;
  Entry* linked_;     // the entries predictions link: shared_'s, or entries_
  Entry* last_;       // the entry of the last hit
  Entry* predicted_;  // the entry hit after last_ last time (TryPredicted)
  uint64_t misses_ = 0;
};

}  // namespace tracer
