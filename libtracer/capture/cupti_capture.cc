#include "libtracer/capture/cupti_capture.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "libtracer/capture/cupti_adapter.h"
#include "libtracer/capture/log.h"
#include "libtracer/capture/pm_sampler.h"
#include "libtracer/capture/session.h"
#include "libtracer/cupti_api/real_cupti_api.h"

namespace tracer {

namespace {

void StartOnce() {
  Session* session = Session::EnsureStarted();
  if (session == nullptr) return;  // tracing off or misconfigured (already logged)
  const Config& config = session->config();
  if (!config.cuda) return;

  std::string error;
  // Both live until the process ends: CUPTI may call back at any time, even
  // during exit.
  std::unique_ptr<RealCuptiApi> api = RealCuptiApi::Load("", &error);
  if (api == nullptr) {
    Log(LogLevel::kWarn, "CUPTI unavailable: " + error + "; tracing NVTX only");
    return;
  }
  CuptiAdapter::Options options;
  options.activities = config.activities;
  options.buffer_size = config.cupti_buffer_size;
  options.buffer_count = config.cupti_buffer_count;
  options.session_window = &session->window();
  options.initially_open = session->capture_active();
  options.log = [](const std::string& line) { Log(LogLevel::kWarn, line); };
  options.on_profiler_active = [session](bool on) { session->SetProfilerActive(on); };
  CuptiApi* raw_api = api.release();
  PmSampler* sampler = nullptr;
  // The first run on a real GPU (H100, driver 580, libcupti 13.0) recorded
  // PM samples but the traced program died at exit inside CUPTI's PM
  // teardown (cuptiPmSamplingDisable, and NVPW_CUDA_LoadDriver still running
  // on the sampler thread in a short program). Until that is fixed the
  // sampler runs only when asked for explicitly: the host comes first.
  const char* experimental = std::getenv("TRACER_PM_EXPERIMENTAL");
  const bool pm_allowed = experimental != nullptr && std::string(experimental) == "1";
  if (!config.pm_metrics.empty() && !pm_allowed) {
    Log(LogLevel::kWarn,
        "PM sampling not started: on a real GPU it has crashed the traced program at exit "
        "(a known defect); set TRACER_PM_EXPERIMENTAL=1 to run it anyway");
  }
  if (!config.pm_metrics.empty() && pm_allowed) {
    PmSampler::Options pm;
    pm.metrics = config.pm_metrics;
    pm.interval_ns = config.pm_interval_ns;
    pm.hw_buffer_size = config.pm_hw_buffer_size;
    pm.log = [](const std::string& line) { Log(LogLevel::kWarn, line); };
    pm.after_library_state = [] { Session::ShutDownAtExitBeforeLibrariesLoadedSoFar(); };
    sampler = new PmSampler(raw_api, std::move(pm));
    if (sampler->Start()) {
      options.on_context = [sampler](bool created, uint32_t device) {
        if (created) {
          sampler->DeviceSeen(device);
        } else {
          sampler->DeviceGone(device);
        }
      };
    } else {
      sampler = nullptr;  // logged; leaked like the adapter, never used
    }
  }
  auto* adapter = new CuptiAdapter(raw_api, std::move(options));
  const bool started = adapter->Start();
  // libcupti is loaded and has built its state: the session must stop CUPTI
  // before libcupti's own exit-time teardown (see the function's comment).
  Session::ShutDownAtExitBeforeLibrariesLoadedSoFar();
  if (!started) {  // logged; the adapter stays inert
    if (sampler != nullptr) sampler->Stop();
    return;
  }
  if (sampler != nullptr) {
    session->AddSource(sampler);
    session->AddShutdownHook([sampler] { sampler->Stop(); });
  }
  session->AddSource(adapter);
  session->AddShutdownHook([adapter] { adapter->Stop(); });
  Log(LogLevel::kInfo, "CUPTI capture started");
}

}  // namespace

void StartCuptiCapture() {
  static std::once_flag once;
  std::call_once(once, StartOnce);  // a throw leaves it to the next call
}

}  // namespace tracer
