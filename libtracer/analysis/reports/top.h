// The top table: the N most expensive kernels of each range name.
#pragma once

#include <cstddef>

#include "libtracer/analysis/reports/report_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis::reports {

// Ranges in decreasing kernel time, then per range its kernels (each kernel
// once per range name) by decreasing total time, at most n of them: count,
// total, average and share of the range's kernel time. by_process (--by
// rank): per (process, range name), process first.
Table TopKernelsTable(const ReportModel& model, size_t n, bool by_process = false);

}  // namespace tracer::analysis::reports
