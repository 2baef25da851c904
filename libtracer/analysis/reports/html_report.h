// `tracer report --format html`: the report's tables plus the charts a person
// would rather look at (html_render.h draws them): per-group bars (the groups
// table, else the ranges table: CPU and GPU projected time), each step's
// phases stacked (the phases table), a flame graph of one step (the timeline
// table of the median step, or --flame-step N) and, with several processes,
// the cross-rank spread (the ranks table). Every chart draws from one of
// those tables as `--format json` prints it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libtracer/analysis/model/analyzed_trace.h"
#include "libtracer/analysis/reports/report_tables.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/core/status.h"

namespace tracer::analysis::reports {

struct HtmlReportOptions {
  ExtraTableOptions extra;                // as for the text tables (step range, rules, ...)
  int64_t flame_step = -1;                // -1: the step of median CPU time (first process)
  size_t max_rows = 200;                  // rows per HTML table (and embedded, see .cc)
  std::vector<std::string> header_lines;  // inputs, selection
};

// Bars draw this many rows of their table at most.
inline constexpr size_t kHtmlBarRows = 25;
// The flame graph leaves out ranges shorter than the step / this (under a
// pixel at any usual width), and draws at most kHtmlFlameRows ranges.
inline constexpr uint64_t kHtmlFlameMinFraction = 4000;
inline constexpr size_t kHtmlFlameRows = 5000;
// Steps of the phases chart embedded at most.
inline constexpr size_t kHtmlPhaseRows = 2000;

// The page for `tables` (those the text report would print, shown in that
// order), with the charts' tables computed and added when missing. A chart
// whose table cannot be built (no step range, one process) is left out with
// a line saying why.
StatusOr<std::string> HtmlReport(const AnalyzedTrace& analyzed, std::vector<Table> tables,
                                 const HtmlReportOptions& options);

// `tracer diff --format html`: the diff table (diff.h) with bars of A and B
// side by side for its first kHtmlBarRows rows (CPU and GPU time where the
// table has them, else its first value).
std::string HtmlDiffReport(Table diff, const std::vector<std::string>& keys,
                           const std::vector<std::string>& values,
                           const std::vector<std::string>& header_lines, size_t max_rows);

// The step number the flame graph shows by default: among the first
// process's rows of a phases table, the step of median CPU time (the lower
// median for an even count). -1 when the table has no step row.
int64_t MedianStep(const Table& phases);

}  // namespace tracer::analysis::reports
