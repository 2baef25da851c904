// CUDA injection entry point: libcuda loads CUDA_INJECTION64_PATH during
// cuInit and calls InitializeInjection on the thread making the first CUDA
// call (docs/cupti.md section 1). It must return 1 and never fail the host, whatever
// happens to CUPTI.
#include "libtracer/capture/cupti_capture.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/session.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) noexcept {
  // First, whatever fails below: the driver is there (no "no driver" line).
  tracer::Session::NoteCudaInjection();
  return tracer::Guarded(
      "InitializeInjection", "GPU activity is not traced; NVTX tracing goes on",
      [] {
        tracer::StartCuptiCapture();  // idempotent: one session per process
        return 1;
      },
      []() noexcept { return 1; });
}
