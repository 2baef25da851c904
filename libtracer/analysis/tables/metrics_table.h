// PM metrics per range name and per kernel name (`tracer report --table
// metrics`; docs/design.md section 4). Definitions, also printed under the
// tables and in `tracer report --help`:
//
//   span      a range instance's projected GPU span on each device it ran
//             on: [first op start, last op end] over its ops on that
//             device's streams, overlapping streams merged into the one
//             span (children included, as in the gpu table); a kernel
//             execution's [start, end) on its device.
//   mean      time-weighted: sum(value * overlap) / sum(overlap) over every
//             (span, sample of the same device) pair that overlaps; a sample
//             straddling a span's edge counts by its overlap only.
//   coverage  sum(overlap) / sum(span lengths): the share of the spans that
//             samples of that metric covered. A span on a device where the
//             metric was not sampled counts in the denominator only.
//   samples   overlapping (span, sample) pairs.
// A span counts toward the metrics its process sampled. Rows are summed over
// processes by name unless ReportOptions::by_process.
#pragma once

#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

// True when any process holds PM samples.
bool HasPmSamples(const Trace& trace);

// "metrics" (range x metric; --filter and --domain apply) and
// "kernel-metrics" (kernel x metric). Without samples, both are empty and
// say so in their notes.
std::vector<Table> MetricsTables(const AnalyzedTrace& t, const ReportOptions& o);

// The definitions above, one line each, for table notes and --help.
const std::vector<std::string>& MetricsDefinitions();

}  // namespace tracer::analysis
