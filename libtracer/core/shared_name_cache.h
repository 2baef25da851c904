// The process's address-keyed name cache, one copy read by every thread
// (PointerNameCache looks here first). Per-thread tables hold one entry per
// name per thread: at 5,000 names cycling on 64 threads that is 20 MiB of
// entries touched per pass, more than the CPU caches and TLBs hold, and the
// push+pop cost rose from 33 ns at 1-16 threads to 49 ns at 64. One shared
// copy (5,000 names: 320 KiB) stays in cache for all of them.
//
// Published immutably: an entry is written once, by the thread that missed,
// under a lock no other thread waits for (a thread that finds it taken does
// not cache the name here; its own table takes it), then made visible by a
// release store of its index into the address index. It never changes
// afterwards (but for its prediction link, NameCacheEntry::next, a hint
// written with release and followed with acquire: any index it holds is a
// published entry, checked by its text like any other). So a reader takes
// no lock and sees an entry whole, and every id it returns was checked
// against the text passed, as in the per-thread table.
//
// An address is entered once: an address that comes back with another text
// (a reused buffer) stays with its first entry here and the thread's own
// table answers for its other texts, so reused buffers cannot fill this
// table. Bounded: kCapacity entries (1 MiB) and an index of 2 * kCapacity
// 32-bit slots (128 KiB), zero pages until used; when full (or an address's
// probe run is), names go to the per-thread tables as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "libtracer/core/name_cache_entry.h"

namespace tracer {

class SharedNameCache {
 public:
  using Entry = NameCacheEntry;
  // Entry 0 is never filled: an index of 0 means none (an empty index slot,
  // a link not made yet).
  static constexpr size_t kCapacity = 16384;
  static constexpr size_t kSlots = 2 * kCapacity;
  static constexpr size_t kMaxProbes = 8;
  static_assert(kCapacity <= 65536, "NameCacheEntry::next is 16 bits");

  SharedNameCache() = default;
  SharedNameCache(const SharedNameCache&) = delete;
  SharedNameCache& operator=(const SharedNameCache&) = delete;

  // Entries by index (links, predictions); index 0 is never filled.
  Entry* entries() noexcept { return entries_; }

#if defined(__x86_64__)
  // The index of the entry that answers for `s` with its current text, or 0.
  __attribute__((always_inline)) uint32_t Find(const char* s) const noexcept {
    const uint64_t h = Hash(s);
    for (size_t p = 0; p < kMaxProbes; ++p) {
      const uint32_t v = slots_[(h + p) & (kSlots - 1)].load(std::memory_order_acquire);
      if (v == 0) return 0;
      if ((v >> 16) != Tag(h)) continue;
      const Entry& e = entries_[v & 0xFFFF];
      if (e.ptr != s) continue;
      return e.Same(s) ? (v & 0xFFFF) : 0;
    }
    return 0;
  }

  // Enters `s` (len bytes, its first len + 1 on one page) with `id`, `text`
  // the string table's copy. Returns its entry's index, or 0 when it is not
  // entered: the lock taken by another thread, the table or the address's
  // probe run full, or the address entered before with another text. Never
  // waits.
  uint32_t Insert(const char* s, size_t len, uint32_t id, const char* text) noexcept;
#endif

  // In a forked child: an Insert the fork cut short (its thread does not
  // exist here) no longer keeps the others out. Its entry was not
  // published, so the next Insert may fill it again.
  void AfterForkInChild() noexcept { busy_.store(false, std::memory_order_relaxed); }

  // Entries filled (tests).
  size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  // The index's home slot in its high bits, a tag in its low 16.
  static uint64_t Hash(const char* s) noexcept {
    return (reinterpret_cast<uintptr_t>(s) * 0x9E3779B97F4A7C15ull) >> 32;
  }
  static uint32_t Tag(uint64_t h) noexcept { return static_cast<uint32_t>(h >> 16) & 0xFFFF; }

  Entry entries_[kCapacity + 1];
  // An entry's index in the low 16 bits (0: empty), its address's Tag above.
  std::atomic<uint32_t> slots_[kSlots] = {};
  std::atomic<uint32_t> count_{0};  // entries filled, 1..count_
  std::atomic<bool> busy_{false};   // an Insert is under way
};

// The cache for names of GlobalStrings() (ids from that table only).
SharedNameCache& GlobalSharedNames();

}  // namespace tracer
