#include "libtracer/core/shared_name_cache.h"

namespace tracer {

#if defined(__x86_64__)
uint32_t SharedNameCache::Insert(const char* s, size_t len, uint32_t id,
                                 const char* text) noexcept {
  if (len + 1 > 65535) return 0;  // n is 16 bits
  if (busy_.exchange(true, std::memory_order_acquire)) return 0;
  uint32_t found = 0;
  size_t empty = kSlots;
  const uint64_t h = Hash(s);
  for (size_t p = 0; p < kMaxProbes; ++p) {
    const size_t i = (h + p) & (kSlots - 1);
    const uint32_t v = slots_[i].load(std::memory_order_relaxed);
    if (v == 0) {
      empty = i;
      break;
    }
    const Entry& e = entries_[v & 0xFFFF];
    if (e.ptr == s) {  // entered before: this text (another thread's), or not
      if (e.Same(s)) found = v & 0xFFFF;
      break;
    }
  }
  const uint32_t n = count_.load(std::memory_order_relaxed);
  if (found == 0 && empty != kSlots && n < kCapacity) {
    found = n + 1;
    entries_[found].Fill(s, len, id, text);
    count_.store(found, std::memory_order_relaxed);
    slots_[empty].store(Tag(h) << 16 | found, std::memory_order_release);
  }
  busy_.store(false, std::memory_order_release);
  return found;
}
#endif

namespace {
// Constant-initialized (all zero, in .bss): its pages stay untouched until
// used, and no thread runs a constructor over 1 MiB.
constinit SharedNameCache g_shared_names;
}  // namespace

SharedNameCache& GlobalSharedNames() { return g_shared_names; }

}  // namespace tracer
