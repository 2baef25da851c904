// The whole-trace attribute stage's side of the pipeline (row_builder.h):
// walks an AnalyzedTrace (attribution and projection, computed once for the
// whole trace) and hands its facts to a RowBuilder.
#pragma once

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table_rows.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

// Which facts the requested tables read, so that a single table does not pay
// for the others (the projection costs as much as the attribution).
struct RowNeeds {
  bool range_cpu = false;      // ranges, gpu
  bool range_gpu = false;      // ranges, gpu: the projection
  bool range_kernels = false;  // ranges (top kernels), range-kernels
  bool kernels = false;
  bool api = false;
  bool memory = false;
  bool summary = false;
  RowNeeds& operator|=(const RowNeeds& o);
};

// The rows of every table `needs` asks for.
TableRows WholeTraceRows(const AnalyzedTrace& t, const ReportOptions& o, const RowNeeds& needs);

}  // namespace tracer::analysis
