#include "libtracer/capture/thread_registry.h"

#include <memory>
#include <utility>

namespace tracer {

namespace {
// Slots go into bits 40..61 of range instance ids (thread_state.h).
constexpr uint32_t kMaxSlot = (1u << 22) - 1;
// ThreadDef ids; one per thread ever seen.
constexpr uint32_t kMaxThreadId = 0x7fffffffu;

uint32_t TakeBelow(std::atomic<uint32_t>& next, uint32_t max) noexcept {
  uint32_t id = next.load(std::memory_order_relaxed);
  do {
    if (id > max) return 0;
  } while (!next.compare_exchange_weak(id, id + 1, std::memory_order_relaxed));
  return id;
}
}  // namespace

ThreadRegistry::~ThreadRegistry() {
  ThreadState* s = all_.load(std::memory_order_acquire);
  while (s) {
    ThreadState* next = s->next_all_;
    delete s;
    s = next;
  }
  while (free_caches_) delete std::exchange(free_caches_, free_caches_->next_free);
}

std::unique_ptr<InternCacheBlock> ThreadRegistry::PooledCache() noexcept {
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (!free_caches_) return nullptr;
  return std::unique_ptr<InternCacheBlock>(std::exchange(free_caches_, free_caches_->next_free));
}

void ThreadRegistry::ReturnCache(ThreadState* state) noexcept {
  InternCacheBlock* block = state->cache_.release();
  if (!block) return;
  std::lock_guard<std::mutex> lock(cache_mu_);
  block->next_free = free_caches_;
  free_caches_ = block;
}

ThreadState* ThreadRegistry::Register(uint64_t os_tid, uint64_t pthread_id) {
  const uint32_t id = TakeBelow(next_id_, kMaxThreadId);
  if (id == 0) return nullptr;
  ThreadState* state = nullptr;
  {
    std::lock_guard<std::mutex> lock(free_mu_);
    if (free_) {
      state = free_;
      free_ = state->next_free_;
      --free_count_;
    }
  }
  if (state) {
    if (!state->cache_) {  // handed back when its last owner exited
      try {
        state->cache_ = PooledCache();
        if (!state->cache_) state->cache_ = std::make_unique<InternCacheBlock>();
      } catch (...) {
        std::lock_guard<std::mutex> lock(free_mu_);
        state->next_free_ = free_;
        free_ = state;
        ++free_count_;
        throw;
      }
    }
    // The writer stopped looking at it before recycling it (in_use false);
    // the lock above orders its last reads before these writes.
    state->Reuse(id, os_tid, pthread_id);
    state->in_use.store(true, std::memory_order_release);
    return state;
  }
  const uint32_t slot = TakeBelow(next_slot_, kMaxSlot);
  if (slot == 0) return nullptr;
  // Allocated with no lock held: neither other threads nor the writer wait.
  // States are never freed while the registry lives, so the ring's budget
  // stays with the state through its reuses.
  const uint64_t ring_bytes = budget_.Acquire(ring_bytes_);
  std::unique_ptr<ThreadState> fresh;
  try {
    fresh = std::make_unique<ThreadState>(slot, id, ring_bytes, os_tid, pthread_id, PooledCache(),
                                          yield_when_nearly_full_);
  } catch (...) {
    budget_.Release(ring_bytes);
    throw;
  }
  state = fresh.release();
  ThreadState* head = all_.load(std::memory_order_relaxed);
  do {
    state->next_all_ = head;
  } while (!all_.compare_exchange_weak(head, state, std::memory_order_release,
                                       std::memory_order_relaxed));
  allocated_.fetch_add(1, std::memory_order_relaxed);
  return state;
}

void ThreadRegistry::Snapshot(std::vector<ThreadState*>* out) const {
  out->clear();
  for (ThreadState* s = all_.load(std::memory_order_acquire); s; s = s->next_all_) {
    if (s->in_use.load(std::memory_order_acquire)) out->push_back(s);
  }
}

void ThreadRegistry::Recycle(const std::vector<ThreadState*>& states) {
  if (states.empty()) return;
  ThreadState* first = nullptr;
  ThreadState* last = nullptr;
  for (ThreadState* s : states) {
    // A thread that filled its ring leaves its pages resident: released
    // here (no lock held), so waiting states cost little.
    s->ring().ReleasePagesBeyond(kKeptRingBytes);
    s->in_use.store(false, std::memory_order_relaxed);
    s->next_free_ = first;
    first = s;
    if (!last) last = s;
  }
  // Saturating: a state may be retired without NoteExit (tests, a thread
  // whose destructor ran after the session ended).
  const auto n = static_cast<uint32_t>(states.size());
  uint32_t waiting = exited_waiting_.load(std::memory_order_relaxed);
  while (!exited_waiting_.compare_exchange_weak(waiting, waiting > n ? waiting - n : 0,
                                                std::memory_order_relaxed)) {
  }
  std::lock_guard<std::mutex> lock(free_mu_);
  last->next_free_ = free_;
  free_ = first;
  free_count_ += states.size();
}

size_t ThreadRegistry::free_count() {
  std::lock_guard<std::mutex> lock(free_mu_);
  return free_count_;
}

uint32_t ThreadRegistry::AllocateId() noexcept { return TakeBelow(next_id_, kMaxThreadId); }

}  // namespace tracer
