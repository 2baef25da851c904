// The gaps table (launch-overhead questions): per range name,
// how much of its projected GPU span the GPU sat idle, how many GPU ops it
// launched and how long the launch calls took on the CPU.
#pragma once

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::reports {

// Per range name (instances summed; ranges without GPU work omitted):
//   gpu_proj      sum of projected spans; gpu_busy: sum of busy times
//   gpu_idle      gpu_proj - gpu_busy (never negative: busy <= span)
//   launches      GPU ops attributed to the range, each once per name
//   launch_api    summed duration of their launching API calls
//   avg_launch_gap mean CPU time from the end of one launch call to the
//                 start of the next within an instance (launch-bound ranges
//                 have gaps near zero)
// by_process (--by rank): one row per (process, range name), process first.
Table GapsTable(const ReportModel& model, bool by_process = false);

}  // namespace tracer::analysis::reports
