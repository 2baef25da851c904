// Writes one process of the in-memory model back as our stream format
// (proto/trace.proto) with core's ChunkBuilder, so that an imported nsys or
// Kineto trace becomes a regular .trace file (`tracer import`): header,
// definitions, every record, counters and footer. String ids keep their
// global StringTable values; only the strings the process uses are defined.
#pragma once

#include <string>

#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis::importers {

// The complete file bytes (magic + frames) of trace.processes[index].
std::string EncodeProcessStream(const Trace& trace, size_t index);

// Writes EncodeProcessStream to path. False with *error naming the path.
bool WriteProcessStream(const Trace& trace, size_t index, const std::string& path,
                        std::string* error);

// Output path of one process when an import yields `count` processes: `out`
// itself for one process; otherwise "%p" in out is replaced by the pid, or,
// without "%p", ".<pid>" goes before a ".trace" suffix (or at the end).
std::string ProcessOutputPath(const std::string& out, uint32_t pid, size_t count);

}  // namespace tracer::analysis::importers
