// Bounded-memory reading of a Kineto (PyTorch profiler) JSON trace, plain or
// gzipped, for `tracer report --stream` (tables/streaming_report.h): the
// records of the whole-trace importer (kineto_json_importer.h, same mapping
// through KinetoConverter), handed out a few thousand at a time in the
// order the stream aggregator relies on (tables/stream_aggregator.h), the
// order nsys_sqlite_stream.h gives an nsys export: one sweep by start time,
// ranges handed out once the sweep passes their end (children first), each
// API call that launched GPU work followed by a LaunchRecord naming the
// innermost range open on its thread then (RangeIndex::InnermostOpenAt,
// the range the whole-trace path finds through the API record).
//
// Kineto writes its events in no useful order (CPU ops as the profiler's
// tree lists them, GPU activities per CUPTI buffer), so a sort by time is
// unavoidable. It is an external merge sort: each event becomes a 48-byte
// item (string ids, not strings), runs of `run_items` items are sorted and
// written to an unlinked temporary file ($TMPDIR, else /tmp), then merged.
// Memory: one run (12 MiB by default), a small buffer per run, the distinct
// names, one bit per correlation id (which API calls launched GPU work) and
// the open ranges; disk: 48 bytes per event while it runs. A trace that
// fits in one run is sorted in memory and writes nothing.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

struct KinetoStreamCallbacks {
  // One batch of records (definitions included, as StreamTraceFile's); the
  // record vectors are cleared after the call.
  BatchCallback on_batch;
  // After the last batch: definitions, header, footer and counters as the
  // whole-trace importer sets them.
  std::function<void(const ProcessTrace&)> on_process;
};

// False with a one-line *error when the trace cannot be read; *unsupported
// (may be null) is then true when it is readable but the bounded reading
// cannot take it (no temporary file, correlation ids too sparse to keep one
// bit each): the caller reads it whole.
bool StreamKinetoJson(const std::string& path, StringTable* strings,
                      const KinetoStreamCallbacks& callbacks, std::string* error,
                      bool* unsupported = nullptr, size_t batch_records = 4096,
                      size_t run_items = size_t{1} << 18);

}  // namespace tracer::analysis::importers
