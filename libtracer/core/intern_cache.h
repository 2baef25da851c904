// Per-thread cache in front of the process-wide StringTable: a fixed-size,
// direct-mapped table, so a hit costs one strlen, a few word loads and
// compares, and no lock, allocation or call into the table. Keyed by content,
// not by pointer: NVTX clients (Python, PyTorch) pass freshly built strings
// at reused addresses. Texts up to 32 bytes are keyed by overlapping 8-byte
// loads that cover every byte (injective for a given length), so a hit needs
// no memcmp; longer texts by hash plus memcmp.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "libtracer/core/string_table.h"

namespace tracer {

inline uint64_t HashBytes(const char* p, size_t n) noexcept {
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

class InternCache {
 public:
  static constexpr size_t kSlots = 1024;
  static constexpr size_t kShort = 32;

  explicit InternCache(StringTable* table = &GlobalStrings()) : table_(table) {}

  uint32_t Lookup(const char* text) {
    return text ? Lookup(std::string_view(text, std::strlen(text))) : 0;
  }

  uint32_t Lookup(std::string_view text) {
    const char* s = text.data();
    size_t n = text.size();
    uint64_t w[4] = {0, 0, 0, 0};
    uint64_t h;
    if (n <= kShort) {
      Words(s, n, w);
      h = (w[0] * 0x9E3779B97F4A7C15ull) ^ (w[1] * 0xff51afd7ed558ccdull) ^
          (w[2] * 0xc4ceb9fe1a85ec53ull) ^ w[3] ^ n;
      h ^= h >> 29;
    } else {
      h = HashBytes(s, n);
      w[0] = h;
    }
    Slot& slot = slots_[(h ^ (h >> 17)) & (kSlots - 1)];
    if (slot.len == n && slot.w[0] == w[0] && slot.w[1] == w[1] && slot.w[2] == w[2] &&
        slot.w[3] == w[3] && (n <= kShort || std::memcmp(slot.text, s, n) == 0)) {
      return slot.id;
    }
    return Miss(text, w, slot);
  }

  uint64_t misses() const { return misses_; }

 private:
  struct Slot {
    uint64_t w[4] = {0, 0, 0, 0};
    uint32_t len = ~0u;  // matches no text: empty slot
    uint32_t id = 0;
    const char* text = nullptr;  // the table's copy (long texts)
  };

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

  __attribute__((noinline)) uint32_t Miss(std::string_view text, const uint64_t* w, Slot& slot) {
    ++misses_;
    StringTable::Entry e = table_->Intern(text);
    for (int i = 0; i < 4; ++i) slot.w[i] = w[i];
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
