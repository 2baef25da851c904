// The per-row aggregates behind the core tables. RowBuilder (row_builder.h)
// fills them from the facts of either attribute stage (the whole trace or
// the bounded stream); the Render* functions below print them, so both paths
// print the same columns from the same numbers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/aggregate/duration_accumulator.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

// Rows are keyed by process index (0 unless ReportOptions::by_process),
// domain name and range name.
using RangeRowKey = std::tuple<size_t, std::string, std::string>;

struct RangeRow {
  DurationAccumulator cpu;                   // per instance
  bool push_pop = false, start_end = false;  // kinds of its instances (nsys "Style")
  uint32_t min_depth = UINT32_MAX, max_depth = 0;
  std::set<std::string> threads;    // the first 8 seen
  DurationAccumulator proj;         // per instance with GPU work
  std::optional<int64_t> busy = 0;  // nullopt: not computed (streaming)
  int64_t ops = 0, kernel_count = 0, kernel_ns = 0;
  size_t max_streams = 0;
  std::unordered_map<uint32_t, int64_t> kernel_time;  // kernel name id -> ns
};

struct RangeKernelRow {
  DurationAccumulator durations;
  int64_t instances = 0;  // distinct range instances
};

struct MemoryRow {
  DurationAccumulator durations;
  DurationAccumulator sizes;  // bytes per operation (nsys cuda_gpu_mem_size_sum)
  int64_t bytes = 0;
};

// One summary row per process.
struct SummaryRow {
  std::string process, source, file;
  bool closed = false;
  int64_t threads = 0, ranges = 0, marks = 0, kernels = 0, memcpys = 0, memsets = 0, api_calls = 0;
  std::optional<int64_t> unattributed, outside_ranges, inherited;  // nullopt: not computed
  std::string main_thread = "-";
  int64_t dropped = 0;
};

// Everything the ranges, gpu, kernels, range-kernels, memory and api tables show.
struct TableRows {
  const StringTable* strings = nullptr;
  std::vector<std::string> process_labels;  // by process index
  std::map<RangeRowKey, RangeRow> ranges;
  // (process, range name) -> kernel name id -> row
  std::map<std::pair<size_t, std::string>, std::unordered_map<uint32_t, RangeKernelRow>>
      range_kernels;
  std::map<std::pair<size_t, uint32_t>, DurationAccumulator> kernels;  // (process, name id)
  int64_t all_kernel_ns = 0;
  // (process, function, "runtime"|"driver")
  std::map<std::tuple<size_t, std::string, std::string>, DurationAccumulator> api;
  // (process, "memcpy HtoD" ... | "memset")
  std::map<std::pair<size_t, std::string>, MemoryRow> memory;
  // One per process, in report order, and the summary table's notes.
  std::vector<SummaryRow> summary;
  std::vector<std::string> summary_notes;
  // Added to every table rendered from these rows.
  std::vector<std::string> notes;
  // The last kernel labels computed from these rows (KernelLabelsOf): the
  // ranges, kernels and range-kernels tables mostly label the same kernels,
  // and labelling (demangling, telling apart) is not free.
  std::vector<uint32_t> labelled_ids;
  std::unordered_map<uint32_t, std::string> labels;
};

// KernelLabels (table_util.h) of the kernels ids (any order, repeats
// allowed), reusing the rows' last result when it was for the same kernels.
const std::unordered_map<uint32_t, std::string>& KernelLabelsOf(TableRows& rows,
                                                                std::vector<uint32_t> ids);

Table RenderRangesTable(TableRows& rows, const ReportOptions& o);
Table RenderMemoryOpsTable(TableRows& rows, const ReportOptions& o);
Table RenderGpuProjectionTable(TableRows& rows, const ReportOptions& o);
Table RenderKernelsTable(TableRows& rows, const ReportOptions& o);
Table RenderRangeKernelsTable(TableRows& rows, const ReportOptions& o);
Table RenderApiTable(TableRows& rows, const ReportOptions& o);

// The row of p without attribution counts (left nullopt) or record counts;
// adds its notes (no footer, dropped by cause).
SummaryRow SummaryRowOf(const ProcessTrace& p, std::vector<std::string>* notes);
Table RenderSummaryTable(TableRows& rows, const ReportOptions& o);

}  // namespace tracer::analysis
