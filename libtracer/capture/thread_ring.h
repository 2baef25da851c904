// Single-producer single-consumer ring of Events: the owning application
// thread produces, the writer thread consumes. The producer keeps its own
// copy of the consumer position and rereads the shared one only when the ring
// looks full, so a push writes no cache line the writer writes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "libtracer/capture/event.h"

namespace tracer {

class ThreadRing {
 public:
  // Capacity in events: ring_bytes / sizeof(Event) rounded down to a power of
  // two, at least 16.
  explicit ThreadRing(uint64_t ring_bytes) {
    uint64_t want = ring_bytes / sizeof(Event);
    size_t cap = 16;
    while (cap * 2 <= want && cap < (size_t{1} << 30)) cap *= 2;
    capacity_ = cap;
    mask_ = cap - 1;
    slots_.reset(static_cast<Event*>(::operator new[](cap * sizeof(Event), std::align_val_t{64})));
    // Not touched here: a thread pays (in page faults) only for the part of
    // its ring it fills, and a recycled ring's pages are already resident.
  }

  // Empties the ring for a new owner (thread churn recycles rings). Only
  // when no producer or consumer uses it: the registry hands a drained ring
  // from the writer to a registering thread under its lock.
  void Reset() noexcept {
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_tail_ = 0;
  }

  size_t capacity() const noexcept { return capacity_; }

  // Producer: true when n more events fit while keeping `keep_free` slots.
  bool HasRoom(size_t n, size_t keep_free) noexcept {
    uint64_t head = head_.load(std::memory_order_relaxed);
    if (head + n + keep_free - cached_tail_ <= capacity_) return true;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return head + n + keep_free - cached_tail_ <= capacity_;
  }

  // Producer: writes n events; the caller checked HasRoom(n, ...).
  void PushUnchecked(const Event* events, size_t n) noexcept {
    uint64_t head = head_.load(std::memory_order_relaxed);
    for (size_t i = 0; i < n; ++i) slots_.get()[(head + i) & mask_] = events[i];
    head_.store(head + n, std::memory_order_release);
  }

  // Producer, in-place variant of PushUnchecked (no staging copy): the i-th
  // slot after the head, then Publish(n). The caller checked HasRoom(n, ...).
  Event* SlotAfterHead(size_t i) noexcept {
    return slots_.get() + ((head_.load(std::memory_order_relaxed) + i) & mask_);
  }
  void Publish(size_t n) noexcept {
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // Consumer: calls fn(const Event&) for every event available now, in order.
  template <typename Fn>
  size_t Drain(Fn&& fn) {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    uint64_t head = head_.load(std::memory_order_acquire);
    for (uint64_t i = tail; i != head; ++i) fn(slots_.get()[i & mask_]);
    tail_.store(head, std::memory_order_release);
    return static_cast<size_t>(head - tail);
  }

  // Consumer, with no producer (its thread exited): returns the pages past
  // the first `keep` bytes that the producer touched to the system (they
  // read back as zeros, touched again only if a later owner fills that
  // far). Whole pages inside the allocation only.
  void ReleasePagesBeyond(uint64_t keep) noexcept {
    const uint64_t used = std::min<uint64_t>(head_.load(std::memory_order_relaxed), capacity_);
    const uint64_t used_bytes = used * sizeof(Event);
    if (used_bytes <= keep) return;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<uintptr_t>(slots_.get());
    const uint64_t begin = (base + keep + page - 1) / page * page;
    const uint64_t end = (base + used_bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    resident_bytes_ = std::min(resident_bytes_, keep);
  }

  // Consumer: the ring is not touched when allocated (thread registration
  // stays cheap), so until the producer's first lap is done it would take a
  // page fault every 128 events on its hot path. The writer faults pages in
  // ahead of the producer instead (MADV_POPULATE_WRITE: the kernel maps them
  // writable without touching their contents, so it may run while the
  // producer writes): as far ahead as eight times what the producer wrote
  // since the last call, at least 16 KiB (a thread that records little
  // keeps a small footprint).
  void PrefaultAhead() noexcept {
    const uint64_t bytes = capacity_ * sizeof(Event);
    if (resident_bytes_ >= bytes || !populate_supported_) return;
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t written = head - std::min(head, head_at_prefault_);
    head_at_prefault_ = head;
    if (head >= capacity_) {  // a full lap: every page was written
      resident_bytes_ = bytes;
      return;
    }
    const uint64_t want = std::min(
        bytes, head * sizeof(Event) + std::max<uint64_t>(16 << 10, 8 * written * sizeof(Event)));
    if (want <= resident_bytes_) return;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<uintptr_t>(slots_.get());
    const uint64_t begin = (base + resident_bytes_) / page * page;
    const uint64_t end = (base + want + page - 1) / page * page;
#ifdef MADV_POPULATE_WRITE
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0 &&
        errno == EINVAL) {
      populate_supported_ = false;  // kernel before 5.14: faults stay inline
    }
#else
    (void)begin;
    (void)end;
    populate_supported_ = false;
#endif
    resident_bytes_ = want;
  }

  size_t SizeApprox() const noexcept {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_acquire));
  }

 private:
  struct FreeSlots {
    void operator()(Event* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<Event, FreeSlots> slots_;
  size_t capacity_ = 0;
  uint64_t mask_ = 0;
  // Producer-owned line.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;
  // Consumer-owned line.
  alignas(64) std::atomic<uint64_t> tail_{0};
  uint64_t resident_bytes_ = 0;    // prefix known to be faulted in
  uint64_t head_at_prefault_ = 0;  // head seen by the last PrefaultAhead
  bool populate_supported_ = true;
};

}  // namespace tracer
