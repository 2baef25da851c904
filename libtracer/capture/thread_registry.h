// The threads of one session: registration takes the lock once per thread;
// the writer takes a snapshot to drain, and frees a thread's state after the
// thread exited and its ring was drained.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "libtracer/capture/ring_budget.h"
#include "libtracer/capture/thread_state.h"

namespace tracer {

class ThreadRegistry {
 public:
  // ring_limit bounds all live rings together (ring_budget.h).
  explicit ThreadRegistry(uint64_t ring_bytes, uint64_t ring_limit = UINT64_MAX)
      : ring_bytes_(ring_bytes), budget_(ring_limit) {}
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // nullptr when out of thread ids (2^22); throws when out of memory.
  ThreadState* Register(uint64_t os_tid, uint64_t pthread_id);
  void Snapshot(std::vector<ThreadState*>* out);
  // Frees states; the caller drained them after they exited.
  void Remove(const std::vector<ThreadState*>& states);
  // An id for a thread that never touched NVTX (CUPTI's threads).
  uint32_t AllocateId();

  void LockForFork() { mu_.lock(); }
  void UnlockAfterFork() { mu_.unlock(); }

 private:
  const uint64_t ring_bytes_;
  RingBudget budget_;
  std::mutex mu_;
  std::vector<ThreadState*> threads_;
  uint32_t next_id_ = 1;
};

}  // namespace tracer
