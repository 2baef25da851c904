#include "libtracer/capture/cupti_capture.h"

#include <memory>
#include <mutex>
#include <string>

#include "libtracer/capture/cupti_adapter.h"
#include "libtracer/capture/log.h"
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
  auto* adapter = new CuptiAdapter(api.release(), std::move(options));
  if (!adapter->Start()) return;  // logged; the adapter stays inert
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
