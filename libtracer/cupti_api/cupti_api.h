// The one narrow interface over libcupti (docs/design.md section 2): exactly the
// CUPTI functions the tracer calls, nothing else. The capture side never calls
// libcupti directly, so tests can substitute an in-process fake (replaying
// hand-built activity records through the real processing path) and the
// injected library can survive a missing or too old libcupti.
#pragma once

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

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

  // PM sampling (docs/cupti.md section 6): the profiler-host half (config
  // images, metric lists, evaluation; works without a GPU) and the device
  // half. Each takes CUPTI's own parameter struct. Not pure: a libcupti
  // without them (or an in-process test double) answers NOT_SUPPORTED and
  // only PM sampling is off.
  virtual CUptiResult GetDeviceId(CUcontext context, uint32_t* device);
  virtual CUptiResult ProfilerInitialize(CUpti_Profiler_Initialize_Params* p);
  virtual CUptiResult ProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params* p);
  virtual CUptiResult ProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params* p);
  virtual CUptiResult DeviceGetChipName(CUpti_Device_GetChipName_Params* p);
  virtual CUptiResult ProfilerHostGetSupportedChips(
      CUpti_Profiler_Host_GetSupportedChips_Params* p);
  virtual CUptiResult ProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p);
  virtual CUptiResult ProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p);
  virtual CUptiResult ProfilerHostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p);
  virtual CUptiResult ProfilerHostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params* p);
  virtual CUptiResult ProfilerHostGetMetricProperties(
      CUpti_Profiler_Host_GetMetricProperties_Params* p);
  virtual CUptiResult ProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p);
  virtual CUptiResult ProfilerHostGetConfigImageSize(
      CUpti_Profiler_Host_GetConfigImageSize_Params* p);
  virtual CUptiResult ProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p);
  virtual CUptiResult ProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p);
  virtual CUptiResult ProfilerHostEvaluateToGpuValues(
      CUpti_Profiler_Host_EvaluateToGpuValues_Params* p);
  virtual CUptiResult PmSamplingGetCounterAvailability(
      CUpti_PmSampling_GetCounterAvailability_Params* p);
  virtual CUptiResult PmSamplingEnable(CUpti_PmSampling_Enable_Params* p);
  virtual CUptiResult PmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params* p);
  virtual CUptiResult PmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params* p);
  virtual CUptiResult PmSamplingCounterDataImageInitialize(
      CUpti_PmSampling_CounterDataImage_Initialize_Params* p);
  virtual CUptiResult PmSamplingStart(CUpti_PmSampling_Start_Params* p);
  virtual CUptiResult PmSamplingStop(CUpti_PmSampling_Stop_Params* p);
  virtual CUptiResult PmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params* p);
  virtual CUptiResult PmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params* p);
  virtual CUptiResult PmSamplingCounterDataGetSampleInfo(
      CUpti_PmSampling_CounterData_GetSampleInfo_Params* p);
  virtual CUptiResult PmSamplingDisable(CUpti_PmSampling_Disable_Params* p);
};

// The first CUPTI API version whose activity structs match the ones this
// tracer is compiled against (CUpti_ActivityKernel10 and friends, CUDA 13.0).
// CUDA 12.x returned small integers (up to the 20s); 13.0 returns 130001.
inline constexpr uint32_t kMinCuptiVersion = 130000;

}  // namespace tracer
