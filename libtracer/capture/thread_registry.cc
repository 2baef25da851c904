#include "libtracer/capture/thread_registry.h"

#include <algorithm>
#include <memory>

namespace tracer {

namespace {
constexpr uint32_t kMaxThreadId = (1u << 22) - 1;  // fits the instance id layout
}

ThreadState* ThreadRegistry::Register(uint64_t os_tid, uint64_t pthread_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_id_ > kMaxThreadId) return nullptr;
  // Grown first, so the push_back below cannot throw and leak the state.
  if (threads_.size() == threads_.capacity()) threads_.reserve(threads_.size() * 2 + 8);
  const uint64_t ring_bytes = budget_.Acquire(ring_bytes_);
  std::unique_ptr<ThreadState> state;
  try {
    state = std::make_unique<ThreadState>(next_id_, ring_bytes, os_tid, pthread_id);
  } catch (...) {
    budget_.Release(ring_bytes);
    throw;
  }
  ++next_id_;
  threads_.push_back(state.get());
  return state.release();
}

void ThreadRegistry::Snapshot(std::vector<ThreadState*>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->assign(threads_.begin(), threads_.end());
}

void ThreadRegistry::Remove(const std::vector<ThreadState*>& states) {
  if (states.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.erase(std::remove_if(threads_.begin(), threads_.end(),
                                  [&](ThreadState* t) {
                                    return std::find(states.begin(), states.end(), t) !=
                                           states.end();
                                  }),
                   threads_.end());
  }
  for (ThreadState* t : states) {
    budget_.Release(t->ring().capacity() * sizeof(Event));
    delete t;
  }
}

uint32_t ThreadRegistry::AllocateId() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_ <= kMaxThreadId ? next_id_++ : 0;
}

}  // namespace tracer
