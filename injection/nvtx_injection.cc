// extern "C" entry points of libtracer.so: the NVTX injection, the LD_PRELOAD
// constructor, the library destructor and the control API. Each is noexcept
// and catches everything: the host must never notice us failing.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "injection/tracer_control.h"
#include "libtracer/capture/nvtx_handler.h"
#include "libtracer/capture/session.h"

#define TRACER_EXPORT extern "C" __attribute__((visibility("default")))

// Called by each NVTX instance on its first API call, when
// NVTX_INJECTION64_PATH names this library. Returning 0 makes NVTX turn every
// call into a no-op, which is what a disabled tracer should cost.
TRACER_EXPORT int InitializeInjectionNvtx2(tracer::NvtxGetExportTable get_export_table) noexcept {
  try {
    if (!tracer::Session::EnsureStarted()) return 0;
    return tracer::InstallNvtxCallbacks(get_export_table);
  } catch (...) {
    return 0;
  }
}

TRACER_EXPORT int tracerFlush(void) noexcept {
  tracer::Session* s = tracer::Session::Instance();
  if (!s) return 0;
  s->Flush();
  return 1;
}

TRACER_EXPORT void tracerStart(void) noexcept {
  if (tracer::Session* s = tracer::Session::Instance()) s->SetProfilerActive(true);
}

TRACER_EXPORT void tracerStop(void) noexcept {
  if (tracer::Session* s = tracer::Session::Instance()) s->SetProfilerActive(false);
}

TRACER_EXPORT int tracerIsActive(void) noexcept {
  tracer::Session* s = tracer::Session::Instance();
  return s && s->capture_active() ? 1 : 0;
}

namespace {

bool Disabled() {
  const char* v = getenv("TRACER_ENABLE");
  return v && (strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "off") == 0 ||
               strcasecmp(v, "no") == 0);
}

// LD_PRELOAD: point NVTX (and CUDA) at this library when nothing else named
// it, so preloading alone traces the program. Only sets variables; the
// session starts on the first NVTX or CUDA call, so a process that never
// makes one writes no file.
__attribute__((constructor)) void TracerPreloadConstructor() noexcept {
  try {
    if (Disabled() || getenv("NVTX_INJECTION64_PATH")) return;
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(&TracerPreloadConstructor), &info) || !info.dli_fname) {
      return;
    }
    char path[PATH_MAX];
    const char* self = realpath(info.dli_fname, path) ? path : info.dli_fname;
    setenv("NVTX_INJECTION64_PATH", self, 0);
    // The first preloaded process is the traced program; exec'ed or early
    // forked descendants are children (TRACER_FORK).
    char pid[24];
    snprintf(pid, sizeof(pid), "%d", static_cast<int>(getpid()));
    setenv("TRACER_ROOT_PID", pid, 0);
    const char* cuda = getenv("TRACER_CUDA");
    if (!(cuda && strcmp(cuda, "0") == 0)) setenv("CUDA_INJECTION64_PATH", self, 0);
  } catch (...) {
  }
}

// Library unload (or process exit after atexit handlers): shut down if
// atexit did not already.
__attribute__((destructor)) void TracerDestructor() noexcept {
  try {
    tracer::Session::ShutdownProcess();
  } catch (...) {
  }
}

}  // namespace
