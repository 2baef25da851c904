// CUPTI PM sampling (docs/cupti.md section 6): per device, a one-pass config
// image for the configured metrics (real profiler-host API), enable, set
// config, a counter-data image, start; a thread of ours decodes the hardware
// buffer every few ms, reads each completed sample's start/end time,
// evaluates it to metric values and re-initialises the image; at the end (or
// when the device's context goes), stop, a final decode, disable. Samples go
// to the writer as PmSampleRecords on the trace clock (a RecordSource).
//
// Devices become known from CUPTI's context-created callback (DeviceSeen):
// only then is a driver known to be there (cuptiDeviceGetChipName crashes
// without one). Every failure is one log line and that device goes
// unsampled; activity and NVTX tracing go on. All CUPTI calls happen on the
// sampler thread; callers wait for it a bounded time only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libtracer/capture/record_sink.h"
#include "libtracer/cupti_api/cupti_api.h"

namespace tracer {

class PmSampler final : public RecordSource {
 public:
  struct Options {
    std::vector<std::string> metrics;  // expanded (pm_metrics.h), not empty
    uint64_t interval_ns = 1000000;
    uint64_t hw_buffer_size = uint64_t{128} << 20;
    // Samples one counter-data image holds; a decode pass stops when full
    // (COUNTER_DATA_FULL) and the thread evaluates and decodes again.
    uint32_t image_samples = 256;
    uint32_t decode_period_ms = 10;
    // Metric values held for the writer at most (the writer drains every
    // 200 ms); samples beyond are counted as dropped (pm_queue_full).
    size_t max_pending = 1u << 20;
    // How long Stop and DeviceGone wait for the thread.
    uint32_t shutdown_wait_ms = 2000;
    std::function<void(const std::string&)> log;  // one line per problem
    std::function<uint64_t()> trace_now;          // default NowNs
    std::function<uint64_t()> wall_now;           // default WallNowNs
    // Called on the sampler thread once a device's set-up has made CUPTI
    // build its PM state (after cuptiPmSamplingEnable, and again when the
    // set-up ends): libcupti loads libnvperf_host and builds that state on
    // the first thread that asks, registering its exit-time teardown then,
    // after the session's shutdown; exit runs them in reverse order, so a
    // stop at exit met a torn-down library (SIGSEGV). The session
    // registers its shutdown again here (cupti_capture.cc).
    std::function<void()> after_library_state;
  };

  PmSampler(CuptiApi* api, Options options);
  ~PmSampler() override;

  // Starts the sampler thread. False (logged) when it cannot run at all.
  bool Start();
  // From CUPTI's context-created callback: queues the device for set-up on
  // the sampler thread. Never blocks or calls CUPTI.
  void DeviceSeen(uint32_t device) noexcept;
  // From the context-destroy callback: stops and drains the device's
  // sampling before its context goes (waits at most shutdown_wait_ms).
  void DeviceGone(uint32_t device) noexcept;
  // Shutdown hook: stops every device (final decode) and ends the thread,
  // waiting at most shutdown_wait_ms; the writer's final Drain follows.
  void Stop() noexcept;
  // Writer thread: hands pending samples and counters to the sink.
  void Drain(RecordSink& sink, bool final) override;

  struct Stats {
    uint64_t samples = 0;           // evaluated and queued
    uint64_t overflows = 0;         // hardware-buffer overflow reports
    uint64_t dropped_overflow = 0;  // samples estimated lost to them
    uint64_t dropped_queue = 0;     // samples over max_pending
    uint64_t devices_sampling = 0;  // devices started
    uint64_t devices_failed = 0;    // devices that could not be sampled
  };
  Stats stats();

 private:
  struct Device;
  struct Pending {
    uint64_t start_ns, end_ns;
    uint32_t device, metric;
    double value;
  };

  void Loop() noexcept;
  void SetUp(uint32_t index);
  // Decodes until CUPTI reports end of records (or max_rounds images).
  void Decode(Device& d, int max_rounds);
  void AfterLibraryState() noexcept;
  void Evaluate(Device& d);
  void StopDevice(Device& d);
  bool EnsureProfiler();
  std::string Describe(const char* call, CUptiResult r) const;
  void Log(const std::string& line);
  uint64_t ToTrace(Device& d, uint64_t ts);

  CuptiApi* api_;
  Options options_;
  std::vector<const char*> metric_names_;  // into options_.metrics

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint32_t> seen_;  // devices to set up
  std::vector<uint32_t> gone_;  // devices to stop now
  uint64_t gone_done_ = 0, gone_asked_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
  bool started_ = false;
  int pid_ = 0;  // the process whose thread samples (not a forked child)
  std::vector<Pending> pending_;
  Stats stats_;
  uint64_t reported_overflow_ = 0, reported_queue_ = 0, reported_overflows_ = 0;

  // Sampler thread only.
  bool profiler_initialized_ = false;
  bool profiler_failed_ = false;
  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<Pending> batch_;
};

}  // namespace tracer
