// The one narrow interface over libcupti (docs/design.md section 2): exactly the
// CUPTI functions the tracer calls, nothing else. The capture side never calls
// libcupti directly, so tests can substitute an in-process fake (replaying
// hand-built activity records through the real processing path) and the
// injected library can survive a missing or too old libcupti.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace tracer {

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;

  virtual CUptiResult GetVersion(uint32_t* version) = 0;
  // cuptiSubscribe_v2 where the library has it (then, on
  // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, the other tool's name is
  // written to other_subscriber, NUL-terminated), else cuptiSubscribe.
  virtual CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                void* userdata, const char* name, char* other_subscriber,
                                size_t other_subscriber_size) = 0;
  virtual CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber) = 0;
  virtual CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain) = 0;
  virtual CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain, CUpti_CallbackId cbid) = 0;

  virtual CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                CUpti_BuffersCallbackCompleteFunc completed) = 0;
  virtual CUptiResult ActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc now) = 0;
  virtual CUptiResult ActivityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityDisable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityFlushAll(uint32_t flag) = 0;
  virtual CUptiResult ActivityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                            CUpti_Activity** record) = 0;
  virtual CUptiResult ActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                   size_t* dropped) = 0;

  virtual CUptiResult GetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                      const char** name) = 0;
  virtual CUptiResult GetGraphId(CUgraph graph, uint32_t* id) = 0;
  virtual CUptiResult GetGraphNodeId(CUgraphNode node, uint64_t* id) = 0;
  virtual CUptiResult GetGraphExecId(CUgraphExec exec, uint32_t* id) = 0;
  virtual CUptiResult Finalize() = 0;

  // Never null: cuptiGetResultString's text, or "CUPTI error <n>".
  virtual const char* ResultString(CUptiResult result) = 0;
};

// The first CUPTI API version whose activity structs match the ones this
// tracer is compiled against (CUpti_ActivityKernel10 and friends, CUDA 13.0).
// CUDA 12.x returned small integers (up to the 20s); 13.0 returns 130001.
inline constexpr uint32_t kMinCuptiVersion = 130000;

}  // namespace tracer
