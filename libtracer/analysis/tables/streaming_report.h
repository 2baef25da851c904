// `tracer report --stream`: the core tables computed while reading, one frame
// at a time, with memory bounded by distinct names and open ranges instead of
// records (docs/design.md section 5; stream_aggregator.h says how). The numbers
// are the whole-trace path's or none: when an input needs a rule this path
// cannot apply while reading (StreamingResult::inexact), the caller reads it
// whole instead.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "libtracer/analysis/importers/range_names.h"
#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/tables/table.h"
#include "libtracer/analysis/tables/tables.h"

namespace tracer::analysis {

// summary, ranges, kernels, range-kernels, gpu, memory, api.
bool IsStreamableTable(std::string_view name);
const std::vector<std::string>& StreamableTables();

// True when path is a stream recorded by the tracer (header source
// "tracer"): the record order the streaming path relies on (a launch and a
// child range before the range they name). Streams written by `tracer
// import` are not, nor is anything else.
bool IsRecordedStream(const std::string& path);

// True when path is an Nsight Systems SQLite export (the format import_file
// detects): StreamingTables reads those through the streaming importer
// (importers/nsys_sqlite_stream.h), with the numbers of the whole import.
bool IsNsysExport(const std::string& path);

// True when path is a Kineto (PyTorch profiler) JSON trace, plain or gzipped
// (the format import_file detects): StreamingTables reads those through the
// streaming importer (importers/kineto_json_stream.h), with the numbers of
// the whole import.
bool IsKinetoTrace(const std::string& path);

struct StreamingInput {
  std::string path;
  ReadProgress progress;  // may be empty
};

struct StreamingResult {
  std::vector<Table> tables;
  std::vector<std::string> warnings;  // damage etc., one line each
  std::vector<std::string> errors;    // files that could not be read at all
  size_t files_read = 0;
  size_t processes_selected = 0;  // processes aggregated (after --rank / --pid)
  bool has_kernels = false, has_api = false, has_memory = false, has_pm_samples = false;
  uint64_t peak_nodes = 0, peak_pending_launches = 0;  // largest over the files
  // One line per file whose tables would differ from the whole-trace path's
  // ("path: reason"); when not empty, `tables` must not be shown, except
  // when metrics_left_out is the only reason.
  std::vector<std::string> inexact;
  // The default tables were asked for and the input has PM samples: the
  // metrics table needs the whole trace (one line in `inexact`), the others
  // are in `tables`, exact.
  bool metrics_left_out = false;
};

// Reads recorded streams, nsys SQLite exports and Kineto JSON traces
// (streams written by `tracer import` need the in-memory path; an import
// the streaming importer cannot take is listed in `inexact`). tables
// empty: summary, ranges, + kernels and gpu when there are kernels, + memory
// when there are copies or sets, + api when there are API calls (the
// in-memory defaults).
// names: range-name rules applied to every frame's ranges before they are
// aggregated (importers/range_names.h), as the whole-trace path applies them
// after reading; nullptr = names as recorded.
StreamingResult StreamingTables(const std::vector<StreamingInput>& inputs,
                                const std::vector<std::string>& tables, const ReportOptions& o,
                                const AttributionOptions& attribution = AttributionOptions(),
                                const RangeNameRules* names = nullptr);

}  // namespace tracer::analysis
