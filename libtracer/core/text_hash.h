// The content key of an interned text, shared by the per-thread caches
// (intern_cache.h) and the process-wide table (string_table.h) so a cache
// miss hands its hash on instead of hashing the text again. Texts up to 32
// bytes are keyed by overlapping 8-byte loads that cover every byte
// (injective for a given length, so a cache hit needs no memcmp); longer
// texts by a hash of every byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tracer {

inline __attribute__((always_inline)) uint64_t HashBytes(const char* p, size_t n) noexcept {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h;
}

struct TextKey {
  static constexpr size_t kShort = 32;

  uint64_t w[4] = {0, 0, 0, 0};  // the bytes (short texts) or w[0] = hash
  uint64_t hash = 0;

  TextKey() = default;
  __attribute__((always_inline)) TextKey(const char* s, size_t n) noexcept {
    if (n <= kShort) {
      Words(s, n, w);
      hash = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xff51afd7ed558ccdull) ^
             (w[2] * 0xc4ceb9fe1a85ec53ull) ^ w[3] ^ n;
      hash ^= hash >> 29;
    } else {
      hash = HashBytes(s, n);
      w[0] = hash;
    }
  }
  explicit TextKey(std::string_view t) noexcept : TextKey(t.data(), t.size()) {}

 private:
  static uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
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
