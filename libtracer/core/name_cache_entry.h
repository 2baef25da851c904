// One cached ASCII name of the address-keyed name caches (PointerNameCache,
// per thread; SharedNameCache, one per process): the address it answers for,
// its id and its text, and the compares that prove a text passed at that
// address (or any other) is still that text. See pointer_name_cache.h for
// why the loads may read past a text's NUL and when they do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tracer {

// head first, 16-byte aligned: TryPredicted compares it with aligned loads.
struct alignas(64) NameCacheEntry {
  // Bytes (the NUL included) an entry keeps inline; longer texts compare
  // against the string table's copy.
  static constexpr size_t kInline = 48;
  static constexpr size_t kLongHead = kInline - sizeof(const char*);

  // The text with its NUL when n <= kInline; else its first kLongHead
  // bytes, then the string table's copy of it (LongText).
  alignas(16) char head[kInline] = {};
  const char* ptr = nullptr;  // the address this entry answers for
  uint32_t id = 0;
  uint16_t n = 0;  // bytes compared: the length plus the NUL
  // The entry hit after this one last time: an index into the table that
  // holds this entry. Written with release and read with acquire (entries of
  // the shared table are linked by one thread and followed by others).
  uint16_t next = 0;

  uint16_t Next() const noexcept { return __atomic_load_n(&next, __ATOMIC_ACQUIRE); }
  void SetNext(uint16_t i) noexcept { __atomic_store_n(&next, i, __ATOMIC_RELEASE); }

  const char* LongText() const {
    const char* text;
    std::memcpy(&text, head + kLongHead, sizeof(text));
    return text;
  }

  // Fills a free entry: `s` (len bytes and its NUL) with id, `text` the
  // string table's copy of it.
  void Fill(const char* s, size_t len, uint32_t new_id, const char* text) {
    ptr = s;
    n = static_cast<uint16_t>(len + 1);
    id = new_id;
    if (len + 1 <= kInline) {
      std::memcpy(head, text, len + 1);
    } else {
      std::memcpy(head, text, kLongHead);
      std::memcpy(head + kLongHead, &text, sizeof(text));
    }
  }

#if defined(__x86_64__)
  // An 8-byte load the compiler and the sanitizers see no bounds for: only
  // where the bytes are known to lie on a mapped page.
  static __attribute__((always_inline)) uint64_t LoadUnchecked8(const char* p) {
    uint64_t v;
    asm("movq (%1), %0" : "=r"(v) : "r"(p));
    return v;
  }
  static uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
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

  // The same with `want` at any address (bytes it has: the string table's
  // copy of a text, read within its length).
  static __attribute__((always_inline)) uint64_t Equal16Unaligned(const char* s, const char* want) {
    __m128i v;
    asm("movdqu (%1), %0" : "=x"(v) : "r"(s));
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(want));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, w)));
  }

  // Whether `s` holds this entry's text: its first n bytes, which lie on one
  // page when n >= 8 (entries are made only for such texts), compared word
  // by word; shorter ones byte by byte, stopping at s's NUL at the latest.
  __attribute__((always_inline)) bool Same(const char* s) const {
    const size_t len = n;
    const char* want = len <= kInline ? head : LongText();
    if (len >= 8) {
      size_t i = 0;
      for (; i + 8 < len; i += 8) {
        if (LoadUnchecked8(s + i) != Load8(want + i)) return false;
      }
      return LoadUnchecked8(s + len - 8) == Load8(want + len - 8);
    }
    for (size_t i = 0; i < len; ++i) {
      if (s[i] != want[i]) return false;
    }
    return true;
  }
#endif
};
static_assert(sizeof(NameCacheEntry) == 64 && offsetof(NameCacheEntry, head) == 0);

}  // namespace tracer
