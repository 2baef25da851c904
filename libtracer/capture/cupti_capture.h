// Starts CUPTI capture for the process's session: the CUDA injection entry
// point (InitializeInjection) calls it. Idempotent and thread-safe; a CUPTI
// failure is one log line and the session goes on tracing NVTX only. Throws
// when out of memory (the entry point's guard reports it).
#pragma once

namespace tracer {

void StartCuptiCapture();

}  // namespace tracer
