#include "libtracer/capture/cupti_capture_window.h"

#include <algorithm>
#include <limits>

namespace tracer {

namespace {
constexpr uint64_t kOpenEnd = std::numeric_limits<uint64_t>::max();
}

CuptiCaptureWindow::CuptiCaptureWindow(bool gated, bool initially_open, uint64_t now)
    : gated_(gated) {
  if (initially_open) Open(now);
}

void CuptiCaptureWindow::Open(uint64_t time_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_) return;
  open_ = true;
  intervals_.emplace_back(time_ns, kOpenEnd);
}

void CuptiCaptureWindow::Close(uint64_t time_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return;
  open_ = false;
  intervals_.back().second = std::max(time_ns, intervals_.back().first);
}

void CuptiCaptureWindow::Read(Snapshot* out) const {
  out->gated = gated_;
  std::lock_guard<std::mutex> lock(mu_);
  out->intervals.assign(intervals_.begin(), intervals_.end());
}

bool CuptiCaptureWindow::Snapshot::Contains(uint64_t time_ns) const {
  if (!gated) return true;
  // Intervals are appended in time order; few enough for a binary search.
  auto it = std::upper_bound(intervals.begin(), intervals.end(), time_ns,
                             [](uint64_t t, const auto& iv) { return t < iv.first; });
  if (it == intervals.begin()) return false;
  --it;
  return time_ns < it->second;
}

}  // namespace tracer
