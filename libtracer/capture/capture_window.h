// The capture window (TRACER_CAPTURE_RANGE/START/STOP, cudaProfilerStart/Stop):
// recording is on while the named range's window is open AND the profiler
// API has not stopped it AND the session has not ended. Read on every NVTX
// call (one relaxed load of one word); written only at transitions, which
// also tell the one observer (the CUPTI adapter, for the time of each change).
#pragma once

#include <atomic>
#include <cstdint>

namespace tracer {

class CaptureWindow {
 public:
  class Observer {
   public:
    // Called on the thread that changed active(), after the change; must be
    // cheap and must not call back into the window's writers.
    virtual void OnCaptureWindowChange() noexcept = 0;

   protected:
    ~Observer() = default;
  };

  // has_range = false: the range window is always open.
  CaptureWindow(bool has_range, uint64_t start, uint64_t stop)
      : has_range_(has_range), start_(start), stop_(stop) {
    state_.store(kProfilerOn | (has_range ? 0u : kRangeOpen), std::memory_order_relaxed);
  }

  bool active() const noexcept { return Active(state_.load(std::memory_order_relaxed)); }
  // The session ended (Close): what is not recorded now is lost, not gated.
  bool closed() const noexcept { return state_.load(std::memory_order_relaxed) & kClosed; }
  bool has_range() const noexcept { return has_range_; }
  // nullptr unregisters. The observer must outlive its registration.
  void SetObserver(Observer* observer) noexcept {
    observer_.store(observer, std::memory_order_release);
  }

  // An instance of the named range starts / ends (any thread).
  void OnInstanceStart() noexcept {
    uint64_t n = starts_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n == start_) Changed(state_.fetch_or(kRangeOpen, std::memory_order_relaxed));
    // The first instance recorded fixes the step numbers of the report
    // (capture may begin later than start_ when cudaProfilerStart gates it
    // too). Only until it is known: then one relaxed load per instance.
    if (first_recorded_.load(std::memory_order_relaxed) == 0 && active()) {
      uint64_t none = 0;
      first_recorded_.compare_exchange_strong(none, n, std::memory_order_relaxed);
    }
  }
  // 1-based occurrence of the named range whose instance was the first one
  // started while recording was on; 0 until then (and without a range).
  uint64_t first_recorded_occurrence() const noexcept {
    return first_recorded_.load(std::memory_order_relaxed);
  }
  void OnInstanceEnd() noexcept {
    uint64_t n = ends_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (stop_ != 0 && n == stop_) {
      Changed(state_.fetch_and(~kRangeOpen, std::memory_order_relaxed));
    }
  }
  void SetProfilerActive(bool on) noexcept {
    if (on) {
      Changed(state_.fetch_or(kProfilerOn, std::memory_order_relaxed));
    } else {
      Changed(state_.fetch_and(~kProfilerOn, std::memory_order_relaxed));
    }
  }
  // Session end: nothing is recorded any more.
  void Close() noexcept { Changed(state_.fetch_or(kClosed, std::memory_order_relaxed)); }

 private:
  static constexpr uint32_t kRangeOpen = 1, kProfilerOn = 2, kClosed = 4;
  static bool Active(uint32_t state) noexcept { return state == (kRangeOpen | kProfilerOn); }
  void Changed(uint32_t before) noexcept {
    if (Active(before) == active()) return;
    if (Observer* o = observer_.load(std::memory_order_acquire)) o->OnCaptureWindowChange();
  }

  const bool has_range_;
  const uint64_t start_;
  const uint64_t stop_;
  std::atomic<uint32_t> state_{0};
  std::atomic<uint64_t> starts_{0};
  std::atomic<uint64_t> ends_{0};
  std::atomic<uint64_t> first_recorded_{0};
  std::atomic<Observer*> observer_{nullptr};
};

}  // namespace tracer
