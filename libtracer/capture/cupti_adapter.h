// The CUPTI side of capture (design.md section 3): subscribes to CUPTI,
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

class CuptiAdapter final : public RecordSource {
 public:
  struct Options {
    uint32_t activities = 0;  // capture/config.h Activity bits
    size_t buffer_size = 8u << 20;
    uint32_t buffer_count = 64;
    // Runtime calls also raise driver launch callbacks for the nested driver
    // call (cupti-notes 2, inferred); both are recorded, the reader joins on
    // whichever correlation id the GPU record carries.
    bool driver_callbacks = true;
    // Whether a capture window gates GPU records (cuProfilerStart/Stop or an
    // NVTX-range window); then records start outside until Open().
    bool gated = false;
    bool initially_open = true;
    // The session's window (NVTX-range and profiler gating), polled at each
    // launch so GPU records of work issued while it was closed are dropped.
    // May be null.
    const CaptureWindow* session_window = nullptr;
    // One line per problem; default: stderr with a "tracer: " prefix.
    std::function<void(const std::string&)> log;
    // cuProfilerStart/Stop seen (Session::SetProfilerActive).
    std::function<void(bool)> on_profiler_active;
    // After a flush inside a callback: ask the writer to drain soon. Must not
    // block.
    std::function<void()> on_flushed;
    // At a module unload, after the flush: have the writer decode what was
    // flushed, so kernel records are read while their names are still
    // valid. May block (bounded); may be empty.
    std::function<void()> on_module_unload;
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

  // Capture-window transitions (trace clock), from the session or from
  // cuProfilerStart/Stop.
  void OpenWindow(uint64_t time_ns) { window_.Open(time_ns); }
  void CloseWindow(uint64_t time_ns) { window_.Close(time_ns); }

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
  void HandleApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                 const CUpti_CallbackData& data);
  void HandleResource(CUpti_CallbackId cbid, const CUpti_ResourceData& data);
  void FollowSessionWindow(uint64_t now);
  void Snapshot(uint64_t graph_id, uint64_t node_id, uint64_t range_id);
  void GraphNodeMade(CUpti_CallbackId cbid, const CUpti_GraphData& g);
  void GraphExecUpdated(const CUpti_CallbackData& data);
  void GraphDestroyed(CUpti_CallbackId cbid, const CUpti_GraphData& g);
  // forced: also buffers holding running work (which then comes back
  // without an end time and is lost); else completed buffers only.
  void FlushFromCallback(bool forced = true);
  // Logs "CUPTI <call> failed: <text>; <consequence>" and counts it.
  void Fail(const char* call, CUptiResult r, const char* consequence);
  void Log(const std::string& line);
  std::vector<CUpti_ActivityKind> KindsToEnable() const;

  CuptiApi* api_;
  Options options_;
  CuptiBufferPool pool_;
  CuptiCaptureWindow window_;
  CuptiDecoder decoder_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool attached_ = false;
  bool activity_enabled_ = false;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> session_window_open_{true};
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
