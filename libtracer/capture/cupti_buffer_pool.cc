#include "libtracer/capture/cupti_buffer_pool.h"

#include <algorithm>
#include <cstdlib>

namespace tracer {

namespace {
// CUPTI wants 8-byte aligned buffers (samples: ALIGN_SIZE 8); records are
// naturally aligned inside. 64 keeps each buffer on its own cache lines.
constexpr size_t kAlignment = 64;
}  // namespace

CuptiBufferPool::CuptiBufferPool(size_t buffer_size, uint32_t count)
    : size_((std::max<size_t>(buffer_size, 4096) + kAlignment - 1) / kAlignment * kAlignment),
      count_(std::max<uint32_t>(count, 1)) {
  all_.reserve(count_);
  free_.reserve(count_);
  completed_.reserve(count_);
  undecoded_.reserve(count_);
  held_.reserve(count_);
}

CuptiBufferPool::~CuptiBufferPool() {
  for (uint8_t* b : all_) std::free(b);
}

uint8_t* CuptiBufferPool::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t* b = nullptr;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (all_.size() < count_) {
    b = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, size_));
    if (b != nullptr) all_.push_back(b);
  }
  if (b == nullptr) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ++outstanding_;
  return b;
}

bool CuptiBufferPool::Owns(const uint8_t* buffer) const {
  return std::find(all_.begin(), all_.end(), buffer) != all_.end();
}

void CuptiBufferPool::Complete(uint8_t* buffer, size_t valid_bytes) {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!Owns(buffer)) {
    foreign_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (outstanding_ > 0) --outstanding_;
  // Capacity is count_ and a buffer is queued at most once, so this never
  // allocates.
  completed_.push_back({buffer, std::min(valid_bytes, size_)});
  undecoded_.push_back(completed_.back());
}

void CuptiBufferPool::TakeCompleted(std::vector<Completed>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->insert(out->end(), completed_.begin(), completed_.end());
  completed_.clear();
}

void CuptiBufferPool::Release(uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!Owns(buffer)) return;
  auto it = std::find_if(undecoded_.begin(), undecoded_.end(),
                         [buffer](const Completed& c) { return c.buffer == buffer; });
  if (it != undecoded_.end()) undecoded_.erase(it);
  if (std::find(pinned_.begin(), pinned_.end(), buffer) != pinned_.end()) {
    held_.push_back(buffer);  // to the free list at its last Unpin
  } else {
    free_.push_back(buffer);
  }
}

void CuptiBufferPool::PinUndecoded(std::vector<Completed>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Completed& c : undecoded_) {
    out->push_back(c);
    pinned_.push_back(c.buffer);
  }
}

void CuptiBufferPool::Unpin(const std::vector<Completed>& pinned) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Completed& c : pinned) {
    auto pin = std::find(pinned_.begin(), pinned_.end(), c.buffer);
    if (pin == pinned_.end()) continue;
    pinned_.erase(pin);
    if (std::find(pinned_.begin(), pinned_.end(), c.buffer) != pinned_.end()) continue;
    auto held = std::find(held_.begin(), held_.end(), c.buffer);
    if (held != held_.end()) {
      held_.erase(held);
      free_.push_back(c.buffer);
    }
  }
}

uint32_t CuptiBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<uint32_t>(all_.size());
}

uint32_t CuptiBufferPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_;
}

}  // namespace tracer
