// The CUPTI side of capture (docs/design.md section 3): subscribes to CUPTI,
// registers the trace clock, hands CUPTI buffers from a bounded pool, enables
// the configured activity kinds and the launch-type API callbacks, records
// launch attribution on the calling thread's ring, and decodes completed
// buffers on the writer thread (it is a RecordSource). Every CUPTI callback is
// one guard (entry_guard.h) around code free to throw; every CUPTI error is
// one log line and a degraded mode (NVTX tracing always continues).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "libtracer/capture/capture_window.h"
#include "libtracer/capture/cupti_buffer_pool.h"
#include "libtracer/capture/cupti_capture_window.h"
#include "libtracer/capture/cupti_cbids.h"
#include "libtracer/capture/cupti_decoder.h"
#include "libtracer/capture/record_sink.h"
#include "libtracer/cupti_api/cupti_api.h"

namespace tracer {

class CuptiAdapter final : public RecordSource, private CaptureWindow::Observer {
 public:
  struct Options {
    uint32_t activities = 0;  // capture/config.h Activity bits
    size_t buffer_size = 8u << 20;
    uint32_t buffer_count = 64;
    // Runtime calls also raise driver launch callbacks for the nested driver
    // call (docs/cupti.md section 2, inferred); both are recorded, the reader joins on
    // whichever correlation id the GPU record carries.
    bool driver_callbacks = true;
    // Whether a capture window gates GPU records without a session window
    // (cuProfilerStart/Stop only, tests); initially_open = false: the
    // profiler starts stopped.
    bool gated = false;
    bool initially_open = true;
    // The session's window (NVTX-range and profiler gating). Each launch
    // callback reads it (a relaxed load) so that the ops of launches made
    // while it was closed are dropped however late they run, and those made
    // while it was open are kept however late they run; its transitions
    // (observed) time-gate the records of other calls. May be null.
    CaptureWindow* session_window = nullptr;
    // One line per problem; default: stderr with a "tracer: " prefix.
    std::function<void(const std::string&)> log;
    // cuProfilerStart/Stop seen (Session::SetProfilerActive).
    std::function<void(bool)> on_profiler_active;
    // After a flush inside a callback: ask the writer to drain soon. Must not
    // block.
    std::function<void()> on_flushed;
    // Contexts made (created = true) and about to be destroyed, by device
    // index (the PM sampler's cue); null = context creation not subscribed.
    std::function<void(bool created, uint32_t device)> on_context;
  };

  CuptiAdapter(CuptiApi* api, Options options);
  ~CuptiAdapter() override;

  // Attaches to CUPTI. False when nothing of CUPTI could be used (no driver,
  // another subscriber, ...): one line was logged, NVTX tracing goes on.
  // Throws when out of memory (its caller's guard reports it).
  bool Start();
  // Shutdown hook: disables the activity kinds and forces a flush, so the
  // writer's final Drain sees every record CUPTI still held.
  void Stop();
  // Writer thread: decodes every completed buffer, reports drop counters.
  void Drain(RecordSink& sink, bool final) override;

  bool attached() const { return attached_; }
  bool activity_enabled() const { return activity_enabled_; }
  const CuptiBufferPool& pool() const { return pool_; }
  const CuptiDecoder& decoder() const { return decoder_; }
  // Graph nodes, graphs and execs whose ranges are kept (tests: destroyed
  // ones are let go).
  size_t graph_entries();

  // The CUPTI callbacks, public for tests and benches that play CUPTI. C
  // boundaries: each is one guard.
  static void CUPTIAPI OnCallback(void* userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void* cbdata) noexcept;
  static void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size,
                                         size_t* max_records) noexcept;
  static void CUPTIAPI OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                         size_t size, size_t valid_size) noexcept;
  static uint64_t CUPTIAPI TimestampNs() noexcept;

 private:
  // A kLaunch callback (not a graph launch) on its common path; false when
  // HandleApi must take it.
  bool RecordLaunch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData& data) noexcept;
  // Every callback RecordLaunch does not take, out of line: the launch
  // path's frame then saves no registers for them.
  static void OnOtherCallback(CuptiAdapter* self, CUpti_CallbackDomain domain,
                              CUpti_CallbackId cbid, const void* cbdata) noexcept;
  void HandleApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                 const CUpti_CallbackData& data);
  void HandleResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data);
  // Launch side of the window: the first launch that sees a transition
  // records it by its correlation id.
  void FollowWindow(uint32_t correlation_id) {
    const bool open = source_->active();
    if (open == launches_see_open_.load(std::memory_order_relaxed)) return;
    LaunchSawChange(open, correlation_id);
  }
  void LaunchSawChange(bool open, uint32_t correlation_id);
  // CaptureWindow::Observer, the time side of the window: a C-like boundary
  // (called from NVTX entry points), so one guard.
  void OnCaptureWindowChange() noexcept override;
  void ProfilerActive(bool on, uint32_t correlation_id);
  void Snapshot(uint64_t graph_id, uint64_t node_id, uint64_t range_id);
  void GraphNodeMade(CUpti_CallbackId cbid, const CUpti_GraphData& g);
  void GraphExecUpdated(const CUpti_CallbackData& data);
  void GraphDestroyed(CUpti_CallbackId cbid, const CUpti_GraphData& g);
  // forced: also buffers holding running work (which then comes back
  // without an end time and is lost); else completed buffers only.
  void FlushFromCallback(bool forced = true);
  // Only buffers whose records are all complete; running work stays in CUPTI
  // and arrives later, complete.
  void FlushCompleted();
  // Logs "CUPTI <call> failed: <text>; <consequence>" and counts it.
  void Fail(const char* call, CUptiResult r, const char* consequence);
  void Log(const std::string& line);
  std::vector<CUpti_ActivityKind> KindsToEnable() const;

  CuptiApi* api_;
  Options options_;
  CuptiBufferPool pool_;
  // The profiler-only window when there is no session window (gated tests).
  CaptureWindow own_window_{false, 0, 0};
  CaptureWindow* source_ = nullptr;  // session window, own_window_ or null
  std::mutex observe_mu_;            // serialises reading source_ and recording it
  CuptiCaptureWindow window_;
  CuptiDecoder decoder_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool attached_ = false;
  bool activity_enabled_ = false;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::atomic<bool> stopped_{false};
  // What the launch callbacks last recorded in window_ (by correlation id).
  std::atomic<bool> launches_see_open_{true};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> callback_errors_{0};

  // Graph node id -> range instance open when it was created, so nodes cloned
  // into an executable graph (cudaGraphInstantiate) keep their creator's range.
  // Graph id -> its nodes in creation order and executable graph id -> its
  // clones in cloning order, to pair them at cudaGraphExecUpdate.
  std::mutex graph_mu_;
  std::unordered_map<uint64_t, uint64_t> node_ranges_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> graph_nodes_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> exec_nodes_;

  // Writer-thread only: what Drain has already reported.
  std::vector<CuptiBufferPool::Completed> completed_scratch_;
  uint64_t reported_exhausted_ = 0;
  uint64_t reported_errors_ = 0;
  uint64_t reported_callback_errors_ = 0;
  uint64_t reported_foreign_ = 0;
};

}  // namespace tracer
