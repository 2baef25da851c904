// Which CUPTI runtime/driver API callbacks the adapter enables and what it
// does in each (docs/cupti.md section 2 lists the launch-type cbids; CUDA
// 13's <<<>>> goes through __cudaLaunchKernel_v13000, 505/506). A flat table
// indexed by cbid keeps the callback's dispatch to one load.
#pragma once

#include <cupti.h>

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

// kNone for cbids out of range or of other domains.
CbidAction ActionFor(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept;

// Every (domain, cbid) whose action is not kNone, for enabling them.
struct CbidEntry {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CbidAction action;
};
const CbidEntry* CbidEntries(int* count) noexcept;

}  // namespace tracer
