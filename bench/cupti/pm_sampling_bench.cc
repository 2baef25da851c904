// PM sampling capture cost per sample, through the fake libcupti's device
// half (the real libcupti's host half builds the config image):
//   (a) baseline: a plain copy of each sample (start, end, 3 values) out of a
//       buffer, the least any consumer does;
//   (b) baseline: the bare CUPTI sequence with no tracer code (decode, get
//       sample info, evaluate, re-initialise), called directly;
//   (c) the tracer: PmSampler's thread (decode, sample info, evaluation,
//       clock mapping, queueing) plus its Drain into stream frames (the
//       writer's encoding), per sample;
// and the bytes per sample (3 metric values) in the stream.
// CPU time (these machines are shared); ratios against (a) and (b) measured
// in the same run.
//
// usage: pm_sampling_bench [--quick]
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/cpu_time.h"
#include "bench/cupti/encoding_sink.h"
#include "libtracer/capture/pm_host.h"
#include "libtracer/capture/pm_metrics.h"
#include "libtracer/capture/pm_sampler.h"
#include "libtracer/cupti_api/cupti_params.h"
#include "libtracer/cupti_api/real_cupti_api.h"

namespace {

using tracer::bench::ClockSeconds;

using AddSampleFn = void (*)(uint32_t, uint64_t, uint64_t, const double*, size_t);
using DecodedFn = uint64_t (*)(uint32_t);

struct Fake {
  AddSampleFn add = nullptr;
  void Fill(uint32_t device, size_t n, uint64_t t0) const {
    for (size_t i = 0; i < n; ++i) {
      const double v[3] = {50.0 + static_cast<double>(i % 50), 12.25 + static_cast<double>(i % 7),
                           static_cast<double>(i % 100)};
      add(device, t0 + i * 1000000, t0 + i * 1000000 + 999000, v, 3);
    }
  }
};

// (b): the CUPTI calls alone, on device 1.
double BareCupti(tracer::CuptiApi* api, const Fake& fake, size_t n, const char** names) {
  auto en = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  en.deviceIndex = 1;
  api->PmSamplingEnable(&en);
  tracer::PmHost host(api);
  std::string error;
  std::vector<uint8_t> config;
  if (!host.Initialize("GA102", {}, &error) ||
      !host.BuildConfig({names[0], names[1], names[2]}, &config, &error)) {
    std::fprintf(stderr, "bench: %s\n", error.c_str());
    std::exit(1);
  }
  auto set = TRACER_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
  set.pPmSamplingObject = en.pPmSamplingObject;
  set.configSize = config.size();
  set.pConfig = config.data();
  set.hardwareBufferSize = 128 << 20;
  set.samplingInterval = 1000000;
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  api->PmSamplingSetConfig(&set);
  auto size = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
  size.pPmSamplingObject = en.pPmSamplingObject;
  size.pMetricNames = names;
  size.numMetrics = 3;
  size.maxSamples = 256;
  api->PmSamplingGetCounterDataSize(&size);
  std::vector<uint8_t> image(size.counterDataSize);
  auto init = TRACER_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
  init.pPmSamplingObject = en.pPmSamplingObject;
  init.counterDataSize = image.size();
  init.pCounterData = image.data();
  api->PmSamplingCounterDataImageInitialize(&init);
  auto start = TRACER_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
  start.pPmSamplingObject = en.pPmSamplingObject;
  api->PmSamplingStart(&start);
  fake.Fill(1, n, 1'700'000'000'000'000'000ull);

  std::vector<const char*> metric_names(names, names + 3);
  double values[3];
  double sum = 0;
  size_t got = 0;
  const double t0 = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  while (got < n) {
    auto dec = TRACER_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
    dec.pPmSamplingObject = en.pPmSamplingObject;
    dec.pCounterDataImage = image.data();
    dec.counterDataImageSize = image.size();
    api->PmSamplingDecodeData(&dec);
    auto info = TRACER_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    info.pCounterDataImage = image.data();
    info.counterDataImageSize = image.size();
    api->PmSamplingGetCounterDataInfo(&info);
    if (info.numCompletedSamples == 0) break;
    for (size_t i = 0; i < info.numCompletedSamples; ++i) {
      auto s = TRACER_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
      s.pPmSamplingObject = en.pPmSamplingObject;
      s.pCounterDataImage = image.data();
      s.counterDataImageSize = image.size();
      s.sampleIndex = i;
      api->PmSamplingCounterDataGetSampleInfo(&s);
      host.Evaluate(image.data(), image.size(), i, metric_names, values);
      sum += values[0] + static_cast<double>(s.endTimestamp - s.startTimestamp);
    }
    got += info.numCompletedSamples;
    api->PmSamplingCounterDataImageInitialize(&init);
  }
  const double t = ClockSeconds(CLOCK_THREAD_CPUTIME_ID) - t0;
  if (sum == 42) std::printf(" ");
  return t / static_cast<double>(got);
}

// (a): a plain copy of each sample.
double PlainCopy(size_t n) {
  struct Sample {
    uint64_t start, end;
    double v[3];
  };
  std::vector<Sample> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = {i * 1000000, i * 1000000 + 999000, {1.0 * i, 2, 3}};
  const int reps = 20;
  const double t0 = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&out[i], &in[i], sizeof(Sample));
      in[i].v[0] += out[(i + r) % n].v[1];  // keep the copies from being elided
    }
  }
  const double t = ClockSeconds(CLOCK_THREAD_CPUTIME_ID) - t0;
  return t / static_cast<double>(n * reps);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const size_t n = quick ? 2000 : 200000;
  setenv("FAKE_CUPTI_REAL_LIBRARY", REAL_CUPTI_PATH, 1);
  std::string error;
  auto api = tracer::RealCuptiApi::Load(FAKE_CUPTI_PATH, &error);
  if (api == nullptr) {
    std::fprintf(stderr, "bench: %s\n", error.c_str());
    return 1;
  }
  void* h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_NOLOAD);
  Fake fake;
  fake.add =
      h != nullptr ? reinterpret_cast<AddSampleFn>(dlsym(h, "fakeCuptiPmAddSample")) : nullptr;
  if (fake.add == nullptr) {
    std::fprintf(stderr, "bench: fake libcupti control API not found\n");
    return 1;
  }
  const tracer::PmPreset* basic = tracer::FindPmPreset("basic");
  const char* names[3] = {basic->metrics[0], basic->metrics[1], basic->metrics[2]};

  const double copy_s = PlainCopy(n);
  const double bare_s = BareCupti(api.get(), fake, n, names);

  // (c) the tracer's sampler on device 0.
  tracer::PmSampler::Options o;
  o.metrics.assign(basic->metrics.begin(), basic->metrics.end());
  o.decode_period_ms = 1;
  o.log = [](const std::string& line) { std::fprintf(stderr, "tracer: %s\n", line.c_str()); };
  tracer::PmSampler sampler(api.get(), o);
  fake.Fill(0, n, 1'700'000'000'000'000'000ull);
  const double p0 = ClockSeconds(CLOCK_PROCESS_CPUTIME_ID);
  sampler.Start();
  sampler.DeviceSeen(0);
  // Set-up (config image: real host API) is excluded: wait for it first.
  while (sampler.stats().devices_sampling == 0 && sampler.stats().devices_failed == 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double p1 = ClockSeconds(CLOCK_PROCESS_CPUTIME_ID);
  while (sampler.stats().samples < n && sampler.stats().devices_failed == 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  const double p2 = ClockSeconds(CLOCK_PROCESS_CPUTIME_ID);
  tracer::bench::EncodingSink sink;
  const double w0 = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  sampler.Drain(sink, false);
  sink.Finish();
  const double w1 = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  sampler.Stop();
  const uint64_t got = sampler.stats().samples;
  if (got < n) {
    std::fprintf(stderr, "bench: only %llu of %zu samples decoded\n",
                 static_cast<unsigned long long>(got), n);
    return 1;
  }
  (void)p0;
  const double sampler_s = (p2 - p1) / static_cast<double>(got);
  const double write_s = (w1 - w0) / static_cast<double>(got);
  const double tracer_s = sampler_s + write_s;
  std::printf("PM sampling capture, %zu samples of 3 metrics (basic), fake device, real host\n", n);
  std::printf("  (a) plain copy of a sample:            %8.1f ns/sample\n", copy_s * 1e9);
  std::printf("  (b) bare CUPTI decode+info+evaluate:   %8.1f ns/sample\n", bare_s * 1e9);
  std::printf("  (c) tracer: sampler thread             %8.1f ns/sample\n", sampler_s * 1e9);
  std::printf("      tracer: drain + encode (writer)    %8.1f ns/sample\n", write_s * 1e9);
  std::printf("      tracer: total                      %8.1f ns/sample\n", tracer_s * 1e9);
  std::printf("  ratio (c)/(a): %.1fx   ratio (c)/(b): %.2fx\n", tracer_s / copy_s,
              tracer_s / bare_s);
  std::printf("  bytes on disk: %.2f per sample (%.2f per metric value), strings %zu B once\n",
              static_cast<double>(sink.bytes()) / got,
              static_cast<double>(sink.bytes()) / (got * 3.0), sink.string_bytes());
  std::printf("  at 1 ms sampling: %.4f%% of one core\n", tracer_s / 1e-3 * 100);
  return 0;
}
