#include "libtracer/capture/cupti_capture_window.h"

#include <algorithm>
#include <limits>

namespace tracer {

namespace {
constexpr uint64_t kOpenEnd = std::numeric_limits<uint64_t>::max();

bool InIntervals(const std::vector<std::pair<uint64_t, uint64_t>>& list, uint64_t v) {
  // Appended in order; few enough for a binary search.
  auto it = std::upper_bound(list.begin(), list.end(), v,
                             [](uint64_t x, const auto& iv) { return x < iv.first; });
  if (it == list.begin()) return false;
  --it;
  return v < it->second;
}
}  // namespace

CuptiCaptureWindow::CuptiCaptureWindow(bool gated, bool initially_open, uint64_t now)
    : gated_(gated) {
  if (initially_open) {
    Open(now);
    OpenAtLaunch(0);
  }
}

void CuptiCaptureWindow::Bound(Intervals* list) {
  if (list->size() <= kMaxIntervals) return;
  (*list)[0].second = (*list)[1].second;
  list->erase(list->begin() + 1);
}

void CuptiCaptureWindow::Open(uint64_t time_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_) return;
  open_ = true;
  if (!intervals_.empty()) time_ns = std::max(time_ns, intervals_.back().second);
  intervals_.emplace_back(time_ns, kOpenEnd);
  Bound(&intervals_);
}

void CuptiCaptureWindow::Close(uint64_t time_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return;
  open_ = false;
  intervals_.back().second = std::max(time_ns, intervals_.back().first);
}

uint64_t CuptiCaptureWindow::Unwrap(uint32_t id, uint64_t reference) {
  constexpr uint64_t kSpan = 1ull << 32, kHalf = 1ull << 31;
  uint64_t c = (reference & ~(kSpan - 1)) | id;
  if (c + kHalf < reference) {
    c += kSpan;
  } else if (c > reference + kHalf && c >= kSpan) {
    c -= kSpan;
  }
  return c;
}

uint64_t CuptiCaptureWindow::UnwrapLocked(uint32_t id) const {
  uint64_t reference = decoded_id_.load(std::memory_order_relaxed);
  if (!id_intervals_.empty()) {
    const auto& last = id_intervals_.back();
    reference = std::max(reference, last.second != kOpenEnd ? last.second : last.first);
  }
  return Unwrap(id, reference);
}

void CuptiCaptureWindow::OpenAtLaunch(uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = UnwrapLocked(correlation_id);
  const uint64_t floor = id_intervals_.size() > (ids_open_ ? 1u : 0u)
                             ? id_intervals_[id_intervals_.size() - (ids_open_ ? 2 : 1)].second
                             : 0;
  if (ids_open_) {
    // Another thread saw the opening first with a later id; this launch got
    // its id earlier but saw the window open too: it is inside.
    auto& open = id_intervals_.back();
    if (id < open.first) open.first = std::max(id, floor);
    return;
  }
  ids_open_ = true;
  // Never reach back over ids that a launch saw closed.
  id_intervals_.emplace_back(std::max(id, floor), kOpenEnd);
  Bound(&id_intervals_);
}

void CuptiCaptureWindow::CloseAtLaunch(uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ids_open_) return;
  ids_open_ = false;
  auto& open = id_intervals_.back();
  open.second = std::max(UnwrapLocked(correlation_id), open.first);
  if (open.second == open.first) id_intervals_.pop_back();  // no launch inside
}

void CuptiCaptureWindow::Read(Snapshot* out) const {
  out->gated = gated_;
  std::lock_guard<std::mutex> lock(mu_);
  out->intervals.assign(intervals_.begin(), intervals_.end());
  out->id_intervals.assign(id_intervals_.begin(), id_intervals_.end());
}

bool CuptiCaptureWindow::Snapshot::Contains(uint64_t time_ns) const {
  return !gated || InIntervals(intervals, time_ns);
}

bool CuptiCaptureWindow::Snapshot::ContainsId(uint64_t unwrapped_id) const {
  return !gated || InIntervals(id_intervals, unwrapped_id);
}

}  // namespace tracer
