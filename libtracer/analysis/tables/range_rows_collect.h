// Fills TableRows (table_rows.h) from the in-memory model.
#pragma once

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table_rows.h"

namespace tracer::analysis {

// Range rows with projection; with kernel_time also each row's kernel time
// per kernel name (for the ranges table's "top kernels").
void CollectRangeRows(const AnalyzedTrace& t, const ReportOptions& o, bool kernel_time,
                      TableRows* rows);

}  // namespace tracer::analysis
