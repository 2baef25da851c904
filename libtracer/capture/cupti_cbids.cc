#include "libtracer/capture/cupti_cbids.h"

#include <array>

namespace tracer {

namespace {

constexpr CUpti_CallbackDomain kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDrv = CUPTI_CB_DOMAIN_DRIVER_API;
using A = CbidAction;

constexpr CbidEntry kEntries[] = {
    // Runtime kernel launches.
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, A::kGraphLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, A::kGraphLaunch},
    // Runtime copies and sets.
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, A::kLaunch},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, A::kLaunch},
    // Runtime control.
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, A::kProfilerStart},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, A::kProfilerStop},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, A::kDeviceReset},
    {kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020, A::kGraphExecUpdate},
    // Driver launches: Triton and Inductor launch through cuLaunchKernel.
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunch, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, A::kGraphLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, A::kGraphLaunch},
    // Driver copies and sets.
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, A::kLaunch},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, A::kLaunch},
    // Driver control.
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, A::kProfilerStart},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, A::kProfilerStop},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2, A::kDeviceReset},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate, A::kGraphExecUpdate},
    {kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2, A::kGraphExecUpdate},
};

struct Tables {
  std::array<CbidAction, CUPTI_RUNTIME_TRACE_CBID_SIZE> runtime{};
  std::array<CbidAction, CUPTI_DRIVER_TRACE_CBID_SIZE> driver{};
  constexpr Tables() {
    for (const CbidEntry& e : kEntries) {
      if (e.domain == kRt) runtime[e.cbid] = e.action;
      if (e.domain == kDrv) driver[e.cbid] = e.action;
    }
  }
};

constexpr Tables kTables;

}  // namespace

namespace internal {
constinit const std::array<CbidAction, CUPTI_RUNTIME_TRACE_CBID_SIZE> kRuntimeActions =
    kTables.runtime;
constinit const std::array<CbidAction, CUPTI_DRIVER_TRACE_CBID_SIZE> kDriverActions =
    kTables.driver;
}  // namespace internal

const CbidEntry* CbidEntries(int* count) noexcept {
  *count = static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]));
  return kEntries;
}

}  // namespace tracer
