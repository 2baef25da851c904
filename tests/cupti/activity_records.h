// Hand-built CUPTI 13.0 activity records for tests and benches: what real
// CUPTI would write for one kernel, copy, API call, ... (fields the tracer
// does not read stay zero).
#pragma once

#include <cupti.h>

#include <cstring>

namespace tracer::testing {

inline CUpti_ActivityKernel10 MakeKernel(const char* name, uint64_t start, uint64_t end,
                                         uint32_t stream, uint32_t correlation, uint32_t device = 0,
                                         uint32_t context = 1) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.start = start;
  k.end = end;
  k.completed = end;
  k.deviceId = device;
  k.contextId = context;
  k.streamId = stream;
  k.correlationId = correlation;
  k.gridX = 128;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  return k;
}

inline CUpti_ActivityAPI MakeApi(bool driver, uint32_t cbid, uint64_t start, uint64_t end,
                                 uint32_t thread, uint32_t correlation) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 1;
  a.threadId = thread;
  a.correlationId = correlation;
  return a;
}

inline CUpti_ActivityMemcpy6 MakeMemcpy(uint8_t copy_kind, uint64_t bytes, uint64_t start,
                                        uint64_t end, uint32_t stream, uint32_t driver_corr,
                                        uint32_t runtime_corr) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = driver_corr;
  m.runtimeCorrelationId = runtime_corr;
  return m;
}

inline CUpti_ActivityMemset4 MakeMemset(uint64_t bytes, uint32_t value, uint64_t start,
                                        uint64_t end, uint32_t stream, uint32_t correlation) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = bytes;
  m.value = value;
  m.start = start;
  m.end = end;
  m.contextId = 1;
  m.streamId = stream;
  m.correlationId = correlation;
  return m;
}

}  // namespace tracer::testing
