// CUPTI's parameter structs (cupti_pmsampling.h, cupti_profiler_host.h, ...)
// are passed zeroed with structSize set to the size the caller was compiled
// against (the <T>_STRUCT_SIZE macro), so that a newer libcupti knows which
// fields the caller has. One helper for every caller.
#pragma once

#include <cstddef>
#include <cstring>

namespace tracer {

template <typename P>
P CuptiParams(size_t struct_size) {
  P p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = struct_size;
  return p;
}

}  // namespace tracer

// A zeroed T with its structSize: TRACER_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params).
#define TRACER_CUPTI_PARAMS(T) ::tracer::CuptiParams<T>(T##_STRUCT_SIZE)
