// Per-thread cache in front of InternCache for ASCII NVTX names, keyed by the
// string's address: string literals and Python's interned strings pass the
// same pointer for the same name on every call, so a push finds its id
// without strlen or hashing the text (the content lookup cost 13 ns of a
// 49 ns push+pop). An address alone proves nothing (a buffer is reused with
// other text), so a hit still compares the text with the copy the entry
// keeps: len + 1 bytes, the NUL included, word by word, which is what the
// content key costs to build, minus the hash and the strlen.
//
// Reading len + 1 bytes of a text that may now be shorter reads past its NUL:
// done only when those bytes lie on the text's first page (so no fault is
// possible), by loads the sanitizers do not instrument (x86-64 asm). Whether
// they do depends only on the address and the cached length, so it is
// decided once, when the entry is filled: an address whose cached text
// crosses a page is not cached (it takes the content path every time, as
// does any text elsewhere than x86-64). Texts under 8 bytes are compared
// byte by byte, stopping at the first difference, which never reads past
// the text's NUL.
//
// Two-way set-associative, 64-byte entries (one cache line each), indexed
// by a multiplicative hash of the address. A miss goes to the content cache
// (no lock for any text interned before: string_table.h) and refills the
// entry. It starts at 64 sets (8 KiB) and grows fourfold, up to kMaxSets
// (1 MiB), when its misses since the last resize exceed its entries, i.e.
// when the thread keeps cycling through more names than it holds (a large
// model's per-module ranges): 5,000 names cycling reach the largest size
// within about two passes. Growing allocates on the application thread, at
// most four times per thread, never under a lock, and a failed allocation
// keeps the current size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "libtracer/core/intern_cache.h"

namespace tracer {

class PointerNameCache {
 public:
  static constexpr size_t kInitialSets = 64;
  static constexpr size_t kMaxSets = 8192;
  // Bytes (the NUL included) an entry keeps inline; longer texts compare
  // against the string table's copy.
  static constexpr size_t kInline = 40;

  PointerNameCache() : entries_(new Entry[2 * kInitialSets]), set_mask_(kInitialSets - 1) {}

  // The id of the NUL-terminated text at `s` (not null), as content->Lookup
  // gives it.
  __attribute__((always_inline)) uint32_t Lookup(const char* s, InternCache* content) {
#if !defined(__x86_64__)
    return content->Lookup(s);  // no unchecked loads here: by content only
#endif
    Entry* set = &entries_[2 * SetOf(s)];
    if (set[0].ptr == s && Same(set[0], s)) return set[0].id;
    if (set[1].ptr == s && Same(set[1], s)) return set[1].id;
    return Miss(s, content, set);
  }

  // The set an address maps to in a cache of `sets` sets (tests build
  // colliding addresses with it).
  static size_t SetOf(const char* s, size_t sets) {
    const uint64_t h = reinterpret_cast<uintptr_t>(s) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 40) & (sets - 1);
  }

  uint64_t misses() const { return misses_; }
  size_t sets() const { return set_mask_ + 1; }

 private:
  struct alignas(64) Entry {
    const char* ptr = nullptr;   // the address this entry answers for
    const char* text = nullptr;  // the string table's copy (NUL-terminated)
    uint32_t n = 0;              // bytes compared: the length plus the NUL
    uint32_t id = 0;
    char head[kInline] = {};  // the first min(n, kInline) bytes
  };
  static_assert(sizeof(Entry) == 64);

  size_t SetOf(const char* s) const { return SetOf(s, sets()); }

  // An 8-byte load the compiler and the sanitizers see no bounds for: only
  // where the bytes are known to lie on a mapped page (see the header).
  static __attribute__((always_inline)) uint64_t LoadUnchecked8(const char* p) {
    uint64_t v;
    asm("movq (%1), %0" : "=r"(v) : "r"(p));
    return v;
  }

  static __attribute__((always_inline)) bool Same(const Entry& e, const char* s) {
    const size_t n = e.n;
    const char* want = n <= kInline ? e.head : e.text;
#if defined(__x86_64__)
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
#else
    (void)want;
    (void)s;
    return false;  // not reached: Lookup goes by content
#endif
  }

  __attribute__((noinline)) uint32_t Miss(const char* s, InternCache* content, Entry* set) {
    ++misses_;
    const size_t len = std::strlen(s);
    const StringTable::Entry found = content->LookupEntry(std::string_view(s, len));
    if (__builtin_expect(++misses_since_resize_ > 2 * sets(), 0) && sets() < kMaxSets) {
      Grow();
      set = &entries_[2 * SetOf(s)];
    }
    // A text changed under a cached address refills that entry; otherwise
    // the new one takes way 0 and the one it displaces moves to way 1.
    Entry* e = &set[0];
    if (set[1].ptr == s) {
      e = &set[1];
    } else if (set[0].ptr != s) {
      set[1] = set[0];
    }
    e->ptr = s;
    e->text = found.text.data();
    e->n = static_cast<uint32_t>(len + 1);
    e->id = found.id;
    std::memcpy(e->head, found.text.data(), std::min(len + 1, kInline));
    // Not cached (the entry matches no address): a text whose bytes cross
    // a page (see the header), or whose length does not fit n.
    if ((reinterpret_cast<uintptr_t>(s) & 4095) + len + 1 > 4096) e->ptr = nullptr;
    return found.id;
  }

  // Four times the sets (at most kMaxSets), empty: the names the thread
  // still uses come back on their next miss.
  __attribute__((noinline)) void Grow() noexcept {
    misses_since_resize_ = 0;
    const size_t new_sets = std::min(kMaxSets, 4 * sets());
    std::unique_ptr<Entry[]> bigger(new (std::nothrow) Entry[2 * new_sets]);
    if (!bigger) return;  // stays as it is; tried again after as many misses
    entries_ = std::move(bigger);
    set_mask_ = new_sets - 1;
  }

  std::unique_ptr<Entry[]> entries_;
  size_t set_mask_;
  uint64_t misses_ = 0;
  uint64_t misses_since_resize_ = 0;
};

}  // namespace tracer
