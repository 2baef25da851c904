// One entry point for every input a report or export accepts: dispatches on
// the file's content (not its extension). Today: our stream format. The
// importers (analysis/importers/) add nsys SQLite exports and Kineto JSON
// traces here.
#pragma once

#include <string>

#include "libtracer/analysis/importers/import_fields.h"
#include "libtracer/analysis/read/reader.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

// Appends the process(es) read from path to trace. Returns false with a
// one-line *error when nothing usable could be read from that file; damage
// that still left usable records is a warning in trace->warnings.
// progress: see ReadTraceFile; imports do not report progress.
// fields: see importers::ImportFields (tracer streams are read whole).
bool LoadInput(const std::string& path, Trace* trace, std::string* error,
               const ReadProgress& progress = {},
               importers::ImportFields fields = importers::ImportFields::kAll);

}  // namespace tracer::analysis
