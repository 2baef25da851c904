// The threads of one session. Registration (a thread's first NVTX call) is
// cheap and takes only a short lock over a free list: it reuses the state of
// a thread that exited and whose ring the writer drained, or allocates a new
// one outside any lock; a new state is published on a lock-free list the
// writer walks without a lock. States are never freed while the registry
// lives, so memory follows the most threads alive at once (plus exited ones
// not yet drained), not the number of threads ever started.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "libtracer/capture/ring_budget.h"
#include "libtracer/capture/thread_state.h"

namespace tracer {

class ThreadRegistry {
 public:
  // Exited threads waiting for the writer before a thread exit asks it for a
  // drain (to recycle them) rather than waiting for the flush interval.
  static constexpr uint32_t kRecycleBatch = 64;

  // ring_limit bounds all rings together (ring_budget.h): a new state's ring
  // is sized by what is left of it; a recycled state keeps its ring.
  // yield_when_nearly_full: TRACER_BUFFER_FULL, for every ring (ThreadRing).
  explicit ThreadRegistry(uint64_t ring_bytes, uint64_t ring_limit = UINT64_MAX,
                          bool yield_when_nearly_full = true)
      : ring_bytes_(ring_bytes),
        yield_when_nearly_full_(yield_when_nearly_full),
        budget_(ring_limit) {}
  ~ThreadRegistry();
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // nullptr when out of thread ids or slots; throws when out of memory.
  ThreadState* Register(uint64_t os_tid, uint64_t pthread_id);
  // The states in use (live threads and exited ones not yet recycled).
  // Lock-free: never waits on a registering thread.
  void Snapshot(std::vector<ThreadState*>* out) const;
  // The writer drained these states after their threads exited: they go
  // back to the free list (one short lock for the whole batch).
  void Recycle(const std::vector<ThreadState*>& states);
  // An id for a thread that never touched NVTX (CUPTI's threads); 0 when
  // out of ids.
  uint32_t AllocateId() noexcept;

  // A registered thread exited (its thread_local destructor). True when
  // enough exited threads wait that the writer should drain now.
  bool NoteExit() noexcept {
    return exited_waiting_.fetch_add(1, std::memory_order_relaxed) + 1 >= kRecycleBatch;
  }

  // The exiting owner of `state` hands its intern cache back for the next
  // registration (before it marks the state exited).
  void ReturnCache(ThreadState* state) noexcept;

  // States ever allocated (the memory bound) and states waiting for reuse.
  // Rings keep at most kKeptRingBytes resident while they wait.
  static constexpr uint64_t kKeptRingBytes = 64 << 10;
  size_t allocated() const noexcept { return allocated_.load(std::memory_order_relaxed); }
  size_t free_count();
  // The ring a new thread asks for and the bound on all rings together
  // (what the drop messages name).
  uint64_t ring_bytes() const noexcept { return ring_bytes_; }
  uint64_t ring_limit() const noexcept { return budget_.limit(); }

  void LockForFork() { free_mu_.lock(); }
  void UnlockAfterFork() { free_mu_.unlock(); }

 private:
  std::unique_ptr<InternCacheBlock> PooledCache() noexcept;

  const uint64_t ring_bytes_;
  const bool yield_when_nearly_full_;
  RingBudget budget_;
  std::atomic<ThreadState*> all_{nullptr};
  std::atomic<uint32_t> next_id_{1};
  std::atomic<uint32_t> next_slot_{1};
  std::atomic<size_t> allocated_{0};
  std::atomic<uint32_t> exited_waiting_{0};
  std::mutex free_mu_;
  ThreadState* free_ = nullptr;              // under free_mu_
  size_t free_count_ = 0;                    // under free_mu_
  std::mutex cache_mu_;                      // the writer never takes it
  InternCacheBlock* free_caches_ = nullptr;  // under cache_mu_
};

}  // namespace tracer
