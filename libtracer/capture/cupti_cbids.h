// Which CUPTI runtime/driver API callbacks the adapter enables and what it
// does in each (docs/cupti.md section 2 lists the launch-type cbids; CUDA
// 13's <<<>>> goes through __cudaLaunchKernel_v13000, 505/506). A flat table
// indexed by cbid keeps the callback's dispatch to one load.
#pragma once

#include <cupti.h>

#include <array>
#include <cstdint>

namespace tracer {

enum class CbidAction : uint8_t {
  kNone = 0,
  kLaunch,           // kernel, copy or set: record correlation -> innermost range
  kGraphLaunch,      // a launch that also snapshots the range for the graph
  kProfilerStart,    // cudaProfilerStart / cuProfilerStart (EXIT)
  kProfilerStop,     // cudaProfilerStop / cuProfilerStop (ENTER: flush before)
  kDeviceReset,      // cudaDeviceReset / primary context reset (ENTER: flush)
  kGraphExecUpdate,  // cudaGraphExecUpdate / cuGraphExecUpdate (EXIT: re-snapshot)
};

namespace internal {
// Built at compile time from the entry list in cupti_cbids.cc.
extern const std::array<CbidAction, CUPTI_RUNTIME_TRACE_CBID_SIZE> kRuntimeActions;
extern const std::array<CbidAction, CUPTI_DRIVER_TRACE_CBID_SIZE> kDriverActions;
}  // namespace internal

// kNone for cbids out of range or of other domains. Inline: every CUPTI
// callback starts here, the launch path included.
inline CbidAction ActionFor(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid < internal::kRuntimeActions.size() ? internal::kRuntimeActions[cbid]
                                                   : CbidAction::kNone;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    return cbid < internal::kDriverActions.size() ? internal::kDriverActions[cbid]
                                                  : CbidAction::kNone;
  }
  return CbidAction::kNone;
}

// Every (domain, cbid) whose action is not kNone, for enabling them.
struct CbidEntry {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CbidAction action;
};
const CbidEntry* CbidEntries(int* count) noexcept;

}  // namespace tracer
