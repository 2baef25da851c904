#include "libtracer/capture/pm_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "libtracer/capture/pm_host.h"
#include "libtracer/core/clock.h"
#include "libtracer/cupti_api/cupti_params.h"

namespace tracer {

namespace {

// A decode that keeps failing (not an overflow) gives the device up.
constexpr uint32_t kMaxDecodeErrors = 3;
// Rounds of the final decode: bounded, however much the buffer still holds.
constexpr int kFinalDecodeRounds = 4096;

const char* Level(CUpti_Profiler_Support_Level l) {
  switch (l) {
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
      return "unsupported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
      return "disabled";
    default:
      return nullptr;
  }
}

uint64_t AbsDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

struct PmSampler::Device {
  explicit Device(CuptiApi* api) : host(api) {}
  uint32_t index = 0;
  PmHost host;
  CUpti_PmSampling_Object* object = nullptr;
  std::vector<uint8_t> config;
  std::vector<uint8_t> image;
  bool running = false;
  bool failed = false;
  // Sample times: CUPTI's (the GPU's global timer, Unix-epoch ns, inferred)
  // mapped by wall_to_trace, or already on the trace clock.
  bool clock_decided = false;
  bool on_trace_clock = false;
  int64_t wall_to_trace = 0;
  uint64_t last_end = 0;  // CUPTI time of the last sample
  bool overflowed = false;
  bool final_decode = false;  // inside StopDevice: errors end the decode only
  size_t evaluated = 0;       // samples of the image already handed on
  size_t overflow_after = 0;  // image index of the first sample after it
  uint32_t decode_errors = 0;
};

PmSampler::PmSampler(CuptiApi* api, Options options) : api_(api), options_(std::move(options)) {
  if (!options_.trace_now) options_.trace_now = [] { return NowNs(); };
  if (!options_.wall_now) options_.wall_now = [] { return WallNowNs(); };
  for (const std::string& m : options_.metrics) metric_names_.push_back(m.c_str());
}

PmSampler::~PmSampler() { Stop(); }

void PmSampler::Log(const std::string& line) {
  if (options_.log) options_.log(line);
}

bool PmSampler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return true;
  try {
    // Load the profiler host library (libnvperf_host, which libcupti opens
    // on its first host call) here, on the starting thread, and not first on
    // the sampler thread: a library loaded later has its exit-time teardown
    // run before the session's shutdown (exit runs them in reverse order of
    // registration), so a short program's exit tore libnvperf_host down
    // under a sampler thread still building its configuration (SIGSEGV, seen
    // on a real H100 and with the fake driver). The caller registers the
    // session's shutdown again after this (cupti_capture.cc).
    std::vector<std::string> chips;
    std::string ignored;
    PmHost::SupportedChips(api_, &chips, &ignored);
  } catch (...) {
    // Out of memory: the sampler thread loads it as before.
  }
  try {
    // Detached: a thread stuck inside CUPTI must never hold up exit; Stop
    // waits for it a bounded time.
    std::thread([this] { Loop(); }).detach();
  } catch (...) {
    finished_ = true;
    Log("PM sampling off: cannot start its thread");
    return false;
  }
  started_ = true;
  pid_ = getpid();
  return true;
}

void PmSampler::DeviceSeen(uint32_t device) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(seen_.begin(), seen_.end(), device) == seen_.end()) seen_.push_back(device);
  } catch (...) {
    return;  // out of memory: the device stays unsampled
  }
  cv_.notify_all();
}

void PmSampler::DeviceGone(uint32_t device) noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    // A forked child has no sampler thread to wait for.
    if (!started_ || finished_ || getpid() != pid_) return;
    gone_.push_back(device);
    const uint64_t ticket = ++gone_asked_;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::milliseconds(options_.shutdown_wait_ms),
                 [&] { return gone_done_ >= ticket || finished_; });
  } catch (...) {
  }
}

void PmSampler::Stop() noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_ || getpid() != pid_) return;
    stopping_ = true;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::milliseconds(options_.shutdown_wait_ms),
                      [&] { return finished_; })) {
      lock.unlock();
      Log("PM sampling did not stop within " + std::to_string(options_.shutdown_wait_ms) +
          " ms; its last samples are lost");
    }
  } catch (...) {
  }
}

PmSampler::Stats PmSampler::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PmSampler::Loop() noexcept {
  try {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait_for(lock, std::chrono::milliseconds(options_.decode_period_ms),
                   [&] { return stopping_ || !seen_.empty() || !gone_.empty(); });
      std::vector<uint32_t> seen, gone;
      seen.swap(seen_);
      gone.swap(gone_);
      const bool stopping = stopping_;
      lock.unlock();

      for (uint32_t index : seen) SetUp(index);
      if (!seen.empty()) AfterLibraryState();
      for (auto& d : devices_) {
        const bool going = stopping || std::find(gone.begin(), gone.end(), d->index) != gone.end();
        if (going) {
          StopDevice(*d);
        } else if (d->running) {
          Decode(*d, 64);
        }
      }
      if (stopping && profiler_initialized_) {
        auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
        api_->ProfilerDeInitialize(&p);
        profiler_initialized_ = false;
      }

      lock.lock();
      gone_done_ += gone.size();
      if (!batch_.empty()) {
        // Whole samples (one entry per metric) up to max_pending entries.
        const size_t per = std::max<size_t>(1, metric_names_.size());
        const size_t room =
            options_.max_pending > pending_.size() ? options_.max_pending - pending_.size() : 0;
        const size_t take = std::min(room, batch_.size()) / per * per;
        stats_.dropped_queue += (batch_.size() - take) / per;
        if (pending_.empty() && take == batch_.size()) {
          pending_.swap(batch_);  // the writer took the last lot: no copy
        } else {
          pending_.insert(pending_.end(), batch_.begin(), batch_.begin() + take);
        }
        batch_.clear();
      }
      cv_.notify_all();
      if (stopping) break;
    }
    finished_ = true;
    cv_.notify_all();
  } catch (...) {
    // Out of memory or a throwing callback: sampling ends, the host goes on.
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }
}

std::string PmSampler::Describe(const char* call, CUptiResult r) const {
  std::string why = std::string(call) + ": " + api_->ResultString(r);
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return why +
             " (GPU performance counters are restricted to admin users: load the nvidia driver "
             "with NVreg_RestrictProfilingToAdminUsers=0, or run as root)";
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_INVALID_OPERATION:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return why +
             " (the performance counters are held by another profiler: Nsight Compute or "
             "Systems, DCGM profiling, or another tracer)";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return why + " (PM sampling needs compute capability 7.5 or later, not MIG/vGPU/WSL)";
    default:
      return why;
  }
}

bool PmSampler::EnsureProfiler() {
  if (profiler_initialized_) return true;
  if (profiler_failed_) return false;
  auto p = TRACER_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  CUptiResult r = api_->ProfilerInitialize(&p);
  if (r != CUPTI_SUCCESS) {
    profiler_failed_ = true;
    Log("PM sampling off: " + Describe("cuptiProfilerInitialize", r) +
        "; tracing goes on without PM samples");
    return false;
  }
  profiler_initialized_ = true;
  return true;
}

void PmSampler::AfterLibraryState() noexcept {
  if (!options_.after_library_state) return;
  try {
    options_.after_library_state();
  } catch (...) {
  }
}

void PmSampler::SetUp(uint32_t index) {
  for (const auto& d : devices_) {
    if (d->index == index && (d->running || d->failed)) return;  // already handled
  }
  auto dev = std::make_unique<Device>(api_);
  Device& d = *dev;
  d.index = index;
  devices_.push_back(std::move(dev));
  const std::string who = "PM sampling off on device " + std::to_string(index) + ": ";
  auto fail = [&](const std::string& why) {
    d.failed = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.devices_failed;
    }
    Log(who + why + "; tracing goes on without PM samples");
  };
  if (!EnsureProfiler()) {
    d.failed = true;
    return;
  }

  auto support = TRACER_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  support.cuDevice = static_cast<CUdevice>(index);
  support.api = CUPTI_PROFILER_PM_SAMPLING;
  CUptiResult r = api_->ProfilerDeviceSupported(&support);
  if (r == CUPTI_SUCCESS && support.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    std::string why;
    const std::pair<const char*, CUpti_Profiler_Support_Level> parts[] = {
        {"architecture", support.architecture},
        {"SLI", support.sli},
        {"vGPU", support.vGpu},
        {"confidential compute", support.confidentialCompute},
        {"CMP", support.cmp},
        {"WSL", support.wsl}};
    for (const auto& [name, level] : parts) {
      if (const char* l = Level(level)) {
        why += (why.empty() ? "" : ", ") + std::string(name) + " " + l;
      }
    }
    fail("the device does not support it (" + (why.empty() ? std::string("unknown") : why) +
         (support.architecture == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED
              ? "; needs compute capability 7.5 or later"
              : "") +
         ")");
    return;
  }
  if (r != CUPTI_SUCCESS) return fail(Describe("cuptiProfilerDeviceSupported", r));

  auto chip = TRACER_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = index;
  r = api_->DeviceGetChipName(&chip);
  if (r != CUPTI_SUCCESS || chip.pChipName == nullptr) {
    return fail(Describe("cuptiDeviceGetChipName", r));
  }
  const std::string chip_name = chip.pChipName;

  std::vector<uint8_t> availability;
  auto avail = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
  avail.deviceIndex = index;
  r = api_->PmSamplingGetCounterAvailability(&avail);
  if (r == CUPTI_SUCCESS && avail.counterAvailabilityImageSize > 0) {
    availability.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability.data();
    r = api_->PmSamplingGetCounterAvailability(&avail);
    if (r != CUPTI_SUCCESS) availability.clear();  // known chips do without it
  }
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_HARDWARE_BUSY) {
    return fail(Describe("cuptiPmSamplingGetCounterAvailability", r));
  }

  std::string error;
  if (!d.host.Initialize(chip_name, availability, &error)) return fail(error);
  if (!d.host.BuildConfig(options_.metrics, &d.config, &error)) return fail(error);

  auto enable = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  enable.deviceIndex = index;
  r = api_->PmSamplingEnable(&enable);
  AfterLibraryState();
  if (r != CUPTI_SUCCESS || enable.pPmSamplingObject == nullptr) {
    return fail(Describe("cuptiPmSamplingEnable", r));
  }
  d.object = enable.pPmSamplingObject;
  auto disable = [&] {
    auto p = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
    p.pPmSamplingObject = d.object;
    api_->PmSamplingDisable(&p);
    d.object = nullptr;
  };

  auto set = TRACER_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
  set.pPmSamplingObject = d.object;
  set.configSize = d.config.size();
  set.pConfig = d.config.data();
  set.hardwareBufferSize = options_.hw_buffer_size;
  set.samplingInterval = options_.interval_ns;
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // Keep oldest: an overflow is reported (and counted) instead of silently
  // overwriting samples.
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  r = api_->PmSamplingSetConfig(&set);
  if (r == CUPTI_ERROR_NOT_SUPPORTED) {
    // Turing and GA100 trigger on SYSCLK cycles only (docs/cupti.md
    // section 6): the same number, as cycles (about 1 ns each at 1 GHz).
    set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL;
    r = api_->PmSamplingSetConfig(&set);
    if (r == CUPTI_SUCCESS) {
      Log("PM sampling on device " + std::to_string(index) + " (" + chip_name +
          "): no GPU-time trigger on this chip; sampling every " +
          std::to_string(options_.interval_ns) + " SYSCLK cycles instead");
    }
  }
  if (r != CUPTI_SUCCESS) {
    disable();
    return fail(Describe("cuptiPmSamplingSetConfig", r));
  }

  auto size = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
  size.pPmSamplingObject = d.object;
  size.pMetricNames = metric_names_.data();
  size.numMetrics = metric_names_.size();
  size.maxSamples = options_.image_samples;
  r = api_->PmSamplingGetCounterDataSize(&size);
  if (r != CUPTI_SUCCESS || size.counterDataSize == 0) {
    disable();
    return fail(Describe("cuptiPmSamplingGetCounterDataSize", r));
  }
  d.image.assign(size.counterDataSize, 0);
  auto init = TRACER_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
  init.pPmSamplingObject = d.object;
  init.counterDataSize = d.image.size();
  init.pCounterData = d.image.data();
  r = api_->PmSamplingCounterDataImageInitialize(&init);
  if (r != CUPTI_SUCCESS) {
    disable();
    return fail(Describe("cuptiPmSamplingCounterDataImageInitialize", r));
  }

  auto start = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
  start.pPmSamplingObject = d.object;
  r = api_->PmSamplingStart(&start);
  if (r != CUPTI_SUCCESS) {
    disable();
    return fail(Describe("cuptiPmSamplingStart", r));
  }
  d.running = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.devices_sampling;
  }
}

uint64_t PmSampler::ToTrace(Device& d, uint64_t ts) {
  if (!d.clock_decided) {
    // Which clock the sample is on: the one it is nearest to now. CUPTI
    // stamps PM samples with the GPU's global timer (Unix-epoch ns, as its
    // default activity timestamps); if a CUPTI honours our timestamp
    // callback for them instead, they are already trace times.
    const uint64_t t0 = options_.trace_now();
    const uint64_t wall = options_.wall_now();
    const uint64_t t1 = options_.trace_now();
    const uint64_t trace = t0 + (t1 - t0) / 2;
    d.on_trace_clock = AbsDiff(ts, trace) < AbsDiff(ts, wall);
    d.wall_to_trace = static_cast<int64_t>(trace) - static_cast<int64_t>(wall);
    d.clock_decided = true;
  }
  if (d.on_trace_clock) return ts;
  const int64_t t = static_cast<int64_t>(ts) + d.wall_to_trace;
  return t > 0 ? static_cast<uint64_t>(t) : 0;
}

void PmSampler::Evaluate(Device& d) {
  auto info = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
  info.pCounterDataImage = d.image.data();
  info.counterDataImageSize = d.image.size();
  CUptiResult r = api_->PmSamplingGetCounterDataInfo(&info);
  if (r != CUPTI_SUCCESS) {
    Log("PM sampling on device " + std::to_string(d.index) + ": " +
        Describe("cuptiPmSamplingGetCounterDataInfo", r) + "; these samples are lost");
    return;
  }
  std::vector<double> values(metric_names_.size());
  uint64_t evaluated = 0, lost = 0;
  // Samples before d.evaluated were handed on by an earlier pass over this
  // image; populated samples not yet complete wait for a later decode.
  for (size_t i = d.evaluated; i < info.numCompletedSamples; ++i) {
    auto sample = TRACER_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
    sample.pPmSamplingObject = d.object;
    sample.pCounterDataImage = d.image.data();
    sample.counterDataImageSize = d.image.size();
    sample.sampleIndex = i;
    if (api_->PmSamplingCounterDataGetSampleInfo(&sample) != CUPTI_SUCCESS) continue;
    if (d.host.Evaluate(d.image.data(), d.image.size(), i, metric_names_, values.data()) !=
        CUPTI_SUCCESS) {
      continue;
    }
    if (d.overflowed && i >= d.overflow_after) {
      // Keep-oldest overflow: the samples the full buffer refused are the
      // gap between the last one kept and the next, in intervals.
      if (sample.startTimestamp > d.last_end && d.last_end != 0) {
        lost += std::max<uint64_t>(1, (sample.startTimestamp - d.last_end) / options_.interval_ns);
      } else {
        lost += 1;
      }
      d.overflowed = false;
    }
    d.last_end = sample.endTimestamp;
    const uint64_t start = ToTrace(d, sample.startTimestamp);
    const uint64_t end = ToTrace(d, sample.endTimestamp);
    for (size_t m = 0; m < values.size(); ++m) {
      batch_.push_back(Pending{start, end, d.index, static_cast<uint32_t>(m), values[m]});
    }
    ++evaluated;
  }
  d.evaluated = std::max<size_t>(d.evaluated, info.numCompletedSamples);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.samples += evaluated;
  stats_.dropped_overflow += lost;
}

void PmSampler::Decode(Device& d, int max_rounds) {
  for (int round = 0; round < max_rounds && d.running; ++round) {
    auto decode = TRACER_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
    decode.pPmSamplingObject = d.object;
    decode.pCounterDataImage = d.image.data();
    decode.counterDataImageSize = d.image.size();
    CUptiResult r = api_->PmSamplingDecodeData(&decode);
    const bool overflow = decode.overflow != 0 || r == CUPTI_ERROR_OUT_OF_MEMORY;
    if (!overflow && r != CUPTI_SUCCESS) {
      if (d.final_decode) return;
      if (++d.decode_errors >= kMaxDecodeErrors) {
        Log("PM sampling stopped on device " + std::to_string(d.index) + ": " +
            Describe("cuptiPmSamplingDecodeData", r));
        StopDevice(d);
      }
      return;
    }
    d.decode_errors = 0;
    // The image holds the samples kept before the overflow (keep-oldest);
    // the lost ones come after them.
    Evaluate(d);
    if (overflow) {
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        first = stats_.overflows++ == 0;
      }
      // The lost samples come after those the image holds now.
      auto info = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
      info.pCounterDataImage = d.image.data();
      info.counterDataImageSize = d.image.size();
      d.overflow_after =
          api_->PmSamplingGetCounterDataInfo(&info) == CUPTI_SUCCESS ? info.numPopulatedSamples : 0;
      d.overflowed = true;
      if (first) {
        Log("PM sampling on device " + std::to_string(d.index) +
            ": the hardware buffer overflowed and samples were lost (counted as "
            "pm_hw_buffer_overflow); raise --pm-buffer-size or lengthen --pm-interval");
      }
    }
    // The image is re-initialised only once full: the next decode appends
    // to it, so a sample still in progress at this decode is not lost.
    // After an overflow, decode again at once: the decode stopped at it, and
    // the samples taken once the buffer had room again wait behind it; the
    // final decode (at a stop) has no later pass to find them.
    if (decode.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) {
      if (overflow) continue;
      return;
    }
    auto init = TRACER_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    init.pPmSamplingObject = d.object;
    init.counterDataSize = d.image.size();
    init.pCounterData = d.image.data();
    d.evaluated = 0;
    d.overflow_after = 0;
    if (api_->PmSamplingCounterDataImageInitialize(&init) != CUPTI_SUCCESS) {
      if (d.final_decode) return;
      Log("PM sampling stopped on device " + std::to_string(d.index) +
          ": cannot re-initialise its counter-data image");
      StopDevice(d);
      return;
    }
  }
}

void PmSampler::StopDevice(Device& d) {
  if (d.object == nullptr) return;
  if (d.running) {
    d.running = false;
    auto stop = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
    stop.pPmSamplingObject = d.object;
    api_->PmSamplingStop(&stop);
    // Samples taken before the stop are still in the hardware buffer.
    d.running = true;
    d.final_decode = true;
    Decode(d, kFinalDecodeRounds);
    d.final_decode = false;
    d.running = false;
  }
  auto disable = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
  disable.pPmSamplingObject = d.object;
  api_->PmSamplingDisable(&disable);
  d.object = nullptr;
  if (d.overflowed) {  // no sample after the overflow: at least one was lost
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.dropped_overflow;
    d.overflowed = false;
  }
}

void PmSampler::Drain(RecordSink& sink, bool final) {
  (void) final;
  std::vector<Pending> pending;
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(pending_);
    s = stats_;
  }
  if (!pending.empty()) {
    std::vector<uint32_t> ids;
    ids.reserve(options_.metrics.size());
    for (const std::string& m : options_.metrics) ids.push_back(sink.InternString(m));
    for (const Pending& p : pending) {
      PmSampleRecord r;
      r.start_ns = p.start_ns;
      r.end_ns = p.end_ns;
      r.device = p.device;
      r.metric = ids[p.metric];
      r.value = p.value;
      sink.PmSample(r);
    }
  }
  if (s.dropped_overflow > reported_overflow_) {
    sink.Count("dropped.pm_hw_buffer_overflow", s.dropped_overflow - reported_overflow_);
    reported_overflow_ = s.dropped_overflow;
  }
  if (s.overflows > reported_overflows_) {
    sink.Count("pm_hw_buffer_overflows", s.overflows - reported_overflows_);
    reported_overflows_ = s.overflows;
  }
  if (s.dropped_queue > reported_queue_) {
    sink.Count("dropped.pm_queue_full", s.dropped_queue - reported_queue_);
    reported_queue_ = s.dropped_queue;
  }
}

}  // namespace tracer
