// Starts CUPTI capture for the process's session: the CUDA injection entry
// point (InitializeInjection) calls it. Idempotent and thread-safe; any
// failure is one log line and the session goes on tracing NVTX only.
#pragma once

namespace tracer {

void StartCuptiCapture() noexcept;

}  // namespace tracer
