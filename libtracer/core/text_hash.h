// The content key of an interned text, shared by the per-thread caches
// (intern_cache.h) and the process-wide table (string_table.h) so a cache
// miss hands its hash on instead of hashing the text again. Texts up to 32
// bytes are keyed by overlapping 8-byte loads that cover every byte
// (injective for a given length, so a cache hit needs no memcmp); longer
// texts by a hash of every byte (HashLong).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tracer {

// 64x64 -> 128-bit multiply, folded: a strong mix in one multiply, and
// independent calls overlap (no dependency chain through a running hash).
inline __attribute__((always_inline)) uint64_t Mum(uint64_t a, uint64_t b) noexcept {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t Load8(const char* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Hash of a text longer than 32 bytes (NVTX names of nested modules often
// are): four independent lanes over 32-byte blocks, the last block
// overlapping the end, so a 33..64-byte text costs two rounds of four
// parallel multiplies.
inline __attribute__((always_inline)) uint64_t HashLong(const char* s, size_t n) noexcept {
  constexpr uint64_t k0 = 0x9E3779B97F4A7C15ull, k1 = 0xff51afd7ed558ccdull,
                     k2 = 0xc4ceb9fe1a85ec53ull, k3 = 0xa0761d6478bd642full;
  uint64_t a = k0 ^ n, b = k1, c = k2, d = k3;
  const char* end = s + n - 32;
  for (const char* p = s; p < end; p += 32) {
    a = Mum(a ^ Load8(p), k1);
    b = Mum(b ^ Load8(p + 8), k2);
    c = Mum(c ^ Load8(p + 16), k3);
    d = Mum(d ^ Load8(p + 24), k0);
  }
  a = Mum(a ^ Load8(end), k2);
  b = Mum(b ^ Load8(end + 8), k3);
  c = Mum(c ^ Load8(end + 16), k0);
  d = Mum(d ^ Load8(end + 24), k1);
  return Mum(a ^ c, b ^ d ^ k0);
}

// memcmp(a, b, n) == 0 without a call, for the short texts NVTX names are.
inline __attribute__((always_inline)) bool SameBytes(const char* a, const char* b,
                                                     size_t n) noexcept {
  if (n >= 8) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      if (Load8(a + i) != Load8(b + i)) return false;
    }
    return Load8(a + n - 8) == Load8(b + n - 8);
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

struct TextKey {
  static constexpr size_t kShort = 32;

  uint64_t w[4] = {0, 0, 0, 0};  // the bytes (short texts) or w[0] = hash
  uint64_t hash = 0;

  TextKey() = default;
  __attribute__((always_inline)) TextKey(const char* s, size_t n) noexcept {
    if (n <= kShort) {
      Words(s, n, w);
      hash = HashOfWords(w, n);
    } else {
      hash = HashLong(s, n);
      w[0] = hash;
    }
  }
  explicit TextKey(std::string_view t) noexcept : TextKey(t.data(), t.size()) {}

  // The hash of a short text (n <= kShort) from its words.
  static __attribute__((always_inline)) uint64_t HashOfWords(const uint64_t* w, size_t n) noexcept {
    uint64_t h = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xff51afd7ed558ccdull) ^
                 (w[2] * 0xc4ceb9fe1a85ec53ull) ^ w[3] ^ n;
    return h ^ (h >> 29);
  }

 private:
  static uint64_t Load4(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  // Overlapping loads covering all n bytes (n <= 32).
  static void Words(const char* s, size_t n, uint64_t* w) {
    if (n >= 16) {
      w[0] = Load8(s);
      w[1] = Load8(s + 8);
      w[2] = Load8(s + n - 16);
      w[3] = Load8(s + n - 8);
    } else if (n >= 8) {
      w[0] = Load8(s);
      w[1] = Load8(s + n - 8);
    } else if (n >= 4) {
      w[0] = Load4(s) | (Load4(s + n - 4) << 32);
    } else if (n > 0) {
      w[0] = static_cast<uint8_t>(s[0]) |
             (static_cast<uint64_t>(static_cast<uint8_t>(s[n / 2])) << 8) |
             (static_cast<uint64_t>(static_cast<uint8_t>(s[n - 1])) << 16);
    }
  }
};

}  // namespace tracer
