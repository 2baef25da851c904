// The report tables of docs/design.md section 5 (ranges, kernels, range x kernel,
// GPU projection, memory ops, API, summary). Each returns a Table (table.h)
// with stable column names; render.h prints it. Rows aggregate across
// processes by name unless ReportOptions::by_process.
//
// Definitions used in every table and in `tracer report --help`:
//   CPU time       end - start of a range instance on its thread.
//   projected GPU  per instance: last attributed op end - first attributed op
//                  start, over all its streams (nsys Proj Duration).
//   GPU busy       per instance: time at least one of its ops was running
//                  (union of op intervals over all its streams).
//   kernel time    sum of its kernels' durations (overlaps counted twice).
#pragma once

#include <cstddef>
#include <string>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

enum class SortKey { kTotal, kCount, kAvg, kName };

struct ReportOptions {
  size_t top = 0;  // keep the first N rows after sorting; 0 = all
  SortKey sort = SortKey::kTotal;
  std::string filter;       // ECMAScript regex searched in range names; "" = all
  std::string domain;       // only ranges of this NVTX domain name; "" = all
  bool by_process = false;  // one row per (process, name) instead of per name
  size_t top_kernels = 3;   // kernel names listed per range in RangesTable
  // --rank / --pid: applied when the trace is read (SelectProcesses), and by
  // the bounded path as it reads.
  ProcessSelection processes;
};

// Per range name (+ domain): instances, CPU total/avg/med/min/max/stddev,
// depth min-max, threads, GPU projected total/avg, GPU busy, kernel count,
// top kernels.
Table RangesTable(const AnalyzedTrace& t, const ReportOptions& o);
// Per kernel name: count, total/avg/med/min/max, share of all kernel time,
// short name, full name.
Table KernelsTable(const AnalyzedTrace& t, const ReportOptions& o);
// Per (range name, kernel name): a kernel counts toward every range of its
// stack (nsys nvtx_kern_sum).
Table RangeKernelsTable(const AnalyzedTrace& t, const ReportOptions& o);
// Per range name: instances with projection, proj total/avg/med/min/max, busy
// total, op count, kernel time (nsys nvtx_gpu_proj_sum).
Table GpuProjectionTable(const AnalyzedTrace& t, const ReportOptions& o);
// memcpy per copy kind and memset: count, bytes, total/avg/min/max, bandwidth.
Table MemoryOpsTable(const AnalyzedTrace& t, const ReportOptions& o);
// Per API function: calls, total/avg/med/min/max.
Table ApiTable(const AnalyzedTrace& t, const ReportOptions& o);
// Per process: threads, record counts, dropped by cause, unattributed ops,
// ops attributed by inheritance; notes carry the warnings-level facts.
Table SummaryTable(const AnalyzedTrace& t, const ReportOptions& o);

// True when any process holds kernels, copies, sets or API calls.
bool HasGpuData(const Trace& trace);

}  // namespace tracer::analysis
