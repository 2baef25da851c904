// The fake libcupti's PM sampling: the device half (cuptiPmSampling*,
// cuptiProfilerInitialize, cuptiProfilerDeviceSupported,
// cuptiDeviceGetChipName) plays a GPU with scripted samples, on the real
// 13.0 parameter structs (cupti_pmsampling.h, cupti_profiler_target.h); the
// host half (cuptiProfilerHost*) is forwarded to the real libcupti, which
// needs no GPU, so config images, metric names and pass counts are real.
// Only evaluation of this fake's own counter-data images is answered here.
//
// What stands for the real thing (docs/cupti.md section 6):
// - No GPU-time trigger on Turing and GA100: SetConfig NOT_SUPPORTED.
// - Enable on an enabled device: CUPTI_ERROR_INVALID_OPERATION (PM:163-189).
// - Decode: appends the buffer's samples to the image (a sample is
//   complete once its end passed on the GPU clock, or after a stop);
//   COUNTER_DATA_FULL when
//   more remain, END_OF_RECORDS when drained; a keep-oldest overflow returns
//   CUPTI_ERROR_OUT_OF_MEMORY with overflow = 1 (PM:278-312).
// - Sample times are on the GPU's global timer (CLOCK_REALTIME here), not
//   the client's activity timestamp callback (inferred).
// - Every function honours fakeCuptiSetError / FAKE_CUPTI_ERRORS.
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/cupti/fake_cupti/fake_cupti_control.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" CUptiResult fakeCuptiInjected(const char* fn);
extern "C" void fakeCuptiRegisterLateTeardown();

#define INJECT(fn)                                    \
  do {                                                \
    CUptiResult injected_ = fakeCuptiInjected(#fn);   \
    if (injected_ != CUPTI_SUCCESS) return injected_; \
  } while (0)

namespace fake_pm {
namespace {

constexpr char kImageMagic[8] = {'F', 'A', 'K', 'E', 'P', 'M', 'C', 'D'};
constexpr char kAvailabilityMagic[8] = {'F', 'A', 'K', 'E', 'A', 'V', 'A', 'I'};
constexpr size_t kAvailabilitySize = 64;

struct ImageHeader {
  char magic[8];
  uint32_t metrics;
  uint32_t capacity;
  uint32_t count;
  uint32_t device;
};

size_t SampleBytes(uint32_t metrics) { return 16 + 8 * static_cast<size_t>(metrics); }

struct Sample {
  uint64_t start = 0, end = 0;
  std::vector<double> values;
  bool overflow = false;  // a marker, not a sample
};

struct Device {
  uint32_t index = 0;
  std::string chip = "GA102";
  bool supported = true;
  bool enabled = false;
  bool started = false;
  bool configured = false;
  std::vector<std::string> metrics;
  std::deque<Sample> buffer;
  uint64_t decoded = 0;
  uint32_t stall_ms = 0;  // the next decode blocks this long (a hung driver)
};

std::mutex mu;
std::map<uint32_t, Device>& Devices() {
  static auto* devices = new std::map<uint32_t, Device>();
  return *devices;
}
Device& At(uint32_t index) {
  Device& d = Devices()[index];
  d.index = index;
  return d;
}
Device* FromObject(CUpti_PmSampling_Object* object) {
  for (auto& [index, d] : Devices()) {
    if (reinterpret_cast<CUpti_PmSampling_Object*>(&d) == object) return &d;
  }
  return nullptr;
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// The real libcupti's host half, loaded once.
void* RealSymbol(const char* name) {
  static void* handle = [] {
    const char* path = std::getenv("FAKE_CUPTI_REAL_LIBRARY");
    void* h = dlopen(path != nullptr && *path ? path : "/usr/local/cuda/lib64/libcupti.so.13",
                     RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) std::fprintf(stderr, "fake_cupti: no real libcupti: %s\n", dlerror());
    return h;
  }();
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

template <typename P>
CUptiResult Forward(const char* name, P* p) {
  using Fn = CUptiResult (*)(P*);
  auto fn = reinterpret_cast<Fn>(RealSymbol(name));
  return fn != nullptr ? fn(p) : CUPTI_ERROR_NOT_SUPPORTED;
}

bool FakeImage(const uint8_t* image, size_t size) {
  return image != nullptr && size >= sizeof(ImageHeader) &&
         std::memcmp(image, kImageMagic, sizeof(kImageMagic)) == 0;
}

}  // namespace
}  // namespace fake_pm

using fake_pm::At;
using fake_pm::Device;
using fake_pm::FromObject;
using fake_pm::ImageHeader;

// ------------------------------ device half ---------------------------------

FAKE_EXPORT CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params* p) {
  INJECT(cuptiProfilerInitialize);
  return p != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
FAKE_EXPORT CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params* p) {
  INJECT(cuptiProfilerDeInitialize);
  return p != nullptr ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
FAKE_EXPORT CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params* p) {
  INJECT(cuptiProfilerDeviceSupported);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  const Device& d = At(static_cast<uint32_t>(p->cuDevice));
  const auto yes = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  p->architecture = d.supported ? yes : CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED;
  p->sli = p->vGpu = p->confidentialCompute = p->cmp = p->wsl = yes;
  p->isSupported = p->architecture;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* p) {
  INJECT(cuptiDeviceGetChipName);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->deviceIndex >= 16) return CUPTI_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  p->pChipName = At(static_cast<uint32_t>(p->deviceIndex)).chip.c_str();
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult
cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params* p) {
  INJECT(cuptiPmSamplingGetCounterAvailability);
  if (p == nullptr || p->deviceIndex >= 16) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->pCounterAvailabilityImage == nullptr) {
    p->counterAvailabilityImageSize = fake_pm::kAvailabilitySize;
    return CUPTI_SUCCESS;
  }
  if (p->counterAvailabilityImageSize < fake_pm::kAvailabilitySize) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  std::memset(p->pCounterAvailabilityImage, 0, fake_pm::kAvailabilitySize);
  std::memcpy(p->pCounterAvailabilityImage, fake_pm::kAvailabilityMagic, 8);
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params* p) {
  INJECT(cuptiPmSamplingEnable);
  fakeCuptiRegisterLateTeardown();
  if (p == nullptr || p->deviceIndex >= 16) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device& d = At(static_cast<uint32_t>(p->deviceIndex));
  if (d.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  d.enabled = true;
  p->pPmSamplingObject = reinterpret_cast<CUpti_PmSampling_Object*>(&d);
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params* p) {
  INJECT(cuptiPmSamplingSetConfig);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || !d->enabled || p->pConfig == nullptr || p->configSize == 0 ||
      p->hardwareBufferSize == 0 || p->samplingInterval == 0 ||
      p->triggerMode >= CUPTI_PM_SAMPLING_TRIGGER_MODE_COUNT) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  // No GPU-time trigger on Turing and GA100 (PM:78-110).
  if (p->triggerMode == CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL &&
      (d->chip.rfind("TU", 0) == 0 || d->chip == "GA100")) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  d->configured = true;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult
cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params* p) {
  INJECT(cuptiPmSamplingGetCounterDataSize);
  if (p == nullptr || p->pMetricNames == nullptr || p->numMetrics == 0 || p->maxSamples == 0) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  d->metrics.assign(p->pMetricNames, p->pMetricNames + p->numMetrics);
  p->counterDataSize = sizeof(ImageHeader) +
                       p->maxSamples * fake_pm::SampleBytes(static_cast<uint32_t>(p->numMetrics));
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult
cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params* p) {
  INJECT(cuptiPmSamplingCounterDataImageInitialize);
  if (p == nullptr || p->pCounterData == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || d->metrics.empty() || p->counterDataSize < sizeof(ImageHeader)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  ImageHeader h;
  std::memcpy(h.magic, fake_pm::kImageMagic, sizeof(h.magic));
  h.metrics = static_cast<uint32_t>(d->metrics.size());
  h.capacity = static_cast<uint32_t>((p->counterDataSize - sizeof(ImageHeader)) /
                                     fake_pm::SampleBytes(h.metrics));
  h.count = 0;
  h.device = d->index;
  std::memcpy(p->pCounterData, &h, sizeof(h));
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingStart(CUpti_PmSampling_Start_Params* p) {
  INJECT(cuptiPmSamplingStart);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || !d->configured || d->started) return CUPTI_ERROR_INVALID_OPERATION;
  d->started = true;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params* p) {
  INJECT(cuptiPmSamplingStop);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || !d->started) return CUPTI_ERROR_INVALID_OPERATION;
  d->started = false;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params* p) {
  INJECT(cuptiPmSamplingDisable);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || !d->enabled) return CUPTI_ERROR_INVALID_OPERATION;
  d->enabled = d->started = d->configured = false;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params* p) {
  INJECT(cuptiPmSamplingDecodeData);
  if (p == nullptr || !fake_pm::FakeImage(p->pCounterDataImage, p->counterDataImageSize)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  uint32_t stall_ms = 0;
  {
    std::lock_guard<std::mutex> lock(fake_pm::mu);
    Device* d = FromObject(p->pPmSamplingObject);
    if (d != nullptr) std::swap(stall_ms, d->stall_ms);
  }
  if (stall_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device* d = FromObject(p->pPmSamplingObject);
  if (d == nullptr || !d->enabled) return CUPTI_ERROR_INVALID_OPERATION;
  ImageHeader h;
  std::memcpy(&h, p->pCounterDataImage, sizeof(h));
  p->overflow = 0;
  p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
  CUptiResult result = CUPTI_SUCCESS;
  // Samples stay in the hardware buffer until a decode (started or
  // stopped: a stop leaves them for the final decode).
  while (!d->buffer.empty()) {
    fake_pm::Sample& s = d->buffer.front();
    if (s.overflow) {
      d->buffer.pop_front();
      p->overflow = 1;
      result = CUPTI_ERROR_OUT_OF_MEMORY;
      break;
    }
    if (h.count >= h.capacity) {
      p->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
      break;
    }
    uint8_t* at =
        p->pCounterDataImage + sizeof(ImageHeader) + h.count * fake_pm::SampleBytes(h.metrics);
    std::memcpy(at, &s.start, 8);
    std::memcpy(at + 8, &s.end, 8);
    for (uint32_t m = 0; m < h.metrics; ++m) {
      const double v = m < s.values.size() ? s.values[m] : 0.0;
      std::memcpy(at + 16 + 8 * m, &v, 8);
    }
    ++h.count;
    ++d->decoded;
    d->buffer.pop_front();
  }
  std::memcpy(p->pCounterDataImage, &h, sizeof(h));
  return result;
}
FAKE_EXPORT CUptiResult
cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params* p) {
  INJECT(cuptiPmSamplingGetCounterDataInfo);
  if (p == nullptr || !fake_pm::FakeImage(p->pCounterDataImage, p->counterDataImageSize)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  ImageHeader h;
  std::memcpy(&h, p->pCounterDataImage, sizeof(h));
  p->numTotalSamples = h.capacity;
  p->numPopulatedSamples = h.count;
  // A decoded sample is complete once its end has passed on the GPU clock,
  // or once sampling stopped.
  bool running = false;
  {
    std::lock_guard<std::mutex> lock(fake_pm::mu);
    auto it = fake_pm::Devices().find(h.device);
    running = it != fake_pm::Devices().end() && it->second.started;
  }
  const uint64_t now = fake_pm::RealtimeNs();
  size_t completed = 0;
  while (completed < h.count) {
    uint64_t end = 0;
    std::memcpy(&end,
                p->pCounterDataImage + sizeof(ImageHeader) +
                    completed * fake_pm::SampleBytes(h.metrics) + 8,
                8);
    if (running && end > now) break;
    ++completed;
  }
  p->numCompletedSamples = completed;
  return CUPTI_SUCCESS;
}
FAKE_EXPORT CUptiResult
cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params* p) {
  INJECT(cuptiPmSamplingCounterDataGetSampleInfo);
  if (p == nullptr || !fake_pm::FakeImage(p->pCounterDataImage, p->counterDataImageSize)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  ImageHeader h;
  std::memcpy(&h, p->pCounterDataImage, sizeof(h));
  if (p->sampleIndex >= h.count) return CUPTI_ERROR_INVALID_PARAMETER;
  const uint8_t* at =
      p->pCounterDataImage + sizeof(ImageHeader) + p->sampleIndex * fake_pm::SampleBytes(h.metrics);
  std::memcpy(&p->startTimestamp, at, 8);
  std::memcpy(&p->endTimestamp, at + 8, 8);
  return CUPTI_SUCCESS;
}

// ------------------------------- host half ----------------------------------

#define FORWARD(name, Params)               \
  FAKE_EXPORT CUptiResult name(Params* p) { \
    INJECT(name);                           \
    return fake_pm::Forward(#name, p);      \
  }
FORWARD(cuptiProfilerHostGetSupportedChips, CUpti_Profiler_Host_GetSupportedChips_Params)
FORWARD(cuptiProfilerHostDeinitialize, CUpti_Profiler_Host_Deinitialize_Params)
FORWARD(cuptiProfilerHostGetBaseMetrics, CUpti_Profiler_Host_GetBaseMetrics_Params)
FORWARD(cuptiProfilerHostGetSubMetrics, CUpti_Profiler_Host_GetSubMetrics_Params)
FORWARD(cuptiProfilerHostGetMetricProperties, CUpti_Profiler_Host_GetMetricProperties_Params)
FORWARD(cuptiProfilerHostConfigAddMetrics, CUpti_Profiler_Host_ConfigAddMetrics_Params)
FORWARD(cuptiProfilerHostGetConfigImageSize, CUpti_Profiler_Host_GetConfigImageSize_Params)
FORWARD(cuptiProfilerHostGetConfigImage, CUpti_Profiler_Host_GetConfigImage_Params)
FORWARD(cuptiProfilerHostGetNumOfPasses, CUpti_Profiler_Host_GetNumOfPasses_Params)
#undef FORWARD

FAKE_EXPORT CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  INJECT(cuptiProfilerHostInitialize);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  // This fake's availability image stands for a real device's: the real
  // host API does without one for the chips it knows.
  const uint8_t* availability = p->pCounterAvailabilityImage;
  if (availability != nullptr && std::memcmp(availability, fake_pm::kAvailabilityMagic, 8) == 0) {
    p->pCounterAvailabilityImage = nullptr;
  }
  CUptiResult r = fake_pm::Forward("cuptiProfilerHostInitialize", p);
  p->pCounterAvailabilityImage = availability;
  return r;
}

FAKE_EXPORT CUptiResult
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  INJECT(cuptiProfilerHostEvaluateToGpuValues);
  if (p == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (!fake_pm::FakeImage(p->pCounterDataImage, p->counterDataImageSize)) {
    return fake_pm::Forward("cuptiProfilerHostEvaluateToGpuValues", p);
  }
  ImageHeader h;
  std::memcpy(&h, p->pCounterDataImage, sizeof(h));
  if (p->rangeIndex >= h.count || p->pMetricValues == nullptr || p->ppMetricNames == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  const Device& d = At(h.device);
  const uint8_t* at =
      p->pCounterDataImage + sizeof(ImageHeader) + p->rangeIndex * fake_pm::SampleBytes(h.metrics);
  for (size_t i = 0; i < p->numMetrics; ++i) {
    size_t m = 0;
    while (m < d.metrics.size() && d.metrics[m] != p->ppMetricNames[i]) ++m;
    if (m >= d.metrics.size() || m >= h.metrics) return CUPTI_ERROR_INVALID_METRIC_NAME;
    std::memcpy(&p->pMetricValues[i], at + 16 + 8 * m, 8);
  }
  return CUPTI_SUCCESS;
}

// -------------------------------- control -----------------------------------

FAKE_EXPORT void fakeCuptiPmSetDevice(uint32_t device, const char* chip, int supported) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  Device& d = At(device);
  if (chip != nullptr) d.chip = chip;
  d.supported = supported != 0;
}
FAKE_EXPORT uint64_t fakeCuptiPmGpuNow(void) { return fake_pm::RealtimeNs(); }
FAKE_EXPORT void fakeCuptiPmAddSample(uint32_t device, uint64_t start, uint64_t end,
                                      const double* values, size_t count) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  fake_pm::Sample s;
  s.start = start;
  s.end = end;
  if (values != nullptr) s.values.assign(values, values + count);
  At(device).buffer.push_back(std::move(s));
}
FAKE_EXPORT void fakeCuptiPmOverflow(uint32_t device) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  fake_pm::Sample marker;
  marker.overflow = true;
  At(device).buffer.push_back(std::move(marker));
}
FAKE_EXPORT void fakeCuptiPmStall(uint32_t device, uint32_t ms) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  At(device).stall_ms = ms;
}
FAKE_EXPORT uint64_t fakeCuptiPmDecodedSamples(uint32_t device) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  return At(device).decoded;
}
FAKE_EXPORT int fakeCuptiPmState(uint32_t device) {
  std::lock_guard<std::mutex> lock(fake_pm::mu);
  const Device& d = At(device);
  return (d.enabled ? 1 : 0) | (d.started ? 2 : 0);
}
