// Communication vs computation (`tracer report --table comm`), with the
// definitions of Holistic Trace Analysis (HTA) so the numbers can be checked
// against it. Over a set of GPU ops (a process's, a step's, a range's):
//   span      last op end - first op start (HTA "kernel_time")
//   busy      union of the op intervals; idle = span - busy
//   compute   union of computation kernels: every kernel whose name is not
//             a collective ("^nccl.*Kernel"), not a copy or set, and does not
//             end in "Sync" (HTA's is_compute_kernel)
//   comm      union of communication kernels (^nccl.*Kernel, demangled)
//   overlap   time both a communication and a computation kernel run;
//             % of comm (HTA get_comm_comp_overlap)
//   memory    union of memcpy and memset operations (and ^dma kernels)
//   non-compute  busy - compute (HTA "non_compute_time")
// Unions are over all streams of the process. HTA reads microseconds and
// leaves out the last profiler step; these are nanoseconds over what the
// rows name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis::reports {

enum class GpuOpClass : uint8_t { kCompute, kCommunication, kMemory, kOther };

// HTA's kernel type of a GPU op (the kernel's demangled name; copies and
// sets are memory).
GpuOpClass ClassifyGpuOp(OpKind kind, std::string_view demangled_name);

struct CommCompute {
  uint64_t ops = 0, span = 0, busy = 0, compute = 0, comm = 0, overlap = 0, memory = 0;
  uint64_t idle() const { return span - busy; }
  uint64_t non_compute() const { return busy - compute; }
};

// The breakdown of ops (indexes into model.ops(), any order); op_class
// gives each op's class.
CommCompute BreakdownOf(const ReportModel& model, std::span<const uint32_t> ops,
                        std::span<const GpuOpClass> op_class);

struct CommOptions {
  std::string step_range;  // "" = chosen as steps.h FindSteps says
  ReportOptions ranges;    // --filter, --domain, --top for the range rows
};

// Rows per process: the whole process, each step iteration, then range
// names (summed over their instances), most busy first (--top, default 20).
Table CommComputeTable(const ReportModel& model, const CommOptions& options);

}  // namespace tracer::analysis::reports
