// Chrome trace JSON (the Trace Event Format ui.perfetto.dev and
// chrome://tracing open), written as a stream, never built as one document:
//   - ranges: complete "X" events on thread tracks (pid = process pid, tid =
//     OS tid), thread_name / process_name metadata;
//   - kernels, memcpys, memsets: "X" events on per-device, per-stream tracks
//     (a pseudo pid per device, tid = stream), named "GPU n" / "stream s";
//   - flow arrows ("s" on the launching API call or launch point, "f" with
//     bp "e" on the op; id = correlation id);
//   - marks as instant "i" events, PM samples as counter "C" events;
//   - memory in use, where the input has it (a PyTorch profiler trace's
//     "[memory]" events): counter "C" events "GPU memory allocated" and
//     "GPU memory reserved" per device (on its pseudo process), "CPU
//     memory ..." on the process, args {"bytes": n} (the allocator's "Total
//     Allocated" / "Total Reserved");
//   - `tables` (report tables such as groups, from --groups) under the
//     top-level key "tracerTables", as `tracer report --format json` writes
//     them ({"groups": [rows], "groups_notes": [...]}); viewers ignore it.
// Timestamps in microseconds with ns precision (fractional ts).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/table.h"

namespace tracer::analysis {

// Returns false with *error when the stream fails while writing.
bool WriteChromeTrace(const Trace& trace, std::ostream& out, std::string* error,
                      const std::vector<Table>& tables = {});

}  // namespace tracer::analysis
