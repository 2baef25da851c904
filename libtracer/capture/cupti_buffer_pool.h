// The activity buffers handed to CUPTI: at most `count` buffers of `size`
// bytes, allocated on first need and recycled, never more. CUPTI asks for a
// buffer on its own threads (one per producing thread with per-thread
// buffers) and hands completed ones back on its worker thread or inside
// cuptiActivityFlushAll; neither may block or do real work (docs/cupti.md section 4).
// So Acquire declines (nullptr: CUPTI drops and counts the records) instead
// of waiting or growing, Complete only queues, and the writer thread decodes
// the queue and Releases the buffers. The lock guards a few pointer moves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tracer {

class CuptiBufferPool {
 public:
  struct Completed {
    uint8_t* buffer;
    size_t valid_bytes;
  };

  CuptiBufferPool(size_t buffer_size, uint32_t count);
  ~CuptiBufferPool();
  CuptiBufferPool(const CuptiBufferPool&) = delete;
  CuptiBufferPool& operator=(const CuptiBufferPool&) = delete;

  size_t buffer_size() const { return size_; }
  // A free buffer, or nullptr when all `count` are out (counted).
  // (These lock a mutex, which may throw: callers sit below a guard.)
  uint8_t* Acquire();
  // Queues a buffer CUPTI has finished with; valid_bytes may be 0.
  void Complete(uint8_t* buffer, size_t valid_bytes);
  // Moves every queued buffer into *out (appended); the caller Releases each.
  void TakeCompleted(std::vector<Completed>* out);
  void Release(uint8_t* buffer);
  // Every buffer handed back and not yet Released (queued or being decoded),
  // appended to *out and pinned: one Released meanwhile stays out of the
  // free list (CUPTI cannot refill it) until Unpin, so another thread may
  // read it alongside the writer. Only a few pointer moves under the lock.
  void PinUndecoded(std::vector<Completed>* out);
  void Unpin(const std::vector<Completed>& pinned);

  // Buffer requests declined because the pool was empty (cumulative).
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }
  // Buffers ever allocated (never above count).
  uint32_t allocated() const;
  // Buffers handed to CUPTI and not yet completed.
  uint32_t outstanding() const;
  // Buffers handed back by CUPTI that this pool did not hand out (ignored).
  uint64_t foreign() const { return foreign_.load(std::memory_order_relaxed); }

 private:
  bool Owns(const uint8_t* buffer) const;

  const size_t size_;
  const uint32_t count_;
  mutable std::mutex mu_;
  std::vector<uint8_t*> all_;   // every buffer allocated, for Owns and the destructor
  std::vector<uint8_t*> free_;  // reserved to count_: pushes never allocate
  std::vector<Completed> completed_;
  std::vector<Completed> undecoded_;  // completed, not yet Released
  std::vector<uint8_t*> pinned_;      // one entry per pin (PinUndecoded)
  std::vector<uint8_t*> held_;        // Released while pinned
  uint32_t outstanding_ = 0;
  std::atomic<uint64_t> exhausted_{0};
  std::atomic<uint64_t> foreign_{0};
};

}  // namespace tracer
