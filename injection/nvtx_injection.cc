// extern "C" entry points of libtracer.so: the NVTX injection, the LD_PRELOAD
// constructor, the library destructor and the control API. Each is noexcept
// and one guard (entry_guard.h): the host must never notice us failing.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "injection/tracer_control.h"
#include "libtracer/capture/config.h"
#include "libtracer/capture/entry_guard.h"
#include "libtracer/capture/nvtx_handler.h"
#include "libtracer/capture/run_id.h"
#include "libtracer/capture/session.h"

#define TRACER_EXPORT extern "C" __attribute__((visibility("default")))

// Called by each NVTX instance on its first API call, when
// NVTX_INJECTION64_PATH names this library. Returning 0 makes NVTX turn every
// call into a no-op, which is what a disabled tracer should cost.
TRACER_EXPORT int InitializeInjectionNvtx2(tracer::NvtxGetExportTable get_export_table) noexcept {
  // 0 makes NVTX a no-op for this instance: what a failed start should cost.
  return tracer::Guarded(
      "InitializeInjectionNvtx2", "tracing is off",
      [&] {
        if (!tracer::Session::EnsureStarted()) return 0;
        return tracer::InstallNvtxCallbacks(get_export_table);
      },
      []() noexcept { return 0; });
}

TRACER_EXPORT int tracerFlush(void) noexcept {
  return tracer::Guarded(
      "tracerFlush", "nothing was flushed",
      [] {
        tracer::Session* s = tracer::Session::Instance();
        if (!s) return 0;
        s->Flush();
        return 1;
      },
      []() noexcept { return 0; });
}

TRACER_EXPORT void tracerStart(void) noexcept {
  tracer::Guarded("tracerStart", [] { tracer::Session::RequestProfilerActive(true); });
}

TRACER_EXPORT void tracerStop(void) noexcept {
  // Also before the first NVTX call: the session then starts stopped.
  tracer::Guarded("tracerStop", [] { tracer::Session::RequestProfilerActive(false); });
}

TRACER_EXPORT int tracerIsActive(void) noexcept {
  return tracer::Guarded("tracerIsActive", [] {
    tracer::Session* s = tracer::Session::Instance();
    return s && s->capture_active() ? 1 : 0;
  });
}

namespace {

// Off only when the value reads as off; a bad value is the session's to
// report (ParseConfig), once.
bool SwitchedOff(const char* name) {
  const char* v = getenv(name);
  bool on = true;
  return v && tracer::ParseBool(v, &on) && !on;
}

bool Disabled() { return SwitchedOff("TRACER_ENABLE"); }

// LD_PRELOAD: point NVTX (and CUDA) at this library when nothing else named
// it, so preloading alone traces the program. Only sets variables; the
// session starts on the first NVTX or CUDA call, so a process that never
// makes one writes no file.
void PreloadSetup() {
  if (Disabled() || getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&PreloadSetup), &info) || !info.dli_fname) {
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
  // The run's id for every process of it (run_id.h): made here, where the
  // environment is still the first process's alone, so exec'ed descendants
  // inherit it; a forked one keeps it anyway.
  char run_id[tracer::kRunIdBufferSize];
  if (!getenv(tracer::kRunIdVariable) && tracer::FormatNewRunId(run_id, sizeof(run_id))) {
    setenv(tracer::kRunIdVariable, run_id, 0);
  }
  if (!SwitchedOff("TRACER_CUDA")) setenv("CUDA_INJECTION64_PATH", self, 0);
}

__attribute__((constructor)) void TracerPreloadConstructor() noexcept {
  tracer::Guarded(
      "LD_PRELOAD constructor", "the program is not traced", [] { PreloadSetup(); },
      []() noexcept {});
}

// Library unload (or process exit after atexit handlers): shut down if
// atexit did not already.
__attribute__((destructor)) void TracerDestructor() noexcept {
  tracer::Guarded(
      "library destructor", "the trace may lack its last records",
      [] { tracer::Session::ShutdownProcess(); }, []() noexcept {});
}

}  // namespace
