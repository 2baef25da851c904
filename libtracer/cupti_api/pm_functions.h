// The PM sampling and profiler-host entry points of libcupti that the tracer
// uses, as one list: CuptiApi's default (NOT_SUPPORTED) bodies and
// RealCuptiApi's optional dlsym table are generated from it, so the two
// cannot disagree. X(Method, cupti symbol, parameter struct).
#pragma once

#define TRACER_CUPTI_PM_FUNCTIONS(X)                                                              \
  X(ProfilerInitialize, cuptiProfilerInitialize, CUpti_Profiler_Initialize_Params)                \
  X(ProfilerDeInitialize, cuptiProfilerDeInitialize, CUpti_Profiler_DeInitialize_Params)          \
  X(ProfilerDeviceSupported, cuptiProfilerDeviceSupported, CUpti_Profiler_DeviceSupported_Params) \
  X(DeviceGetChipName, cuptiDeviceGetChipName, CUpti_Device_GetChipName_Params)                   \
  X(ProfilerHostGetSupportedChips, cuptiProfilerHostGetSupportedChips,                            \
    CUpti_Profiler_Host_GetSupportedChips_Params)                                                 \
  X(ProfilerHostInitialize, cuptiProfilerHostInitialize, CUpti_Profiler_Host_Initialize_Params)   \
  X(ProfilerHostDeinitialize, cuptiProfilerHostDeinitialize,                                      \
    CUpti_Profiler_Host_Deinitialize_Params)                                                      \
  X(ProfilerHostGetBaseMetrics, cuptiProfilerHostGetBaseMetrics,                                  \
    CUpti_Profiler_Host_GetBaseMetrics_Params)                                                    \
  X(ProfilerHostGetSubMetrics, cuptiProfilerHostGetSubMetrics,                                    \
    CUpti_Profiler_Host_GetSubMetrics_Params)                                                     \
  X(ProfilerHostGetMetricProperties, cuptiProfilerHostGetMetricProperties,                        \
    CUpti_Profiler_Host_GetMetricProperties_Params)                                               \
  X(ProfilerHostConfigAddMetrics, cuptiProfilerHostConfigAddMetrics,                              \
    CUpti_Profiler_Host_ConfigAddMetrics_Params)                                                  \
  X(ProfilerHostGetConfigImageSize, cuptiProfilerHostGetConfigImageSize,                          \
    CUpti_Profiler_Host_GetConfigImageSize_Params)                                                \
  X(ProfilerHostGetConfigImage, cuptiProfilerHostGetConfigImage,                                  \
    CUpti_Profiler_Host_GetConfigImage_Params)                                                    \
  X(ProfilerHostGetNumOfPasses, cuptiProfilerHostGetNumOfPasses,                                  \
    CUpti_Profiler_Host_GetNumOfPasses_Params)                                                    \
  X(ProfilerHostEvaluateToGpuValues, cuptiProfilerHostEvaluateToGpuValues,                        \
    CUpti_Profiler_Host_EvaluateToGpuValues_Params)                                               \
  X(PmSamplingGetCounterAvailability, cuptiPmSamplingGetCounterAvailability,                      \
    CUpti_PmSampling_GetCounterAvailability_Params)                                               \
  X(PmSamplingEnable, cuptiPmSamplingEnable, CUpti_PmSampling_Enable_Params)                      \
  X(PmSamplingSetConfig, cuptiPmSamplingSetConfig, CUpti_PmSampling_SetConfig_Params)             \
  X(PmSamplingGetCounterDataSize, cuptiPmSamplingGetCounterDataSize,                              \
    CUpti_PmSampling_GetCounterDataSize_Params)                                                   \
  X(PmSamplingCounterDataImageInitialize, cuptiPmSamplingCounterDataImageInitialize,              \
    CUpti_PmSampling_CounterDataImage_Initialize_Params)                                          \
  X(PmSamplingStart, cuptiPmSamplingStart, CUpti_PmSampling_Start_Params)                         \
  X(PmSamplingStop, cuptiPmSamplingStop, CUpti_PmSampling_Stop_Params)                            \
  X(PmSamplingDecodeData, cuptiPmSamplingDecodeData, CUpti_PmSampling_DecodeData_Params)          \
  X(PmSamplingGetCounterDataInfo, cuptiPmSamplingGetCounterDataInfo,                              \
    CUpti_PmSampling_GetCounterDataInfo_Params)                                                   \
  X(PmSamplingCounterDataGetSampleInfo, cuptiPmSamplingCounterDataGetSampleInfo,                  \
    CUpti_PmSampling_CounterData_GetSampleInfo_Params)                                            \
  X(PmSamplingDisable, cuptiPmSamplingDisable, CUpti_PmSampling_Disable_Params)
